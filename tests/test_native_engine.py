"""The native tier (native_vm): when regions go native, and machine code meeting every limit,
every operand edge and every instruction that leaves it exactly as the reference does.
Expectations are the reference's results or computed by hand from the spec's costs."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

import native_vm  # noqa: E402
import spec  # noqa: E402
from conftest import BASE_VERSION, returning_top  # noqa: E402
from native_vm.cache import NativeCache  # noqa: E402
from native_vm.region import NativeRegion  # noqa: E402
from test_compiled_engine import run_examples  # noqa: E402
from reference_vm import (  # noqa: E402
    Context, Contract, Limits, Message, Policy, WorldState, assemble, execute,
)
from reference_vm.trace import JsonLinesTracer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
V = BASE_VERSION
LOOP = assemble((ROOT / "benchmarks" / "loop.rasm").read_text(), V)
TABLE = spec.load(V)
PAGE_COST = TABLE.schedule["memory"]["page_cost"]
ENTRY, OTHER = 0x100, 0x101
MASK = 2**64 - 1
MIN = 1 << 63


def eager() -> native_vm.Engine:
    """Every region the native tier can take, to machine code the first time it runs."""
    return native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1, per_handler=0)


def cost(*mnemonics: str) -> int:
    return sum(TABLE.by_mnemonic[m].cost for m in mnemonics)


PREFIX = cost("PUSH1", "CALLDATALOAD", "PUSH1", "PUSH1")
BODY = cost("SWAP1", "PUSH1", "MUL", "DUP2", "ADD", "SWAP1", "PUSH1", "ADD", "DUP1", "DUP4",
            "LTU", "JUMPI")
TAIL = cost("POP", "PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN") + PAGE_COST


def loop_value(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc * 31 + i) % 2**64
    return acc


def run_loop(n: int, engine=execute, limits: Limits | None = None):
    state = WorldState({ENTRY: Contract(LOOP)})
    return engine(state, Message(ENTRY, 1, n.to_bytes(8, "little")),
                  limits=limits or Limits(compute=10**9), version=V)


def natives(engine) -> list[NativeRegion]:
    return [fn for p in engine.cache.profiles() for fn in p.fns if isinstance(fn, NativeRegion)]


def same(source: str, engine, *, call_data: bytes = b"", limits: Limits | None = None,
         storage: dict | None = None, others: dict | None = None, runs: int = 3,
         policy: Policy | None = None, context: Context | None = None, word_bits: int | None = None,
         version: str = V):
    """Run source (a container of ``version``) under ``version`` on the reference and `runs`
    times on engine: every result must be the reference's, byte for byte; return the
    reference's."""
    contracts = {ENTRY: Contract(assemble(source, version), storage or {})}
    for address, code in (others or {}).items():
        contracts[address] = Contract(assemble(code, version))
    state = WorldState(contracts)
    message = Message(ENTRY, 0xCA11, call_data)
    want = execute(state, message, context, policy, limits, version=version, word_bits=word_bits)
    for _ in range(runs):
        got = engine.execute(state, message, context, policy, limits, version=version,
                             word_bits=word_bits)
        assert got.canonical_json() == want.canonical_json()
    return want


def test_the_loop_goes_native_and_its_result_and_usage_are_the_specs():
    engine = eager()
    n = 1000
    result = run_loop(n, engine.execute)
    assert int.from_bytes(result.output, "little") == loop_value(n)
    assert result.usage.compute == PREFIX + n * BODY + TAIL
    assert result.canonical_json() == run_loop(n).canonical_json()
    loops = [r for r in natives(engine) if r.counted]
    assert len(loops) == 1 and engine.native_failures == 0


def test_a_region_goes_native_only_after_its_work_on_the_compiled_tier():
    engine = native_vm.Engine(threshold=2, cold_segments=0, native_work=50 * BODY, cache=NativeCache())
    for _ in range(4):          # 4 x 10 passes: below the work; the loop runs generated Python
        assert run_loop(10, engine.execute).canonical_json() == run_loop(10).canonical_json()
    (profile,) = engine.cache.profiles()
    assert natives(engine) == [] and profile.compiled >= 1
    for _ in range(2):          # 60 passes and more: the loop is machine code from now on
        assert run_loop(10, engine.execute).canonical_json() == run_loop(10).canonical_json()
    assert len(natives(engine)) == 1 and engine.native_compiled == 1
    # Another engine of the process finds the machine code in the process's cache.
    shared = native_vm.Engine(threshold=2, cold_segments=0, native_work=50 * BODY, cache=engine.native)
    for _ in range(6):
        run_loop(10, shared.execute)
    assert len(natives(shared)) == 1 and shared.native_compiled == 0


def test_a_long_first_run_goes_native_while_it_runs():
    engine = native_vm.Engine(native_work=10_000)
    n = 50_000
    result = run_loop(n, engine.execute)
    assert int.from_bytes(result.output, "little") == loop_value(n)
    assert result.usage.compute == PREFIX + n * BODY + TAIL
    assert len(natives(engine)) == 1


