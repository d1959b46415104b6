"""Control instructions: STOP NOP JUMP JUMPI CALLSUB RETSUB RETURN REVERT TRAP."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest

from conftest import ENTRY, returning_top, run_asm, word_out
from opspec import (
    SCHED, PAGE_COST, RSTACK, M, cost, fee, RET_COST, returning_stack, ret_stack_cost, words_of,
    usage, pages_for,
)
from reference_vm import Limits


# ---- STOP / NOP / TRAP ---------------------------------------------------------------------

def test_stop_is_free_and_empty():
    result = run_asm("stop")
    assert (result.status, result.error, result.error_pc, result.output) == ("success", None, None, b"")
    assert usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0


def test_stop_with_items_on_stack_and_memory():
    result = run_asm("push1 0\npush1 7\nmstore\npush1 1\nstop")
    assert result.status == "success" and result.output == b""
    compute = cost("PUSH1", "PUSH1", "MSTORE", "PUSH1", "STOP") + PAGE_COST
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


def test_stop_with_zero_compute_limit():
    assert run_asm("stop", limits=Limits(compute=0)).status == "success"


@pytest.mark.parametrize("n", [1, 2, 5])
def test_nop(n):
    result = run_asm(returning_top("push1 9\n" + "nop\n" * n))
    assert word_out(result) == 9                 # NOP leaves the stack unchanged
    assert result.usage.compute == cost("PUSH1") + n * cost("NOP") + RET_COST


def test_nop_compute_boundary():
    assert run_asm("nop\nnop\nstop", limits=Limits(compute=2 * cost("NOP"))).status == "success"
    r = run_asm("nop\nnop\nstop", limits=Limits(compute=2 * cost("NOP") - 1))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 1)
    assert r.usage.compute == cost("NOP")


def test_trap():
    result = run_asm("push1 1\ntrap")
    assert (result.status, result.error, result.error_pc) == ("fault", "TRAP_EXECUTED", 2)
    assert result.output == b""
    assert usage(result) == (cost("PUSH1", "TRAP"), 0, 0, 0, 0, 0)


def test_trap_with_zero_compute_still_traps():
    r = run_asm("trap", limits=Limits(compute=0))
    assert (r.status, r.error, r.error_pc) == ("fault", "TRAP_EXECUTED", 0)


def test_trap_discards_state_and_events_but_keeps_usage():
    src = "push1 1\npush1 2\nsstore\npush1 0\npush1 0\nlog0\ntrap"
    result = run_asm(src)
    assert (result.status, result.error, result.error_pc) == ("fault", "TRAP_EXECUTED", 10)
    assert result.state_changes == () and result.events == ()
    st = SCHED["storage"]
    units = st["write_units"] + st["new_slot_units"]
    compute = cost("PUSH1", "PUSH1", "SSTORE", "PUSH1", "PUSH1", "LOG0", "TRAP") + st["new_slot_cost"]
    assert usage(result) == (compute, 0, 0, 1, 1, units)
    assert result.fee == fee(compute, 0, units)


# ---- JUMP / JUMPI --------------------------------------------------------------------------

def test_jump_skips_code():
    result = run_asm(returning_top("push1 1\njump over\npush1 2\nover:"))
    assert word_out(result) == 1
    assert result.usage.compute == cost("PUSH1", "JUMP") + RET_COST


def test_jump_backward_loop_with_jumpi():
    # counter 3 -> 2 -> 1 -> 0; the body runs three times
    body = "push1 3\nloop:\npush1 1\nsub\ndup1\njumpi loop"
    result = run_asm(returning_top(body))
    assert word_out(result) == 0
    assert result.usage.compute == cost("PUSH1") + 3 * cost("PUSH1", "SUB", "DUP1", "JUMPI") + RET_COST


def test_jump_to_numeric_offset():
    # jump 5 lands on the push1 after the jump instruction (size 5)
    result = run_asm(returning_top("jump 5\npush1 4"))
    assert word_out(result) == 4


def test_jump_target_inside_immediate_is_invalid():
    result = run_asm("jump 1\nstop")
    assert (result.status, result.error, result.error_pc) == ("invalid", "INVALID_JUMP_TARGET", None)
    assert usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0


JUMPI_SRC = """
push1 7
push8 {cond}
jumpi taken
push1 0xAA
{ret}
taken:
push1 0xBB
{ret}
"""


@pytest.mark.parametrize("cond,taken", [
    (0, False), (1, True), (2, True), (0x100, True), (2 ** 63, True), (M, True), (2 ** 32, True),
])
def test_jumpi(cond, taken):
    ret = "push1 0\nswap1\nmstore\npush1 8\nswap1\nmstore\npush1 0\npush1 16\nreturn"
    result = run_asm(JUMPI_SRC.format(cond=cond, ret=ret))
    # the condition is popped in both cases: the item below the marker is 7
    assert words_of(result) == [0xBB if taken else 0xAA, 7]
    assert result.usage.compute == cost("PUSH1", "PUSH8", "JUMPI", "PUSH1") + ret_stack_cost(2)


def test_jumpi_underflow():
    result = run_asm("jumpi end\nend:\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 0)
    assert result.usage.compute == 0


def test_jumpi_underflow_pc_after_code():
    result = run_asm("push1 1\njumpi a\na:\njumpi b\nb:\nstop")
    assert (result.error, result.error_pc) == ("STACK_UNDERFLOW", 7)
    assert result.usage.compute == cost("PUSH1", "JUMPI")


def test_jump_compute_boundary():
    src = "jump end\nend:\nstop"
    assert run_asm(src, limits=Limits(compute=cost("JUMP"))).status == "success"
    r = run_asm(src, limits=Limits(compute=cost("JUMP") - 1))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 0)


def test_infinite_loop_exhausts_compute_exactly():
    limit = 101
    r = run_asm("loop:\njump loop", limits=Limits(compute=limit))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 0)
    assert r.usage.compute == (limit // cost("JUMP")) * cost("JUMP")


# ---- CALLSUB / RETSUB ----------------------------------------------------------------------

def test_callsub_retsub_returns_to_next_instruction():
    src = returning_stack("push1 1\ncallsub sub\npush1 3\njump done\nsub:\npush1 2\nretsub\ndone:", 3)
    result = run_asm(src)
    assert words_of(result) == [3, 2, 1]
    compute = cost("PUSH1", "CALLSUB", "PUSH1", "RETSUB", "PUSH1", "JUMP") + ret_stack_cost(3)
    assert result.usage.compute == compute


def test_nested_subroutines():
    body = """
    callsub a
    push1 9
    jump done
    a:
    push1 1
    callsub b
    push1 3
    retsub
    b:
    push1 2
    retsub
    done:
    """
    result = run_asm(returning_stack(body, 4))
    assert words_of(result) == [9, 3, 2, 1]
    compute = 2 * cost("CALLSUB") + 2 * cost("RETSUB") + 4 * cost("PUSH1") + cost("JUMP")
    assert result.usage.compute == compute + ret_stack_cost(4)


def test_subroutine_called_twice():
    body = "push1 0\ncallsub inc\ncallsub inc\njump done\ninc:\npush1 1\nadd\nretsub\ndone:"
    result = run_asm(returning_top(body))
    assert word_out(result) == 2
    compute = cost("PUSH1") + 2 * cost("CALLSUB", "PUSH1", "ADD", "RETSUB") + cost("JUMP") + RET_COST
    assert result.usage.compute == compute


def test_retsub_on_empty_return_stack():
    result = run_asm("push1 1\nretsub")
    assert (result.status, result.error, result.error_pc) == ("fault", "RETURN_STACK_UNDERFLOW", 2)
    # the stack check passes and the base cost is charged before the operation fails
    assert result.usage.compute == cost("PUSH1", "RETSUB")


def test_retsub_does_not_use_operand_stack():
    # RETSUB with operand items but no return offsets still faults
    result = run_asm("push1 5\npush1 5\nretsub")
    assert result.error == "RETURN_STACK_UNDERFLOW"


def test_return_stack_overflow():
    result = run_asm("loop:\ncallsub loop\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "RETURN_STACK_OVERFLOW", 0)
    assert result.usage.compute == (RSTACK + 1) * cost("CALLSUB")


REC = """
    push2 {start}
    callsub rec
    jump done
    rec:
    dup1
    iszero
    jumpi base
    push1 1
    sub
    callsub rec
    retsub
    base:
    retsub
    done:
