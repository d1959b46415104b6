"""Speed of the whole proof suite, as a ratio to a plain CPython loop timed in the same run.

    python benchmarks/proofs_benchmark.py            # ratio (target <= 30), CPU estimate, slowest rows
    python benchmarks/proofs_benchmark.py --budgets  # also the most work units any claim set spent
    python benchmarks/proofs_benchmark.py --versions # proved once: 1.0 alone, then 1.1 on its cache

``--versions`` times the theorems of 1.0 with an empty verdict cache (proofs/cache.py, in a
temporary folder), then those of 1.1 with the cache 1.0 left, then 1.1 alone on an empty
cache, and prints (1.0 + 1.1) over each version alone (target <= 1.6: what 1.1 shares with
1.0 is not solved again; 1.1 has more rows than 1.0, its new instructions' own), in wall
and in CPU seconds (on a shared machine the CPU ratio is the steadier figure), and the
answers taken from the cache. ``--agreement`` adds the agreement checks (not SMT queries of
the suite: never cached).

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


def proved_once(jobs: int, agreement: bool) -> int:
    """Proved once: 1.0 alone, then 1.1 on the cache 1.0 left (see the module docstring)."""
    import tempfile
    from proofs.runner import Options, run_suite
    timed, units = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for version, cache in (("1.0", "cache"), ("1.1", "cache"), ("1.1 alone", "fresh")):
            start, cpu = time.perf_counter(), cpu_seconds()
            rows = run_suite(Options(version=version.split()[0], jobs=jobs, agreement=agreement,
                                     cache_dir=os.path.join(tmp, cache),
                                     cache_key=os.path.join(tmp, "cache.key")))
            wall, used = time.perf_counter() - start, cpu_seconds() - cpu
            got: defaultdict[str, int] = defaultdict(int)
            for r in rows:
                for k, v in r.get("cache", {}).items():
                    got[k] += v
            timed[version] = (wall, used)
            units[version] = (got["units_z3"], got["units_cvc5"])
            failed = sum(r["status"] not in ("proved", "agrees", "informative") for r in rows)
            print(f"{version}: {len(rows)} rows ({failed} not proved) in {wall:.1f} s wall, "
                  f"{used:.1f} s CPU; {got['hits']} answers from the cache, {got['solved']} "
                  f"solved", flush=True)
    for k, solver in enumerate(("z3", "cvc5")):
        u0, u1 = units["1.0"][k], units["1.1"][k]
        print(f"{solver} work units solved: 1.0 {u0:,}, then 1.1 {u1:,}: (1.0 + 1.1) / 1.0 = "
              f"{(u0 + u1) / max(u0, 1):.2f} (does not depend on load)")
    (w0, c0), (w1, c1), (wa, ca) = timed["1.0"], timed["1.1"], timed["1.1 alone"]
    for what, one, both, alone in (("wall", w0, w0 + w1, wa), ("CPU", c0, c0 + c1, ca)):
        for name, base in (("1.0 alone", one), ("1.1 alone", alone)):
            ratio = both / base
            print(f"1.0 + 1.1 / {name} ({what}): {both:.1f} / {base:.1f} = {ratio:.2f} "
                  f"(target <= 1.6: {'met' if ratio <= 1.6 else 'NOT met'})")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budgets", action="store_true",
                        help="print the largest work units a row spent per configuration")
    parser.add_argument("--versions", action="store_true",
                        help="proved once: 1.0 alone, then 1.1 on the verdict cache 1.0 left")
    parser.add_argument("--agreement", action="store_true",
                        help="with --versions: the agreement checks too")
    args = parser.parse_args()
    if args.versions:
        return proved_once(args.jobs, args.agreement)
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
