"""The CALL instruction: result flag, call data, return data, compute and memory sharing,
storage/event rollback of failed callees, call depth and policy gating."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest

from conftest import ENTRY, returning_top, run_asm, word_out
from opspec import (
    S, PAGE_SIZE, PAGE_COST, COPY_COST, STO, CALL_DEPTH, M, cost, fee, usage, changes, RET_COLD,
)
from reference_vm import Limits, Policy

B = 0xB0B
C = 0xC0C


def call(addr=B, compute=M, offset=0, length=0):
    return f"push8 {addr}\npush8 {compute}\npush8 {offset}\npush8 {length}\ncall"


CALL_COST = 4 * cost("PUSH8") + cost("CALL")
CALL_SIZE = 4 * 9 + 1


def test_table_row():
    ins = S.by_mnemonic["CALL"]
    assert (ins.inputs, ins.outputs, ins.cost_rule, ins.gate) == (4, 1, "call", "external_call")


# ---- the result flag and exact compute ------------------------------------------------------

@pytest.mark.parametrize("callee,callee_cost,ok", [
    ("stop", cost("STOP"), 1),
    ("push1 7\npop\nstop", cost("PUSH1", "POP", "STOP"), 1),
    ("push1 0\npush1 0\nreturn", cost("PUSH1", "PUSH1", "RETURN"), 1),
    ("push1 0\npush1 0\nrevert", cost("PUSH1", "PUSH1", "REVERT"), 0),
    ("push1 1\ntrap", cost("PUSH1", "TRAP"), 0),
    ("push1 1\nadd\nstop", cost("PUSH1"), 0),                 # callee stack starts empty
    ("retsub", cost("RETSUB"), 0),
])
def test_flag_and_compute(callee, callee_cost, ok):
    result = run_asm(returning_top(call()), others={B: callee})
    assert word_out(result) == ok
    compute = CALL_COST + callee_cost + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0)
    assert result.fee == fee(compute, 1)


@pytest.mark.parametrize("addr", [0x5555, 0, M, ENTRY + 1])
def test_call_to_missing_contract_pushes_zero(addr):
    result = run_asm(returning_top(call(addr)))
    assert word_out(result) == 0
    assert result.usage.compute == CALL_COST + RET_COLD


def test_call_to_invalid_code_pushes_zero():
    result = run_asm(returning_top(call()), others={B: b"not a container"})
    assert word_out(result) == 0 and result.usage.compute == CALL_COST + RET_COLD


def test_call_to_unterminated_code_pushes_zero():
    result = run_asm(returning_top(call()), others={B: b"RTWO\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01"})
    assert word_out(result) == 0


def test_caller_stack_preserved_around_call():
    body = "push1 42\n" + call(compute=1000) + "\npop"
    assert word_out(run_asm(returning_top(body), others={B: "push1 1\npush1 2\nstop"})) == 42


def test_call_self_recursion_once():
    # the entry contract calls itself with call data 01; the inner frame sees it and returns 9
    src = """
    push1 0
    calldataload
    jumpi inner
    push1 0
    push1 1
    mstore8
    self
    push8 -1
    push1 0
    push1 1
    call
    push1 8
    push1 0
    push1 8
    returndatacopy
    push 0
    swap1
    mstore
    push 0
    push 16
    return
    inner:
    push1 0
    push1 9
    mstore
    push1 0
    push1 8
    return
    """
    result = run_asm(src)
    assert result.output == (1).to_bytes(8, "little") + (9).to_bytes(8, "little")
    assert [(c.depth, c.status) for c in result.calls] == [(2, "success")]


# ---- call data and return data -------------------------------------------------------------

def test_call_data_is_caller_memory_range():
    callee = ("calldatasize\npush1 0\ncalldataload\n"
              "push1 0\nswap1\nmstore\npush1 8\nswap1\nmstore\npush1 0\npush1 16\nreturn")
    caller = ("push1 0\npush8 0x0807060504030201\nmstore\n" + call(offset=2, length=5)
              + "\npop\npush1 0\npush1 0\npush1 16\nreturndatacopy\npush1 0\npush1 16\nreturn")
    out = run_asm(caller, others={B: callee}).output
    assert int.from_bytes(out[:8], "little") == 0x07_0605_0403
    assert int.from_bytes(out[8:], "little") == 5


def test_call_data_range_grows_caller_memory():
    result = run_asm(call(offset=4096, length=1) + "\nstop", others={B: "stop"})
    assert result.status == "success"
    compute = CALL_COST + 2 * PAGE_COST + cost("STOP", "STOP")
    assert usage(result) == (compute, 2, 0, 0, 0, 0)


@pytest.mark.parametrize("offset", [0, M, 2 ** 63])
def test_zero_length_call_data_touches_nothing(offset):
    result = run_asm(call(offset=offset, length=0) + "\nstop", others={B: "stop"},
                     limits=Limits(memory_pages=0))
    assert result.status == "success" and usage(result) == (CALL_COST, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("offset,length", [(M, 1), (4096, 1), (0, 4097)])
def test_call_data_range_over_memory_limit_fails_caller(offset, length):
    result = run_asm(call(offset=offset, length=length) + "\nstop", others={B: "stop"},
                     limits=Limits(memory_pages=1))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", CALL_SIZE - 1)
    assert usage(result) == (CALL_COST, 0, 0, 0, 0, 0)


def test_return_data_of_success_and_revert():
    for halt, ok in (("return", 1), ("revert", 0)):
        callee = f"push1 0\npush8 0xAABBCCDD\nmstore\npush1 0\npush1 4\n{halt}"
        caller = (call() + "\nreturndatasize\npush1 0\npush1 0\npush1 4\nreturndatacopy\n"
                  "push1 8\nswap1\nmstore\npush1 16\nswap1\nmstore\npush1 0\npush1 24\nreturn")
        out = run_asm(caller, others={B: callee}).output
        assert out == bytes.fromhex("ddccbbaa00000000") + (4).to_bytes(8, "little") + ok.to_bytes(8, "little")


# ---- compute given to the callee -----------------------------------------------------------

@pytest.mark.parametrize("given", [0, 1, 2, 3, 100, 101])
def test_callee_compute_limit(given):
    result = run_asm(returning_top(call(compute=given)), others={B: "loop:\njump loop"})
    assert word_out(result) == 0
    used_by_callee = (given // cost("JUMP")) * cost("JUMP")
    assert result.usage.compute == CALL_COST + used_by_callee + RET_COLD


@pytest.mark.parametrize("callee,callee_cost", [("stop", 0), ("trap", 0)])
def test_zero_compute_callee_can_run_free_instructions(callee, callee_cost):
    assert word_out(run_asm(returning_top(call(compute=0)), others={B: callee})) == int(callee == "stop")


def test_zero_compute_callee_cannot_run_nop():
    assert word_out(run_asm(returning_top(call(compute=0)), others={B: "nop\nstop"})) == 0


def test_callee_given_exactly_enough():
    need = cost("PUSH1", "POP", "STOP")
    assert word_out(run_asm(returning_top(call(compute=need)), others={B: "push1 1\npop\nstop"})) == 1
    assert word_out(run_asm(returning_top(call(compute=need - 1)), others={B: "push1 1\npop\nstop"})) == 0


def test_callee_capped_by_caller_limit_then_caller_exhausts():
    limit = CALL_COST + 1000                      # 1000 left for the callee: 500 jumps
    result = run_asm(call() + "\npop\nstop", others={B: "loop:\njump loop"}, limits=Limits(compute=limit))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", CALL_SIZE)
    assert result.usage.compute == limit


def test_caller_with_nothing_left_can_still_stop():
    limit = CALL_COST + 1000
    result = run_asm(call() + "\nstop", others={B: "loop:\njump loop"}, limits=Limits(compute=limit))
    assert result.status == "success" and result.usage.compute == limit


# ---- memory shared across frames -----------------------------------------------------------

@pytest.mark.parametrize("callee_offset,ok,peak", [(0, 1, 2), (4088, 1, 2), (4089, 0, 1), (4096, 0, 1)])
def test_memory_limit_counts_pages_of_all_frames(callee_offset, ok, peak):
    caller = "push1 0\npush1 1\nmstore\n" + call() + "\npush1 8\nswap1\nmstore\npush1 8\npush1 8\nreturn"
    callee = f"push2 {callee_offset}\npush1 1\nmstore\nstop"
    result = run_asm(caller, others={B: callee}, limits=Limits(memory_pages=2))
    assert int.from_bytes(result.output, "little") == ok
    assert result.usage.memory_pages == peak


def test_callee_pages_released_on_return():
    caller = call() + "\npop\npush2 8000\npush1 1\nmstore\nmsize\npush1 0\nswap1\nmstore\npush1 0\npush1 8\nreturn"
    callee = "push2 8000\npush1 1\nmstore\nstop"
    result = run_asm(caller, others={B: callee}, limits=Limits(memory_pages=2))
    assert word_out(result) == 2 * PAGE_SIZE
    assert result.usage.memory_pages == 2


def test_callee_memory_is_separate_and_peak_reported():
    caller = "push1 0\npush1 5\nmstore\n" + call() + "\npop\nmsize\npush1 0\nmload\npush1 0\nswap1\nmstore\npush1 8\nswap1\nmstore\npush1 0\npush1 16\nreturn"
    callee = "push2 12000\npush1 0\nmload8\nmstore8\nstop"    # callee: 3 pages of its own
    result = run_asm(caller, others={B: callee})
    out = result.output
    assert int.from_bytes(out[:8], "little") == 5
    assert int.from_bytes(out[8:], "little") == PAGE_SIZE
    assert result.usage.memory_pages == 1 + 3


def test_callee_memory_starts_empty():
    caller = ("push1 0\npush1 5\nmstore\n" + call() + "\npop\npush1 0\npush1 0\npush1 8\nreturndatacopy\n"
              "push1 0\npush1 8\nreturn")
    result = run_asm(caller, others={B: returning_top("push1 0\nmload\nmsize\nadd")})
    assert int.from_bytes(result.output, "little") == 0 + PAGE_SIZE   # mload 0 read 0; msize 1 page


# ---- storage and events across frames ------------------------------------------------------

NEW_WRITE = (STO["write_units"] + STO["new_slot_units"])


def test_callee_writes_its_own_storage():
    result = run_asm(call() + "\npop\nstop", others={B: "push1 1\npush1 2\nsstore\nstop"})
    assert changes(result) == [(B, 1, 0, 2)]
    compute = CALL_COST + cost("PUSH1", "PUSH1", "SSTORE", "STOP", "POP", "STOP") + STO["new_slot_cost"]
    assert usage(result) == (compute, 0, 0, 1, 1, NEW_WRITE)
    assert result.fee == fee(compute, 0, NEW_WRITE)


@pytest.mark.parametrize("ending", ["push1 0\npush1 0\nrevert", "trap", "pop\nstop", "loop:\njump loop"])
def test_failed_callee_writes_undone_counters_kept(ending):
    caller = "push1 9\npush1 9\nsstore\n" + call(compute=2000) + "\npop\nstop"
    callee = f"push1 1\npush1 2\nsstore\n{ending}"
    result = run_asm(caller, others={B: callee})
    assert result.status == "success"
    assert changes(result) == [(ENTRY, 9, 0, 9)]
    assert result.usage.storage_writes == 2 and result.usage.storage_new_slots == 2
    assert result.usage.storage_units == 2 * NEW_WRITE


def test_callee_sees_its_storage_not_callers():
    callee = returning_top("push1 1\nsload")
    caller = call() + "\npop\npush1 0\npush1 0\npush1 8\nreturndatacopy\npush1 0\npush1 8\nreturn"
    result = run_asm(caller, storage={1: 111}, others={B: callee})
    assert int.from_bytes(result.output, "little") == 0


def test_nested_revert_only_undoes_inner_frame():
    # ENTRY -> B (writes, succeeds) -> C (writes, reverts)
    b_code = "push1 1\npush1 1\nsstore\n" + call(addr=C) + "\npop\nstop"
    c_code = "push1 2\npush1 2\nsstore\npush1 0\npush1 0\nrevert"
    result = run_asm(call() + "\npop\nstop", others={B: b_code, C: c_code})
    assert changes(result) == [(B, 1, 0, 1)]


def test_caller_revert_undoes_successful_callee():
    result = run_asm(call() + "\npop\npush1 0\npush1 0\nrevert", others={B: "push1 1\npush1 2\nsstore\nstop"})
    assert result.status == "reverted" and result.state_changes == ()


def test_callee_events_follow_callee_outcome():
    ok = run_asm(call() + "\npop\nstop", others={B: "push1 0\npush1 0\npush1 3\nlog1\nstop"})
    assert [(e.address, e.topics) for e in ok.events] == [(B, (3,))]
    bad = run_asm(call() + "\npop\nstop", others={B: "push1 0\npush1 0\npush1 3\nlog1\ntrap"})
    assert bad.events == ()


# ---- call depth ----------------------------------------------------------------------------

DEPTH_SRC = """
self
push8 -1
push1 0
push1 0
call
jumpi ok
push1 1
jump out
ok:
push1 0
push1 0
push1 8
returndatacopy
push1 0
mload
push1 1
add
out:
push1 0
swap1
mstore
push1 0
push1 8
return
"""


def test_call_depth_limit():
    result = run_asm(DEPTH_SRC)
    assert word_out(result) == CALL_DEPTH               # frames 1..64 ran; the 65th was refused
    prefix = cost("SELF", "PUSH8", "PUSH1", "PUSH1", "CALL", "JUMPI")
    ok_path = cost("PUSH1", "PUSH1", "PUSH1", "RETURNDATACOPY", "PUSH1", "MLOAD", "PUSH1", "ADD") + COPY_COST
    fail_path = cost("PUSH1", "JUMP")
    tail = cost("PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN")
    compute = (CALL_DEPTH * (prefix + tail + PAGE_COST) + (CALL_DEPTH - 1) * ok_path + fail_path)
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


def test_call_depth_limit_pages_alive():
    # Each frame grows one page before calling deeper: 64 pages alive at the deepest point.
    src = "push1 0\npush1 1\nmstore\n" + DEPTH_SRC
    result = run_asm(src)
    assert word_out(result) == CALL_DEPTH and result.usage.memory_pages == CALL_DEPTH
    limited = run_asm(src, limits=Limits(memory_pages=10))
    assert word_out(limited) == 10                        # the 11th frame cannot get its page


# ---- policy and stack ----------------------------------------------------------------------

def test_external_call_forbidden():
    result = run_asm(call() + "\nstop", others={B: "stop"}, policy=Policy(external_call="forbidden"))
    assert (result.status, result.error, result.error_pc) == ("violation", "EXTERNAL_CALL_FORBIDDEN", None)
    assert usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0


@pytest.mark.parametrize("callee,policy", [
    ("time\nstop", Policy()),
    ("random\nstop", Policy()),
    ("push1 1\npush1 1\nsstore\nstop", Policy(storage_access="read_only")),
    ("push1 1\nsload\nstop", Policy(storage_access="none")),
    ("nop\nstop", Policy(forbidden_operations=("NOP",))),
])
def test_callee_refused_by_policy_pushes_zero(callee, policy):
    result = run_asm(returning_top(call()), others={B: callee}, policy=policy)
    assert word_out(result) == 0
    assert result.usage.compute == CALL_COST + RET_COLD


@pytest.mark.parametrize("items", [0, 1, 2, 3])
def test_underflow(items):
    result = run_asm("push1 0\n" * items + "call\nstop", others={B: "stop"})
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * items)
    assert usage(result) == (items * cost("PUSH1"), 0, 0, 0, 0, 0)


def test_call_base_cost_boundary():
    src = call() + "\nstop"
    need = CALL_COST
    assert run_asm(src, others={B: "stop"}, limits=Limits(compute=need)).status == "success"
    bad = run_asm(src, others={B: "stop"}, limits=Limits(compute=need - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", CALL_SIZE - 1)


# ---- call records (chapter 7.5.1) -----------------------------------------------------------

def records(result):
    return [(c.depth, c.caller, c.callee, c.status, c.error, c.error_pc, c.compute) for c in result.calls]


@pytest.mark.parametrize("callee,status,error,error_pc,compute", [
    ("push1 7\npop\nstop", "success", None, None, cost("PUSH1", "POP", "STOP")),
    ("push1 0\npush1 0\nrevert", "reverted", None, None, cost("PUSH1", "PUSH1", "REVERT")),
    ("push1 1\nnop\ntrap", "fault", "TRAP_EXECUTED", 3, cost("PUSH1", "NOP", "TRAP")),
    ("push1 1\nadd\nstop", "fault", "STACK_UNDERFLOW", 2, cost("PUSH1")),
    ("nop\nloop:\njump loop", "exhausted", "COMPUTE_LIMIT_EXCEEDED", 1,
     cost("NOP") + (100 - cost("NOP")) // cost("JUMP") * cost("JUMP")),
    ("push2 5000\nmload\nstop", "exhausted", "MEMORY_LIMIT_EXCEEDED", 3, cost("PUSH2", "MLOAD")),
])
def test_call_record_of_a_run_callee(callee, status, error, error_pc, compute):
    result = run_asm(call(compute=100) + "\npop\nstop", others={B: callee}, limits=Limits(memory_pages=1))
    assert result.status == "success"
    assert records(result) == [(2, ENTRY, B, status, error, error_pc, compute)]


@pytest.mark.parametrize("others,policy,status,error", [
    ({}, Policy(), "rejected", "CONTRACT_NOT_FOUND"),
    ({B: b"short"}, Policy(), "invalid", "CONTAINER_TRUNCATED"),
    ({B: b"XXXX\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00"}, Policy(), "invalid", "BAD_MAGIC"),
    ({B: "push1 1"}, Policy(), "invalid", "CODE_NOT_TERMINATED"),
    ({B: "time\nstop"}, Policy(), "violation", "TIME_ACCESS_FORBIDDEN"),
    ({B: "push1 1\nsload\nstop"}, Policy(storage_access="none"), "violation", "STORAGE_READ_FORBIDDEN"),
])
def test_call_record_of_a_callee_that_cannot_run(others, policy, status, error):
    result = run_asm(call() + "\npop\nstop", others=others, policy=policy)
    assert result.status == "success"
    assert records(result) == [(2, ENTRY, B, status, error, None, 0)]
    assert result.usage.compute == CALL_COST + cost("POP", "STOP")


def test_call_records_in_start_order_with_nested_compute():
    # ENTRY -> B -> C, then ENTRY -> C
    c_code = "push1 1\npop\nstop"
    b_code = call(addr=C) + "\npop\nstop"
    result = run_asm(call() + "\npop\n" + call(addr=C) + "\npop\nstop", others={B: b_code, C: c_code})
    c_cost = cost("PUSH1", "POP", "STOP")
    assert records(result) == [
        (2, ENTRY, B, "success", None, None, CALL_COST + c_cost + cost("POP", "STOP")),
        (3, B, C, "success", None, None, c_cost),
        (2, ENTRY, C, "success", None, None, c_cost),
    ]


def test_call_records_survive_failure_of_entry():
    result = run_asm(call() + "\npop\ntrap", others={B: "push1 1\npush1 1\nsstore\nstop"})
    assert (result.status, result.error) == ("fault", "TRAP_EXECUTED")
    assert result.state_changes == ()
    assert [r[3] for r in records(result)] == ["success"]


def test_call_data_expansion_failure_records_no_call():
    result = run_asm(call(offset=M, length=1) + "\nstop", others={B: "stop"})
    assert result.status == "exhausted" and result.calls == ()


def test_call_depth_records():
    result = run_asm(DEPTH_SRC)
    recs = records(result)
    assert [r[0] for r in recs] == list(range(2, CALL_DEPTH + 2))
    assert all(r[1] == ENTRY and r[2] == ENTRY for r in recs)
    assert [r[3] for r in recs[:-1]] == ["success"] * (CALL_DEPTH - 1)
    assert recs[-1] == (CALL_DEPTH + 1, ENTRY, ENTRY, "fault", "CALL_DEPTH_EXCEEDED", None, 0)
    # each record's compute includes its nested calls: strictly decreasing with depth
    assert all(a[6] > b[6] for a, b in zip(recs, recs[1:-1]))


def test_nothing_ran_no_records():
    result = run_asm(call() + "\nstop", others={B: "stop"}, policy=Policy(external_call="forbidden"))
    assert result.calls == ()


# ---- storage view across frames (chapter 2.3.1) ---------------------------------------------

def test_reentrant_frame_sees_callers_write():
    src = """
    push1 0
    calldataload
    jumpi inner
    push1 4
    push1 44
    sstore
    push1 0
    push1 1
    mstore8
    self
    push8 -1
    push1 0
    push1 1
    call
    pop
    push1 0
    push1 0
    push1 8
    returndatacopy
    push1 0
    push1 8
    return
    inner:
    push1 4
    sload
    push1 0
    swap1
    mstore
    push1 0
    push1 8
    return
    """
    assert word_out(run_asm(src)) == 44


def test_caller_sees_callee_write_at_once():
    src = call() + "\npop\npush2 0xB0B\npush1 0\nmstore\n" + returning_top("push1 1\nsload")
    # the entry contract's slot 1 is untouched by B (B writes its own storage)
    assert word_out(run_asm(src, others={B: "push1 1\npush1 9\nsstore\nstop"})) == 0
