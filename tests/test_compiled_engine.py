"""The compiled engine (compiled_vm): tiering, the code-hash cache, compiled blocks and loops
falling back to the per-instruction definition at every limit, and agreement with the
reference on the examples, nested calls and traces."""

from __future__ import annotations

import io
import tomllib
from pathlib import Path

import pytest

import compiled_vm
import spec
from compiled_vm import Engine
from conftest import BASE_VERSION, returning_top
from reference_vm import (
    Context, Contract, Limits, Message, Policy, WorldState, assemble, execute,
)
from reference_vm.trace import JsonLinesTracer

ROOT = Path(__file__).resolve().parent.parent
V = BASE_VERSION
LOOP = assemble((ROOT / "benchmarks" / "loop.rasm").read_text(), V)
TABLE = spec.load(V)
PAGE_COST = TABLE.schedule["memory"]["page_cost"]
ENTRY, OTHER = 0x100, 0x101


def cost(*mnemonics: str) -> int:
    return sum(TABLE.by_mnemonic[m].cost for m in mnemonics)


# loop.rasm, instruction by instruction.
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


def same(source: str, engine: Engine, *, call_data: bytes = b"", limits: Limits | None = None,
         storage: dict | None = None, others: dict | None = None, runs: int = 3):
    """Run source on the reference and `runs` times on engine; every result must be the
    reference's, byte for byte; return the reference's."""
    contracts = {ENTRY: Contract(assemble(source, V), storage or {})}
    for address, code in (others or {}).items():
        contracts[address] = Contract(assemble(code, V))
    state = WorldState(contracts)
    message = Message(ENTRY, 0xCA11, call_data)
    want = execute(state, message, None, None, limits, version=V)
    for _ in range(runs):
        got = engine.execute(state, message, None, None, limits, version=V)
        assert got.canonical_json() == want.canonical_json()
    return want


def test_loop_result_and_usage_are_the_specs_and_the_loop_is_compiled():
    engine = Engine(threshold=4)   # the first run is cold: compiled once it runs long
    n = 1000
    result = run_loop(n, engine.execute)
    assert int.from_bytes(result.output, "little") == loop_value(n)
    assert result.usage.compute == PREFIX + n * BODY + TAIL
    assert result.canonical_json() == run_loop(n).canonical_json()
    (profile,) = engine.cache.profiles()
    loops = [src for src in profile.sources.values() if "for it in range(k)" in src]
    assert len(loops) == 1   # the self-looping segment became a counted loop


def test_nothing_is_profiled_on_a_short_first_run_nor_compiled_before_the_threshold():
    engine = Engine(threshold=5)
    run_loop(3, engine.execute)          # first sight, short: interpreted, no profile
    assert engine.cache.profiles() == []
    run_loop(3, engine.execute)          # profiled: the loop segment starts 3 times
    (profile,) = engine.cache.profiles()
    assert profile.compiled == 0 and max(profile.counts) == 3
    run_loop(1, engine.execute)          # 4: still below
    assert profile.compiled == 0
    run_loop(1, engine.execute)          # the 5th start of the loop segment compiles it
    assert profile.compiled == 1 and "for it in range(k)" in "".join(profile.sources.values())


def test_a_long_first_run_is_profiled_and_compiled_while_it_runs():
    engine = Engine(threshold=16, cold_segments=100)
    result = run_loop(500, engine.execute)
    assert int.from_bytes(result.output, "little") == loop_value(500)
    (profile,) = engine.cache.profiles()
    # 100 segments interpreted unprofiled, then 16 more starts of the loop segment.
    assert profile.compiled == 1 and profile.counts[profile.sources.popitem()[0]] == 16


def test_compiled_code_is_cached_by_code_hash_across_executions():
    engine = Engine(threshold=1, cold_segments=0)
    run_loop(10, engine.execute)
    (profile,) = engine.cache.profiles()
    compiled = profile.compiled
    # A new container object with the same bytes is the same code: nothing is compiled again.
    state = WorldState({ENTRY: Contract(bytes(bytearray(LOOP)))})
    engine.execute(state, Message(ENTRY, 1, (50).to_bytes(8, "little")), version=V)
    assert list(engine.cache.profiles()) == [profile]
    assert profile.compiled == compiled
    other = assemble("push 1\npush 2\nadd\nstop", V)
    engine.execute(WorldState({ENTRY: Contract(other)}), Message(ENTRY, 1), version=V)
    assert len(engine.cache.profiles()) == 2