@pytest.mark.parametrize("work", [0, 3 * BODY])
def test_the_counted_loop_meets_every_compute_boundary_as_the_reference(work):
    n = 6
    total = PREFIX + n * BODY + TAIL
    engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=work, min_block=1)
    for limit in range(total + 2):
        want = run_loop(n, limits=Limits(compute=limit))
        got = run_loop(n, engine.execute, limits=Limits(compute=limit))
        assert got.canonical_json() == want.canonical_json(), limit
        if limit < total:
            assert (got.status, got.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")
        else:
            assert got.ok and got.usage.compute == total


def test_stack_overflow_and_underflow_inside_native_code_are_the_references():
    grows = "top:\n push 7\n push 8\n pop\n jump top"
    want = same(grows, eager(), limits=Limits(compute=10**6))
    assert (want.status, want.error) == ("fault", "STACK_OVERFLOW")
    shrinks = "push 1\npush 2\npush 3\ntop:\n pop\n jump top"
    want = same(shrinks, eager())
    assert (want.status, want.error) == ("fault", "STACK_UNDERFLOW")


def test_memory_and_storage_limits_inside_native_loops_are_the_references():
    memory = "push 0\ntop:\n dup1\n dup1\n mstore\n push 512\n add\n jump top"
    storage = "push 1\ntop:\n dup1\n dup1\n sstore\n push 1\n add\n jump top"
    engine = eager()
    for pages in range(4):
        want = same(memory, engine, limits=Limits(compute=10**6, memory_pages=pages))
        assert (want.status, want.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")
        assert want.usage.memory_pages == pages
    for units in (0, 1, 100, 250):
        want = same(storage, engine, limits=Limits(compute=10**6, storage_units=units))
        assert (want.status, want.error) == ("exhausted", "STORAGE_LIMIT_EXCEEDED")
    for compute in range(0, 1500, 37):
        same(storage, engine, limits=Limits(compute=compute))
        same(memory, engine, limits=Limits(compute=compute, memory_pages=2))
    assert natives(engine) and engine.native_failures == 0


def test_a_loop_of_segments_with_branches_storage_and_calls_reenters_after_each_handler():
    source = """
        push 40
    top:
        dup1
        push 1
        and
        jumpi odd
        jump next
    odd:
        dup1
        dup1
        sstore
    next:
        push 0x101
        push 500
        push 0
        push 0
        call
        pop
        push 1
        sub
        dup1
        jumpi top
        stop
    """
    callee = "push 1\npush 0\nsstore\nstop"
    engine = eager()
    for compute in (5000, 20000, 33333, 10**6):
        want = same(source, engine, limits=Limits(compute=compute), others={OTHER: callee})
    assert want.ok and len(want.calls) == 40
    assert any(not r.counted and any(e.resume for e in r.exits) for r in natives(engine))


def test_compute_left_inside_native_loops_sees_the_exact_meter():
    source = returning_top("top:\n computeleft\n push 100\n ltu\n jumpi out\n jump top\nout:\n computeleft")
    counted = returning_top("push 0\ntop:\n pop\n computeleft\n dup1\n push 100\n ltu\n jumpi out\n jump top\nout:")
    for engine in (eager(), native_vm.Engine(threshold=2, cold_segments=0, native_work=100)):
        for compute in (500, 1000, 1234):
            assert same(source, engine, limits=Limits(compute=compute)).ok
            assert same(counted, engine, limits=Limits(compute=compute)).ok


def test_memory_in_place_and_growing_gives_the_references_bytes():
    source = returning_top("""
        push 8
    top:
        dup1
        dup1
        mstore8
        push 1
        sub
        dup1
        jumpi top
        pop
        push 0
        mload
        push 0
        mload8
        add
    """)
    engine = eager()
    want = same(source, engine)
    assert int.from_bytes(want.output, "little") == sum(i << (8 * i) for i in range(1, 8))
    for compute in range(want.usage.compute - 3, want.usage.compute + 1):
        same(source, engine, limits=Limits(compute=compute))


@pytest.mark.parametrize("offset", [0, 1, 4095 - 8, 4096 - 8, 4096 - 7, 4095, 4096, 2**32, MASK - 7, MASK])
def test_memory_accesses_at_the_edges_of_memory_are_the_references(offset):
    # One page of memory first; then each access in place, growing, or past every limit.
    for op in ("mload", "mload8"):
        same(returning_top(f"push 0\npush 1\nmstore8\npush {offset}\n{op}"), eager())
    for op in ("mstore", "mstore8"):
        same(returning_top(f"push 0\npush 1\nmstore8\npush {offset}\npush {MASK}\n{op}\nmsize"), eager())


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 16, 17])
def test_call_data_loads_whole_partial_and_past_the_end_are_the_references(size):
    call_data = bytes(range(0x41, 0x41 + size))
    for offset in (0, 1, size - 8, size - 1, size, size + 1, 2**32, MASK - 7, MASK):
        offset %= 2**64
        source = returning_top(f"push {offset}\ncalldataload\ncalldatasize\nxor")
        want = same(source, eager(), call_data=call_data)
        # By hand: little-endian, bytes past the end read as zero.
        chunk = call_data[offset:offset + 8] if offset < size else b""
        assert int.from_bytes(want.output, "little") == int.from_bytes(chunk, "little") ^ size


