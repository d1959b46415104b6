"""Fuzzing speed and power: throughput, Ray scaling, time to first finding of seeded bugs.

    python benchmarks/fuzz_benchmark.py [--requests 4096] [--budget 300] [--bugs NAME,...]
                                        [--skip-ray] [--skip-bugs] [--spec-version 1.0]

Every request runs under one spec version (default 1.0, comparable with the runs before
versions; the seeded bugs are 1.0 implementations).

Prints:
  throughput  requests/s per core with the reference adapter as the implementation under test:
              requests / CPU seconds of the worker and its adapter processes (target >= 1,000),
              and the wall-clock rate of one worker
  ray         the same --runs campaign on a local Ray cluster with 1 and with 2 workers:
              requests/s of each (cluster start-up excluded) and the scaling efficiency
              rate(2) / (2 * rate(1)) — bounded by the cores: each worker runs the oracle and
              an adapter process, so 2 workers want 4 cores
  bugs        for every seeded-bug adapter of tests/fuzz_fixtures/seeded_bug_adapter.py (each
              passed the whole committed corpus when it was planted; the corpus now catches
              calldataload-offset32, memory-leak-fault, sstore-rewrite-new and
              returndata-stale, as that module's docstring says): seconds and requests to the first finding on
              one worker, the shrunk size in instructions, and whether the finding replays
              (passes the reference, fails the bug) through `rtwo-vm conformance run --dir`.
              Targets: found within 300 s, shrunk to <= 16 instructions. A request that meets
              the wall-clock limit twice is a safety-net entry (counted, never a finding).
"""

from __future__ import annotations

import argparse
import resource
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import spec  # noqa: E402
from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.fuzz.campaign import Options, run_campaign  # noqa: E402
from conformance.fuzz.feedback import corpus_cells  # noqa: E402
from conformance.fuzz.pool import corpus_seeds  # noqa: E402
from conformance.fuzz.worker import make_worker  # noqa: E402
from conformance.run.suite import reference_command  # noqa: E402

SEEDED = ROOT / "tests" / "fuzz_fixtures" / "seeded_bug_adapter.py"
THROUGHPUT_TARGET, FIND_TARGET, SIZE_TARGET = 1000, 300.0, 16


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def throughput(requests: int, version: str) -> None:
    vectors = store.load(corpus_dir(version))
    config = {"seed": 1, "impls": [reference_command()], "spec_version": version,
              "pool": [s.to_json() for s in corpus_seeds(vectors, version)], "cells": sorted(corpus_cells(vectors))}
    worker = make_worker(0, config)     # as every backend builds its workers
    worker.run({"start": 0, "count": 32, "pool_size": len(worker.pool)})      # warm-up
    self0, children0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    for start in range(32, 32 + requests, 32):
        worker.run({"start": start, "count": 32, "pool_size": len(worker.pool)})
    wall = time.perf_counter() - started
    worker.close()      # reaps the adapter processes, so their CPU time is counted below
    mine, theirs = cpu(resource.RUSAGE_SELF) - self0, cpu(resource.RUSAGE_CHILDREN) - children0
    used = mine + theirs
    per_core = requests / used
    print(f"throughput  {per_core:,.0f} requests/s per core (target {THROUGHPUT_TARGET:,}: "
          f"{'met' if per_core >= THROUGHPUT_TARGET else 'NOT met'}); {requests / wall:,.0f}/s wall, one worker "
          f"({used:.2f} CPU s for {requests} requests: {mine:.2f} s generating, running the oracle and "
          f"comparing, {theirs:.2f} s in the adapter processes)")


def ray_scaling(runs: int, version: str) -> None:
    try:
        import ray  # noqa: F401
    except ImportError:
        print("ray         skipped: pip install '.[distributed]'")
        return
    rates = {}
    for workers in (1, 2):
        with tempfile.TemporaryDirectory() as out:
            state = run_campaign(Options(impls=[reference_command()], out=Path(out), seed=1, runs=runs,
                                         workers=workers, ray="local", spec_version=version))
            rates[workers] = state["executions"] / state["seconds"]
    efficiency = rates[2] / (2 * rates[1])
    print(f"ray         1 worker {rates[1]:,.0f}/s, 2 workers {rates[2]:,.0f}/s: scaling efficiency "
          f"{efficiency:.0%} ({runs} requests each, local cluster)")


def bugs(names: list[str], budget: float, version: str) -> None:
    sys.path.insert(0, str(SEEDED.parent))
    import seeded_bug_adapter
    names = names or list(seeded_bug_adapter.BUGS)
    met = 0
    for name in names:
        command = shlex.join([sys.executable, str(SEEDED), "--bug", name])
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            state = run_campaign(Options(impls=[command], out=out, seed=1, seconds=budget, stop_on_finding=True,
                                         spec_version=version))
            if not state["buckets"]:
                print(f"bug {name:<24} NOT found in {state['seconds']:.0f} s ({state['executions']:,} requests)")
                continue
            first = min(state["buckets"].values(), key=lambda b: b["first_index"])
            size = (first.get("finding") or {}).get("size")
            replays = _replays(out / "findings", command)
            ok = first["first_seconds"] <= FIND_TARGET and size is not None and size <= SIZE_TARGET and replays
            met += ok
            net = state["safety_net_count"]
            print(f"bug {name:<24} found in {first['first_seconds']:6.1f} s (request {first['first_index']:,}), "
                  f"class {first['class'][:48]}, shrunk to {size} instructions, "
                  f"{'replays' if replays else 'does NOT replay'}"
                  + (f" ({net} safety-net entries: wall-clock timeouts, not findings)" if net else ""))
    print(f"bugs        {met}/{len(names)} found within {FIND_TARGET:.0f} s and shrunk to <= {SIZE_TARGET} instructions")


def _replays(findings: Path, command: str) -> bool:
    def run(*impl):
        with tempfile.TemporaryDirectory() as out:
            return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--dir", str(findings),
                                   "--out", out, "--quiet", "--repeat", "0", *impl],
                                  cwd=ROOT, capture_output=True, text=True).returncode
    return run() == 0 and run("--impl", command) == 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=4096)
    parser.add_argument("--ray-runs", type=int, default=4096)
    parser.add_argument("--budget", type=float, default=FIND_TARGET, help="seconds per seeded bug")
    parser.add_argument("--bugs", default="", help="comma-separated bug names (default: all)")
    parser.add_argument("--skip-ray", action="store_true")
    parser.add_argument("--skip-bugs", action="store_true")
    parser.add_argument("--spec-version", default="1.0", choices=spec.names())
    args = parser.parse_args()
    throughput(args.requests, args.spec_version)
    if not args.skip_ray:
        ray_scaling(args.ray_runs, args.spec_version)
    if not args.skip_bugs:
        bugs([b for b in args.bugs.split(",") if b], args.budget, args.spec_version)
    return 0


if __name__ == "__main__":
    sys.exit(main())
