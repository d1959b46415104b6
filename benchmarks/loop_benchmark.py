"""Interpreter speed on the loop workload (benchmarks/loop.rasm).

    acc = (acc * 31 + i) mod 2^64; i += 1 while i < N; return acc

Prints instructions per second and nanoseconds per loop iteration (best of several runs).
The instruction count is measured, not assumed: two short traced runs give the instructions
per iteration and the fixed overhead, and the result is checked against plain Python.

Usage: python benchmarks/loop_benchmark.py [N] [REPEATS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from reference_vm import Contract, Limits, Message, WorldState, assemble, execute

CODE = assemble((Path(__file__).parent / "loop.rasm").read_text())
ADDRESS = 0x100


class _Counter:
    def __init__(self) -> None:
        self.steps = 0

    def step(self, frame, decoded) -> None:
        self.steps += 1


def _run(n: int, tracer=None):
    state = WorldState({ADDRESS: Contract(CODE)})
    return execute(state, Message(ADDRESS, 1, n.to_bytes(8, "little")),
                   limits=Limits(compute=10**12), tracer=tracer)


def instructions_for(n: int) -> int:
    counts = []
    for k in (10, 20):
        counter = _Counter()
        _run(k, counter)
        counts.append(counter.steps)
    per_iteration = (counts[1] - counts[0]) // 10
    return counts[0] - 10 * per_iteration + n * per_iteration


def expected(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 2**64
    return acc


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    instructions = instructions_for(n)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = _run(n)
        best = min(best, time.perf_counter() - start)
    assert result.ok and int.from_bytes(result.output, "little") == expected(n), result
    print(f"loop N={n}: {instructions} instructions, best of {repeats}: {best:.3f} s")
    print(f"  {instructions / best / 1e6:.2f} million instructions/s")
    print(f"  {best / n * 1e9:.0f} ns per loop iteration")


if __name__ == "__main__":
    main()
