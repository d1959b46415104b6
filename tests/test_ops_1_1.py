"""The instructions and rules spec 1.1 adds, run on the reference interpreter under 1.1, with
every expectation computed here by hand from the 1.1 text (spec/versions/1.1/sections: 6.3,
6.5, 6.11, 6.13, 2.3.3, 2.4, 3.2.1, 5.6.8) and the pinned numbers of spec/CHANGELOG.md's 1.1
items (opcodes and costs written out below, never read from the data).
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest

from conftest import ENTRY, run_asm, returning_top, word_out
from opspec import M, MIN, MAX, RET_COLD, cost
from reference_vm import Contract, Message, WorldState, assemble, execute
from reference_vm.container import build

V = "1.1"
B, C = 0xB0B, 0xC0C
# 1.1's rows, by hand (changelog items N1, N2, F1, T1): opcode and base cost.
MULHU, MULHS, CLZ, CTZ, POPCNT = (0x47, 4), (0x48, 4), (0x69, 2), (0x6A, 2), (0x6B, 2)
STATICCALL, TLOAD, TSTORE = (0xC1, 100), (0x84, 5), (0x85, 8)
TRANSIENT_NEW_SLOT_COST, TRANSIENT_SLOTS = 20, 4096
SSTORE_BASE = cost("SSTORE")   # a 1.0 row that 1.1 keeps


def run11(source: str, **kw):
    return run_asm(source, version=V, **kw)


def top(body: str) -> int:
    return word_out(run11(returning_top(body)))


# ---- 6.3: MULHU and MULHS -------------------------------------------------------------------

@pytest.mark.parametrize("a, b, high", [
    (3, 5, 0),
    (2 ** 32, 2 ** 32, 1),                 # 2^64: the high word is 1
    (M, M, M - 1),                         # (2^64 - 1)^2 = 2^128 - 2^65 + 1
    (M, 2, 1),
    (2 ** 63, 2 ** 63, 2 ** 62),
    (0, M, 0),
])
def test_mulhu_is_the_high_word_of_the_unsigned_product(a, b, high):
    assert top(f"push8 {a}\npush8 {b}\nmulhu") == high


@pytest.mark.parametrize("a, b, high", [
    (M, M, 0),                             # -1 * -1 = 1
    (M, 1, M),                             # -1: the 128-bit pattern is all ones
    (MIN, MIN, 2 ** 62),                   # (-2^63)^2 = 2^126
    (MIN, M, 0),                           # -2^63 * -1 = 2^63 fits the low word
    (MIN, 1, M),                           # -2^63: high word all ones
    (MAX, MAX, 2 ** 62 - 1),               # (2^63 - 1)^2 = 2^126 - 2^64 + 1
    (M - 1, 2 ** 62, M),                   # -2 * 2^62 = -2^63
    (3, 5, 0),
])
def test_mulhs_is_the_high_word_of_the_signed_product(a, b, high):
    assert top(f"push8 {a}\npush8 {b}\nmulhs") == high


def test_mulhu_and_mulhs_differ_exactly_where_an_operand_is_negative():
    # 2^63 read signed is -2^63: unsigned 2^63 * 2 = 2^64 (high 1), signed -2^64 (high -1)
    assert (top(f"push8 {2 ** 63}\npush 2\nmulhu"), top(f"push8 {2 ** 63}\npush 2\nmulhs")) == (1, M)


def test_mulhu_costs_its_base_cost():
    r = run11(returning_top("push8 7\npush8 9\nmulhu"))
    assert r.usage.compute == 2 * cost("PUSH8") + MULHU[1] + RET_COLD


# ---- 6.5: CLZ, CTZ, POPCNT ------------------------------------------------------------------

@pytest.mark.parametrize("value, clz, ctz, popcnt", [
    (0, 64, 64, 0),
    (1, 63, 0, 1),
    (M, 0, 0, 64),
    (2 ** 63, 0, 63, 1),
    (2 ** 32, 31, 32, 1),
    (0b1000, 60, 3, 1),
    (0xF0F0, 48, 4, 8),
])
def test_bit_counts(value, clz, ctz, popcnt):
    assert [top(f"push8 {value}\n{op}") for op in ("clz", "ctz", "popcnt")] == [clz, ctz, popcnt]


def test_bit_counts_cost_their_base_cost():
    r = run11(returning_top("push8 5\npopcnt"))
    assert r.usage.compute == cost("PUSH8") + POPCNT[1] + RET_COLD


# ---- 3.2.1: a container's instruction set is its version's ----------------------------------

@pytest.mark.parametrize("opcode", [MULHU[0], MULHS[0], CLZ[0], CTZ[0], POPCNT[0], STATICCALL[0],
                                    TLOAD[0], TSTORE[0]])
def test_a_1_1_opcode_in_a_1_0_container_is_undefined_under_either_version(opcode):
    stop = assemble("stop", "1.0")[-1:]
    for version in ("1.0", "1.1"):
        state = WorldState({ENTRY: Contract(build(bytes([opcode]) + stop, b"", (1, 0)))})
        r = execute(state, Message(ENTRY), version=version)
        assert (r.status, r.error) == ("invalid", "UNDEFINED_OPCODE"), version


def test_a_1_1_container_is_invalid_code_under_1_0():
    state = WorldState({ENTRY: Contract(assemble("stop", "1.1"))})
    r = execute(state, Message(ENTRY), version="1.0")
    assert r.status == "invalid"


def test_a_1_0_container_under_1_1_is_charged_1_1s_prices():
    # 3.2.1: the rows used are the execution version's; P1: one hash block costs 3, not 6
    source = "push 0\npush 0\npush 3\nsha256\nstop"    # SHA-256 of 3 bytes: one block
    runs = [execute(WorldState({ENTRY: Contract(assemble(source, "1.0"))}), Message(ENTRY),
                    version=v).usage.compute for v in ("1.0", "1.1")]
    assert runs[0] - runs[1] == 6 - 3


# ---- 6.13 and 2.3.3: transient storage ------------------------------------------------------

def test_a_transient_write_is_read_back_and_costs_the_new_slot_once():
    r = run11(returning_top("push 7\npush 42\ntstore\npush 7\npush 43\ntstore\npush 7\ntload"))
    assert word_out(r) == 43
    assert r.usage.compute == (5 * cost("PUSH1") + 2 * TSTORE[1] + TRANSIENT_NEW_SLOT_COST
                               + TLOAD[1] + RET_COLD)
    # no storage units, no storage counters, nothing in the state changes (2.3.3)
    assert (r.usage.storage_units, r.usage.storage_writes, r.usage.storage_new_slots) == (0, 0, 0)
    assert not r.state_changes


def test_an_unwritten_slot_reads_zero_and_a_zero_write_makes_no_new_slot():
    r = run11(returning_top("push 7\npush 0\ntstore\npush 7\ntload"))
    assert word_out(r) == 0
    assert r.usage.compute == 3 * cost("PUSH1") + TSTORE[1] + TLOAD[1] + RET_COLD


def test_every_execution_starts_with_every_transient_slot_zero():
    # traps when slot 1 is already set, then sets it: run twice on the same state
    source = "push 1\ntload\njumpi seen\npush 1\npush 1\ntstore\nstop\nseen:\ntrap"
    state = WorldState({ENTRY: Contract(assemble(source, V))})
    assert [execute(state, Message(ENTRY), version=V).status for _ in range(2)] == ["success"] * 2


# B by call data length: 0 reads its transient slot 1 into storage slot 9; 1 writes 5 to it;
# 2 writes 5 and reverts; 3 writes 5 and traps.
KEEPER = """
    calldatasize
    jumpi write
    push 9
    push 1
    tload
    sstore
    stop
