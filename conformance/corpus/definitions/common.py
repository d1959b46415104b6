"""Building blocks shared by the hand-written definitions: addresses, named words, assembly
snippets that return stack items, and a stack filler for depth boundaries."""

from __future__ import annotations

import spec
from conformance.corpus.vector import CALLER, ENTRY, Boundary, Case

__all__ = ["Boundary", "CALLER", "Case", "ENTRY", "MASK", "MIN", "OPEN", "OTHER", "SMAX",
           "TABLE", "THIRD", "WORDS", "case", "fill_stack", "name_of", "push_all", "returning"]

TABLE = spec.load()
MACHINE = TABLE.limits["machine"]
SCHEDULE = TABLE.schedule
PAGE = SCHEDULE["memory"]["page_size"]
BITS = MACHINE["word_bits"]
MASK = 2 ** BITS - 1
MIN = 2 ** (BITS - 1)
SMAX = 2 ** (BITS - 1) - 1
OTHER = 0x101
THIRD = 0x102
# A policy that opens every gate, for definitions that are not about the policy.
OPEN = {"time_access": "allowed", "randomness": "seeded"}
PATTERN = 0x0123456789ABCDEF

# Operands every binary instruction is tried with (all pairs): zero, one, a small positive,
# the largest signed, MIN and all ones (-1 signed), named so vector ids read as arithmetic.
WORDS = (("zero", 0), ("one", 1), ("seven", 7), ("smax", SMAX), ("min", MIN),
         ("minus_one", MASK))

_NAMES = {value: name for name, value in WORDS}


def name_of(value: int) -> str:
    return _NAMES.get(value, hex(value))


def case(id: str, description: str, code, **kw) -> Case:
    return Case(id=id, description=description, code=code, **kw)


def push_all(values) -> str:
    """Push values in order: the last one ends on top."""
    return "".join(f"push {v}\n" for v in values)


def returning(n: int) -> str:
    """Store the top n stack items as words, bottom item first, and RETURN them."""
    lines = [f"push {8 * i}\nswap1\nmstore\n" for i in reversed(range(n))]
    return "".join(lines) + f"push 0\npush {8 * n}\nreturn\n"


def fill_stack(height: int, label: str = "fill") -> str:
    """Code that leaves exactly ``height`` zero words on an empty stack. Large heights use a
    loop that pushes eight words below a counter per turn, so the code stays small."""
    if height <= 32:
        return "push1 0\n" * height
    turns, rest = divmod(height - 1, 8)
    body = "push1 0\nswap1\n" * 8
    return (f"push {turns}\n{label}:\n{body}push1 1\nsub\ndup1\njumpi {label}\n"
            + "push1 0\n" * rest)


def operand_pairs(values=WORDS):
    for a_name, a in values:
        for b_name, b in values:
            yield f"{a_name}__{b_name}", a, b


def binary(group: str, mnemonic: str, suffix: str, a: int, b: int, categories=("semantics",),
           description: str | None = None) -> Case:
    return case(f"{group}/{mnemonic}/{suffix}",
                description or f"{mnemonic} with a = {hex(a)} and b = {hex(b)} (b on top); returns the result.",
                push_all([a, b]) + f"{mnemonic.lower()}\n" + returning(1),
                opcodes=(mnemonic,), categories=categories)


def unary(group: str, mnemonic: str, suffix: str, a: int) -> Case:
    return case(f"{group}/{mnemonic}/{suffix}",
                f"{mnemonic} of {hex(a)}; returns the result.",
                push_all([a]) + f"{mnemonic.lower()}\n" + returning(1),
                opcodes=(mnemonic,), categories=("semantics",))
