"""Comparison instructions: EQ ISZERO LTU LTS GTU GTS (results are 1 or 0)."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import returning_top, run_asm, word_out
from opspec import S, M, MIN, MAX, cost, fee, RET_COST, s
from reference_vm import Limits

BINARY = ("EQ", "LTU", "LTS", "GTU", "GTS")


def run_binary(op, a, b):
    return run_asm(returning_top(f"push8 {a}\npush8 {b}\n{op}"))


# (a, b, EQ, LTU, LTS, GTU, GTS) -- written by hand
CASES = [
    (0, 0, 1, 0, 0, 0, 0),
    (0, 1, 0, 1, 1, 0, 0),
    (1, 0, 0, 0, 0, 1, 1),
    (M, M, 1, 0, 0, 0, 0),
    (0, M, 0, 1, 0, 0, 1),          # -1 <s 0
    (M, 0, 0, 0, 1, 1, 0),
    (MAX, MIN, 0, 1, 0, 0, 1),      # MAX >s MIN, but MAX <u MIN
    (MIN, MAX, 0, 0, 1, 1, 0),
    (MIN, MIN, 1, 0, 0, 0, 0),
    (MIN, M, 0, 1, 1, 0, 0),        # -2^63 < -1 both ways
    (M, MIN, 0, 0, 0, 1, 1),
    (M - 1, M, 0, 1, 1, 0, 0),      # -2 < -1
    (MAX, MAX - 1, 0, 0, 0, 1, 1),
    (5, 5, 1, 0, 0, 0, 0),
    (1, MIN, 0, 1, 0, 0, 1),
    (2 ** 32, 2 ** 32 + 1, 0, 1, 1, 0, 0),
]
ROWS = [(op, a, b, row[i]) for (a, b, *row) in CASES for i, op in enumerate(BINARY)]


@pytest.mark.parametrize("op,a,b,expected", ROWS)
def test_binary_table(op, a, b, expected):
    result = run_binary(op, a, b)
    assert word_out(result) == expected
    compute = 2 * cost("PUSH8") + cost(op) + RET_COST
    assert result.usage.compute == compute
    assert result.usage.memory_pages == 1
    assert result.fee == fee(compute, 1)


@pytest.mark.parametrize("a,expected", [
    (0, 1), (1, 0), (2, 0), (M, 0), (MIN, 0), (MAX, 0), (256, 0), (2 ** 32, 0),
])
def test_iszero(a, expected):
    result = run_asm(returning_top(f"push8 {a}\niszero"))
    assert word_out(result) == expected
    compute = cost("PUSH8", "ISZERO") + RET_COST
    assert result.usage.compute == compute
    assert result.fee == fee(compute, 1)


def test_iszero_twice_normalises_to_boolean():
    assert word_out(run_asm(returning_top("push8 0xFFFF000000000000\niszero\niszero"))) == 1


def test_costs_from_table():
    for op in BINARY + ("ISZERO",):
        ins = S.by_mnemonic[op]
        assert ins.type == "comparison" and ins.cost_rule is None and ins.outputs == 1
    assert S.by_mnemonic["ISZERO"].inputs == 1
    assert all(S.by_mnemonic[op].inputs == 2 for op in BINARY)


@pytest.mark.parametrize("op", BINARY)
def test_operand_order(op):
    # a=3 (deeper), b=9 (top): 3 op 9
    expected = {"EQ": 0, "LTU": 1, "LTS": 1, "GTU": 0, "GTS": 0}
    assert word_out(run_binary(op, 3, 9)) == expected[op]


@pytest.mark.parametrize("op", BINARY)
def test_result_replaces_operands(op):
    src = returning_top(f"push8 0xBEEF\npush1 1\npush1 2\n{op}\npop")
    assert word_out(run_asm(src)) == 0xBEEF


@pytest.mark.parametrize("op,inputs", [(op, 2) for op in BINARY] + [("ISZERO", 1)])
def test_underflow(op, inputs):
    pushes = "push1 1\n" * (inputs - 1)
    result = run_asm(f"{pushes}{op}\nstop")
    assert (result.status, result.error) == ("fault", "STACK_UNDERFLOW")
    assert result.error_pc == 2 * (inputs - 1)
    assert result.usage.compute == (inputs - 1) * cost("PUSH1")
    assert result.output == b""


@pytest.mark.parametrize("op", BINARY + ("ISZERO",))
def test_compute_limit_boundary(op):
    pushes = "push1 1\npush1 1\n" if op != "ISZERO" else "push1 1\n"
    n = 2 if op != "ISZERO" else 1
    src = f"{pushes}{op}\nstop"
    need = n * cost("PUSH1") + cost(op)
    assert run_asm(src, limits=Limits(compute=need)).status == "success"
    short = run_asm(src, limits=Limits(compute=need - 1))
    assert (short.status, short.error, short.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 2 * n)
    assert short.usage.compute == n * cost("PUSH1")


def test_result_feeds_jumpi():
    src = """
    push1 3
    push1 4
    ltu
    jumpi yes
    push1 0
    push 0
    push 0
    return
    yes:
    push 0
    push 0
    revert
    """
    assert run_asm(src).status == "reverted"


# ---- properties ------------------------------------------------------------------------------

def model(op, a, b):
    return int({"EQ": a == b, "LTU": a < b, "GTU": a > b,
                "LTS": s(a) < s(b), "GTS": s(a) > s(b)}[op])


def test_model_agrees_with_table():
    for op, a, b, expected in ROWS:
        assert model(op, a, b) == expected


EDGE = [0, 1, M, M - 1, MIN, MIN + 1, MAX, MAX - 1, 2 ** 32]
words = st.one_of(st.integers(0, M), st.sampled_from(EDGE))
prop = settings(max_examples=60, deadline=None)


@pytest.mark.parametrize("op", BINARY)
@prop
@given(a=words, b=words)
def test_property_binary(op, a, b):
    assert word_out(run_binary(op, a, b)) == model(op, a, b)


@pytest.mark.parametrize("op", BINARY)
@prop
@given(a=words)
def test_property_reflexive(op, a):
    assert word_out(run_binary(op, a, a)) == (1 if op == "EQ" else 0)


@prop
@given(a=words, b=words)
def test_property_lt_gt_are_mirrors(a, b):
    assert word_out(run_binary("LTU", a, b)) == word_out(run_binary("GTU", b, a))
    assert word_out(run_binary("LTS", a, b)) == word_out(run_binary("GTS", b, a))


@prop
@given(a=words)
def test_property_iszero(a):
    assert word_out(run_asm(returning_top(f"push8 {a}\niszero"))) == int(a == 0)
