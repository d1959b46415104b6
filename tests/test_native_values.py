"""Properties that observe values: random programs of the instructions the native tier computes
itself, whose final stack is stored to memory and returned, so that a wrong value (not only a
wrong status, meter or control flow) changes the result. Straight-line blocks and counted
loops (a counter in memory, a random stack-neutral body), at every limit boundary and at every
word width, on the native engines of tests/test_native_properties.py, each program under a
version and in a container of that version or an older one (tests/test_compiled_properties.py:
1.1's MULHU, MULHS, CLZ, CTZ and POPCNT are computed natively too); expectations are the
reference's results."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

from hypothesis import given, settings, strategies as st  # noqa: E402

import spec  # noqa: E402
import test_native_properties as props  # noqa: E402
from conformance.corpus.random_source import EDGE_WORDS  # noqa: E402
from native_vm.plan import NATIVE, kind  # noqa: E402
from reference_vm import Contract, Limits, Message, WorldState, execute  # noqa: E402
from reference_vm.container import build  # noqa: E402
from reference_vm.decode import Decoded  # noqa: E402
from test_compiled_properties import TABLES, Program, versions  # noqa: E402

OP = TABLES["1.0"].by_mnemonic      # the rows the programs are framed with (every version's)
# Rows the native code computes, other than jumps, per container version.
COMPUTED = {version: [row for row in table.instructions
                      if row.flow == "next" and kind(Decoded(0, row, 0)) == NATIVE]
            for version, table in TABLES.items()}
KEPT = 8                    # stack items stored and returned at the end
COUNTER = 1024              # memory offset of a loop's counter

words = st.one_of(st.sampled_from(EDGE_WORDS), st.integers(0, 2**64 - 1), st.integers(0, 70))


def assemble_rows(rows: list[tuple[str, int]], table: spec.Spec) -> bytes:
    """Code for (mnemonic, immediate) rows of ``table``; a jump's immediate is a row index."""
    op = table.by_mnemonic
    offsets, pc = [], 0
    for mnemonic, _ in rows:
        offsets.append(pc)
        pc += op[mnemonic].size
    code = bytearray()
    for mnemonic, immediate in rows:
        row = op[mnemonic]
        code.append(row.opcode)
        if row.immediate_kind == "jump_target":
            immediate = offsets[immediate]
        code += (immediate % (1 << (8 * row.immediate_size))).to_bytes(row.immediate_size, "little")
    return bytes(code)


def body(draw, table: spec.Spec, height: int, length: int) -> tuple[list[tuple[str, int]], int]:
    """Random computed rows of ``table`` that never take more items than ``height`` holds."""
    rows = []
    for _ in range(length):
        row = draw(st.sampled_from([r for r in COMPUTED[table.version] if r.inputs <= height]))
        rows.append((row.mnemonic, draw(words)))
        height += row.outputs - row.inputs
    return rows, height


def returning(rows: list[tuple[str, int]]) -> list[tuple[str, int]]:
    """Store the top KEPT items at 0, 8, ... and return them."""
    for i in range(KEPT):
        rows += [("PUSH2", 8 * i), ("SWAP1", 0), ("MSTORE", 0)]
    return rows + [("PUSH1", 0), ("PUSH1", 8 * KEPT), ("RETURN", 0)]


@st.composite
def value_blocks(draw) -> Program:
    version, table = draw(versions())
    rows = [("PUSH8", draw(words)) for _ in range(2 * KEPT)]
    more, height = body(draw, table, 2 * KEPT, draw(st.integers(1, 60)))
    rows += more
    rows += [("PUSH8", draw(words))] * max(0, KEPT - height)
    return version, build(assemble_rows(returning(rows), table), draw(st.binary(max_size=16)),
                          table.number)


@st.composite
def value_loops(draw) -> Program:
    version, table = draw(versions())
    rows = [("PUSH8", draw(words)) for _ in range(KEPT)]
    rows += [("PUSH1", draw(st.integers(1, 30))), ("PUSH2", COUNTER), ("SWAP1", 0), ("MSTORE", 0)]
    head = len(rows)
    more, height = body(draw, table, KEPT, draw(st.integers(0, 24)))
    rows += more
    rows += [("PUSH8", draw(words))] * max(0, KEPT - height) + [("POP", 0)] * max(0, height - KEPT)
    rows += [("PUSH2", COUNTER), ("MLOAD", 0), ("PUSH1", 1), ("SUB", 0), ("DUP1", 0),
             ("PUSH2", COUNTER), ("SWAP1", 0), ("MSTORE", 0), ("JUMPI", head)]
    return version, build(assemble_rows(returning(rows), table), draw(st.binary(max_size=16)),
                          table.number)


@props.CHECKS
@given(value_blocks(), st.binary(max_size=24))
def test_values_of_random_blocks_are_the_references_at_every_limit_boundary(code, call_data):
    props.agree_at_every_boundary(code, call_data)


@pytest.mark.slow
@props.CHECKS
@given(value_loops(), st.binary(max_size=24))
def test_values_of_random_counted_loops_are_the_references_at_every_limit_boundary(code, call_data):
    props.agree_at_every_boundary(code, call_data)


@settings(props.CHECKS, max_examples=150)
@given(st.one_of(value_blocks(), value_loops()), st.binary(max_size=24), st.sampled_from([8, 16, 32, 64]))
def test_values_at_every_word_width_are_the_references(program, call_data, bits):
    version, code = program
    state = WorldState({0x10: Contract(code)})
    message = Message(0x10, 0xCA11 & ((1 << bits) - 1), call_data)
    limits = Limits(compute=20_000, memory_pages=2)
    want = execute(state, message, props.CONTEXT, None, limits, version=version,
                   word_bits=bits).canonical_json()
    for engine in props.ENGINES:
        for _ in range(2):
            got = engine.execute(state, message, props.CONTEXT, None, limits, version=version,
                                 word_bits=bits)
            assert got.canonical_json() == want
    for engine in props.ENGINES:
        assert engine.native_failures == engine.compile_failures == 0


def test_the_value_programs_return_values_and_go_native():
    """The strategies make what they promise: programs that succeed with KEPT words of output,
    and loops that run as counted native loops."""
    from hypothesis import find

    version, loop = find(value_loops(), lambda program: True, settings=settings(database=None))
    engine = props.ENGINES[0]
    state = WorldState({0x10: Contract(loop)})
    result = engine.execute(state, Message(0x10, 1), props.CONTEXT, None, Limits(), version=version)
    assert result.ok and len(result.output) == 8 * KEPT
    from native_vm.region import NativeRegion
    assert any(isinstance(fn, NativeRegion) and fn.counted
               for p in engine.cache.profiles() for fn in p.fns)


def test_the_native_code_computes_the_new_instructions_of_1_1_and_1_0_has_none_of_them():
    """What the programs above draw from: 1.1's computed rows are 1.0's and the five new pure
    operations (spec/versions/1.1/diff.toml N1, N2), none of which 1.0's table has."""
    new = {"MULHU", "MULHS", "CLZ", "CTZ", "POPCNT"}
    old = {row.mnemonic for row in COMPUTED["1.0"]}
    assert {row.mnemonic for row in COMPUTED["1.1"]} == old | new
    assert not new & set(TABLES["1.0"].by_mnemonic)
