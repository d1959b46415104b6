"""The compiled engine and the native tier against the reference on the corpus and on a
mixed workload.

    python benchmarks/engine_benchmark.py [--rounds 3] [--workers 2] [--repeats 1,3,10,30]
        [--example-repeats 1,10,100,1000] [--spec-version VERSION]

Everything runs under one spec version (default: the newest), on that version's corpus.

Prints, best of the rounds, every time as a ratio to the reference measured in the same run:

  corpus, in process   every vector executed once by each engine (a fresh engine per round,
                       and for the native tier a fresh native code cache, as in a new adapter
                       process: nearly every vector is its own program, so almost nothing
                       reaches the thresholds)
  corpus, adapters     the main pass of ``rtwo-vm conformance run`` through
                       ``python -m conformance.adapter`` and ``... --engine compiled`` (and
                       ``--engine native``)
  mixed workload       the example scenarios' calls, the corpus programs and a short run of
                       benchmarks/loop.rasm, each run R times in a row in one process: the
                       reference; the compiled engine tiered (default threshold) and eager
                       (threshold 1, every segment compiled the first time it runs, which is
                       what compiling up front costs); the native tier tiered (its defaults:
                       a region goes native after 2^22 compute units on the compiled tier)
                       and eager (every region it would take, native the first time it runs)

Every engine's results are checked against the reference's first. The native columns need the
native extra (``pip install '.[native]'``); without it they are left out.
"""

from __future__ import annotations

import argparse
import functools
import shlex
import sys
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import compiled_vm  # noqa: E402
import spec  # noqa: E402
from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.run.process import Settings  # noqa: E402
from conformance.run.suite import Options, reference_command, run_suite  # noqa: E402
from conformance.corpus.vector import request_of  # noqa: E402
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LOOP_ADDRESS, LOOP_N = 0x100, 200


def _example_requests(version: str) -> list[tuple]:
    """The calls of examples/scenarios.toml (contract, caller and call data: the fields the
    file uses), each against the state the previous successful calls of its scenario left."""
    examples = ROOT / "examples"
    out: list[tuple] = []
    for scenario in tomllib.loads((examples / "scenarios.toml").read_text())["scenario"]:
        state = WorldState({
            int(address, 16): Contract(assemble((examples / body["code"]).read_text(), version),
                                       {int(k, 16): int(v) for k, v in body.get("storage", {}).items()})
            for address, body in scenario["contracts"].items()})
        for call in scenario["call"]:
            message = Message(int(call["to"], 16), int(call["caller"], 16),
                              bytes.fromhex(call.get("calldata", "0x")[2:]))
            out.append((state, message, None, None, None))
            result = execute(state, message, version=version)
            if result.ok:
                state = state.with_changes(result.state_changes)
    return out


def _requests(version: str):
    corpus_requests = [request_of(v["input"], version) for v in store.load(corpus_dir(version))]
    examples = _example_requests(version)
    corpus_args = [(r.state, r.message, r.context, r.policy, r.limits) for r in corpus_requests]
    code = assemble((ROOT / "benchmarks" / "loop.rasm").read_text(), version)
    loop = WorldState({LOOP_ADDRESS: Contract(code)})
    loops = [(loop, Message(LOOP_ADDRESS, 1, LOOP_N.to_bytes(8, "little")), None, None,
              Limits(compute=10**9))]
    return examples, corpus_args, loops


def _time(run, requests, repeat: int = 1) -> float:
    start = time.perf_counter()
    for args in requests:
        for _ in range(repeat):
            run(*args)
    return time.perf_counter() - start


def _interleaved(rounds: int, requests, repeat: int, reference, *engines) -> list[float]:
    """Best times of the reference and of each engine (a fresh one per round), the rounds
    interleaved so that a change in the machine's load hits all of them alike."""
    best = [float("inf")] * (1 + len(engines))
    for _ in range(rounds):
        for i, run in enumerate([reference, *(make() for make in engines)]):
            best[i] = min(best[i], _time(run, requests, repeat))
    return best


def _versioned(run, version: str):
    return functools.partial(run, version=version)


