"""Calls into other contracts (spec section 6.11): CALL and, from 1.1, STATICCALL."""

from __future__ import annotations

from reference_vm.accounting import touch
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    def call(frame: Frame, read_only: bool) -> None:
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        compute = stack.pop()
        address = stack.pop()
        touch(rules, frame, offset, length)
        call_data = bytes(frame.memory[offset:offset + length])
        ok, return_data = frame.execution.call(frame, address, compute, call_data, read_only)
        frame.return_data = return_data
        stack.append(1 if ok else 0)

    def CALL(frame: Frame, imm: int) -> None:
        """address compute offset length -- ok : Run the contract at address with call data memory[offset, offset+length) and at most compute units; push 1 if it succeeded, else 0.

        Cost rule call: memory_expansion over the call data range. The callee then runs in a
        new frame (execute.Execution.call) whose compute limit is the smaller of the caller's
        limit and compute units more than used so far; what it uses is charged to the caller.
        Its output, when it succeeded or reverted, becomes the caller's return data (else the
        return data is empty). The callee is read-only when the caller is.
        """
        call(frame, frame.read_only)

    def STATICCALL(frame: Frame, imm: int) -> None:
        """address compute offset length -- ok : CALL, with the callee and every frame it creates read-only: a storage or transient write or an event halts that frame with READ_ONLY_WRITE.

        Cost rule call, as CALL; the callee's frame is read-only whatever the caller is.
        """
        call(frame, True)

    return {"CALL": CALL, "STATICCALL": STATICCALL}
