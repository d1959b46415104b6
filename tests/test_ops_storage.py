"""Storage instructions: SLOAD SSTORE — values, state changes, counters, limits and gating."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import ENTRY, returning_top, run_asm, word_out
from opspec import (
    S, READ_UNITS, WRITE_UNITS, NEW_UNITS, NEW_COST, M, cost, fee, RET_COST, usage, changes,
)
from reference_vm import Limits, Policy


def test_table_rows():
    assert (S.by_mnemonic["SLOAD"].gate, S.by_mnemonic["SSTORE"].gate) == ("storage_read", "storage_write")
    assert (S.by_mnemonic["SLOAD"].cost_rule, S.by_mnemonic["SSTORE"].cost_rule) == ("storage_read", "storage_write")


# ---- SLOAD ---------------------------------------------------------------------------------

@pytest.mark.parametrize("key,storage,expected", [
    (0, {}, 0), (1, {}, 0), (M, {}, 0), (5, {5: 77}, 77), (5, {6: 77}, 0), (M, {M: M}, M),
    (0, {0: 1}, 1), (2 ** 63, {2 ** 63: 2 ** 63}, 2 ** 63),
])
def test_sload(key, storage, expected):
    result = run_asm(returning_top(f"push8 {key}\nsload"), storage=storage)
    assert word_out(result) == expected
    compute = cost("PUSH8", "SLOAD") + RET_COST
    assert usage(result) == (compute, 1, 1, 0, 0, READ_UNITS)
    assert result.fee == fee(compute, 1, READ_UNITS)
    assert result.state_changes == ()


def test_repeated_sloads_each_counted():
    result = run_asm("push1 1\nsload\nsload\nsload\nstop", storage={1: 1, 0: 0})
    # 1 -> storage[1] = 1 -> storage[1] = 1 -> 1
    compute = cost("PUSH1", "SLOAD", "SLOAD", "SLOAD", "STOP")
    assert usage(result) == (compute, 0, 3, 0, 0, 3 * READ_UNITS)


def test_sload_chain_follows_values():
    result = run_asm(returning_top("push1 1\nsload\nsload"), storage={1: 2, 2: 3})
    assert word_out(result) == 3


# ---- SSTORE --------------------------------------------------------------------------------

@pytest.mark.parametrize("key,value,pre,new_slot,change", [
    (1, 5, {}, True, (1, 0, 5)),             # new slot: zero -> non-zero
    (1, 5, {1: 3}, False, (1, 3, 5)),        # overwrite
    (1, 0, {1: 3}, False, (1, 3, 0)),        # 0 deletes
    (1, 0, {}, False, None),                 # zero to zero: no change, not a new slot
    (1, 3, {1: 3}, False, None),             # same value: no change
    (M, M, {}, True, (M, 0, M)),
    (0, 1, {}, True, (0, 0, 1)),
    (2, 9, {1: 3}, True, (2, 0, 9)),         # another slot being non-zero does not matter
])
def test_sstore(key, value, pre, new_slot, change):
    result = run_asm(f"push8 {key}\npush8 {value}\nsstore\nstop", storage=pre)
    assert result.status == "success"
    assert changes(result) == ([] if change is None else [(ENTRY,) + change])
    units = WRITE_UNITS + (NEW_UNITS if new_slot else 0)
    compute = cost("PUSH8", "PUSH8", "SSTORE", "STOP") + (NEW_COST if new_slot else 0)
    assert usage(result) == (compute, 0, 0, 1, int(new_slot), units)
    assert result.fee == fee(compute, 0, units)


def test_sstore_then_sload_sees_new_value():
    result = run_asm(returning_top("push1 4\npush2 0x1234\nsstore\npush1 4\nsload"))
    assert word_out(result) == 0x1234
    compute = cost("PUSH1", "PUSH2", "SSTORE", "PUSH1", "SLOAD") + NEW_COST + RET_COST
    units = WRITE_UNITS + NEW_UNITS + READ_UNITS
    assert usage(result) == (compute, 1, 1, 1, 1, units)
    assert result.fee == fee(compute, 1, units)


def test_delete_then_sload_reads_zero():
    result = run_asm(returning_top("push1 4\npush1 0\nsstore\npush1 4\nsload"), storage={4: 8})
    assert word_out(result) == 0
    assert changes(result) == [(ENTRY, 4, 8, 0)]


def test_write_then_delete_in_same_execution():
    result = run_asm("push1 1\npush1 5\nsstore\npush1 1\npush1 0\nsstore\nstop")
    assert result.state_changes == ()
    compute = cost("PUSH1", "PUSH1", "SSTORE") * 2 + cost("STOP") + NEW_COST
    units = 2 * WRITE_UNITS + NEW_UNITS
    assert usage(result) == (compute, 0, 0, 2, 1, units)


def test_second_write_to_new_slot_is_not_new():
    result = run_asm("push1 1\npush1 5\nsstore\npush1 1\npush1 6\nsstore\nstop")
    assert changes(result) == [(ENTRY, 1, 0, 6)]
    assert usage(result)[3:] == (2, 1, 2 * WRITE_UNITS + NEW_UNITS)


def test_delete_then_rewrite_counts_as_new_slot():
    # the slot is zero when written again, so it is a new slot again
    result = run_asm("push1 1\npush1 0\nsstore\npush1 1\npush1 7\nsstore\nstop", storage={1: 3})
    assert changes(result) == [(ENTRY, 1, 3, 7)]
    compute = 2 * cost("PUSH1", "PUSH1", "SSTORE") + cost("STOP") + NEW_COST
    assert usage(result) == (compute, 0, 0, 2, 1, 2 * WRITE_UNITS + NEW_UNITS)


def test_restoring_pre_state_value_reports_no_change():
    result = run_asm("push1 1\npush1 5\nsstore\npush1 1\npush1 3\nsstore\nstop", storage={1: 3})
    assert result.state_changes == ()
    assert usage(result)[3:] == (2, 0, 2 * WRITE_UNITS)


def test_pre_state_zero_slot_is_absent():
    result = run_asm("push1 1\npush1 5\nsstore\nstop", storage={1: 0})
    assert changes(result) == [(ENTRY, 1, 0, 5)] and result.usage.storage_new_slots == 1


def test_state_changes_sorted_by_key():
    src = "push1 9\npush1 1\nsstore\npush1 2\npush1 1\nsstore\npush1 5\npush1 1\nsstore\nstop"
    assert [c[1] for c in changes(run_asm(src))] == [2, 5, 9]


def test_sstore_operand_order_key_then_value():
    # key is deeper, value on top
    assert changes(run_asm("push1 3\npush1 8\nsstore\nstop")) == [(ENTRY, 3, 0, 8)]


def test_revert_discards_writes_keeps_counters():
    result = run_asm("push1 1\npush1 2\nsstore\npush1 0\npush1 0\nrevert", storage={7: 7})
    assert result.status == "reverted" and result.state_changes == ()
    assert usage(result)[2:] == (0, 1, 1, WRITE_UNITS + NEW_UNITS)


# ---- storage limit -------------------------------------------------------------------------

def test_new_slot_storage_limit_boundary():
    src = "push1 1\npush1 1\nsstore\nstop"
    ok = run_asm(src, limits=Limits(storage_units=WRITE_UNITS + NEW_UNITS))
    assert ok.status == "success" and ok.usage.storage_units == WRITE_UNITS + NEW_UNITS
    bad = run_asm(src, limits=Limits(storage_units=WRITE_UNITS + NEW_UNITS - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "STORAGE_LIMIT_EXCEEDED", 4)
    assert bad.state_changes == ()
    assert (bad.usage.storage_writes, bad.usage.storage_new_slots, bad.usage.storage_units) == (0, 0, 0)
    # chapter 5.6.4: the new-slot compute (step 2) stays charged when the unit charge (step 3) fails
    assert bad.usage.compute == cost("PUSH1", "PUSH1", "SSTORE") + NEW_COST


def test_overwrite_storage_limit_boundary():
    src = "push1 1\npush1 2\nsstore\nstop"
    assert run_asm(src, storage={1: 1}, limits=Limits(storage_units=WRITE_UNITS)).status == "success"
    bad = run_asm(src, storage={1: 1}, limits=Limits(storage_units=WRITE_UNITS - 1))
    assert (bad.status, bad.error) == ("exhausted", "STORAGE_LIMIT_EXCEEDED")
    assert usage(bad) == (cost("PUSH1", "PUSH1", "SSTORE"), 0, 0, 0, 0, 0)


def test_sload_storage_limit():
    src = "push1 1\nsload\nsload\nstop"
    assert run_asm(src, limits=Limits(storage_units=2 * READ_UNITS)).status == "success"
    bad = run_asm(src, limits=Limits(storage_units=2 * READ_UNITS - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "STORAGE_LIMIT_EXCEEDED", 3)
    assert usage(bad) == (cost("PUSH1", "SLOAD", "SLOAD"), 0, 1, 0, 0, READ_UNITS)


def test_sload_with_zero_storage_units():
    bad = run_asm("push1 1\nsload\nstop", limits=Limits(storage_units=0))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "STORAGE_LIMIT_EXCEEDED", 2)
    assert bad.usage.storage_reads == 0


def test_new_slot_compute_limit():
    src = "push1 1\npush1 1\nsstore\nstop"
    need = cost("PUSH1", "PUSH1", "SSTORE", "STOP") + NEW_COST
    assert run_asm(src, limits=Limits(compute=need)).usage.compute == need
    bad = run_asm(src, limits=Limits(compute=need - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 4)
    assert usage(bad) == (cost("PUSH1", "PUSH1", "SSTORE"), 0, 0, 0, 0, 0)


def test_overwrite_does_not_need_new_slot_compute():
    src = "push1 1\npush1 1\nsstore\nstop"
    need = cost("PUSH1", "PUSH1", "SSTORE", "STOP")
    assert run_asm(src, storage={1: 5}, limits=Limits(compute=need)).status == "success"


# ---- underflow -----------------------------------------------------------------------------

@pytest.mark.parametrize("op,items", [("sload", 0), ("sstore", 0), ("sstore", 1)])
def test_underflow(op, items):
    result = run_asm("push1 1\n" * items + f"{op}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * items)
    assert usage(result) == (items * cost("PUSH1"), 0, 0, 0, 0, 0)


# ---- policy gates --------------------------------------------------------------------------

@pytest.mark.parametrize("access,code,outcome", [
    ("none", "push1 1\nsload\nstop", "STORAGE_READ_FORBIDDEN"),
    ("none", "push1 1\npush1 1\nsstore\nstop", "STORAGE_WRITE_FORBIDDEN"),
    ("read_only", "push1 1\npush1 1\nsstore\nstop", "STORAGE_WRITE_FORBIDDEN"),
    ("read_only", "push1 1\nsload\nstop", None),
    ("read_write", "push1 1\nsload\nstop", None),
    ("read_write", "push1 1\npush1 1\nsstore\nstop", None),
    # code that holds the instruction is refused even if it would never run it
    ("read_only", "stop\npush1 1\npush1 1\nsstore\nstop", "STORAGE_WRITE_FORBIDDEN"),
    ("none", "jump end\npush1 1\nsload\npop\nend:\nstop", "STORAGE_READ_FORBIDDEN"),
])
def test_storage_gates(access, code, outcome):
    result = run_asm(code, policy=Policy(storage_access=access))
    if outcome is None:
        assert result.status == "success"
    else:
        assert (result.status, result.error, result.error_pc) == ("violation", outcome, None)
        assert usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0
        assert result.state_changes == ()


def test_default_policy_allows_read_write():
    assert S.policy["fields"]["storage_access"]["default"] == "read_write"
    assert run_asm("push1 1\npush1 1\nsstore\npush1 1\nsload\nstop").status == "success"


def test_forbidden_by_listing():
    r = run_asm("push1 1\nsload\nstop", policy=Policy(forbidden_operations=("storage",)))
    assert (r.status, r.error) == ("violation", "INSTRUCTION_FORBIDDEN")
    r = run_asm("push1 1\nsload\nstop", policy=Policy(forbidden_operations=("SSTORE",)))
    assert r.status == "success"


# ---- properties ----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(key=st.integers(0, M), value=st.integers(0, M), old=st.integers(0, M))
def test_property_sstore_accounting(key, value, old):
    result = run_asm(returning_top(f"push8 {key}\npush8 {value}\nsstore\npush8 {key}\nsload"),
                     storage={key: old})
    assert word_out(result) == value
    new_slot = old == 0 and value != 0
    units = WRITE_UNITS + READ_UNITS + (NEW_UNITS if new_slot else 0)
    compute = cost("PUSH8", "PUSH8", "SSTORE", "PUSH8", "SLOAD") + RET_COST + (NEW_COST if new_slot else 0)
    assert usage(result) == (compute, 1, 1, 1, int(new_slot), units)
    assert changes(result) == ([] if old == value else [(ENTRY, key, old, value)])
