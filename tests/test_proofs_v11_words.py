"""The word models of spec 1.1's new instructions (MULHU, MULHS: spec 6.3; CLZ, CTZ, POPCNT:
6.5), before 1.1 is modelled as a whole (proofs/versions.py): every operand at 8 bits against
1.1's reference handlers, the spec's own examples at 64 bits (hand-derived from its text), the
spec's product identities proved by z3, and a planted sign bug in MULHS caught by both."""

from __future__ import annotations

import types

import pytest
import z3

from proofs.evaluate import compile_term
from proofs.instructions import arithmetic, bitwise, models
from proofs.machine import fresh_state
from proofs.words import Width
from reference_vm.instructions import table
from reference_vm.rules import rules

VERSION = "1.1"
NEW = ("MULHU", "MULHS", "CLZ", "CTZ", "POPCNT")


def table_of(w: Width) -> dict:
    return {**arithmetic.models(w), **bitwise.models(w)}


def pushed(w: Width, model, arity: int):
    """(operand variables bottom to top, the pushed word as one term) of a word model."""
    s = fresh_state(w, "x_")
    branches = model(s, None)
    term = branches[-1].state.stack[0]
    for b in reversed(branches[:-1]):
        term = z3.If(b.cond, b.state.stack[0], term)
    return list(reversed(s.stack[:arity])), term


def disagreements(mnemonic: str, model, bits: int = 8) -> list:
    """Every operand tuple at ``bits`` where the model and 1.1's handler differ."""
    w = Width(bits, VERSION)
    rule = rules(VERSION, bits)
    ins = rule.spec.by_mnemonic[mnemonic]
    variables, term = pushed(w, model, ins.inputs)
    evaluate = compile_term(term, variables)
    handler = table(rule)[ins.opcode]
    frame = types.SimpleNamespace(stack=None)
    values = range(1 << bits)
    tuples = [(a,) for a in values] if ins.inputs == 1 else [(a, b) for a in values for b in values]
    found = []
    for operands in tuples:
        frame.stack = list(operands)
        handler(frame, 0)  # type: ignore[arg-type]  # a stand-in for a Frame (its stack)
        if frame.stack[-1] != evaluate(*operands):
            found.append(operands)
    return found


@pytest.mark.parametrize("mnemonic", NEW)
def test_every_8_bit_operand_agrees_with_the_1_1_interpreter(mnemonic):
    assert disagreements(mnemonic, table_of(Width(8, VERSION))[mnemonic]) == []


def test_the_1_0_models_leave_the_1_1_instructions_out():
    assert not set(NEW) & set(models(64, "1.0"))


def value(w: Width, mnemonic: str, *operands: int) -> int:
    model = table_of(w)[mnemonic]
    variables, term = pushed(w, model, len(operands))
    return z3.simplify(z3.substitute(term, *[(v, w.wval(x)) for v, x in zip(variables, operands)])).as_long()


def test_the_spec_examples_at_64_bits():
    """Spec 1.1 section 6.3 and 6.5, W = 64, words written signed for MULHS."""
    w = Width(64, VERSION)
    m1, mn = (1 << 64) - 1, 1 << 63
    assert value(w, "MULHU", 1 << 63, 4) == 2
    assert value(w, "MULHS", m1, 1) == m1            # -1 * 1 = -1: all ones in the high word
    assert value(w, "MULHS", m1, m1) == 0            # -1 * -1 = 1
    assert value(w, "MULHS", mn, mn) == 1 << 62      # MIN * MIN = 2^126
    assert value(w, "MULHS", mn, m1) == 0            # MIN * -1 = 2^63: high word 0
    assert [value(w, "CLZ", a) for a in (0, 1, mn)] == [64, 63, 0]
    assert [value(w, "CTZ", a) for a in (0, 1, mn, 12)] == [64, 0, 63, 2]
    assert [value(w, "POPCNT", a) for a in (0, m1, 0xF0F0)] == [0, 64, 8]


def identity_claims(w: Width, mulhs) -> list:
    """Spec 6.3: MULHS(a, b) * 2^W + MUL(a, b) read signed = sa * sb, and MULHU(a, b) * 2^W +
    MUL(a, b) = a * b, in 2W-bit arithmetic (exact for W-bit operands)."""
    a, b = z3.BitVecs("a b", w.bits)
    low = a * b
    _, hs = pushed(w, mulhs, 2)
    _, hu = pushed(w, table_of(w)["MULHU"], 2)
    ops = fresh_state(w, "x_").stack[:2]            # the variables pushed() made: b on top
    sub = [(ops[1], a), (ops[0], b)]
    hs, hu = z3.substitute(hs, *sub), z3.substitute(hu, *sub)
    wide = lambda x, ext: ext(w.bits, x)  # noqa: E731
    return [z3.Concat(hs, low) == wide(a, z3.SignExt) * wide(b, z3.SignExt),
            z3.Concat(hu, low) == wide(a, z3.ZeroExt) * wide(b, z3.ZeroExt)]


def proved(claims) -> list[str]:
    out = []
    for claim in claims:
        solver = z3.Solver()
        solver.set("rlimit", 50_000_000)
        solver.add(z3.Not(claim))
        out.append(str(solver.check()))
    return out


def test_the_product_identities_hold_at_16_bits():
    w = Width(16, VERSION)
    assert proved(identity_claims(w, table_of(w)["MULHS"])) == ["unsat", "unsat"]


def _planted(w: Width, s):
    """MULHS with a sign bug: b read unsigned (ZeroExt for the second operand)."""
    from proofs.accounting import split
    (b, a), s = s.pop(2)
    high = arithmetic.high_word(w, z3.SignExt(w.bits, a) * z3.ZeroExt(w.bits, b))
    return split(s.push(high), arithmetic.sign_cases(a, b))


def test_a_planted_mulhs_sign_bug_is_caught():
    bad = lambda s, imm: _planted(Width(8, VERSION), s)  # noqa: E731
    found = disagreements("MULHS", bad)
    assert found and all(b >= 0x80 for _, b in found)    # only a negative b reads wrong
    w16 = Width(16, VERSION)
    assert proved(identity_claims(w16, lambda s, imm: _planted(w16, s)))[0] == "sat"
