"""Control flow and halting (spec section 6.1)."""

from __future__ import annotations

from reference_vm.accounting import touch
from reference_vm.errors import Fault, Halt
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    return_stack_depth = rules.return_stack_depth
    callsub_size = rules.spec.by_mnemonic["CALLSUB"].size

    def STOP(frame: Frame, imm: int) -> None:
        """-- : Halt with status success and empty output."""
        raise Halt(False, b"")

    def NOP(frame: Frame, imm: int) -> None:
        """-- : Do nothing."""

    def JUMP(frame: Frame, target: int) -> int:
        """-- : Continue at the static target given by the immediate."""
        return target

    def JUMPI(frame: Frame, target: int) -> int | None:
        """cond -- : Continue at the static target if cond is not zero, else at the next instruction."""
        return target if frame.stack.pop() else None

    def CALLSUB(frame: Frame, target: int) -> int:
        """-- : Push the next instruction's offset on the return stack and continue at the static target.

        Fault RETURN_STACK_OVERFLOW when the return stack already holds return_stack_depth offsets.
        """
        if len(frame.return_stack) >= return_stack_depth:
            raise Fault("RETURN_STACK_OVERFLOW")
        frame.return_stack.append(frame.pc + callsub_size)
        return target

    def RETSUB(frame: Frame, imm: int) -> int:
        """-- : Pop an offset from the return stack and continue there.

        Fault RETURN_STACK_UNDERFLOW when the return stack is empty.
        """
        if not frame.return_stack:
            raise Fault("RETURN_STACK_UNDERFLOW")
        return frame.return_stack.pop()

    def RETURN(frame: Frame, imm: int) -> None:
        """offset length -- : Halt with status success; the output is memory[offset, offset+length).

        Cost rule memory_expansion over the output range.
        """
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        touch(rules, frame, offset, length)
        raise Halt(False, bytes(frame.memory[offset:offset + length]))

    def REVERT(frame: Frame, imm: int) -> None:
        """offset length -- : Halt with status reverted; the output is memory[offset, offset+length); state changes and events of the frame are undone.

        Cost rule memory_expansion over the output range.
        """
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        touch(rules, frame, offset, length)
        raise Halt(True, bytes(frame.memory[offset:offset + length]))

    def TRAP(frame: Frame, imm: int) -> None:
        """-- : Halt with the fault TRAP_EXECUTED."""
        raise Fault("TRAP_EXECUTED")

    return {"STOP": STOP, "NOP": NOP, "JUMP": JUMP, "JUMPI": JUMPI, "CALLSUB": CALLSUB,
            "RETSUB": RETSUB, "RETURN": RETURN, "REVERT": REVERT, "TRAP": TRAP}
