"""Comparison (spec 6.4): every binary comparison on every pair of the named operands, and
ISZERO of each operand."""

from __future__ import annotations

from conformance.corpus.definitions.common import WORDS, binary, operand_pairs, unary

BINARY = ("EQ", "LTU", "LTS", "GTU", "GTS")


def cases():
    for mnemonic in BINARY:
        for suffix, a, b in operand_pairs():
            yield binary("comparison", mnemonic, suffix, a, b)
    for name, value in WORDS:
        yield unary("comparison", "ISZERO", name, value)