def test_division_shift_and_rotate_edges_at_every_word_width():
    cases = [("divu", 7, 0), ("remu", 7, 0), ("divs", MIN, MASK), ("rems", MIN, MASK),
             ("divs", 7, 0), ("rems", 7, 0), ("divs", MASK - 6, 2), ("rems", MASK - 6, 2),
             ("shl", 3, 63), ("shl", 3, 64), ("shru", MIN, 64), ("shrs", MIN, 64), ("shrs", MIN, 200),
             ("rotl", MIN + 1, 65), ("rotr", 3, 129), ("rotl", 5, 0), ("lts", MIN, 1), ("gts", 1, MIN),
             ("mul", MASK, MASK), ("sub", 0, 1), ("not", None, 5), ("iszero", None, 0)]
    engine = eager()
    for bits in (8, 16, 32, 64):
        mask = (1 << bits) - 1
        for op, a, b in cases:
            pushes = (f"push {b & mask}" if a is None else f"push {a & mask}\npush {b & mask}")
            # Two of each, so that the block is long enough for any engine and stays one segment.
            same(returning_top(f"{pushes}\n{op}\n{pushes}\n{op}\nxor\nnop"), engine, word_bits=bits)
    # By hand at 64 bits: MIN / -1 is MIN, MIN % -1 is 0, a / 0 is all ones, a % 0 is a.
    out = same(returning_top(f"push {MIN}\npush {MASK}\ndivs"), engine)
    assert int.from_bytes(out.output, "little") == MIN
    out = same(returning_top(f"push {MIN}\npush {MASK}\nrems\npush 7\npush 0\nremu\nadd"), engine)
    assert int.from_bytes(out.output, "little") == 7


def test_gated_reads_leave_the_machine_code_and_come_back():
    source = returning_top("push 3\ntop:\n time\n random\n xor\n pop\n push 1\n swap1\n sub\n"
                           " dup1\n jumpi top\n time\n random\n add\n add")
    policy = Policy(time_access="allowed", randomness="seeded")
    context = Context(block_time=1_700_000_000, random_seed=bytes(range(32)))
    engine = eager()
    for compute in (10, 100, 1000):
        same(source, engine, policy=policy, context=context, limits=Limits(compute=compute))
    assert any(e.resume and e.pc for r in natives(engine) for e in r.exits)


@pytest.mark.parametrize("version", [v.version for v in spec.versions()])
def test_the_examples_give_the_references_results(version):
    engine = eager()
    run_examples(engine, version)
    assert engine.native_compiled and engine.native_failures == 0


def test_tracing_steps_through_the_reference_and_writes_the_same_trace():
    def traced(run):
        out = io.StringIO()
        state = WorldState({ENTRY: Contract(LOOP)})
        result = run(state, Message(ENTRY, 1, (5).to_bytes(8, "little")), version=V,
                     tracer=JsonLinesTracer(out))
        return result.canonical_json(), out.getvalue()

    want = traced(execute)
    assert traced(native_vm.execute) == want
    assert traced(eager().execute) == want


def test_the_stack_and_the_meter_live_in_registers():
    """jit.compile_module promotes every local of the lowered function to SSA registers
    (ssa.py; no LLVM optimisation pipeline runs): the loop's function keeps no alloca and
    reads and writes memory only through the context, the window and the VM's memory."""
    from native_vm import ssa
    from native_vm.lower import Lowering
    from native_vm.plan import plan_for
    from reference_vm.program import load_program
    from reference_vm.rules import rules

    program = load_program(LOOP, rules(V))
    (plan,) = [p for s in program.segments if s is not None
               for p in [plan_for(program, s.start, rules(V), 1, 0)] if p is not None and p.counted]
    fn = Lowering(plan).lower().module.get_global("region")
    before = str(fn)
    assert " alloca " in before and " phi " not in before
    ssa.promote(fn)
    after = str(fn)
    assert " alloca " not in after and " phi " in after
    # What is left of memory traffic is the context (%".1") and the window (%".2") only.
    pointers = {line.split(", ptr ")[1].split(",")[0].split()[0] for line in after.splitlines()
                if (" load " in line or line.lstrip().startswith("store ")) and ", ptr " in line}
    geps = {line.split("=")[0].strip() for line in after.splitlines() if "getelementptr" in line}
    assert pointers and pointers <= geps