def _native(version: str):
    """Factories of fresh native engines (tiered, eager) and the adapter flag, or None."""
    import native_vm
    if native_vm.missing():
        return None
    from native_vm.cache import NativeCache
    return (lambda: _versioned(native_vm.Engine(cache=NativeCache()).execute, version),
            lambda: _versioned(native_vm.Engine(threshold=1, cold_segments=0, native_work=0,
                                                cache=NativeCache()).execute, version))


def _check(requests, native, version: str) -> None:
    engines = {"compiled": _versioned(compiled_vm.Engine(threshold=1, cold_segments=0).execute, version)}
    if native is not None:
        import native_vm
        engines["native"] = _versioned(native_vm.Engine(threshold=1, cold_segments=0, native_work=0,
                                                        min_block=1, per_handler=0).execute, version)
    for args in requests:
        want = execute(*args, version=version).canonical_json()
        for name, run in engines.items():
            for _ in range(2):
                if run(*args).canonical_json() != want:
                    raise SystemExit(f"the {name} engine disagrees with the reference on {args[1]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", default="1,3,10,30", help="R for the corpus programs")
    parser.add_argument("--example-repeats", default="1,10,100,1000", help="R for the example calls")
    parser.add_argument("--spec-version", default=spec.latest(), choices=spec.names(),
                        help="the spec version everything runs under (default: the newest)")
    args = parser.parse_args()
    version = args.spec_version
    reference = _versioned(execute, version)
    repeats = {"corpus": [int(r) for r in args.repeats.split(",")],
               "examples": [int(r) for r in args.example_repeats.split(",")],
               "loop": [1, 10, 100, 1000]}
    examples, corpus_args, loops = _requests(version)
    native = _native(version)
    _check(examples + corpus_args + loops, native, version)

    engines = [lambda: _versioned(compiled_vm.Engine().execute, version)] + ([native[0]] if native else [])
    ref, *times = _interleaved(args.rounds, corpus_args, 1, reference, *engines)
    print(f"spec {version}; corpus: {len(corpus_args)} vectors, best of {args.rounds}")
    line = f"  in process   reference {ref:6.3f} s   compiled {times[0]:6.3f} s   ratio {times[0] / ref:5.2f}"
    if native:
        line += f"   native {times[1]:6.3f} s   ratio {times[1] / ref:5.2f}"
    print(line)

    vectors = store.load(corpus_dir(version))
    settings = Settings(spec_version=version, workers=args.workers)
    commands = {"reference": reference_command(),
                "compiled": shlex.join([*shlex.split(reference_command()), "--engine", "compiled"])}
    if native:
        commands["native"] = shlex.join([*shlex.split(reference_command()), "--engine", "native"])
    rates = dict.fromkeys(commands, 0.0)
    for _ in range(args.rounds):
        for label, command in commands.items():
            result = run_suite([command], vectors, [], Options(repeat=0, settings=settings))
            (run,) = result.runs
            if not result.ok:
                raise SystemExit(f"{label} adapter failed the corpus")
            rates[label] = max(rates[label], run.rate)
    line = f"  adapters     reference {rates['reference']:6,.0f} vectors/s"
    for label in list(commands)[1:]:
        line += (f"   {label} {rates[label]:6,.0f} vectors/s   time ratio "
                 f"{rates['reference'] / rates[label]:5.2f}")
    print(line + f"   ({args.workers} processes each, main pass)")

    print(f"mixed workload: {len(examples)} example calls, {len(corpus_args)} corpus programs and the "
          f"loop (N={LOOP_N}), each run R times; best of {args.rounds}; ratio = time / reference's")
    makers = [lambda: _versioned(compiled_vm.Engine().execute, version),
              lambda: _versioned(compiled_vm.Engine(threshold=1, cold_segments=0).execute, version),
              *(native or ())]
    labels = ["compiled tiered", "eager", *(("native tiered", "eager") if native else ())]
    for label, requests in (("examples", examples), ("corpus", corpus_args), ("loop", loops)):
        for repeat in repeats[label]:
            rounds = args.rounds if repeat * len(requests) < 50_000 else 1
            ref, *times = _interleaved(rounds, requests, repeat, reference, *makers)
            cells = "   ".join(f"{name} {t / ref:5.2f}" for name, t in zip(labels, times))
            print(f"  {label:9} R={repeat:<4} reference {ref:7.3f} s   {cells}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
