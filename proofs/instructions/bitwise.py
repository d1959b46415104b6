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
        # From 1.1 (spec 6.5): bit counts, each a decision over the word's bits.
        "CLZ": unary(lambda a: leading_zeros(w, a)), "CTZ": unary(lambda a: trailing_zeros(w, a)),
        "POPCNT": unary(lambda a: population(w, a)),
    }


def unary(op):
    def model(s, imm):
        (a,), s = s.pop(1)
        return split(s.push(op(a)), {"a = 0": a == 0, "a != 0": a != 0})
    return model


def _bit(a, k: int) -> z3.BoolRef:
    return z3.Extract(k, k, a) == 1


def leading_zeros(w: Width, a) -> z3.BitVecRef:
    """W - n, n the least number of bits holding a: the highest set bit k gives W - 1 - k."""
    term = w.wval(w.bits)
    for k in range(w.bits):            # a higher set bit decides over every lower one
        term = z3.If(_bit(a, k), w.wval(w.bits - 1 - k), term)
    return term


def trailing_zeros(w: Width, a) -> z3.BitVecRef:
    """The greatest t <= W with 2^t dividing a: the lowest set bit's position (W for 0)."""
    term = w.wval(w.bits)
    for k in reversed(range(w.bits)):  # a lower set bit decides over every higher one
        term = z3.If(_bit(a, k), w.wval(k), term)
    return term


def population(w: Width, a) -> z3.BitVecRef:
    """The number of set bits: the sum of the W bits, each zero-extended to a word."""
    return z3.Sum([z3.ZeroExt(w.bits - 1, z3.Extract(k, k, a)) for k in range(w.bits)])
