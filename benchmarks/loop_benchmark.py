"""Interpreter speed on the loop workload (benchmarks/loop.rasm).

    acc = (acc * 31 + i) mod 2^64; i += 1 while i < N; return acc

Prints instructions per second and nanoseconds per loop iteration (best of several runs) for
the reference interpreter and for the compiled engine (compiled_vm, warm: its first run, which
compiles the loop, is timed separately), and each one's time as a ratio to the same loop
written in plain CPython and timed in the same process. The instruction count is measured,
not assumed: two short traced runs give the instructions per iteration and the fixed
overhead, and every result is checked against plain Python.

Usage: python benchmarks/loop_benchmark.py [N] [REPEATS]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import compiled_vm
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute

CODE = assemble((Path(__file__).parent / "loop.rasm").read_text())
ADDRESS = 0x100


class _Counter:
    def __init__(self) -> None:
        self.steps = 0

    def step(self, frame, decoded) -> None:
        self.steps += 1


def _run(n: int, tracer=None, engine=execute):
    state = WorldState({ADDRESS: Contract(CODE)})
    return engine(state, Message(ADDRESS, 1, n.to_bytes(8, "little")),
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
    want = expected(n)
    engine = compiled_vm.Engine()
    start = time.perf_counter()
    cold = _run(n, engine=engine.execute)
    cold_time = time.perf_counter() - start
    rows = {"plain CPython": lambda: expected(n), "reference": lambda: _run(n),
            "compiled": lambda: _run(n, engine=engine.execute)}
    best = dict.fromkeys(rows, float("inf"))
    for _ in range(repeats):   # interleaved, so that a change of load hits every row alike
        for name, run in rows.items():
            start = time.perf_counter()
            out = run()
            best[name] = min(best[name], time.perf_counter() - start)
            if name == "plain CPython":
                assert out == want
            else:
                assert out.ok and int.from_bytes(out.output, "little") == want, out
                assert out.canonical_json() == cold.canonical_json()
    plain = best["plain CPython"]
    print(f"loop N={n}: {instructions} instructions, best of {repeats} (interleaved)")
    print(f"  {'plain CPython':14} {plain:7.3f} s {plain / n * 1e9:6.0f} ns/iteration   1.00x")
    for name in ("reference", "compiled"):
        t = best[name]
        print(f"  {name:14} {t:7.3f} s {t / n * 1e9:6.0f} ns/iteration {t / plain:6.2f}x"
              f"   {instructions / t / 1e6:7.2f} million instructions/s")
    print(f"  compiled, first run (interprets, then compiles the loop): {cold_time:.3f} s"
          f" = {cold_time / plain:.2f}x plain")


if __name__ == "__main__":
    main()
