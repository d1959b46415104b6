"""Bitwise (spec 6.5): logic on bit patterns, and every shift and rotation by amounts around
0, W-1, W and beyond (shift amounts are whole words, not reduced modulo W)."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, MIN, PATTERN, WORDS, binary, unary

LOGIC_WORDS = (("zero", 0), ("minus_one", MASK), ("pattern", PATTERN), ("inverse", PATTERN ^ MASK))
SHIFTED = (("one", 1), ("minus_one", MASK), ("min", MIN), ("pattern", PATTERN))
AMOUNTS = (0, 1, 31, 63, 64, 65, 2 ** 32 + 1, MASK)


def cases():
    for mnemonic in ("AND", "OR", "XOR"):
        for a_name, a in LOGIC_WORDS:
            for b_name, b in LOGIC_WORDS:
                yield binary("bitwise", mnemonic, f"{a_name}__{b_name}", a, b)
    for name, value in (*WORDS, ("pattern", PATTERN)):
        yield unary("bitwise", "NOT", name, value)
    for mnemonic in ("SHL", "SHRU", "SHRS", "ROTL", "ROTR"):
        for a_name, a in SHIFTED:
            for s in AMOUNTS:
                label = "minus_one" if s == MASK else str(s)
                yield binary("bitwise", mnemonic, f"{a_name}__by_{label}", a, s,
                             categories=("semantics", "edge") if s >= 64 else ("semantics",))