write:
    push 1
    push 5
    tstore
    calldatasize
    push 1
    eq
    jumpi done
    calldatasize
    push 2
    eq
    jumpi undo
    trap
undo:
    push 0
    push 0
    revert
done:
    stop
"""


def call(op: str, addr: int, length: int) -> str:
    return f"push8 {addr}\npush8 {M}\npush 0\npush {length}\n{op}\npop"


@pytest.mark.parametrize("mode, seen", [(1, 5), (2, 0), (3, 0)])
def test_a_callees_transient_write_stays_only_when_it_succeeds(mode, seen):
    r = run11(f"{call('call', B, mode)}\n{call('call', B, 0)}\nstop",
              others={B: KEEPER})
    assert r.status == "success"
    assert [(c.address, c.key, c.after) for c in r.state_changes] == ([(B, 9, seen)] if seen else [])


def test_transient_slots_are_per_contract():
    # the entry writes its own slot 1; B's slot 1 stays 0
    r = run11(f"push 1\npush 8\ntstore\n{call('call', B, 0)}\nstop", others={B: KEEPER})
    assert r.status == "success" and not r.state_changes


def test_transient_storage_full_at_the_limit():
    # slot i gets i + 1 for i = 0, 1, 2 ...: the write of slot 4096 would make a 4097th live slot
    source = "push 0\nloop:\ndup1\ndup1\npush 1\nadd\ntstore\npush 1\nadd\njump loop"
    r = run11(source)
    assert (r.status, r.error) == ("fault", "TRANSIENT_STORAGE_FULL")
    per_write = cost("DUP1", "DUP1", "PUSH1", "ADD") + TSTORE[1]
    per_loop = per_write + TRANSIENT_NEW_SLOT_COST + cost("PUSH1", "ADD", "JUMP")
    # 5.6.8 step 2: the failing write is charged its base cost only
    assert r.usage.compute == cost("PUSH1") + TRANSIENT_SLOTS * per_loop + per_write
    assert r.error_pc == 7   # push 0 (2 bytes), dup1, dup1, push 1 (2 bytes), add -> tstore at 7


# ---- 6.11 and 2.4: STATICCALL and read-only frames ------------------------------------------

WRITERS = {
    "sstore": "push 1\npush 2\nsstore\nstop",
    "tstore": "push 1\npush 2\ntstore\nstop",
    "log0": "push 0\npush 0\nlog0\nstop",
}
BASE = {"sstore": SSTORE_BASE, "tstore": TSTORE[1], "log0": cost("LOG0")}


@pytest.mark.parametrize("what", sorted(WRITERS))
def test_a_write_in_a_static_callee_is_read_only_write_after_its_base_cost(what):
    r = run11(f"{call('staticcall', B, 0)}\nstop", others={B: WRITERS[what]})
    assert r.status == "success" and not r.state_changes and not r.events
    [record] = r.calls
    assert (record.callee, record.status, record.error, record.error_pc) == (
        B, "fault", "READ_ONLY_WRITE", 4)            # two push1 (2 bytes each), then the write
    assert record.compute == 2 * cost("PUSH1") + BASE[what]


@pytest.mark.parametrize("what", sorted(WRITERS))
def test_the_same_write_in_a_plain_call_succeeds(what):
    r = run11(f"{call('call', B, 0)}\nstop", others={B: WRITERS[what]})
    assert [(c.status, c.error) for c in r.calls] == [("success", None)]


def test_every_frame_below_a_static_call_is_read_only():
    # B (static) calls C with a plain CALL: C's SSTORE still faults; B goes on and succeeds
    b = f"{call('call', C, 0)}\nstop"
    r = run11(f"{call('staticcall', B, 0)}\nstop", others={B: b, C: WRITERS["sstore"]})
    assert [(c.callee, c.depth, c.status, c.error) for c in r.calls] == [
        (B, 2, "success", None), (C, 3, "fault", "READ_ONLY_WRITE")]
    assert not r.state_changes


def test_a_static_callee_may_read_and_return():
    # B reads its storage slot 3 (pre-state 11) and returns it; the entry returns B's flag
    b = returning_top("push 3\nsload")
    entry = f"push8 {B}\npush8 {M}\npush 0\npush 0\nstaticcall"
    r = execute(WorldState({ENTRY: Contract(assemble(returning_top(entry), V)),
                            B: Contract(assemble(b, V), {3: 11})}), Message(ENTRY), version=V)
    assert word_out(r) == 1
    assert [(c.status, c.error) for c in r.calls] == [("success", None)]


def test_staticcall_costs_what_call_costs():
    one = run11(f"{call('staticcall', B, 0)}\nstop", others={B: "stop"})
    two = run11(f"{call('call', B, 0)}\nstop", others={B: "stop"})
    assert one.usage.compute == two.usage.compute
    assert STATICCALL[1] == cost("CALL")
