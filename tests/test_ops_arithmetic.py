"""Arithmetic instructions: ADD SUB MUL DIVU DIVS REMU REMS.

Expected values are written by hand or computed with plain Python integers; costs come from the
spec data files and totals are summed here.
"""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import returning_top, run_asm, word_out
from opspec import S, W, M, MIN, MAX, cost, fee, RET_COST, u, s

OPS = ("ADD", "SUB", "MUL", "DIVU", "DIVS", "REMU", "REMS")


def binop(op: str, a: int, b: int):
    return run_asm(returning_top(f"push8 {a}\npush8 {b}\n{op}"))


# ---- hand-written tables: (a, b, expected), signed values given as u(...) -------------------

ADD_CASES = [
    (0, 0, 0), (1, 2, 3), (M, 1, 0), (M, M, M - 1), (MAX, 1, MIN), (MIN, MIN, 0),
    (MIN, M, MAX), (0x1234, 0xFFFF_FFFF_FFFF_0000, 0xFFFF_FFFF_FFFF_1234),
]
SUB_CASES = [
    (5, 3, 2), (3, 5, M - 1), (0, 1, M), (MIN, 1, MAX), (MAX, M, MIN), (0, MIN, MIN),
    (M, M, 0), (0, 0, 0), (1, M, 2),
]
MUL_CASES = [
    (3, 7, 21), (0, M, 0), (1, M, M), (M, M, 1), (2 ** 32, 2 ** 32, 0),
    (2 ** 32 + 1, 2 ** 32 - 1, M), (MIN, 2, 0), (MIN, M, MIN), (MAX, 2, M - 1),
    (u(-3), 5, u(-15)), (u(-3), u(-5), 15), (0x1_0000_0001, 0x1_0000_0001, 0x2_0000_0001),
]
DIVU_CASES = [
    (7, 2, 3), (2, 7, 0), (7, 0, M), (0, 0, M), (M, 0, M), (M, 1, M), (M, M, 1), (1, M, 0),
    (MIN, 2, 2 ** 62), (M, 2 ** 32, 2 ** 32 - 1), (u(-2), 2, MAX), (6, 3, 2),
]
DIVS_CASES = [
    (7, 2, 3), (u(-7), 2, u(-3)), (7, u(-2), u(-3)), (u(-7), u(-2), 3),
    (MIN, M, MIN),              # MIN / -1 = MIN
    (MIN, 1, MIN), (MIN, 2, u(-(2 ** 62))), (5, 0, M), (u(-5), 0, M), (0, 0, M), (MIN, 0, M),
    (MAX, M, u(-MAX)), (MIN, MIN, 1), (MAX, MIN, 0), (M, MIN, 0), (MIN, MAX, M),
    (u(-1), 2, 0), (u(-9), 4, u(-2)), (1, u(-1), M), (2, 7, 0),
]
REMU_CASES = [
    (7, 2, 1), (2, 7, 2), (7, 0, 7), (0, 0, 0), (M, 0, M), (MIN, 0, MIN), (M, 2 ** 32, 2 ** 32 - 1),
    (M, M, 0), (M, 10, 5), (0, 5, 0),
]
REMS_CASES = [
    (7, 2, 1), (u(-7), 2, M), (7, u(-2), 1), (u(-7), u(-2), M),
    (MIN, M, 0),                # MIN % -1 = 0
    (5, 0, 5), (u(-5), 0, u(-5)), (MIN, 0, MIN), (0, 0, 0), (MIN, 2, 0), (MIN, 3, u(-2)),
    (MAX, MIN, MAX), (MIN, MAX, M), (M, MIN, M), (u(-9), 4, M), (9, u(-4), 1), (MIN, MIN, 0),
]
TABLE = {"ADD": ADD_CASES, "SUB": SUB_CASES, "MUL": MUL_CASES, "DIVU": DIVU_CASES,
         "DIVS": DIVS_CASES, "REMU": REMU_CASES, "REMS": REMS_CASES}
ALL_CASES = [(op, a, b, r) for op, rows in TABLE.items() for a, b, r in rows]


@pytest.mark.parametrize("op,a,b,expected", ALL_CASES)
def test_table(op, a, b, expected):
    result = binop(op, a, b)
    assert word_out(result) == expected
    compute = 2 * cost("PUSH8") + cost(op) + RET_COST
    assert result.usage.compute == compute
    assert result.usage.memory_pages == 1
    assert (result.usage.storage_reads, result.usage.storage_writes,
            result.usage.storage_units) == (0, 0, 0)
    assert result.fee == fee(compute, 1)
    assert result.state_changes == () and result.events == ()


def test_base_costs_from_table():
    # Sanity of the spec data this file relies on (values written in instructions.toml).
    assert [cost(op) for op in OPS] == [1, 1, 3, 5, 5, 5, 5]
    for op in OPS:
        ins = S.by_mnemonic[op]
        assert (ins.inputs, ins.outputs, ins.cost_rule, ins.type) == (2, 1, None, "arithmetic")


@pytest.mark.parametrize("op", OPS)
def test_operand_order_bottom_is_a(op):
    # a is pushed first (deeper), b is the top: a op b with a=100, b=7.
    expected = {"ADD": 107, "SUB": 93, "MUL": 700, "DIVU": 14, "DIVS": 14, "REMU": 2, "REMS": 2}
    assert word_out(binop(op, 100, 7)) == expected[op]


@pytest.mark.parametrize("op", OPS)
def test_result_replaces_two_operands(op):
    # The item below the operands survives and exactly one result is left on top of it.
    src = returning_top(f"push8 0xDEAD\npush8 12\npush8 5\n{op}\npop")
    assert word_out(run_asm(src)) == 0xDEAD


