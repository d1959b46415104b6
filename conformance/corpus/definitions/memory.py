"""Memory (spec 6.6, 5.3): little-endian words, page growth at every kind of boundary, MSIZE,
MCOPY with overlapping ranges, zero-length ranges anywhere, and offsets no limit allows.

Each states what its author expects from 6.6 and 5.3: the words read back, MSIZE as whole
pages covering every byte touched, and MEMORY_LIMIT_EXCEEDED where no limit allows the range."""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import (
    EXCEEDED, MASK, PAGE, VERSIONS, Expect, base_costs, case, push_all, returning, words,
)

WORD = 0x0807060504030201
NO_LIMIT_ALLOWS = Expect(outcome=EXCEEDED["memory_pages"], usage={"memory_pages": 0})


def pages(end: int) -> int:
    """MSIZE once memory covers [0, end): the least whole number of pages (5.3.2), in bytes."""
    return -(-end // PAGE) * PAGE


def returns(*values: int) -> Expect:
    return Expect(outcome="success", output=words(*values))


def _after_mcopy(dst: int, src: int, length: int) -> Expect:
    """The MCOPY cases' [word at 0, at 8, at 16, MSIZE]: two words stored at 0 and 8, then the
    source range's bytes (as before the copy) written over the destination range, memory
    grown to cover both ranges unless the length is 0 (6.6)."""
    end = max(dst, src) + length if length else 0
    memory = bytearray(words(WORD, 0x1122334455667788).ljust(max(pages(16), pages(end)), b"\0"))
    if length:
        memory[dst:dst + length] = bytes(memory[src:src + length])
    return returns(*(int.from_bytes(memory[at:at + 8], "little") for at in (0, 8, 16)), len(memory))


def _large_copy(dst: int, src: int, length: int, code: str, version: str) -> Expect:
    """MCOPY of ``length`` bytes to ``dst`` from ``src`` on fresh memory under ``version``: it
    grows memory to cover both ranges, then charges the copy words (5.6.2); the code's other
    instructions only their base costs."""
    schedule = spec.load(version).schedule
    grown = pages(max(dst, src) + length) // PAGE
    copy = -(-length // schedule["copy"]["word_size"]) * schedule["copy"]["word_cost"]
    return Expect(outcome="success", output=words(grown * PAGE), usage={
        "memory_pages": grown, "compute": base_costs(code, version) + grown * schedule["memory"]["page_cost"] + copy})


def cases():
    for name, offset in (("zero", 0), ("unaligned", 3), ("page_end", PAGE - 8), ("crosses_page", PAGE - 4),
                         ("second_page", PAGE + 16)):
        yield case(f"memory/MSTORE/{name}", f"MSTORE {hex(WORD)} at {offset}, MLOAD it back; MSIZE after.",
                   f"push {offset}\npush {WORD}\nmstore\npush {offset}\nmload\nmsize\n" + returning(2),
                   opcodes=("MSTORE", "MLOAD", "MSIZE"), categories=("semantics",),
                   expect=returns(WORD, pages(offset + 8)))
        yield case(f"memory/MSTORE8/{name}", f"MSTORE8 of 0x1ff at {offset} stores 0xff; MLOAD8 reads it.",
                   f"push {offset}\npush 0x1ff\nmstore8\npush {offset}\nmload8\npush {offset}\nmload\n" + returning(2),
                   opcodes=("MSTORE8", "MLOAD8"), categories=("semantics",),
                   # the byte 0xff at offset, the word read from there: 0xff and fresh zeros
                   expect=returns(0xFF, 0xFF))
    yield case("memory/MLOAD/fresh_memory", "MLOAD of fresh memory reads 0 and grows one page.",
               "push 100\nmload\nmsize\n" + returning(2), opcodes=("MLOAD",), categories=("semantics",),
               expect=returns(0, PAGE))
    yield case("memory/MLOAD8/fresh_far", "MLOAD8 at 3 pages grows memory to 4 pages at once.",
               f"push {3 * PAGE}\nmload8\nmsize\n" + returning(2), opcodes=("MLOAD8",), categories=("semantics",),
               expect=returns(0, 4 * PAGE))
    yield case("memory/MSTORE/byte_order", "MSTORE then MLOAD8 of each byte shows little-endian order.",
               f"push 0\npush {WORD}\nmstore\n" + "".join(f"push {i}\nmload8\n" for i in range(8)) + returning(8),
               opcodes=("MSTORE", "MLOAD8"), categories=("semantics",), expect=returns(*range(1, 9)))
    yield case("memory/MSIZE/before_growth", "MSIZE of a frame that never touched memory is 0.",
               "msize\nmsize\n" + returning(2), opcodes=("MSIZE",), categories=("semantics",),
               expect=returns(0, 0))
    yield case("memory/MSIZE/after_growth", "MSIZE is a whole number of pages after each access.",
               f"push 1\nmload8\nmsize\npush {PAGE}\nmload8\nmsize\n" + returning(4), opcodes=("MSIZE",),
               categories=("semantics",), expect=returns(0, PAGE, 0, 2 * PAGE))
    for name, offset in (("max_word", MASK), ("just_past_limit", 256 * PAGE), ("two_pow_40", 2 ** 40)):
        for mnemonic, code in (("MLOAD", f"push {offset}\nmload\nstop\n"),
                               ("MSTORE", f"push {offset}\npush 1\nmstore\nstop\n"),
                               ("MLOAD8", f"push {offset}\nmload8\nstop\n"),
                               ("MSTORE8", f"push {offset}\npush 1\nmstore8\nstop\n")):
            yield case(f"memory/{mnemonic}/offset_{name}", f"{mnemonic} at offset {hex(offset)}: no limit allows it.",
                       code, opcodes=(mnemonic,), categories=("limits",), expect=NO_LIMIT_ALLOWS)
    setup = f"push 0\npush {WORD}\nmstore\npush 8\npush 0x1122334455667788\nmstore\n"
    for name, (dst, src, length) in {
        "disjoint": (32, 0, 16), "overlap_forward": (4, 0, 16), "overlap_backward": (0, 4, 12),
        "same_range": (0, 0, 16), "zero_length_huge": (MASK, MASK, 0), "into_new_page": (PAGE - 4, 0, 16),
        "from_unwritten": (0, 2 * PAGE, 8),
    }.items():
        yield case(f"memory/MCOPY/{name}", f"MCOPY dst={dst} src={src} length={length} over two stored words.",
                   setup + push_all([dst, src, length]) + "mcopy\n"
                   + "push 0\nmload\npush 8\nmload\npush 16\nmload\nmsize\n" + returning(4),
                   opcodes=("MCOPY",), categories=("semantics", "edge"), expect=_after_mcopy(dst, src, length))
    for name, (dst, src, length) in {"huge_length": (0, 0, MASK), "huge_dst": (MASK, 0, 1), "huge_src": (0, MASK, 1)}.items():
        yield case(f"memory/MCOPY/{name}", f"MCOPY dst={hex(dst)} src={hex(src)} length={hex(length)}: memory limit.",
                   push_all([dst, src, length]) + "mcopy\nstop\n", opcodes=("MCOPY",), categories=("limits",),
                   expect=NO_LIMIT_ALLOWS)
    large = push_all([PAGE, 0, 2 * PAGE + 1]) + "mcopy\nmsize\n" + returning(1)
    yield case("memory/MCOPY/large_copy_cost", "MCOPY of 3 pages charges pages then copy words.",
               large, opcodes=("MCOPY",), categories=("semantics", "cost"),
               expect={v: _large_copy(PAGE, 0, 2 * PAGE + 1, large, v) for v in VERSIONS})
