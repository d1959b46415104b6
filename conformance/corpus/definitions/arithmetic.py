"""Arithmetic (spec 6.3): every instruction on every pair of the named operands, plus the
signed examples chapter 6.3 states and products that overflow."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, MIN, binary, operand_pairs

MNEMONICS = ("ADD", "SUB", "MUL", "DIVU", "DIVS", "REMU", "REMS")


def neg(v: int) -> int:
    return -v & MASK


# (suffix, a, b, which instructions): the worked examples of chapter 6.3 and more edges.
EXTRA = [
    ("minus_seven__two", neg(7), 2, ("DIVS", "REMS", "DIVU", "REMU")),
    ("seven__minus_two", 7, neg(2), ("DIVS", "REMS", "DIVU", "REMU")),
    ("minus_seven__minus_two", neg(7), neg(2), ("DIVS", "REMS")),
    ("min__two", MIN, 2, ("DIVS", "REMS")),
    ("min_plus_one__minus_one", MIN + 1, MASK, ("DIVS", "REMS")),
    ("two_pow_32__two_pow_32", 2 ** 32, 2 ** 32, ("MUL", "ADD")),
    ("pattern__pattern", 0x0123456789ABCDEF, 0xFEDCBA9876543210, MNEMONICS),
    ("u32_max__u32_max", 2 ** 32 - 1, 2 ** 32 - 1, ("MUL",)),
    ("large__small", MASK - 5, 3, ("DIVU", "REMU", "DIVS", "REMS")),
]


def cases():
    for mnemonic in MNEMONICS:
        for suffix, a, b in operand_pairs():
            yield binary("arithmetic", mnemonic, suffix, a, b)
    for suffix, a, b, mnemonics in EXTRA:
        for mnemonic in mnemonics:
            yield binary("arithmetic", mnemonic, suffix, a, b, categories=("semantics", "edge"))
