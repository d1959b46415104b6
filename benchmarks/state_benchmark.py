"""Call latency against the size of the untouched state (issue 13, item 3).

A call reads only what it touches: the counter contract reads and writes one slot, while the
called contract holds N - 1 other slots it never touches. Prints, for each N, the per-call
latency of the pure interpreter (``execute`` against one WorldState) and of the runtime
(``Runtime.call`` on a SQLite file: all ten stages, recorded durably), and each as a ratio to
the smallest N. The goal is a ratio of at most 1.2 at 200,000 slots against 10.

Usage: python benchmarks/state_benchmark.py [CALLS] [SIZES...]   (default: 200 10 10000 200000)
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

import spec
from reference_vm import Contract, Message, WorldState, assemble, execute
from rtwo_vm.runtime import CallRequest, Runtime

ROOT = Path(__file__).resolve().parent.parent
VERSION = spec.latest()   # the version the runtime deploys under when none is given
CODE = assemble((ROOT / "examples" / "counter.rasm").read_text(), VERSION)
ADDRESS = 0x100


def storage(n: int) -> dict[int, int]:
    """Slot 0 (the counter) and n - 1 untouched slots."""
    return {0: 41, **{k: k for k in range(1, n)}}


def per_call(action, calls: int, clock=time.perf_counter) -> float:
    """Median seconds of one call, over ``calls`` calls in batches of 10."""
    batches = []
    for _ in range(max(1, calls // 10)):
        start = clock()
        for _ in range(10):
            action()
        batches.append((clock() - start) / 10)
    return statistics.median(batches)


def interpreter(n: int, calls: int) -> float:
    state = WorldState({ADDRESS: Contract(CODE, storage(n))})
    message = Message(ADDRESS, 1)
    assert execute(state, message, version=VERSION).ok
    return per_call(lambda: execute(state, message, version=VERSION), calls)


def runtime(n: int, calls: int) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one Runtime.call; the wall time includes the fsync of
    each durable commit, so it is the noisier of the two on a busy machine."""
    with tempfile.TemporaryDirectory() as tmp:
        with Runtime(Path(tmp) / "bench.db") as rt:
            rt.deploy(CODE, ADDRESS, storage(n))
            rt.store.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # start from a clean log
            request = CallRequest(to=ADDRESS, caller=1)
            assert rt.call(request).result.execution_status == "success"
            cpu = per_call(lambda: rt.call(request), calls, time.process_time)
            return cpu, per_call(lambda: rt.call(request), calls)


def main(argv: list[str]) -> int:
    calls = int(argv[0]) if argv else 200
    sizes = [int(a) for a in argv[1:]] or [10, 10_000, 200_000]
    print(f"{'slots':>9} {'execute us':>11} {'ratio':>6} {'call CPU ms':>12} {'ratio':>6} "
          f"{'call wall ms':>13} {'ratio':>6}")
    base = None
    for n in sizes:
        pure, (cpu, wall) = interpreter(n, calls), runtime(n, calls)
        base = base or (pure, cpu, wall)
        print(f"{n:>9} {pure * 1e6:>11.1f} {pure / base[0]:>6.2f} {cpu * 1e3:>12.3f} "
              f"{cpu / base[1]:>6.2f} {wall * 1e3:>13.3f} {wall / base[2]:>6.2f}")
    print("ratio: latency against the smallest state (goal: <= 1.2 at 200,000 slots)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