@pytest.mark.parametrize("op", OPS)
def test_underflow_empty_stack(op):
    result = run_asm(f"{op}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 0)
    assert result.output == b""
    assert result.usage.compute == 0 and result.usage.memory_pages == 0
    assert result.fee == 0


@pytest.mark.parametrize("op", OPS)
def test_underflow_one_item(op):
    result = run_asm(f"push8 5\n{op}\nstop")
    push8_size = 1 + S.by_mnemonic["PUSH8"].immediate_size
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", push8_size)
    assert result.usage.compute == cost("PUSH8")
    assert result.fee == fee(cost("PUSH8"), 0)


@pytest.mark.parametrize("op", OPS)
def test_underflow_mid_segment_reports_exact_pc(op):
    # push1 1, push1 2, op (ok), op (underflow at offset 5): nothing of the failing op is charged.
    result = run_asm(f"push1 1\npush1 2\n{op}\n{op}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 5)
    assert result.usage.compute == 2 * cost("PUSH1") + cost(op)


@pytest.mark.parametrize("op", OPS)
def test_compute_limit_boundary(op):
    src = f"push1 9\npush1 3\n{op}\nstop"
    need = 2 * cost("PUSH1") + cost(op)
    from reference_vm import Limits
    ok = run_asm(src, limits=Limits(compute=need))
    assert ok.status == "success" and ok.usage.compute == need
    short = run_asm(src, limits=Limits(compute=need - 1))
    assert (short.status, short.error, short.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 4)
    assert short.usage.compute == 2 * cost("PUSH1")


def test_chain_of_operations_cost_and_value():
    # ((7 * 6) - 2) / 4 % 3 + 1 = (40 / 4) % 3 + 1 = 10 % 3 + 1 = 2
    body = "push1 7\npush1 6\nmul\npush1 2\nsub\npush1 4\ndivu\npush1 3\nremu\npush1 1\nadd"
    result = run_asm(returning_top(body))
    assert word_out(result) == 2
    assert result.usage.compute == 6 * cost("PUSH1") + cost("MUL", "SUB", "DIVU", "REMU", "ADD") + RET_COST


# ---- plain-Python models ------------------------------------------------------------------

def trunc_div(x: int, y: int) -> int:
    """Signed division rounding toward zero, via floor division and a correction."""
    q = x // y
    if q < 0 and q * y != x:
        q += 1
    return q


def model(op: str, a: int, b: int) -> int:
    if op == "ADD":
        return (a + b) % W
    if op == "SUB":
        return (a - b) % W
    if op == "MUL":
        return (a * b) % W
    if op == "DIVU":
        return M if b == 0 else a // b
    if op == "REMU":
        return a if b == 0 else a % b
    sa, sb = s(a), s(b)
    if op == "DIVS":
        if sb == 0:
            return M
        return trunc_div(sa, sb) % W
    if op == "REMS":
        if sb == 0:
            return a
        return (sa - sb * trunc_div(sa, sb)) % W
    raise AssertionError(op)


def test_models_agree_with_hand_tables():
    # The models used by the property tests must reproduce the hand-written tables.
    for op, a, b, expected in ALL_CASES:
        assert model(op, a, b) == expected, (op, a, b)


EDGE = [0, 1, 2, 3, 7, M, M - 1, MIN, MIN - 1, MIN + 1, 2 ** 32, 2 ** 32 - 1, u(-2), u(-3)]
words = st.one_of(st.integers(0, M), st.sampled_from(EDGE))
small = st.integers(-8, 8).map(u)
prop = settings(max_examples=60, deadline=None)


@pytest.mark.parametrize("op", OPS)
@prop
@given(a=words, b=words)
def test_property_matches_model(op, a, b):
    assert word_out(binop(op, a, b)) == model(op, a, b)


@pytest.mark.parametrize("op", OPS)
@prop
@given(a=small, b=small)
def test_property_small_signed_values(op, a, b):
    assert word_out(binop(op, a, b)) == model(op, a, b)


def _pair(div: str, rem: str, a: int, b: int) -> tuple[int, int]:
    src = f"""
    push8 {a}
    push8 {b}
    {div}
    push 0
    swap1
    mstore
    push8 {a}
    push8 {b}
    {rem}
    push 8
    swap1
    mstore
    push 0
    push 16
    return
    """
    out = run_asm(src)
    assert out.status == "success"
    return int.from_bytes(out.output[:8], "little"), int.from_bytes(out.output[8:], "little")


@prop
@given(a=words, b=words)
def test_property_unsigned_division_identity(a, b):
    q, r = _pair("divu", "remu", a, b)
    assert (q * b + r) % W == a
    if b:
        assert r < b and q == a // b


@prop
@given(a=words, b=words)
def test_property_signed_division_identity(a, b):
    q, r = _pair("divs", "rems", a, b)
    assert (q * b + r) % W == a
    if s(b) != 0:
        assert abs(s(r)) < abs(s(b))
        assert s(r) == 0 or (s(r) < 0) == (s(a) < 0)   # the remainder has the sign of a


@prop
@given(a=words, b=words)
def test_property_add_sub_inverse_and_commutativity(a, b):
    assert word_out(binop("ADD", a, b)) == word_out(binop("ADD", b, a))
    assert word_out(binop("MUL", a, b)) == word_out(binop("MUL", b, a))
    total = word_out(binop("ADD", a, b))
    assert word_out(binop("SUB", total, b)) == a
