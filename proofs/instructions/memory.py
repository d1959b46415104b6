"""Linear memory (spec 6.6). Memory is a read function, so a write is a new function that
answers the written indices and defers to the old one elsewhere: the frame property (a store
changes nothing else) is then a theorem about these terms, not an assumption."""

from __future__ import annotations

import z3

from proofs.accounting import (
    charge, copy_cost, grow_to, running, then, umax, unless_empty,
)
from proofs.machine import Memory
from proofs.words import Width, byte_of, little_endian_word


def inside(i, start, length):
    """start <= i < start + length, on counters (no wrap)."""
    return z3.And(z3.ULE(start, i), z3.ULT(i, start + length))


def write_bytes(memory: Memory, offset, count: int, byte_k) -> Memory:
    """Memory with byte_k(k) at offset + k for k < count (count a constant)."""
    old = memory.read

    def read(i):
        value = old(i)
        for k in reversed(range(count)):
            value = z3.If(i == offset + k, byte_k(k), value)
        return value
    return Memory(memory.pages, read)


def copy_into(memory: Memory, dst, length, source_byte) -> Memory:
    """Memory with source_byte(j) at dst + j for j < length (length symbolic)."""
    old = memory.read
    return Memory(memory.pages,
                  lambda i: z3.If(inside(i, dst, length), source_byte(i - dst), old(i)))


def models(w: Width) -> dict:
    size, cv = w.size, w.cval

    def MLOAD(s, imm):
        (offset,), s = s.pop(1)
        off = w.widen(offset)
        return then(grow_to(s, off + size), lambda t: [
            running(t.push(little_endian_word(t.memory.read, off, size)))])

    def MSTORE(s, imm):
        (value, offset), s = s.pop(2)
        off = w.widen(offset)
        return then(grow_to(s, off + size), lambda t: [running(t.replace(
            memory=write_bytes(t.memory, off, size, lambda k: byte_of(value, k))))])

    def MLOAD8(s, imm):
        (offset,), s = s.pop(1)
        off = w.widen(offset)
        return then(grow_to(s, off + 1), lambda t: [
            running(t.push(z3.ZeroExt(w.bits - 8, t.memory.read(off))))])

    def MSTORE8(s, imm):
        (value, offset), s = s.pop(2)
        off = w.widen(offset)
        return then(grow_to(s, off + 1), lambda t: [running(t.replace(
            memory=write_bytes(t.memory, off, 1, lambda k: byte_of(value, 0))))])

    def MSIZE(s, imm):
        return [running(s.push(w.narrow(s.memory.pages * cv(w.num.page_size))))]

    def MCOPY(s, imm):
        (length, src, dst), s = s.pop(3)
        ln, sr, ds = w.widen(length), w.widen(src), w.widen(dst)

        def copy(t):
            before = t.memory  # as if through a temporary buffer: read the old bytes
            return [running(t.replace(memory=copy_into(
                before, ds, ln, lambda j: before.read(sr + j))))]
        return unless_empty(s, ln, lambda t: then(then(
            grow_to(t, umax(sr, ds) + ln), lambda u: charge(u, copy_cost(w, ln), "copy cost")),
            copy))

    return {"MLOAD": MLOAD, "MSTORE": MSTORE, "MLOAD8": MLOAD8, "MSTORE8": MSTORE8,
            "MSIZE": MSIZE, "MCOPY": MCOPY}
