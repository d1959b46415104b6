"""Bitwise operations, shifts and rotates (spec 6.5). Shift amounts are whole unsigned words
(s >= W shifts everything out); rotate amounts are taken modulo W."""

from __future__ import annotations

import z3

from proofs.accounting import split
from proofs.words import Width, slt


def models(w: Width) -> dict:
    W = w.wval(w.bits)

    def binary(op, cases=None):
        def model(s, imm):
            (b, a), s = s.pop(2)
            return split(s.push(op(a, b)), cases(a, b) if cases else {"": True})
        return model

    def shift_cases(a, s):
        return {"amount < W": z3.ULT(s, W), "amount >= W": z3.UGE(s, W)}

    def signed_shift_cases(a, s):
        neg = slt(a, 0)
        return {"amount < W, a >= 0": z3.And(z3.ULT(s, W), z3.Not(neg)),
                "amount < W, a < 0": z3.And(z3.ULT(s, W), neg),
                "amount >= W, a >= 0": z3.And(z3.UGE(s, W), z3.Not(neg)),
                "amount >= W, a < 0": z3.And(z3.UGE(s, W), neg)}

    def rotate_cases(a, s):
        zero = w.rotate_amount(s) == 0
        return {"amount mod W = 0": zero,
                "amount < W": z3.And(z3.Not(zero), z3.ULT(s, W)),
                "amount >= W": z3.And(z3.Not(zero), z3.UGE(s, W))}

    def NOT(s, imm):
        (a,), s = s.pop(1)
        return split(s.push(~a), {"": True})

    return {
        "AND": binary(lambda a, b: a & b), "OR": binary(lambda a, b: a | b),
        "XOR": binary(lambda a, b: a ^ b), "NOT": NOT,
        "SHL": binary(w.shl, shift_cases), "SHRU": binary(w.shru, shift_cases),
        "SHRS": binary(w.shrs, signed_shift_cases),
        "ROTL": binary(w.rotl, rotate_cases), "ROTR": binary(w.rotr, rotate_cases),
    }
