"""Running the corpus against mutants: the in-process prescreen, the confirmation of
survivors through the adapter protocol, and the shortest vector that kills a survivor.

Prescreen (in a child process per mutant, see isolate.py): run every vector's input through
the mutated reference and compare the result with the vector's expected result; the first
difference kills the mutant (fail-fast), unless every killing vector is wanted (curated bugs,
which must be killed twice, and ``--redundant``). A mutant that cannot be imported, or makes
the interpreter raise, is killed as ``crash``; one that runs past the time limit (a wall clock
used only as a safety net) is killed as ``timeout``, and the report says so.

Survivors are run again by ``rtwo-vm conformance run`` through the mutant's adapter
(``python -m conformance.strength.adapter``); a survivor the runner fails is killed by the
runner (``runner``). For each confirmed survivor the candidates (the corpus definitions with
two unrelated words beneath everything, and seeded random programs of another seed) are run
against it; the shortest candidate whose result differs is reported as the vector that would
kill it.
"""

from __future__ import annotations

import importlib
import json
import resource
import signal
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.strength import isolate
from conformance.strength.mutants import Mutant

MEMORY_LIMIT = 2 * 1024 ** 3   # bytes of address space a mutant's child may add to its parent's
JUNK = (0x5EED5EED5EED5EED, 0x0123456789ABCDEF)


class _Timeout(BaseException):
    """Raised in a child by its alarm; a BaseException so that no handler swallows it."""


@dataclass
class Verdict:
    mutant: str
    status: str                          # killed, survived, equivalent
    how: str = ""                        # vector, crash, timeout, import, runner
    killers: list[str] = field(default_factory=list)   # killing vector ids (first one with fail-fast)
    detail: str = ""
    seconds: float = 0.0
    shortest: dict[str, Any] | None = None  # the shortest candidate that kills a survivor

    def to_json(self) -> dict[str, Any]:
        return {"mutant": self.mutant, "status": self.status, "how": self.how, "killers": self.killers,
                "detail": self.detail, "seconds": round(self.seconds, 3), "shortest": self.shortest}


@dataclass
class Plan:
    """What every child inherits: the mutants, the vectors and candidates, the settings."""

    mutants: Sequence[Mutant]
    vectors: Sequence[Mapping[str, Any]]
    version: str                             # the spec version of the corpus: every run is under it
    candidates: Sequence[Mapping[str, Any]] = ()
    exhaustive: frozenset[str] = frozenset()   # mutant ids whose every killer is wanted
    timeout: float = 120.0
    traced: Sequence[tuple[Mapping[str, Any], str]] = ()   # (vector, the reference's trace)


_PLAN: Plan | None = None  # set in the parent before forking; children read it


def set_plan(plan: Plan) -> None:
    global _PLAN
    _PLAN = plan


