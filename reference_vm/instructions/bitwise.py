"""Bitwise operations, shifts and rotates (spec section 6.5).

A shift amount is the whole word read unsigned: amounts of W or more shift every bit out.
A rotate amount is taken modulo W.
"""

from __future__ import annotations

from reference_vm.machine import Frame, Handler
from reference_vm.words import Word


def handlers(word: Word) -> dict[str, Handler]:
    mask = word.mask
    bits = word.bits
    sign = word.sign_bit
    modulus = 1 << bits

    def AND(frame: Frame, imm: int) -> None:
        """a b -- a & b : Bitwise and."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] &= b

    def OR(frame: Frame, imm: int) -> None:
        """a b -- a | b : Bitwise or."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] |= b

    def XOR(frame: Frame, imm: int) -> None:
        """a b -- a ^ b : Bitwise exclusive or."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] ^= b

    def NOT(frame: Frame, imm: int) -> None:
        """a -- ~a : Bitwise complement."""
        stack = frame.stack
        stack[-1] ^= mask

    def SHL(frame: Frame, imm: int) -> None:
        """a s -- a << s : Shift left, filling with zeros; 0 when s >= W."""
        stack = frame.stack
        s = stack.pop()
        stack[-1] = (stack[-1] << s) & mask if s < bits else 0

    def SHRU(frame: Frame, imm: int) -> None:
        """a s -- a >>u s : Logical shift right, filling with zeros; 0 when s >= W."""
        stack = frame.stack
        s = stack.pop()
        stack[-1] = stack[-1] >> s if s < bits else 0

    def SHRS(frame: Frame, imm: int) -> None:
        """a s -- a >>s s : Arithmetic shift right, filling with the sign bit; 0 or -1 (by sign) when s >= W."""
        stack = frame.stack
        s = stack.pop()
        a = stack[-1]
        a_signed = a - modulus if a & sign else a
        stack[-1] = (a_signed >> min(s, bits - 1)) & mask

    def ROTL(frame: Frame, imm: int) -> None:
        """a s -- rotl(a, s mod W) : Rotate left by s mod W bits."""
        stack = frame.stack
        r = stack.pop() % bits
        a = stack[-1]
        stack[-1] = ((a << r) | (a >> (bits - r))) & mask

    def ROTR(frame: Frame, imm: int) -> None:
        """a s -- rotr(a, s mod W) : Rotate right by s mod W bits."""
        stack = frame.stack
        r = stack.pop() % bits
        a = stack[-1]
        stack[-1] = ((a >> r) | (a << (bits - r))) & mask

    return {"AND": AND, "OR": OR, "XOR": XOR, "NOT": NOT, "SHL": SHL, "SHRU": SHRU,
            "SHRS": SHRS, "ROTL": ROTL, "ROTR": ROTR}
