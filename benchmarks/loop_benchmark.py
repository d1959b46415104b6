"""Interpreter speed on the loop workload (benchmarks/loop.rasm).

    acc = (acc * 31 + i) mod 2^64; i += 1 while i < N; return acc

Prints instructions per second and nanoseconds per loop iteration (best of several runs) for
the reference interpreter, the compiled engine (compiled_vm) and the native tier (native_vm,
when the native extra is installed), each warm (its first run, which compiles the loop, is
timed separately, and for the native tier the time LLVM took to lower, optimise and compile
is shown apart), and each one's time as a ratio to the same loop written in plain CPython and
timed in the same process. With wasmtime installed (``pip install wasmtime``), the same loop
as WebAssembly is the anchor row (its module compiled once, outside the timing). The
instruction count is measured, not assumed: two short traced runs give the instructions per
iteration and the fixed overhead, and every result is checked against plain Python.

Usage: python benchmarks/loop_benchmark.py [N] [REPEATS] [SPEC_VERSION]

The loop is a container of, and runs under, SPEC_VERSION (default: the newest version).
"""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import Callable

import compiled_vm
import spec
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute
from reference_vm.result import ExecutionResult

VERSION = sys.argv[3] if len(sys.argv) > 3 else spec.latest()
CODE = assemble((Path(__file__).parent / "loop.rasm").read_text(), VERSION)
ADDRESS = 0x100
WAT = """(module (func (export "loop") (param $n i64) (result i64) (local $acc i64) (local $i i64)
  (loop $next
    (local.set $acc (i64.add (i64.mul (local.get $acc) (i64.const 31)) (local.get $i)))
    (local.set $i (i64.add (local.get $i) (i64.const 1)))
    (br_if $next (i64.lt_u (local.get $i) (local.get $n))))
  (local.get $acc)))"""


class _Counter:
    def __init__(self) -> None:
        self.steps = 0

    def step(self, frame, decoded) -> None:
        self.steps += 1


def _run(n: int, tracer=None, engine=execute):
    state = WorldState({ADDRESS: Contract(CODE)})
    return engine(state, Message(ADDRESS, 1, n.to_bytes(8, "little")),
                  limits=Limits(compute=10**12), version=VERSION, tracer=tracer)


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


def native_engine():
    """A native engine with its own code cache (so its first run compiles), which adds up
    the time its builds take; None without the native extra."""
    import native_vm
    if native_vm.missing():
        return None
    from native_vm.cache import NativeCache

    class Timed(native_vm.Engine):
        build_seconds = 0.0

        def build(self, plan):
            start = time.perf_counter()
            try:
                return super().build(plan)
            finally:
                self.build_seconds += time.perf_counter() - start

    return Timed(cache=NativeCache())


def wasmtime_loop():
    """The loop as a wasmtime function of n, or None when wasmtime is not installed."""
    try:
        import wasmtime
    except ImportError:
        return None
    store = wasmtime.Store()
    instance = wasmtime.Instance(store, wasmtime.Module(store.engine, WAT), [])
    function = instance.exports(store)["loop"]
    return lambda n: function(store, n) % 2**64


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    instructions = instructions_for(n)
    want = expected(n)
    engines = {"compiled": compiled_vm.Engine()}
    native = native_engine()
    if native is not None:
        engines["native"] = native
    firsts = {}
    for name, engine in engines.items():
        start = time.perf_counter()
        firsts[name] = (_run(n, engine=engine.execute), time.perf_counter() - start)
    rows: dict[str, Callable[[], object]] = {"plain CPython": lambda: expected(n),
                                             "reference": lambda: _run(n)}
    for name, engine in engines.items():
        rows[name] = functools.partial(_run, n, engine=engine.execute)
    wasm = wasmtime_loop()
    if wasm is not None:
        rows["wasmtime"] = lambda: wasm(n)
    best = dict.fromkeys(rows, float("inf"))
    first_result = firsts["compiled"][0]
    for _ in range(repeats):   # interleaved, so that a change of load hits every row alike
        for name, run in rows.items():
            start = time.perf_counter()
            out = run()
            best[name] = min(best[name], time.perf_counter() - start)
            if name in ("plain CPython", "wasmtime"):
                assert out == want, name
            else:
                assert isinstance(out, ExecutionResult)
                assert out.ok and int.from_bytes(out.output, "little") == want, out
                assert out.canonical_json() == first_result.canonical_json()
    plain = best["plain CPython"]
    print(f"loop N={n}, spec {VERSION}: {instructions} instructions, best of {repeats} (interleaved)")
    print(f"  {'plain CPython':14} {plain:7.3f} s {plain / n * 1e9:6.1f} ns/iteration   1.00x")
    for name in [r for r in rows if r != "plain CPython"]:
        t = best[name]
        rate = "" if name == "wasmtime" else f"   {instructions / t / 1e6:8.2f} million instructions/s"
        print(f"  {name:14} {t:7.4f} s {t / n * 1e9:6.1f} ns/iteration {t / plain:7.3f}x{rate}")
    for name, (result, seconds) in firsts.items():
        assert result.canonical_json() == first_result.canonical_json()
        line = f"  {name}, first run (interprets, then compiles the loop): {seconds:.3f} s = {seconds / plain:.2f}x plain"
        if name == "native":
            line += f", of which LLVM (lower, optimise, JIT) {native.build_seconds:.3f} s"
        print(line)
    if native is None:
        print("  native: not installed (pip install '.[native]')")
    if wasm is None:
        print("  wasmtime: not installed (pip install wasmtime)")


if __name__ == "__main__":
    main()