def _address_space() -> int:
    """Bytes of address space this process has mapped (0 where /proc does not say). A forked
    child starts with its parent's: thread stacks and malloc arenas of threads long gone, a
    JIT's reservations. The bound is on what the mutant adds to it, so that a verdict never
    depends on what the parent process did before (a bound on the total left deep call chains
    without memory once the parent had grown past it, and killed correct code)."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _alarm(signum, frame):
    raise _Timeout()


def prescreen(index: int) -> dict[str, Any]:
    """Run in a child: apply mutant ``index`` of the plan and run the corpus against it."""
    plan = _PLAN
    assert plan is not None     # set before the fork
    mutant = plan.mutants[index]
    started = time.perf_counter()
    try:
        limit = _address_space() + MEMORY_LIMIT
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):
        pass
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, plan.timeout)
    try:
        verdict = _prescreen(mutant, plan, mutant.id in plan.exhaustive)
    except _Timeout:
        verdict = Verdict(mutant.id, "killed", "timeout", detail=f"still running after {plan.timeout:g} s (wall-clock safety net)")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    verdict.seconds = time.perf_counter() - started
    return verdict.to_json()


def _prescreen(mutant: Mutant, plan: Plan, exhaustive: bool) -> Verdict:
    try:
        isolate.install(mutant)
        run_reference = isolate.run_reference()
    except Exception as err:  # noqa: BLE001 - a mutant that does not even import is killed
        return Verdict(mutant.id, "killed", "import", detail=f"{type(err).__name__}: {err}"[:200])
    killers, how, detail = [], "", ""
    for vector in _likely_killers_first(mutant, plan.vectors):
        try:
            got = run_reference(vector["input"], plan.version).to_json()
        except Exception as err:  # noqa: BLE001 - execute never raises; a mutant's may
            got, problem = None, f"{type(err).__name__}: {err}"[:200]
        else:
            problem = ""
        if got != vector["expected"]["result"]:
            killers.append(vector["id"])
            if not how:
                how, detail = ("crash", problem) if problem else ("vector", _first_difference(vector["expected"]["result"], got))
            if not exhaustive:
                break
    if killers:
        return Verdict(mutant.id, "killed", how, killers, detail)
    killer = _trace_killer(plan.traced, plan.version)
    if killer:
        return Verdict(mutant.id, "killed", "trace", [killer[0]], killer[1])
    verdict = Verdict(mutant.id, "survived")
    verdict.shortest = _shortest(run_reference, plan.candidates, plan.version)
    return verdict


TRACED_SUFFIXES = ("/happy", "/junk_beneath")


def reference_traces(vectors: Sequence[Mapping[str, Any]], version: str) -> list[tuple[Mapping[str, Any], str]]:
    """The traced pass's vectors with the reference's native trace (chapter 11.5.5): every
    instruction's happy and junk_beneath vectors, those about segments, and the call vectors.
    A mutant whose results all agree is run on these traced, and a different trace, or a
    traced result that differs from the untraced one, kills it."""
    import io

    from conformance.corpus.vector import run_reference
    from reference_vm.trace import JsonLinesTracer

    out = []
    for v in vectors:
        if v["id"].endswith(TRACED_SUFFIXES) or "segment" in v["tags"]["categories"] or v["id"].startswith("call/"):
            buffer = io.StringIO()
            run_reference(v["input"], version, JsonLinesTracer(buffer))
            out.append((v, buffer.getvalue()))
    return out


def _trace_killer(traced, version: str) -> tuple[str, str] | None:
    if not traced:
        return None
    import io
    trace = importlib.import_module("reference_vm.trace")
    run_reference = isolate.run_reference()
    for vector, expected in traced:
        tracer = trace.JsonLinesTracer(io.StringIO())
        try:
            got = run_reference(vector["input"], version, tracer).to_json()
        except Exception as err:  # noqa: BLE001
            return vector["id"], f"traced run raised {type(err).__name__}"
        if got != vector["expected"]["result"]:
            return vector["id"], "traced result: " + _first_difference(vector["expected"]["result"], got)
        if tracer.out.getvalue() != expected:
            a, b = expected.splitlines(), tracer.out.getvalue().splitlines()
            step = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            return vector["id"], f"trace differs at step {step}"
    return None


def _likely_killers_first(mutant: Mutant, vectors):
    """The vectors of a handler module's own group first (a fail-fast run ends sooner); the
    order changes which killer is named first, never whether the mutant is killed."""
    if not mutant.module.startswith("instructions/"):
        return vectors
    group = mutant.module.removeprefix("instructions/").removesuffix(".py") + "/"
    return [v for v in vectors if v["id"].startswith(group)] + [v for v in vectors if not v["id"].startswith(group)]


def _first_difference(expected: Mapping[str, Any], got: Mapping[str, Any] | None) -> str:
    if got is None:
        return "no result"
    for key in sorted(set(expected) | set(got)):
        if expected.get(key) != got.get(key):
            return f"{key}: expected {json.dumps(expected.get(key))[:80]}, got {json.dumps(got.get(key))[:80]}"
    return ""


def _shortest(run_reference, candidates, version: str) -> dict[str, Any] | None:
    best = None
    for candidate in candidates:
        try:
            got = run_reference(candidate["input"], version).to_json()
        except Exception:  # noqa: BLE001
            got = None
        if got != candidate["expected"]:
            key = (candidate["size"], candidate["id"])
            if best is None or key < (best["size"], best["id"]):
                best = {"id": candidate["id"], "size": candidate["size"], "source": candidate["source"],
                        "difference": _first_difference(candidate["expected"], got)}
    return best


def candidates(version: str, limit: int | None = None) -> list[dict[str, Any]]:
    """Vectors of spec ``version`` that might kill a survivor, with the reference's results:
    every definition valid in it with assembly source, run again with unrelated words beneath
    its stack, and seeded random programs of the version and of a seed the corpus does not use.
    Size is the entry code's length in bytes."""
    from conformance.corpus import random_source
    from conformance.corpus.definitions import all_cases
    from conformance.corpus.vector import input_of, run_reference

    out = []
    pool = []
    for case in all_cases():
        if isinstance(case.code, str) and case.deploy_entry and case.valid_in(version):
            junk = "".join(f"push {w}\n" for w in JUNK)
            pool.append(replace(case, id=f"{case.id}+junk_beneath", code=junk + case.code))
    pool.extend(random_source.programs(random_source.SEED + 1, 200, version))
    for case in pool[:limit]:
        try:
            vector_input = input_of(case)
        except Exception:  # noqa: BLE001 - a variant that does not assemble is no candidate
            continue
        code = vector_input["pre_state"]["contracts"].get(hex(case.to), {}).get("code", "0x")
        out.append({"id": case.id, "input": vector_input, "expected": run_reference(vector_input, version).to_json(),
                    "size": (len(code) - 2) // 2,
                    "source": case.code if isinstance(case.code, str) else "0x" + case.code.hex()})
    return out


def confirm(mutant: Mutant, vectors: Sequence[Mapping[str, Any]], timeout: float, version: str) -> Verdict | None:
    """Run the corpus through the mutant's adapter with the conformance runner. None when the
    runner passes it too (a confirmed survivor), else the verdict of the runner's kill."""
    import shlex
    import sys

    from conformance.run.process import Settings
    from conformance.run.suite import Options, run_suite

    with tempfile.TemporaryDirectory(prefix="rtwo-strength-") as tmp:
        path = Path(tmp) / "mutant.json"
        path.write_text(json.dumps(mutant.to_json()), encoding="utf-8")
        command = shlex.join([sys.executable, "-m", "conformance.strength.adapter", str(path)])
        result = run_suite([command], list(vectors), [], Options(repeat=0, max_traces=0,
                                                                   settings=Settings(version, workers=1,
                                                                                     timeout=timeout)))
    (run,) = result.runs
    if run.ok:
        return None
    failed = sorted(vid for vid, o in run.outcomes.items() if o.failed)
    return Verdict(mutant.id, "killed", "runner", failed[:1],
                   "; ".join(run.issues)[:200] or f"{len(failed)} vectors fail through the adapter")
