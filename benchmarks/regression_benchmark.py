"""This checkout against an earlier commit: the cost of a change, as ratios.

    python benchmarks/regression_benchmark.py --against REV [--rounds 7] [--passes 3]

REV is exported with ``git archive`` into a temporary folder (the repository is not touched)
and both trees run the same measurement in child processes, alternated round by round so
that a change in the machine's load hits both alike:

  corpus-first  every 1.0 vector's request executed once by the reference interpreter, the
             first thing the child does (cold: nothing decoded or cached yet)
  corpus     the same, warm, best of the passes (the reference interpreter, then a fresh
             compiled engine, and a fresh native engine when the native extra is installed)
  corpus-each  the reference on each vector alone, warm, best of 5 x passes runs, summed:
             the steadiest figure (a pass over the whole corpus also measures how the
             machine's caches take a different order of allocations)
  loop       benchmarks/loop.rasm (N = 200,000) on the reference and on a warm compiled engine

Only 1.0 is measured, the one version both trees run. Prints each tree's best time and the
ratio this checkout / REV (1.03 = 3% slower). Run it on an idle machine: the figures of a
busy one say little.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Runs inside a child whose first sys.path entry is the tree measured; it speaks both APIs
# (before versioning: no version argument; after: version="1.0").
CHILD = r"""
import json, sys, time, inspect
from pathlib import Path
tree = Path(sys.argv[1]); passes = int(sys.argv[2])
sys.path.insert(0, str(tree))
import reference_vm, compiled_vm
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute
from conformance.corpus import store, vector
assert Path(reference_vm.__file__).resolve().is_relative_to(tree.resolve()), reference_vm.__file__
versioned = "version" in inspect.signature(execute).parameters
kw = {"version": "1.0"} if versioned else {}
if versioned:
    from conformance.constants import corpus_dir
    vectors = store.load(corpus_dir("1.0"))
    requests = [vector.request_of(v["input"], "1.0") for v in vectors]
    code = assemble((tree / "benchmarks" / "loop.rasm").read_text(), "1.0")
else:
    vectors = store.load()
    requests = [vector.request_of(v["input"]) for v in vectors]
    code = assemble((tree / "benchmarks" / "loop.rasm").read_text())
corpus = [(r.state, r.message, r.context, r.policy, r.limits) for r in requests]
loop = [(WorldState({0x100: Contract(code)}), Message(0x100, 1, (200000).to_bytes(8, "little")),
         None, None, Limits(compute=10**9))]
engines = {"reference": lambda: execute, "compiled": lambda: compiled_vm.Engine().execute}
try:
    import native_vm
    if not native_vm.missing():
        from native_vm.cache import NativeCache
        engines["native"] = lambda: native_vm.Engine(cache=NativeCache()).execute
except ImportError:
    pass
def timed(run, reqs):
    start = time.perf_counter()
    for args in reqs:
        run(*args, **kw)
    return time.perf_counter() - start
out = {"corpus-first/reference": timed(execute, corpus)}
for name, make in engines.items():
    out["corpus/" + name] = min(timed(make(), corpus) for _ in range(passes))
per_vector = 0.0
for args in corpus:
    execute(*args, **kw)
    best = float("inf")
    for _ in range(5 * passes):
        start = time.perf_counter()
        execute(*args, **kw)
        best = min(best, time.perf_counter() - start)
    per_vector += best
out["corpus-each/reference"] = per_vector
for name in ("reference", "compiled"):
    run = engines[name]()
    timed(run, loop)
    out["loop/" + name] = min(timed(run, loop) for _ in range(passes))
print(json.dumps(out))
"""


def _measure(tree: Path, passes: int) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, str(tree), str(passes)], cwd=tree,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit(f"measuring {tree} failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", required=True, help="the earlier commit (any git revision)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--passes", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rtwo-regression-") as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.against], capture_output=True,
                                 check=False)
        if archive.returncode != 0:
            raise SystemExit(f"git archive {args.against}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive.stdout, check=True)
        best: dict[str, dict[str, float]] = {"base": {}, "head": {}}
        for i in range(args.rounds):
            for name, tree in (("base", base), ("head", ROOT)) if i % 2 == 0 else (("head", ROOT), ("base", base)):
                for key, seconds in _measure(tree, args.passes).items():
                    best[name][key] = min(best[name].get(key, float("inf")), seconds)
            print(f"round {i + 1}/{args.rounds} done", file=sys.stderr)
    print(f"{'workload':<20} {args.against[:12]:>12} {'this':>12} {'this/base':>10}")
    for key in best["head"]:
        if key in best["base"]:
            b, h = best["base"][key], best["head"][key]
            print(f"{key:<20} {b * 1000:>10.1f}ms {h * 1000:>10.1f}ms {h / b:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
