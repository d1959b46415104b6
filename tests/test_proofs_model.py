"""Focused tests of the SMT model (proofs/): coverage, the VM's arithmetic rules, the
concrete evaluator, branch inputs, SMT-LIB export and the second solver."""

from __future__ import annotations

import random

import pytest
import z3

import spec
from proofs import branches, exhaustive, smtlib
from proofs.agreement import compare
from proofs.instructions import CoverageError, coverage_problems, models
from proofs.words import width
from conftest import BASE_VERSION as V


def test_every_opcode_of_the_table_has_a_model():
    table = models(64, V)
    assert set(table) == set(spec.load(V).by_mnemonic)
    assert coverage_problems(table, V) == []


def test_an_opcode_without_a_model_is_reported(monkeypatch):
    import types

    from proofs import instructions
    table = dict(models(64, V))
    del table["MCOPY"]
    assert coverage_problems(table, V) == ["MCOPY: no model"]
    real = instructions.MODULES["memory"].models
    monkeypatch.setitem(instructions.MODULES, "memory", types.SimpleNamespace(
        models=lambda w: {k: v for k, v in real(w).items() if k != "MCOPY"}))
    instructions.models.cache_clear()
    try:
        with pytest.raises(CoverageError, match="MCOPY: no model"):
            models(16, V)   # and so every suite run: the registry calls models(64, V) first
    finally:
        instructions.models.cache_clear()


@pytest.mark.parametrize("bits", [8, 64])
def test_division_and_shift_rules_are_the_vms_not_smtlibs(bits):
    w = width(bits, V)
    a = w.wval(-7)
    ev = lambda t: z3.simplify(t).as_long()  # noqa: E731
    assert ev(w.divs(a, w.wval(0))) == w.mask            # bvsdiv would give 1 here
    assert ev(w.rems(a, w.wval(0))) == ev(a)
    assert ev(w.divu(w.wval(7), w.wval(0))) == w.mask
    assert ev(w.divs(w.wval(w.min_signed), w.wval(-1))) == w.min_signed
    assert ev(w.rems(w.wval(w.min_signed), w.wval(-1))) == 0
    assert ev(w.shl(w.wval(1), w.wval(bits))) == 0
    assert ev(w.shrs(w.wval(-2), w.wval(bits + 5))) == w.mask
    assert ev(w.rotl(w.wval(1), w.wval(bits + 1))) == 2


def test_compiled_evaluator_matches_z3_on_every_word_operation():
    rng = random.Random(7)
    for mnemonic in exhaustive.word_operations(V):
        variables, term = exhaustive.result_term(mnemonic, V, 16)
        evaluate = exhaustive.compile_term(term, variables)
        for _ in range(40):
            values = [rng.choice([0, 1, 0x7FFF, 0x8000, 0xFFFF, rng.randrange(1 << 16)])
                      for _ in variables]
            expected = z3.simplify(z3.substitute(
                term, *[(v, z3.BitVecVal(x, 16)) for v, x in zip(variables, values)]))
            assert evaluate(*values) == expected.as_long(), (mnemonic, values)


def test_branch_inputs_hit_the_defined_edge_cases_deterministically():
    first = branches.branch_inputs("DIVS", 64, V)
    assert first == branches.branch_inputs("DIVS", 64, V)
    by_label = {x["branch"]: x for x in first}
    assert by_label["divisor zero"]["stack"][-1] == 0
    minimum = by_label["MIN / -1"]["stack"][-2:]
    assert minimum == [1 << 63, (1 << 64) - 1]
    assert {"stack underflow", "compute limit (base cost)"} <= set(by_label)
    assert "stack overflow" not in by_label      # DIVS shrinks the stack: unreachable
    push = {x["branch"]: x for x in branches.branch_inputs("PUSH1", 64, V)}
    assert push["stack overflow"]["height"] == 1024
    shl = {x["branch"] for x in branches.branch_inputs("SHL", 64, V)}
    assert "amount >= W" in shl
    mload = {x["branch"] for x in branches.branch_inputs("MLOAD", 64, V)}
    assert {"memory limit", "compute limit (page cost)",
            "memory grows [memory limit reached exactly]"} <= mload


@pytest.mark.parametrize("mnemonic", ["SSTORE", "CALL", "SHA256", "RETSUB", "LOG3"])
def test_interpreter_agrees_on_every_branch(mnemonic):
    for x in branches.branch_inputs(mnemonic, 64, V):
        assert compare(x) == [], x["branch"]


def test_export_is_standard_smtlib_and_cvc5_agrees():
    a, b = z3.BitVecs("a b", 64)
    w = width(64, V)
    proved = smtlib.export([], w.divu(a, b) == z3.If(b == 0, w.wval(-1), z3.UDiv(a, b)))
    # Bit-vectors only: the smallest standard logic is QF_BV.
    assert proved.startswith("(set-logic QF_BV)") and "(set-info :status unsat)" in proved
    assert smtlib.check_cvc5(proved, 5000) == "unsat"
    x, y = z3.BitVecs("x y", 8)
    false_claim = smtlib.export([], width(8, V).divs(x, y) == x / y)  # bvsdiv differs at y = 0
    assert smtlib.check_cvc5(false_claim, 5000) == "sat"


def test_symbolic_validation_holds_past_the_8_bit_offsets():
    # Offsets plus sizes past 127 would wrap a signed 8-bit word: longer codes get wider
    # size words, and the symbolic rules still agree with the interpreter's validation.
    from proofs import validate
    nop, stop, jump, push8 = (spec.load(V).by_mnemonic[m].opcode
                              for m in ("NOP", "STOP", "JUMP", "PUSH8"))
    assert validate.size_bits(validate.CODE_BYTES, V) == 8 and validate.size_bits(200, V) == 9
    ends_in_stop = bytes([nop] * 199 + [stop])                      # valid
    no_terminal = bytes([nop] * 200)                                # last flow is not terminal
    push_cut = bytes([nop] * 195 + [push8] + [0] * 4)               # immediate past the end
    back_jump = bytes([nop] * 195) + bytes([jump]) + (3).to_bytes(4, "little")   # to offset 3
    off_boundary = bytes([push8] + [0] * 8 + [nop] * 186) + bytes([jump]) + (4).to_bytes(4, "little")
    expected = {ends_in_stop: True, no_terminal: False, push_cut: False, back_jump: True,
                off_boundary: False}
    for code, accepted in expected.items():
        assert len(code) == 200
        assert validate.model_accepts(code, V) is accepted, code.hex()
        assert validate.interpreter_accepts(code, V) is accepted, code.hex()
