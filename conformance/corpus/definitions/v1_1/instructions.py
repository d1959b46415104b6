"""MULHU and MULHS (spec 6.3, item N1) on every pair of the named operands, the examples 6.3
states and products whose signs and magnitudes differ; CLZ, CTZ and POPCNT (6.5, item N2) on
0, single bits at both ends, all ones and patterns."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, MIN, SMAX, binary, operand_pairs, push_all, returning, unary
from conformance.corpus.definitions.v1_1.common import MACHINE, VERSION, case

BITS = MACHINE["word_bits"]


def neg(v: int) -> int:
    return -v & MASK


# (suffix, a, b): 6.3's examples (MULHU 2^63 x 4 = 2; MULHS -1 x 1 = -1, -1 x -1 = 0, MIN x MIN
# = 2^62, MIN x -1 = 0 are among the named pairs), mixed signs, and the extremes.
PRODUCTS = [
    ("two_pow_63__four", 2 ** (BITS - 1), 4),
    ("minus_seven__two", neg(7), 2),
    ("seven__minus_two", 7, neg(2)),
    ("minus_seven__minus_two", neg(7), neg(2)),
    ("min__two", MIN, 2),
    ("min_plus_one__minus_one", MIN + 1, MASK),
    ("two_pow_32__two_pow_32", 2 ** 32, 2 ** 32),
    ("u32_max__u32_max", 2 ** 32 - 1, 2 ** 32 - 1),
    ("pattern__pattern", 0x0123456789ABCDEF, 0xFEDCBA9876543210),
    ("minus_one__two_pow_62", MASK, 2 ** (BITS - 2)),
    ("minus_two__minus_three", neg(2), neg(3)),
]
# (suffix, a) for the bit counts.
COUNTED = [
    ("zero", 0), ("one", 1), ("two", 2), ("seven", 7), ("eight", 8), ("min", MIN), ("smax", SMAX),
    ("minus_one", MASK), ("pattern", 0x0123456789ABCDEF), ("two_pow_32", 2 ** 32),
    ("alternating", int("10" * (BITS // 2), 2)), ("low_half", 2 ** (BITS // 2) - 1),
    ("high_half", MASK ^ (2 ** (BITS // 2) - 1)), ("top_and_bottom", MIN | 1),
]


def cases():
    for mnemonic in ("MULHU", "MULHS"):
        for suffix, a, b in operand_pairs():
            yield binary("arithmetic", mnemonic, suffix, a, b, since=VERSION)
        for suffix, a, b in PRODUCTS:
            yield binary("arithmetic", mnemonic, suffix, a, b, categories=("semantics", "edge"), since=VERSION)
    for mnemonic in ("CLZ", "CTZ", "POPCNT"):
        for suffix, a in COUNTED:
            yield unary("bitwise", mnemonic, suffix, a, since=VERSION)
        # 0 counted twice over: the count of 0 (W for CLZ and CTZ), then the count of that.
        name = mnemonic.lower()
        yield case(f"bitwise/{mnemonic}/zero_then_its_count", f"{mnemonic} of 0, then {mnemonic} of that result; "
                   "returns both.", push_all([0]) + f"{name}\ndup1\n{name}\n" + returning(2),
                   opcodes=(mnemonic, "DUP1"), categories=("semantics", "edge"))
