"""Linear memory (spec section 6.6).

Memory is byte-addressed, starts empty, and grows by whole pages when an access of non-zero
length reaches past its end (accounting.grow_to). Words are stored little-endian.
"""

from __future__ import annotations

from reference_vm.accounting import charge, copy_cost, grow_to, touch
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word
    size = word.size
    mask = word.mask

    def MLOAD(frame: Frame, imm: int) -> None:
        """offset -- value : Load the word stored little-endian at memory[offset, offset+W/8).

        Cost rule memory_expansion over the word.
        """
        stack = frame.stack
        offset = stack[-1]
        end = offset + size
        if end > len(frame.memory):
            grow_to(rules, frame, end)
        stack[-1] = int.from_bytes(frame.memory[offset:end], "little")

    def MSTORE(frame: Frame, imm: int) -> None:
        """offset value -- : Store value little-endian at memory[offset, offset+W/8).

        Cost rule memory_expansion over the word.
        """
        stack = frame.stack
        value = stack.pop()
        offset = stack.pop()
        end = offset + size
        if end > len(frame.memory):
            grow_to(rules, frame, end)
        frame.memory[offset:end] = value.to_bytes(size, "little")

    def MLOAD8(frame: Frame, imm: int) -> None:
        """offset -- byte : Load the byte at memory[offset], zero-extended.

        Cost rule memory_expansion over the byte.
        """
        stack = frame.stack
        offset = stack[-1]
        if offset >= len(frame.memory):
            grow_to(rules, frame, offset + 1)
        stack[-1] = frame.memory[offset]

    def MSTORE8(frame: Frame, imm: int) -> None:
        """offset value -- : Store the low byte of value at memory[offset].

        Cost rule memory_expansion over the byte.
        """
        stack = frame.stack
        value = stack.pop()
        offset = stack.pop()
        if offset >= len(frame.memory):
            grow_to(rules, frame, offset + 1)
        frame.memory[offset] = value & 0xFF

    def MSIZE(frame: Frame, imm: int) -> None:
        """-- size : Push the current memory size in bytes (always a whole number of pages)."""
        frame.stack.append(len(frame.memory) & mask)

    def MCOPY(frame: Frame, imm: int) -> None:
        """dst src length -- : Copy memory[src, src+length) to memory[dst, dst+length) as if through a temporary buffer.

        Cost rule memory_copy: memory_expansion to cover both ranges, then copy_cost(rules, length).
        """
        stack = frame.stack
        length = stack.pop()
        src = stack.pop()
        dst = stack.pop()
        if not length:
            return
        grow_to(rules, frame, max(src, dst) + length)
        charge(frame, copy_cost(rules, length))
        memory = frame.memory
        memory[dst:dst + length] = memory[src:src + length]

    return {"MLOAD": MLOAD, "MSTORE": MSTORE, "MLOAD8": MLOAD8, "MSTORE8": MSTORE8,
            "MSIZE": MSIZE, "MCOPY": MCOPY}


def copy_into_memory(rules: Rules, frame: Frame, dst: int, source: bytes, offset: int, length: int) -> None:
    """The memory_copy rule for copies from outside memory: bytes past the source's end are zero.

    memory_expansion over [dst, dst+length), then copy_cost(rules, length), then the copy.
    """
    if not length:
        return
    touch(rules, frame, dst, length)
    charge(frame, copy_cost(rules, length))
    chunk = source[offset:offset + length]
    frame.memory[dst:dst + length] = chunk + bytes(length - len(chunk))
