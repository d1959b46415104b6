"""Reads of the frame's environment (spec section 6.8)."""

from __future__ import annotations

from reference_vm.instructions.memory import copy_into_memory
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word
    size = word.size
    mask = word.mask

    def CALLER(frame: Frame, imm: int) -> None:
        """-- address : Push the address of the frame's caller."""
        frame.stack.append(frame.caller)

    def SELF(frame: Frame, imm: int) -> None:
        """-- address : Push the address of the executing contract."""
        frame.stack.append(frame.address)

    def CALLDATASIZE(frame: Frame, imm: int) -> None:
        """-- size : Push the length of the call data in bytes."""
        frame.stack.append(len(frame.call_data) & mask)

    def CALLDATALOAD(frame: Frame, imm: int) -> None:
        """offset -- value : Push the word read little-endian from call data at offset; bytes past the end read as zero."""
        stack = frame.stack
        offset = stack[-1]
        # Little-endian: missing high bytes past the end are zero, so no padding is needed.
        stack[-1] = int.from_bytes(frame.call_data[offset:offset + size], "little")

    def CALLDATACOPY(frame: Frame, imm: int) -> None:
        """dst offset length -- : Copy call data[offset, offset+length) to memory at dst; bytes past the end read as zero.

        Cost rule memory_copy.
        """
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        dst = stack.pop()
        copy_into_memory(rules, frame, dst, frame.call_data, offset, length)

    def COMPUTELEFT(frame: Frame, imm: int) -> None:
        """-- units : Push the compute units this frame may still use, after this instruction's own cost."""
        frame.stack.append((frame.compute_limit - frame.meter.compute_used) & mask)

    def DATASIZE(frame: Frame, imm: int) -> None:
        """-- size : Push the length of the container's data section."""
        frame.stack.append(len(frame.data) & mask)

    def DATACOPY(frame: Frame, imm: int) -> None:
        """dst offset length -- : Copy data section[offset, offset+length) to memory at dst; bytes past the end read as zero.

        Cost rule memory_copy.
        """
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        dst = stack.pop()
        copy_into_memory(rules, frame, dst, frame.data, offset, length)

    def RETURNDATASIZE(frame: Frame, imm: int) -> None:
        """-- size : Push the length of the output of the most recent CALL of this frame (0 before any)."""
        frame.stack.append(len(frame.return_data) & mask)

    def RETURNDATACOPY(frame: Frame, imm: int) -> None:
        """dst offset length -- : Copy return data[offset, offset+length) to memory at dst; bytes past the end read as zero.

        Cost rule memory_copy.
        """
        stack = frame.stack
        length = stack.pop()
        offset = stack.pop()
        dst = stack.pop()
        copy_into_memory(rules, frame, dst, frame.return_data, offset, length)

    return {"CALLER": CALLER, "SELF": SELF, "CALLDATASIZE": CALLDATASIZE,
            "CALLDATALOAD": CALLDATALOAD, "CALLDATACOPY": CALLDATACOPY,
            "COMPUTELEFT": COMPUTELEFT, "DATASIZE": DATASIZE, "DATACOPY": DATACOPY,
            "RETURNDATASIZE": RETURNDATASIZE, "RETURNDATACOPY": RETURNDATACOPY}
