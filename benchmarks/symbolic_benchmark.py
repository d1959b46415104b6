"""Speed of `rtwo-vm symbolic` and `rtwo-vm equivalence`, as ratios to a plain CPython loop
timed in the same run.

    python benchmarks/symbolic_benchmark.py           # examples, then programs of growing size
    python benchmarks/symbolic_benchmark.py --quick   # fewer sizes

The reference workload is ``a = (a*31 + i) & (2**64-1)`` over 2*10^6 iterations (best of 3),
as in the other benchmarks, so the ratios carry over between machines. For each workload:
the paths explored, the seconds to explore them (paths per second), and the seconds to each
verdict (exploration, a witness of every path replayed on the reference, then each property),
each also as a ratio to the loop. The generated programs grow in two directions: length (a
chain of K guarded steps on call data: K + 1 paths, each K steps longer) and loop bound (the
benchmark loop of benchmarks/loop.rasm with its trip count in the call data). Verdicts do not
depend on the timing (solver budgets are work units, proofs/budgets.toml).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

ROOT = Path(__file__).resolve().parents[1]
ITERATIONS = 2 * 10**6


def loop_seconds(repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        a = 0
        for i in range(ITERATIONS):
            a = (a * 31 + i) & (2**64 - 1)
        best = min(best, time.perf_counter() - start)
    return best


def chain(k: int) -> str:
    """K guarded steps: step j reverts when call data byte j is 0xff, else adds it to an
    accumulator; K + 1 paths, the last one K steps long."""
    lines = ["    push 0"]
    for j in range(k):
        lines += [f"    push {j}", "    calldataload", "    push 0xff", "    and", "    dup1",
                  "    push 0xff", "    eq", "    jumpi fail", "    add"]
    lines += ["    push 0", "    swap1", "    mstore", "    push 0", "    push 8", "    return",
              "fail:", "    push 0", "    push 0", "    revert"]
    return "\n".join(lines) + "\n"


def measure(label: str, setup, props, loop: float) -> None:
    from proofs.symbolic import explore
    from proofs.symbolic.verdicts import check
    from proofs.symbolic.witness import replay

    start = time.perf_counter()
    x = explore(setup)
    explored = time.perf_counter() - start
    assert x.solver is not None              # explore made one
    statuses = [replay(x, end, x.solver).status for end in x.ends]
    replayed = time.perf_counter() - start
    agree = sum(s == "agrees" for s in statuses)
    rate = len(x.ends) / explored if explored else float("inf")
    print(f"{label:<44} {len(x.ends):>5} {len(x.cuts):>4} {explored:8.2f} {rate:9.1f} "
          f"{explored / loop:8.2f} {replayed:8.2f} {replayed / loop:8.2f}  {agree}/{len(x.ends)}")
    for p in props:
        v = check(x, p)
        done = time.perf_counter() - start
        print(f"    verdict {p.name}: {v.verdict} after {done:.2f} s (ratio {done / loop:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer program sizes")
    args = parser.parse_args()
    from proofs import versions
    from proofs.symbolic import Setup as SetupOf
    from proofs.symbolic.equivalence import compare
    from proofs.symbolic.properties import NO_FAILURE
    from proofs.symbolic.userfile import load_file
    from reference_vm import Limits, assemble

    version = versions.newest(versions.SYMBOLIC)

    def code(path: str) -> bytes:
        return assemble((ROOT / path).read_text(), version)

    def Setup(*args, **kwargs):  # noqa: N802 - the setups of the newest version with models
        return SetupOf(*args, version=version, **kwargs)

    loop = loop_seconds()
    print(f"plain CPython loop ({ITERATIONS:,} iterations, best of 3): {loop:.3f} s")
    print(f"{'workload':<44} {'paths':>5} {'cuts':>4} {'explore':>8} {'paths/s':>9} "
          f"{'ratio':>8} {'+replay':>8} {'ratio':>8}  witnesses")
    ex = lambda name: load_file(ROOT / "examples" / name)  # noqa: E731
    measure("counter.rasm", Setup(0x100, {0x100: code("examples/counter.rasm")}),
            [NO_FAILURE, *ex("counter_properties.py")], loop)
    measure("token.rasm (call data <= 16 bytes)",
            Setup(0x100, {0x100: code("examples/token.rasm")}, max_calldata=16),
            [NO_FAILURE, *ex("token_properties.py")], loop)
    measure("proxy.rasm + counter.rasm at 0x101",
            Setup(0x100, {0x100: code("examples/proxy.rasm"),
                          0x101: code("examples/counter.rasm")}, limits=Limits(compute=600)),
            ex("proxy_properties.py"), loop)
    measure("hashing.rasm (call data <= 8 bytes)",
            Setup(0x100, {0x100: code("examples/hashing.rasm")}, max_calldata=8),
            [NO_FAILURE], loop)
    for other, fields in (("max-optimised.rasm", ("status", "output", "storage", "events")),
                          ("max-unsigned.rasm", ("status", "output", "storage", "events"))):
        start = time.perf_counter()
        result = compare(Setup(0x100, {0x100: code("examples/max.rasm")}),
                         Setup(0x100, {0x100: code(f"examples/{other}")}), fields)
        took = time.perf_counter() - start
        print(f"equivalence max.rasm {other:<23} {result.verdict} after {took:.2f} s "
              f"(ratio {took / loop:.2f}; {result.pairs} pairs, {result.queries} queries)")
    print("program length (K guarded steps on call data, K + 1 paths):")
    for k in ((2, 8) if args.quick else (2, 4, 8, 16, 32)):
        measure(f"  chain K={k} ({len(chain(k).splitlines())} lines)",
                Setup(0x100, {0x100: assemble(chain(k), version)}, max_calldata=k), [NO_FAILURE], loop)
    print("loop bound (benchmarks/loop.rasm, trip count = call data word 0):")
    for bound in ((1, 4) if args.quick else (1, 2, 4, 8, 16)):
        measure(f"  loop bound {bound}",
                Setup(0x100, {0x100: code("benchmarks/loop.rasm")}, max_calldata=8,
                      loop_bound=bound), [NO_FAILURE], loop)
    print("a constant trip count (no forks: one path, every iteration stepped):")
    for n in ((100,) if args.quick else (100, 400)):
        measure(f"  loop.rasm, N = {n}",
                Setup(0x100, {0x100: code("benchmarks/loop.rasm")},
                      call_data=n.to_bytes(8, "little")), [NO_FAILURE], loop)
    return 0


if __name__ == "__main__":
    sys.exit(main())
