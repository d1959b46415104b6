"""Wrapping integer arithmetic (spec section 6.3).

Division follows the rules that keep a == (a / b) * b + a % b true for every a and b, a zero
divisor and MIN / -1 included: a / 0 is all ones (-1 signed), a % 0 is a, MIN / -1 is MIN and
MIN % -1 is 0. Signed quotients round toward zero; a signed remainder has the sign of a.
"""

from __future__ import annotations

from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word
    mask = word.mask
    sign = word.sign_bit
    modulus = 1 << word.bits

    def signed(v: int) -> int:
        return v - modulus if v & sign else v

    def ADD(frame: Frame, imm: int) -> None:
        """a b -- (a + b) mod 2^W : Wrapping addition."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = (stack[-1] + b) & mask

    def SUB(frame: Frame, imm: int) -> None:
        """a b -- (a - b) mod 2^W : Wrapping subtraction."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = (stack[-1] - b) & mask

    def MUL(frame: Frame, imm: int) -> None:
        """a b -- (a * b) mod 2^W : Wrapping multiplication (low word of the product)."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = (stack[-1] * b) & mask

    def DIVU(frame: Frame, imm: int) -> None:
        """a b -- a / b : Unsigned division rounding toward zero; a / 0 = 2^W - 1."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = stack[-1] // b if b else mask

    def DIVS(frame: Frame, imm: int) -> None:
        """a b -- a / b : Signed division rounding toward zero; a / 0 = -1; MIN / -1 = MIN."""
        stack = frame.stack
        b = signed(stack.pop())
        a = signed(stack[-1])
        if b == 0:
            stack[-1] = mask
            return
        quotient = abs(a) // abs(b)
        stack[-1] = (-quotient if (a < 0) != (b < 0) else quotient) & mask

    def REMU(frame: Frame, imm: int) -> None:
        """a b -- a % b : Unsigned remainder; a % 0 = a."""
        stack = frame.stack
        b = stack.pop()
        if b:
            stack[-1] %= b

    def REMS(frame: Frame, imm: int) -> None:
        """a b -- a % b : Signed remainder with the sign of a; a % 0 = a; MIN % -1 = 0."""
        stack = frame.stack
        b = signed(stack.pop())
        if b == 0:
            return
        a = signed(stack[-1])
        remainder = abs(a) % abs(b)
        stack[-1] = (-remainder if a < 0 else remainder) & mask

    bits = word.bits

    def MULHU(frame: Frame, imm: int) -> None:
        """a b -- (a * b) >>u W : The high W bits of the 2W-bit product of a and b read unsigned."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = (stack[-1] * b) >> bits

    def MULHS(frame: Frame, imm: int) -> None:
        """a b -- (sa * sb) >>s W : The high W bits of the 2W-bit two's complement product of a and b read signed.

        Python's >> on a negative integer rounds toward negative infinity, as the spec's floor.
        """
        stack = frame.stack
        b = signed(stack.pop())
        stack[-1] = ((signed(stack[-1]) * b) >> bits) & mask

    return {"ADD": ADD, "SUB": SUB, "MUL": MUL, "DIVU": DIVU, "DIVS": DIVS, "REMU": REMU,
            "REMS": REMS, "MULHU": MULHU, "MULHS": MULHS}
