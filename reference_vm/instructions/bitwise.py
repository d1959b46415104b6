"""Bitwise operations, shifts and rotates (spec section 6.5).

A shift amount is the whole word read unsigned: amounts of W or more shift every bit out.
A rotate amount is taken modulo W.
"""

from __future__ import annotations

from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word
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

    def CLZ(frame: Frame, imm: int) -> None:
        """a -- clz(a) : The number of zero bits of a above its highest one bit; W for a = 0."""
        stack = frame.stack
        stack[-1] = bits - stack[-1].bit_length()

    def CTZ(frame: Frame, imm: int) -> None:
        """a -- ctz(a) : The number of zero bits of a below its lowest one bit; W for a = 0."""
        stack = frame.stack
        a = stack[-1]
        stack[-1] = (a & -a).bit_length() - 1 if a else bits

    def POPCNT(frame: Frame, imm: int) -> None:
        """a -- popcnt(a) : The number of one bits of a."""
        stack = frame.stack
        stack[-1] = stack[-1].bit_count()

    return {"AND": AND, "OR": OR, "XOR": XOR, "NOT": NOT, "SHL": SHL, "SHRU": SHRU,
            "SHRS": SHRS, "ROTL": ROTL, "ROTR": ROTR, "CLZ": CLZ, "CTZ": CTZ, "POPCNT": POPCNT}
