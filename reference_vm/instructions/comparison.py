"""Comparisons (spec section 6.4). Results are 1 for true and 0 for false."""

from __future__ import annotations

from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word
    # Flipping the sign bit maps two's complement order onto unsigned order.
    flip = word.sign_bit

    def EQ(frame: Frame, imm: int) -> None:
        """a b -- a == b : 1 if a equals b, else 0."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = 1 if stack[-1] == b else 0

    def ISZERO(frame: Frame, imm: int) -> None:
        """a -- a == 0 : 1 if a is zero, else 0."""
        stack = frame.stack
        stack[-1] = 0 if stack[-1] else 1

    def LTU(frame: Frame, imm: int) -> None:
        """a b -- a <u b : 1 if a < b as unsigned integers, else 0."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = 1 if stack[-1] < b else 0

    def LTS(frame: Frame, imm: int) -> None:
        """a b -- a <s b : 1 if a < b as two's complement integers, else 0."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = 1 if stack[-1] ^ flip < b ^ flip else 0

    def GTU(frame: Frame, imm: int) -> None:
        """a b -- a >u b : 1 if a > b as unsigned integers, else 0."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = 1 if stack[-1] > b else 0

    def GTS(frame: Frame, imm: int) -> None:
        """a b -- a >s b : 1 if a > b as two's complement integers, else 0."""
        stack = frame.stack
        b = stack.pop()
        stack[-1] = 1 if stack[-1] ^ flip > b ^ flip else 0

    return {"EQ": EQ, "ISZERO": ISZERO, "LTU": LTU, "LTS": LTS, "GTU": GTU, "GTS": GTS}
