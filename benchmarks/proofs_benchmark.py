"""Speed of the whole proof suite, as a ratio to a plain CPython loop timed in the same run.

    python benchmarks/proofs_benchmark.py            # ratio (target <= 30) and slowest rows
    python benchmarks/proofs_benchmark.py --budgets  # also the most work units any claim set spent

The reference workload is ``a = (a*31 + i) & (2**64-1)`` over 2*10^7 iterations (best of 3),
so the ratio carries over between machines; the suite is ``rtwo-vm prove`` in full (every
theorem at every width it is registered at, the agreement checks, both cores). The verdicts
do not depend on the timing: budgets are solver work units (proofs/budgets.toml).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ITERATIONS = 2 * 10**7
TARGET = 30


def loop_seconds(repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        a = 0
        for i in range(ITERATIONS):
            a = (a * 31 + i) & (2**64 - 1)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budgets", action="store_true",
                        help="print the largest work units a row spent per configuration")
    args = parser.parse_args()
    from proofs.runner import Options, run_suite
    from proofs.solvers import load

    loop = loop_seconds()
    start = time.perf_counter()
    rows = run_suite(Options(jobs=args.jobs))
    suite = time.perf_counter() - start
    statuses = defaultdict(int)
    for r in rows:
        statuses[r["status"]] += 1
    print(f"plain CPython loop ({ITERATIONS:,} iterations, best of 3): {loop:.2f} s")
    print(f"proof suite: {len(rows)} rows in {suite:.1f} s wall, {args.jobs} jobs "
          f"({', '.join(f'{k} {v}' for k, v in sorted(statuses.items()))})")
    ratio = suite / loop
    print(f"ratio suite / loop: {ratio:.1f} (target <= {TARGET}: "
          f"{'met' if ratio <= TARGET else 'NOT met'})")
    print("ten slowest rows:")
    for r in sorted(rows, key=lambda r: -r["seconds"])[:10]:
        print(f"  {r['seconds']:7.2f} s  {r['theorem']} {r['opcode']} w{r['width']}  {r['status']}")
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
