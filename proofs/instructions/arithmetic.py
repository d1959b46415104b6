"""Wrapping arithmetic (spec 6.3). The edge cases the spec defines (zero divisor, MIN / -1)
are separate branches so that branches.py finds inputs for each."""

from __future__ import annotations

import z3

from proofs.accounting import split
from proofs.words import Width


def models(w: Width) -> dict:
    minimum, minus_one = w.wval(w.min_signed), w.wval(-1)

    def binary(op, cases):
        def model(s, imm):
            (b, a), s = s.pop(2)
            return split(s.push(op(a, b)), cases(a, b))
        return model

    def wrap_cases(carry):
        return lambda a, b: {"exact": z3.Not(carry(a, b)), "wraps": carry(a, b)}

    unsigned_div = lambda a, b: {"divisor zero": b == 0, "divisor non-zero": b != 0}  # noqa: E731

    def signed_div(a, b):
        overflow = z3.And(a == minimum, b == minus_one)
        return {"divisor zero": b == 0, "MIN / -1": overflow,
                "ordinary": z3.And(b != 0, z3.Not(overflow))}

    mul_cases = lambda a, b: {"operand zero": z3.Or(a == 0, b == 0),  # noqa: E731
                              "operands non-zero": z3.And(a != 0, b != 0)}
    return {
        "ADD": binary(lambda a, b: a + b, wrap_cases(lambda a, b: z3.ULT(a + b, a))),
        "SUB": binary(lambda a, b: a - b, wrap_cases(lambda a, b: z3.ULT(a, b))),
        "MUL": binary(lambda a, b: a * b, mul_cases),
        "DIVU": binary(w.divu, unsigned_div),
        "DIVS": binary(w.divs, signed_div),
        "REMU": binary(w.remu, unsigned_div),
        "REMS": binary(w.rems, signed_div),
        # From 1.1 (spec 6.3): the high word of the exact 2W-bit product (left out of the
        # models of a version without them, instructions.models).
        "MULHU": binary(lambda a, b: high_word(w, z3.ZeroExt(w.bits, a) * z3.ZeroExt(w.bits, b)),
                        mul_cases),
        "MULHS": binary(lambda a, b: high_word(w, z3.SignExt(w.bits, a) * z3.SignExt(w.bits, b)),
                        sign_cases),
    }


def sign_cases(a, b) -> dict:
    """MULHS's coverage points: the product's sign (operands of equal or different signs)."""
    same = (a < 0) == (b < 0)          # z3py's < on bit-vectors is the signed order
    return {"signs equal": same, "signs differ": z3.Not(same)}


def high_word(w: Width, product) -> z3.BitVecRef:
    """Bits W..2W-1 of a 2W-bit product: ⌊product / 2^W⌋ of the exact product (signed
    floor for a sign-extended one: the arithmetic shift's bits are the same)."""
    return z3.Extract(2 * w.bits - 1, w.bits, product)