"""


def test_return_stack_full_depth_is_allowed():
    # One top-level CALLSUB plus RSTACK-1 recursive ones: exactly RSTACK offsets at the deepest.
    result = run_asm(returning_top(REC.format(start=RSTACK - 1)))
    assert word_out(result) == 0
    level = cost("DUP1", "ISZERO", "JUMPI")
    compute = (cost("PUSH2", "CALLSUB") + (RSTACK - 1) * (level + cost("PUSH1", "SUB", "CALLSUB", "RETSUB"))
               + level + cost("RETSUB") + cost("JUMP") + RET_COST)
    assert result.usage.compute == compute


def test_return_stack_one_too_deep():
    result = run_asm(returning_top(REC.format(start=RSTACK)))
    assert (result.status, result.error) == ("fault", "RETURN_STACK_OVERFLOW")
    # offset of the recursive callsub: push2(3) callsub(5) jump(5) dup1 iszero jumpi(5) push1(2) sub
    assert result.error_pc == 3 + 5 + 5 + 1 + 1 + 5 + 2 + 1


# ---- RETURN / REVERT -----------------------------------------------------------------------

MEM_SETUP = "push1 0\npush8 0x0807060504030201\nmstore"
MEM_SETUP_COST = cost("PUSH1", "PUSH8", "MSTORE") + PAGE_COST


@pytest.mark.parametrize("halt,status", [("return", "success"), ("revert", "reverted")])
@pytest.mark.parametrize("offset,length,expected", [
    (0, 8, bytes(range(1, 9))),
    (2, 4, bytes([3, 4, 5, 6])),
    (7, 1, b"\x08"),
    (6, 6, bytes([7, 8, 0, 0, 0, 0])),
    (4, 0, b""),
])
def test_output_range(halt, status, offset, length, expected):
    result = run_asm(f"{MEM_SETUP}\npush2 {offset}\npush2 {length}\n{halt}")
    assert (result.status, result.error, result.error_pc) == (status, None, None)
    assert result.output == expected
    compute = MEM_SETUP_COST + cost("PUSH2", "PUSH2", halt.upper())
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


@pytest.mark.parametrize("halt,status", [("return", "success"), ("revert", "reverted")])
@pytest.mark.parametrize("offset", [0, 4096, 2 ** 63, M])
def test_zero_length_output_touches_nothing(halt, status, offset):
    result = run_asm(f"push8 {offset}\npush1 0\n{halt}", limits=Limits(memory_pages=0))
    assert (result.status, result.output) == (status, b"")
    compute = cost("PUSH8", "PUSH1", halt.upper())
    assert usage(result) == (compute, 0, 0, 0, 0, 0) and result.fee == fee(compute, 0)


@pytest.mark.parametrize("halt,status", [("return", "success"), ("revert", "reverted")])
@pytest.mark.parametrize("offset,length", [(0, 1), (0, 4096), (4000, 200), (4095, 2), (8192, 1),
                                           (0, 3 * 4096 + 1)])
def test_output_from_fresh_memory_grows_pages(halt, status, offset, length):
    result = run_asm(f"push4 {offset}\npush4 {length}\n{halt}")
    assert (result.status, result.output) == (status, bytes(length))
    pages = pages_for(offset + length)
    compute = cost("PUSH4", "PUSH4", halt.upper()) + pages * PAGE_COST
    assert usage(result) == (compute, pages, 0, 0, 0, 0) and result.fee == fee(compute, pages)


@pytest.mark.parametrize("halt", ["return", "revert"])
def test_output_memory_limit_exceeded(halt):
    result = run_asm(f"push1 0\npush2 4097\n{halt}", limits=Limits(memory_pages=1))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 5)
    assert result.output == b""
    assert usage(result) == (cost("PUSH1", "PUSH2", halt.upper()), 0, 0, 0, 0, 0)


@pytest.mark.parametrize("halt", ["return", "revert"])
def test_output_exact_memory_limit(halt):
    result = run_asm(f"push1 0\npush2 8192\n{halt}", limits=Limits(memory_pages=2))
    expected = {"return": "success", "revert": "reverted"}[halt]
    assert result.status == expected and result.usage.memory_pages == 2


@pytest.mark.parametrize("halt", ["return", "revert"])
@pytest.mark.parametrize("offset", [M, 2 ** 63])
def test_output_at_huge_offset_exceeds_memory(halt, offset):
    result = run_asm(f"push8 {offset}\npush1 1\n{halt}")
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 11)


@pytest.mark.parametrize("halt", ["return", "revert"])
def test_output_page_cost_exceeds_compute(halt):
    need = cost("PUSH1", "PUSH1", halt.upper()) + PAGE_COST
    src = f"push1 0\npush1 1\n{halt}"
    assert run_asm(src, limits=Limits(compute=need)).usage.compute == need
    r = run_asm(src, limits=Limits(compute=need - 1))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 4)
    assert r.usage.memory_pages == 0


@pytest.mark.parametrize("halt", ["return", "revert"])
@pytest.mark.parametrize("items", [0, 1])
def test_output_underflow(halt, items):
    result = run_asm("push1 0\n" * items + halt)
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * items)
    assert result.usage.compute == items * cost("PUSH1")


def test_revert_undoes_storage_and_events_but_charges():
    src = f"push1 5\npush1 6\nsstore\n{MEM_SETUP}\npush1 0\npush1 4\nlog0\npush1 0\npush1 3\nrevert"
    result = run_asm(src, storage={9: 9})
    assert (result.status, result.output) == ("reverted", b"\x01\x02\x03")
    assert result.state_changes == () and result.events == ()
    st = SCHED["storage"]
    units = st["write_units"] + st["new_slot_units"]
    copy = SCHED["copy"]
    compute = (cost("PUSH1", "PUSH1", "SSTORE") + st["new_slot_cost"] + MEM_SETUP_COST
               + cost("PUSH1", "PUSH1", "LOG0") + copy["word_cost"] * 1
               + cost("PUSH1", "PUSH1", "REVERT"))
    assert usage(result) == (compute, 1, 0, 1, 1, units)
    assert result.fee == fee(compute, 1, units)


def test_return_keeps_storage_and_events():
    src = f"push1 5\npush1 6\nsstore\n{MEM_SETUP}\npush1 0\npush1 4\nlog0\npush1 0\npush1 3\nreturn"
    result = run_asm(src)
    assert (result.status, result.output) == ("success", b"\x01\x02\x03")
    assert [(c.address, c.key, c.before, c.after) for c in result.state_changes] == [(ENTRY, 5, 0, 6)]
    assert [(e.address, e.topics, e.data) for e in result.events] == [(ENTRY, (), b"\x01\x02\x03\x04")]
