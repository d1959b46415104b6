"""Building blocks shared by the hand-written definitions: addresses, named words, assembly
snippets that return stack items, a stack filler for depth boundaries, and the pieces of
author expectations (Expect, conformance.corpus.expect) the definitions state."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable, Iterator, TypeVar

import spec
from conformance.corpus.expect import Expect, usage_names
from conformance.corpus.vector import BASE, CALLER, ENTRY, VERSIONS, Boundary, Case, version_order
from reference_vm import container

__all__ = ["BASE", "Boundary", "CALLER", "Case", "ENTRY", "EXCEEDED", "Expect", "MASK", "MIN", "OPEN", "OTHER",
           "SMAX", "TABLE", "THIRD", "VERSIONS", "WORDS", "across_versions", "base_costs", "build", "case",
           "fill_stack", "home", "limit_side", "name_of", "push_all", "refused", "returning", "words"]

# The definitions written for the first version (1.0) read its tables; a definition of a later
# version says so (Case.since) and reads that version's (definitions/v1_1/).
TABLE = spec.load(BASE)
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


T = TypeVar("T")
# Author expectations (conformance.corpus.expect). The code each sandbox dimension halts with
# when a charge would pass its limit (chapter 5.1).
EXCEEDED = {"compute": "COMPUTE_LIMIT_EXCEEDED", "memory_pages": "MEMORY_LIMIT_EXCEEDED",
            "storage_units": "STORAGE_LIMIT_EXCEEDED"}


def refused(code: str) -> Expect:
    """The expectation of a request refused before anything ran (status invalid, rejected or
    violation): the code, and every usage field and the fee 0 (chapter 5.5)."""
    return Expect(outcome=code, usage={name: 0 for name in usage_names()})


def limit_side(at: str, passing: T, failing: T, fails_at: str = "limit+1") -> T:
    """The expectation of a boundary vector at ``at``: reaching a limit exactly is allowed, so
    every point but ``fails_at`` (the demand one above the limit; for a request range's
    minimum, the value below it) passes."""
    return failing if at == fails_at else passing


def base_costs(source: str, version: str) -> int:
    """The sum of the base costs (instructions.toml ``cost``) of the instructions of assembly
    ``source``, each counted once: the compute a straight-line program is charged before its
    cost rules (5.2.3). ``push N`` is the shortest PUSHn holding N (9.4)."""
    table = spec.load(version)
    total = 0
    for line in source.splitlines():
        parts = line.split(";")[0].split()
        if not parts or parts[0].endswith(":") or parts[0].startswith("."):
            continue
        mnemonic = parts[0].upper()
        if mnemonic == "PUSH":
            value = int(parts[1], 0) % 2 ** BITS
            mnemonic = next(f"PUSH{n}" for n in (1, 2, 4, 8) if value < 2 ** (8 * n))
        total += table.by_mnemonic[mnemonic].cost
    return total


def words(*values: int) -> bytes:
    """The output of ``returning(len(values))`` on these stack items, bottom first: each a
    little-endian word (chapter 2.7)."""
    return b"".join((v & MASK).to_bytes(BITS // 8, "little") for v in values)


def name_of(value: int) -> str:
    return _NAMES.get(value, hex(value))


def case(id: str, description: str, code, **kw) -> Case:
    return Case(id=id, description=description, code=code, **kw)


def home(mnemonic: str) -> str:
    """The first version that defines ``mnemonic``: a definition about it is written for that
    version (its containers are of that version)."""
    return next(v for v in VERSIONS if mnemonic in spec.load(v).by_mnemonic)


def across_versions(make: Callable[[str], Iterable[Case]]) -> Iterator[Case]:
    """The cases ``make(version)`` gives for every version, each declared for the versions it is
    the same in (chapter 11.2.6). ``make`` writes a case for the version's rules (a compute limit
    measured under them, its table's rows); a case equal to the previous version's, since and
    container included, is one definition valid in both, and one that changes ends the earlier
    (until) and starts anew from this version, its containers still of its own ``since``."""
    current: dict[str, tuple[Case, Case]] = {}      # id -> (case as made, case as declared)
    done: list[Case] = []
    previous: str | None = None
    for version in VERSIONS:
        made = {}
        for c in make(version):
            if c.id in made:
                raise ValueError(f"{c.id}: made twice for spec {version}")
            made[c.id] = c
        for cid, (as_made, declared) in list(current.items()):
            if made.get(cid) != as_made:
                done.append(replace(declared, until=previous))
                del current[cid]
        for cid, c in made.items():
            if cid not in current:
                since = c.since if version_order(c.since) >= version_order(version) else version
                current[cid] = (c, replace(c, since=since, container=c.container_version))
        previous = version
    done.extend(declared for _, declared in current.values())
    return iter(done)


def build(code: bytes, data: bytes = b"", version: str = BASE) -> bytes:
    """A container of spec version ``version`` (default the first) holding code and data."""
    return container.build(code, data, spec.load(version).number)


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
           description: str | None = None, **kw) -> Case:
    return case(f"{group}/{mnemonic}/{suffix}",
                description or f"{mnemonic} with a = {hex(a)} and b = {hex(b)} (b on top); returns the result.",
                push_all([a, b]) + f"{mnemonic.lower()}\n" + returning(1),
                opcodes=(mnemonic,), categories=categories, **kw)


def unary(group: str, mnemonic: str, suffix: str, a: int, categories=("semantics",), **kw) -> Case:
    return case(f"{group}/{mnemonic}/{suffix}",
                f"{mnemonic} of {hex(a)}; returns the result.",
                push_all([a]) + f"{mnemonic.lower()}\n" + returning(1),
                opcodes=(mnemonic,), categories=categories, **kw)
