"""Bitwise instructions: AND OR XOR NOT SHL SHRU SHRS ROTL ROTR."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import returning_top, run_asm, word_out
from opspec import S, W, M, MIN, MAX, cost, fee, RET_COST
from reference_vm import Limits

BINARY = ("AND", "OR", "XOR", "SHL", "SHRU", "SHRS", "ROTL", "ROTR")
ALL = BINARY + ("NOT",)


def run_binary(op, a, b):
    return run_asm(returning_top(f"push8 {a}\npush8 {b}\n{op}"))


A = 0x0123_4567_89AB_CDEF
CASES = {
    "AND": [(0, M, 0), (M, M, M), (A, M, A), (A, 0xFF, 0xEF), (MIN, M, MIN), (0xF0F0, 0x0FF0, 0x00F0)],
    "OR": [(0, 0, 0), (0, M, M), (A, 0, A), (MIN, 1, MIN + 1), (0xF0F0, 0x0FF0, 0xFFF0)],
    "XOR": [(A, A, 0), (A, M, 0xFEDC_BA98_7654_3210), (0, MIN, MIN), (0xF0F0, 0x0FF0, 0xFF00)],
    "SHL": [
        (1, 0, 1), (1, 1, 2), (1, 63, MIN), (1, 64, 0), (1, 65, 0), (M, 64, 0),
        (M, 63, MIN), (M, 1, M - 1), (3, 63, MIN), (A, 4, 0x1234_5678_9ABC_DEF0),
        (M, M, 0), (M, MIN, 0), (M, 2 ** 32, 0), (M, 0, M), (1, 128, 0),
    ],
    "SHRU": [
        (MIN, 63, 1), (MIN, 64, 0), (M, 63, 1), (M, 64, 0), (M, 65, 0), (M, M, 0), (M, 0, M),
        (M, 1, MAX), (A, 4, 0x0012_3456_789A_BCDE), (1, 1, 0), (M, MIN, 0), (M, 2 ** 32 + 1, 0),
    ],
    "SHRS": [
        (MIN, 63, M), (MIN, 1, 0xC000_0000_0000_0000), (MIN, 64, M), (MIN, 65, M), (MIN, M, M),
        (MAX, 63, 0), (MAX, 64, 0), (MAX, M, 0), (MAX, 62, 1), (M, 1, M), (M, 0, M), (0, 64, 0),
        (A, 4, 0x0012_3456_789A_BCDE), (0xF000_0000_0000_0000, 4, 0xFF00_0000_0000_0000),
        (M - 15, 2, M - 3),            # -16 >> 2 = -4
        (M - 16, 2, M - 4),            # -17 >> 2 = -5 (rounds toward -infinity)
        (1, 2 ** 32, 0), (M, MIN, M), (MIN, 2 ** 32 + 1, M),
    ],
    "ROTL": [
        (A, 0, A), (A, 64, A), (A, 128, A), (A, 4, 0x1234_5678_9ABC_DEF0), (A, 68, 0x1234_5678_9ABC_DEF0),
        (MIN, 1, 1), (MIN, 65, 1), (1, 63, MIN), (1, M, MIN),         # M mod 64 = 63
        (A, 60, 0xF012_3456_789A_BCDE), (M, 13, M), (0, 5, 0), (1, MIN, 1),  # MIN mod 64 = 0
        (0x8000_0000_0000_0001, 1, 3),
    ],
    "ROTR": [
        (A, 0, A), (A, 64, A), (A, 4, 0xF012_3456_789A_BCDE), (A, 68, 0xF012_3456_789A_BCDE),
        (1, 1, MIN), (1, 65, MIN), (MIN, 63, 1), (MIN, M, 1), (A, 60, 0x1234_5678_9ABC_DEF0),
        (3, 1, 0x8000_0000_0000_0001), (M, 7, M), (1, 2 ** 64 - 64, 1),
    ],
}
ROWS = [(op, a, b, r) for op, rows in CASES.items() for a, b, r in rows]


@pytest.mark.parametrize("op,a,b,expected", ROWS)
def test_binary_table(op, a, b, expected):
    result = run_binary(op, a, b)
    assert word_out(result) == expected
    compute = 2 * cost("PUSH8") + cost(op) + RET_COST
    assert result.usage.compute == compute
    assert result.usage.memory_pages == 1
    assert result.fee == fee(compute, 1)


@pytest.mark.parametrize("a,expected", [
    (0, M), (M, 0), (MIN, MAX), (MAX, MIN), (A, 0xFEDC_BA98_7654_3210), (1, M - 1),
])
def test_not(a, expected):
    result = run_asm(returning_top(f"push8 {a}\nnot"))
    assert word_out(result) == expected
    compute = cost("PUSH8", "NOT") + RET_COST
    assert result.usage.compute == compute and result.fee == fee(compute, 1)


def test_table_rows():
    for op in ALL:
        ins = S.by_mnemonic[op]
        assert ins.type == "bitwise" and ins.cost_rule is None and ins.outputs == 1
        assert ins.inputs == (1 if op == "NOT" else 2)


@pytest.mark.parametrize("op", BINARY)
def test_operand_order(op):
    # a = 0x10 (deeper), b = 3 (top)
    expected = {"AND": 0, "OR": 0x13, "XOR": 0x13, "SHL": 0x80, "SHRU": 2, "SHRS": 2,
                "ROTL": 0x80, "ROTR": 2}
    assert word_out(run_binary(op, 0x10, 3)) == expected[op]


@pytest.mark.parametrize("op", BINARY)
def test_result_replaces_operands(op):
    assert word_out(run_asm(returning_top(f"push8 0xCAFE\npush1 1\npush1 2\n{op}\npop"))) == 0xCAFE


@pytest.mark.parametrize("op", ALL)
def test_underflow(op):
    n = S.by_mnemonic[op].inputs - 1
    result = run_asm("push1 1\n" * n + f"{op}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * n)
    assert result.usage.compute == n * cost("PUSH1")


@pytest.mark.parametrize("op", ALL)
def test_compute_limit_boundary(op):
    n = S.by_mnemonic[op].inputs
    src = "push1 1\n" * n + f"{op}\nstop"
    need = n * cost("PUSH1") + cost(op)
    assert run_asm(src, limits=Limits(compute=need)).usage.compute == need
    short = run_asm(src, limits=Limits(compute=need - 1))
    assert (short.status, short.error, short.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 2 * n)


# ---- plain-Python models (rotations via bit strings, shifts via multiplication/division) ----

def bits(x):
    return format(x, "064b")


def model(op, a, b):
    if op == "AND":
        return a & b
    if op == "OR":
        return a | b
    if op == "XOR":
        return a ^ b
    if op == "SHL":
        return (a * 2 ** b) % W if b < 64 else 0
    if op == "SHRU":
        return a // 2 ** b if b < 64 else 0
    if op == "SHRS":
        sa = a - W if a >= MIN else a
        if b >= 64:
            return M if sa < 0 else 0
        return (sa // 2 ** b) % W                    # floor division = arithmetic shift
    if op == "ROTL":
        r = b % 64
        t = bits(a)
        return int(t[r:] + t[:r], 2)
    if op == "ROTR":
        r = b % 64
        t = bits(a)
        return int(t[64 - r:] + t[:64 - r], 2)
    raise AssertionError(op)


def test_model_agrees_with_table():
    for op, a, b, expected in ROWS:
        assert model(op, a, b) == expected, (op, a, b)


EDGE = [0, 1, M, MIN, MAX, A, 0xFF, 2 ** 32]
SHIFTS = [0, 1, 31, 32, 63, 64, 65, 127, 128, MIN, M, 2 ** 32]
words = st.one_of(st.integers(0, M), st.sampled_from(EDGE))
amounts = st.one_of(st.integers(0, 130), st.sampled_from(SHIFTS), st.integers(0, M))
prop = settings(max_examples=60, deadline=None)


@pytest.mark.parametrize("op", ("AND", "OR", "XOR"))
@prop
@given(a=words, b=words)
def test_property_logic(op, a, b):
    assert word_out(run_binary(op, a, b)) == model(op, a, b)


@pytest.mark.parametrize("op", ("SHL", "SHRU", "SHRS", "ROTL", "ROTR"))
@prop
@given(a=words, b=amounts)
def test_property_shift_rotate(op, a, b):
    assert word_out(run_binary(op, a, b)) == model(op, a, b)


@prop
@given(a=words)
def test_property_not(a):
    assert word_out(run_asm(returning_top(f"push8 {a}\nnot"))) == M - a


@prop
@given(a=words, b=amounts)
def test_property_rotl_then_rotr_is_identity(a, b):
    src = returning_top(f"push8 {a}\npush8 {b}\nrotl\npush8 {b}\nrotr")
    assert word_out(run_asm(src)) == a


@prop
@given(a=words, b=words)
def test_property_de_morgan(a, b):
    src = returning_top(f"push8 {a}\npush8 {b}\nand\nnot\npush8 {a}\nnot\npush8 {b}\nnot\nor\nxor")
    assert word_out(run_asm(src)) == 0
