"""Speed of the whole proof suite, as a ratio to a plain CPython loop timed in the same run.

    python benchmarks/proofs_benchmark.py            # ratio (target <= 30), CPU estimate, slowest rows
    python benchmarks/proofs_benchmark.py --budgets  # also the most work units any claim set spent

The reference workload is ``a = (a*31 + i) & (2**64-1)`` over 2*10^7 iterations (best of 3),
so the ratio carries over between machines; the suite is ``rtwo-vm prove`` in full (every
theorem at every width it is registered at, the agreement checks, both cores). The verdicts
do not depend on the timing: budgets are solver work units (proofs/budgets.toml).
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ITERATIONS = 2 * 10**7
TARGET = 30


def loop_seconds(repeat: int = 3) -> tuple[float, float]:
    """Best wall and best CPU seconds of the reference loop."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeat):
        start, cpu = time.perf_counter(), time.process_time()
        a = 0
        for i in range(ITERATIONS):
            a = (a * 31 + i) & (2**64 - 1)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - cpu)
    return best, best_cpu


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished children."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budgets", action="store_true",
                        help="print the largest work units a row spent per configuration")
    args = parser.parse_args()
    from proofs import versions
    from proofs.runner import Options, run_suite
    from proofs.solvers import load

    loop, loop_cpu = loop_seconds()
    start, cpu = time.perf_counter(), cpu_seconds()
    rows = run_suite(Options(version=versions.newest(), jobs=args.jobs))
    suite = time.perf_counter() - start
    suite_cpu = cpu_seconds() - cpu
    statuses: defaultdict[str, int] = defaultdict(int)
    for r in rows:
        statuses[r["status"]] += 1
    print(f"plain CPython loop ({ITERATIONS:,} iterations, best of 3): {loop:.2f} s wall, "
          f"{loop_cpu:.2f} s CPU")
    print(f"proof suite: {len(rows)} rows in {suite:.1f} s wall, {suite_cpu:.1f} s CPU, "
          f"{args.jobs} jobs ({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})")
    ratio = suite / loop
    print(f"ratio suite / loop: {ratio:.1f} (target <= {TARGET}: "
          f"{'met' if ratio <= TARGET else 'NOT met'})")
    # On a busy machine the wall clock measures the neighbours too: CPU time spread over
    # the jobs estimates what the wall ratio would be on a quiet machine.
    print(f"CPU estimate: suite CPU / {args.jobs} jobs / loop CPU = "
          f"{suite_cpu / args.jobs / loop_cpu:.1f} (what the ratio is when the cores are free)")
    print("ten slowest rows:")
    for r in sorted(rows, key=lambda r: -r["seconds"])[:10]:
        print(f"  {r['seconds']:7.2f} s  {r['theorem']} {r['opcode']} w{r['width']}  {r['status']}")
    by_theorem: defaultdict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_theorem[r["theorem"]].append(r["seconds"])
    print("theorems by total seconds (rows, total, share of the suite's row seconds):")
    total = sum(r["seconds"] for r in rows) or 1.0
    for name, secs in sorted(by_theorem.items(), key=lambda kv: -sum(kv[1]))[:12]:
        print(f"  {sum(secs):7.1f} s  {len(secs):4} rows  {100 * sum(secs) / total:4.1f}%  {name}")
    if args.budgets:
        most: dict[str, int] = defaultdict(int)
        for r in rows:
            for name, used in r.get("resources", {}).items():
                most[name] = max(most[name], used)
        configs = load().configs
        print("largest work units of one row (all its claims) per configuration, and the "
              "per-claim limit:")
        for name, used in sorted(most.items()):
            print(f"  {name:18} {used:>14,}   rlimit {configs[name].rlimit:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
