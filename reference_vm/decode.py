"""Decode a code section into instructions (spec chapter 3.2, first two rules), by the instruction
set of the container's version under the execution's version (chapter 3.2.1).

May raise InvalidCode with: UNDEFINED_OPCODE, TRUNCATED_IMMEDIATE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import spec
from reference_vm.errors import InvalidCode


@dataclass(frozen=True, slots=True)
class Decoded:
    """One instruction at an offset of the code section, with its immediate as an integer."""

    offset: int
    instruction: spec.Instruction
    immediate: int

    @property
    def end(self) -> int:
        return self.offset + self.instruction.size


def decode(code: bytes, table: Mapping[int, spec.Instruction]) -> list[Decoded]:
    """Every instruction of the code section in order, by the instruction set ``table``
    (opcode -> row: ``Rules.instruction_set`` of the container's version); immediates are read
    little-endian."""
    out = []
    pc = 0
    while pc < len(code):
        ins = table.get(code[pc])
        if ins is None:
            raise InvalidCode("UNDEFINED_OPCODE", f"byte 0x{code[pc]:02x} at offset {pc}")
        end = pc + ins.size
        if end > len(code):
            raise InvalidCode("TRUNCATED_IMMEDIATE", f"{ins.mnemonic} at offset {pc}")
        out.append(Decoded(pc, ins, int.from_bytes(code[pc + 1:end], "little")))
        pc = end
    return out
