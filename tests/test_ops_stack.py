"""Stack instructions: PUSH1/2/4/8, POP, DUP1..DUP16, SWAP1..SWAP16, and the depth limit."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest

from conftest import returning_top, run_asm, word_out
from opspec import S, STACK_DEPTH, M, cost, fee, RET_COST, ret_stack_cost, returning_stack, words_of
from reference_vm import Limits


def op(mnemonic):
    return S.by_mnemonic[mnemonic].opcode


# ---- PUSHn ---------------------------------------------------------------------------------

@pytest.mark.parametrize("mnemonic,value", [
    ("PUSH1", 0), ("PUSH1", 1), ("PUSH1", 0x7F), ("PUSH1", 0x80), ("PUSH1", 0xFF),
    ("PUSH2", 0), ("PUSH2", 0x8000), ("PUSH2", 0xFFFF), ("PUSH2", 0x1234),
    ("PUSH4", 0x8000_0000), ("PUSH4", 0xFFFF_FFFF), ("PUSH4", 0x0102_0304),
    ("PUSH8", 0), ("PUSH8", 2 ** 63), ("PUSH8", M), ("PUSH8", 0x0102_0304_0506_0708),
])
def test_push_value_zero_extended(mnemonic, value):
    result = run_asm(returning_top(f"{mnemonic.lower()} {value}"))
    assert word_out(result) == value
    compute = cost(mnemonic) + RET_COST
    assert result.usage.compute == compute and result.fee == fee(compute, 1)


@pytest.mark.parametrize("mnemonic,imm_hex,value", [
    ("PUSH1", "a5", 0xA5),
    ("PUSH2", "3412", 0x1234),
    ("PUSH4", "78563412", 0x1234_5678),
    ("PUSH8", "efcdab8967452301", 0x0123_4567_89AB_CDEF),
    ("PUSH8", "0000000000000080", 2 ** 63),
    ("PUSH2", "ff00", 0xFF),
])
def test_push_immediate_is_little_endian(mnemonic, imm_hex, value):
    # Encode the instruction bytes by hand: opcode then the immediate as written.
    src = returning_top(f".hex {op(mnemonic):02x}{imm_hex}")
    assert word_out(run_asm(src)) == value


def test_push_sizes_from_table():
    for n in (1, 2, 4, 8):
        ins = S.by_mnemonic[f"PUSH{n}"]
        assert (ins.immediate_size, ins.inputs, ins.outputs, ins.cost_rule) == (n, 0, 1, None)


def test_push_advances_pc_by_its_size():
    # After push1/push2/push4/push8 (2+3+5+9 = 19 bytes) the underflowing add is at offset 19.
    result = run_asm("push1 1\npush2 2\npush4 3\npush8 4\nadd\nadd\nadd\nadd\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 22)
    assert result.usage.compute == cost("PUSH1", "PUSH2", "PUSH4", "PUSH8", "ADD", "ADD", "ADD")


# ---- POP -----------------------------------------------------------------------------------

def test_pop_discards_top():
    result = run_asm(returning_top("push1 1\npush1 2\npush1 3\npop"))
    assert word_out(result) == 2
    assert result.usage.compute == 3 * cost("PUSH1") + cost("POP") + RET_COST


def test_pop_underflow():
    result = run_asm("pop\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 0)
    assert result.usage.compute == 0 and result.fee == 0


def test_pop_then_underflow_pc():
    result = run_asm("push1 1\npop\npop\nstop")
    assert (result.error, result.error_pc) == ("STACK_UNDERFLOW", 3)
    assert result.usage.compute == cost("PUSH1", "POP")


# ---- DUPn ----------------------------------------------------------------------------------

SIXTEEN = "\n".join(f"push1 {100 + i}" for i in range(1, 17))   # 101 deepest .. 116 top


@pytest.mark.parametrize("n", range(1, 17))
def test_dup(n):
    result = run_asm(returning_stack(f"{SIXTEEN}\ndup{n}", 17))
    expected_top = 117 - n                     # the n-th item from the top (1 = top)
    assert words_of(result) == [expected_top] + [116 - i for i in range(16)]
    compute = 16 * cost("PUSH1") + cost(f"DUP{n}") + ret_stack_cost(17)
    assert result.usage.compute == compute
    assert result.fee == fee(compute, 1)


@pytest.mark.parametrize("n", range(1, 17))
def test_dup_underflow(n):
    result = run_asm("push1 7\n" * (n - 1) + f"dup{n}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * (n - 1))
    assert result.usage.compute == (n - 1) * cost("PUSH1")


@pytest.mark.parametrize("n", range(1, 17))
def test_dup_exact_depth_ok(n):
    # exactly n items: the deepest (42) is the n-th from the top
    result = run_asm(returning_top("push1 42\n" + "push1 0\n" * (n - 1) + f"dup{n}"))
    assert word_out(result) == 42


# ---- SWAPn ---------------------------------------------------------------------------------

SEVENTEEN = "\n".join(f"push1 {i}" for i in range(1, 18))      # 1 deepest .. 17 top


@pytest.mark.parametrize("n", range(1, 17))
def test_swap(n):
    result = run_asm(returning_stack(f"{SEVENTEEN}\nswap{n}", 17))
    stack = list(range(1, 18))                                   # bottom .. top
    stack[-1], stack[-1 - n] = stack[-1 - n], stack[-1]
    assert words_of(result) == stack[::-1]
    assert words_of(result)[0] == 17 - n and words_of(result)[n] == 17
    compute = 17 * cost("PUSH1") + cost(f"SWAP{n}") + ret_stack_cost(17)
    assert result.usage.compute == compute


def test_swap1_and_swap16_by_hand():
    assert words_of(run_asm(returning_stack("push1 1\npush1 2\nswap1", 2))) == [1, 2]
    r = run_asm(returning_stack(SEVENTEEN + "\nswap16", 17))
    assert words_of(r) == [1, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 17]


@pytest.mark.parametrize("n", range(1, 17))
def test_swap_underflow(n):
    result = run_asm("push1 7\n" * n + f"swap{n}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * n)
    assert result.usage.compute == n * cost("PUSH1")


def test_swap_twice_restores():
    r = run_asm(returning_stack(SEVENTEEN + "\nswap7\nswap7", 17))
    assert words_of(r) == list(range(17, 0, -1))


# ---- stack depth limit ---------------------------------------------------------------------

FULL = "push1 0\n" * STACK_DEPTH


def test_full_stack_is_allowed():
    result = run_asm(FULL + "stop")
    assert result.status == "success"
    assert result.usage.compute == STACK_DEPTH * cost("PUSH1")


@pytest.mark.parametrize("extra", ["push1 1", "push8 1", "dup1", "dup16"])
def test_overflow_on_growth(extra):
    result = run_asm(FULL + f"{extra}\nstop")
    assert (result.status, result.error) == ("fault", "STACK_OVERFLOW")
    assert result.error_pc == 2 * STACK_DEPTH
    assert result.usage.compute == STACK_DEPTH * cost("PUSH1")   # the overflowing op is not charged


def test_overflow_after_segment_boundary():
    # The 1024 pushes form one segment; the overflowing push starts another after a jump.
    result = run_asm(FULL + "jump next\nnext:\npush1 1\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_OVERFLOW", 2 * STACK_DEPTH + 5)
    assert result.usage.compute == STACK_DEPTH * cost("PUSH1") + cost("JUMP")


@pytest.mark.parametrize("extra", ["swap1", "swap16", "pop", "add", "iszero"])
def test_no_overflow_without_growth(extra):
    assert run_asm(FULL + f"{extra}\nstop").status == "success"


def test_underflow_precedes_compute_check():
    # With no compute left, an underflowing instruction still reports STACK_UNDERFLOW.
    result = run_asm("push1 1\nadd\nstop", limits=Limits(compute=cost("PUSH1")))
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2)


@pytest.mark.parametrize("mnemonic", ["PUSH1", "PUSH8", "POP", "DUP1", "SWAP1"])
def test_compute_limit_boundary(mnemonic):
    prefix = "push1 5\npush1 6\n"
    line = {"PUSH1": "push1 3", "PUSH8": "push8 3"}.get(mnemonic, mnemonic.lower())
    src = prefix + line + "\nstop"
    need = 2 * cost("PUSH1") + cost(mnemonic)
    assert run_asm(src, limits=Limits(compute=need)).status == "success"
    short = run_asm(src, limits=Limits(compute=need - 1))
    assert (short.status, short.error, short.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 4)
    assert short.usage.compute == 2 * cost("PUSH1")


def test_push_encoded_with_spaced_byte_directive():
    # chapter 9.5: whitespace around the commas of .byte is allowed (the assembler once refused it)
    src = returning_top(f".byte {op('PUSH2')}, 0x34, 0x12")
    assert word_out(run_asm(src)) == 0x1234