@pytest.mark.parametrize("threshold", [1, 3])
def test_counted_loop_meets_every_compute_boundary_as_the_reference(threshold):
    n = 6
    total = PREFIX + n * BODY + TAIL
    engine = Engine(threshold=threshold, cold_segments=0)
    for limit in range(total + 2):
        want = run_loop(n, limits=Limits(compute=limit))
        got = run_loop(n, engine.execute, limits=Limits(compute=limit))
        assert got.canonical_json() == want.canonical_json(), limit
        if limit < total:
            assert (got.status, got.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")
            assert got.usage.compute <= limit
        else:
            assert got.ok and got.usage.compute == total


def test_stack_overflow_inside_a_compiled_block_is_the_reference_fault():
    # Each pass pushes two items and pops one: the height grows until the push overflows.
    source = """
    top:
        push 7
        push 8
        pop
        jump top
    """
    engine = Engine(threshold=1, cold_segments=0)
    want = same(source, engine, limits=Limits(compute=10**6))
    assert (want.status, want.error) == ("fault", "STACK_OVERFLOW")


def test_memory_and_storage_limits_inside_a_compiled_loop_are_the_references():
    memory = """
        push 0
    top:
        dup1
        dup1
        mstore          ; memory[i] = i: grows a page every 4096 bytes
        push 512
        add
        jump top
    """
    storage = """
        push 1
    top:
        dup1
        dup1
        sstore          ; a new slot each pass
        push 1
        add
        jump top
    """
    engine = Engine(threshold=2, cold_segments=0)
    for pages in range(4):
        want = same(memory, engine, limits=Limits(compute=10**6, memory_pages=pages))
        assert (want.status, want.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")
        assert want.usage.memory_pages == pages
    for units in (0, 1, 100, 250):
        want = same(storage, engine, limits=Limits(compute=10**6, storage_units=units))
        assert (want.status, want.error) == ("exhausted", "STORAGE_LIMIT_EXCEEDED")
    for compute in range(0, 1500, 37):
        same(storage, engine, limits=Limits(compute=compute))


def test_a_loop_made_of_segments_with_branches_and_calls():
    # Three segments per pass (the branch splits the body): counts down from 40, storing
    # the odd values, and calls the other contract on every pass.
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
    engine = Engine(threshold=2, cold_segments=0)
    for compute in (5000, 20000, 33333, 10**6):
        want = same(source, engine, limits=Limits(compute=compute), others={OTHER: callee})
    assert want.ok and len(want.calls) == 40
    (profile, *_) = engine.cache.profiles()
    assert any("while True:" in src for src in profile.sources.values())
    assert sorted(c.key for c in want.state_changes if c.address == ENTRY) == list(range(1, 41, 2))


def test_compute_left_inside_a_loop_sees_the_exact_meter():
    source = returning_top("""
    top:
        computeleft
        push 100
        ltu
        jumpi out
        jump top
    out:
        computeleft
    """)
    engine = Engine(threshold=1, cold_segments=0)
    for compute in (500, 1000, 1234):
        want = same(source, engine, limits=Limits(compute=compute))
        assert want.ok


def run_examples(engine, version: str) -> None:
    """The calls of examples/scenarios.toml (contracts, callers and call data: the fields the
    file uses), each against the state the previous successful calls of its scenario left,
    three times on ``engine``: every result must be the reference's."""
    examples = ROOT / "examples"
    for scenario in tomllib.loads((examples / "scenarios.toml").read_text())["scenario"]:
        state = WorldState({
            int(address, 16): Contract(assemble((examples / body["code"]).read_text(), version),
                                       {int(k, 16): int(v) for k, v in body.get("storage", {}).items()})
            for address, body in scenario["contracts"].items()})
        for call in scenario["call"]:
            assert set(call) <= {"to", "caller", "calldata"}
            message = Message(int(call["to"], 16), int(call["caller"], 16),
                              bytes.fromhex(call.get("calldata", "0x")[2:]))
            want = execute(state, message, version=version)
            for _ in range(3):
                assert engine.execute(state, message, version=version).canonical_json() == \
                    want.canonical_json()
            if want.ok:
                state = state.with_changes(want.state_changes)


@pytest.mark.parametrize("version", [v.version for v in spec.versions()])
def test_the_examples_give_the_references_results(version):
    run_examples(Engine(threshold=1, cold_segments=0), version)


def test_tracing_steps_through_the_reference_and_writes_the_same_trace():
    def traced(engine):
        out = io.StringIO()
        state = WorldState({ENTRY: Contract(LOOP)})
        result = engine(state, Message(ENTRY, 1, (5).to_bytes(8, "little")), version=V,
                        tracer=JsonLinesTracer(out))
        return result.canonical_json(), out.getvalue()

    want = traced(execute)
    assert traced(compiled_vm.execute) == want
    assert traced(Engine(threshold=1, cold_segments=0).execute) == want
    assert want[1].count("\n") == 4 + 5 * 12 + 7 + 1   # every instruction and the final line


def test_word_width_and_request_errors_as_the_reference():
    engine = Engine(threshold=1, cold_segments=0)
    source = "push 200\npush 100\nadd\npush 0\nswap1\nmstore8\npush 0\npush 1\nreturn"
    state = WorldState({ENTRY: Contract(assemble(source, V))})
    message = Message(ENTRY, 1)
    for bits in (8, 16, 64):
        want = execute(state, message, version=V, word_bits=bits).canonical_json()
        assert engine.execute(state, message, version=V, word_bits=bits).canonical_json() == want
    assert engine.execute(state, message, version=V, word_bits=16).output == bytes([44])   # 300 mod 256
    missing = engine.execute(state, Message(0x999, 1), version=V)
    assert (missing.status, missing.error) == ("rejected", "CONTRACT_NOT_FOUND")
    no_arithmetic = Policy(forbidden_operations=("arithmetic",))
    forbidden = engine.execute(state, message, policy=no_arithmetic, version=V)
    assert forbidden.canonical_json() == execute(state, message, policy=no_arithmetic,
                                                 version=V).canonical_json()
    assert forbidden.status == "violation"
    short = engine.execute(state, message, Context(), Policy(), Limits(compute=3), version=V)
    assert (short.status, short.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")


def test_threshold_must_be_positive():
    with pytest.raises(ValueError):
        Engine(threshold=0)


def test_the_reference_never_imports_the_compiled_engine():
    import ast
    import subprocess
    import sys
    for path in sorted((ROOT / "reference_vm").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n.split(".")[0] == "compiled_vm" for n in names), path
    # Nor does running the reference, or the reference's adapter, load it.
    probe = ("import sys, reference_vm, conformance.adapter, rtwo_vm.cli; "
             "from reference_vm import execute; print('compiled_vm' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_remembered_policy_checks_and_bindings_refuse_exactly_as_the_reference():
    engine = Engine()
    code = assemble("time\npop\npush 1\npush 2\nadd\npop\nstop", V)
    state = WorldState({ENTRY: Contract(code)})
    message = Message(ENTRY, 1)
    policies = [Policy(time_access="allowed"), Policy(), Policy(time_access="allowed"),
                Policy(time_access="allowed", forbidden_operations=("ADD",)),
                Policy(time_access="sometimes"),
                Policy(time_access="allowed", forbidden_operations=["ADD"]),   # not a tuple
                Policy(time_access="allowed", allowed_operations=("TIME", "stack", "ADD", "STOP")),
                Policy(time_access="allowed", allowed_operations=("TIME", "stack", "STOP"))]
    outcomes = []
    for _ in range(3):      # the second and third rounds find the first round's remembered passes
        for policy in policies:
            want = execute(state, message, policy=policy, version=V)
            got = engine.execute(state, message, policy=policy, version=V)
            assert got.canonical_json() == want.canonical_json()
            outcomes.append((got.status, got.error))
    time_refused = TABLE.policy["gate"][TABLE.by_mnemonic["TIME"].gate]["error"]
    listed = TABLE.policy["forbidden_by_listing"]["error"]
    assert outcomes[:8] == [
        ("success", None), ("violation", time_refused), ("success", None), ("violation", listed),
        ("rejected", "INVALID_REQUEST"), ("rejected", "INVALID_REQUEST"), ("success", None),
        ("violation", listed)]
    assert outcomes[8:16] == outcomes[:8] == outcomes[16:]


def test_the_engine_runs_every_request_stage_the_reference_runs():
    """Engine.execute mirrors reference_vm.execute's stages before and after the frames run
    (request, state, policy and limit checks, binding, the result's fields): a stage added to
    the reference and not here fails this test before it can make the engines differ."""
    import ast
    import inspect
    import sys
    import textwrap

    def calls(fn):
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        names = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                 for n in ast.walk(tree) if isinstance(n, ast.Call)}
        fields = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "id", None) == "ExecutionResult" for k in n.keywords}
        return names, fields

    reference = sys.modules["reference_vm.execute"]
    driver = sys.modules["compiled_vm.driver"]
    # The compiled engine is the shared driver's request path with its own execution class.
    assert Engine.execute is driver.TieredEngine.execute
    assert Engine.bound_program is driver.TieredEngine.bound_program
    assert Engine.execution_class is compiled_vm.engine.CompiledExecution
    ref_names, ref_fields = calls(reference.execute)
    for part in (reference.checked_program, reference.bound_program):
        ref_names |= calls(part)[0]
    ours, our_fields = calls(driver.TieredEngine.execute)
    ours |= calls(driver.TieredEngine.bound_program)[0]
    # Both admit the request through the same function; the entry program is the reference's
    # checked_program (policy check, program_at, bind) with the engine's memory of what passed.
    assert "admit" in ref_names and "admit" in ours
    ref_names -= {"checked_program", "bound_program"}
    # The tracer's finish is the reference's own business: a traced request runs there.
    assert ref_names - {"Execution", "finish", "hasattr"} <= ours
    assert "execution_class" in ours and ref_fields == our_fields


def test_memory_accesses_in_place_and_growing_give_the_references_bytes():
    # memory[i] = i for i = 8 .. 1 (the first store grows memory, the others are in place),
    # then the word at 0 is read back and returned.
    source = """
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
    """
    source = returning_top(source)
    engine = Engine(threshold=1, cold_segments=0)
    want = same(source, engine)
    assert int.from_bytes(want.output, "little") == sum(i << (8 * i) for i in range(1, 8))
    (profile,) = engine.cache.profiles()
    assert any("<= len(frame.memory)" in src for src in profile.sources.values())
    for compute in range(want.usage.compute - 3, want.usage.compute + 1):
        same(source, engine, limits=Limits(compute=compute))
