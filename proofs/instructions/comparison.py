"""Comparisons (spec 6.4): 1 when the relation holds, else 0."""

from __future__ import annotations

import z3

from proofs.accounting import split
from proofs.words import Width, sgt, slt


def models(w: Width) -> dict:
    def relation(holds, unary=False):
        def model(s, imm):
            if unary:
                (a,), s = s.pop(1)
                h = holds(a, None)
            else:
                (b, a), s = s.pop(2)
                h = holds(a, b)
            return split(s.push(w.flag(h)), {"holds": h, "fails": z3.Not(h)})
        return model

    return {
        "EQ": relation(lambda a, b: a == b),
        "ISZERO": relation(lambda a, b: a == 0, unary=True),
        "LTU": relation(z3.ULT),
        "LTS": relation(slt),
        "GTU": relation(z3.UGT),
        "GTS": relation(sgt),
    }
