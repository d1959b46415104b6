"""Validate a container before execution (spec chapter 3).

Checks run in this order and the first failure is the result: the container header
(container.parse), decoding left to right (decode.decode), jump targets in offset order, and
termination. Invalid code never runs and is charged nothing.

May raise InvalidCode with every code container.parse and decode.decode raise, and with
INVALID_JUMP_TARGET, CODE_NOT_TERMINATED.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_vm import container
from reference_vm.decode import Decoded, decode
from reference_vm.errors import InvalidCode
from reference_vm.rules import Rules

# Flows after which execution can never reach the next offset.
TERMINAL_FLOWS = frozenset({"halt", "jump", "return_sub"})


@dataclass(frozen=True, slots=True)
class ValidCode:
    """A container that passed validation."""

    code: bytes
    data: bytes
    instructions: tuple[Decoded, ...]
    version: tuple[int, int]          # the container's version (its header's bytes 4 and 5)

    @property
    def mnemonics(self) -> frozenset[str]:
        return frozenset(d.instruction.mnemonic for d in self.instructions)


def validate(blob: bytes, rules: Rules) -> ValidCode:
    parsed = container.parse(blob, rules)
    instructions = decode(parsed.code, rules.instruction_set(parsed.version))
    boundaries = {d.offset for d in instructions}
    for d in instructions:
        if d.instruction.immediate_kind == "jump_target" and d.immediate not in boundaries:
            raise InvalidCode("INVALID_JUMP_TARGET",
                              f"{d.instruction.mnemonic} at offset {d.offset} targets {d.immediate}")
    if not instructions or instructions[-1].instruction.flow not in TERMINAL_FLOWS:
        raise InvalidCode("CODE_NOT_TERMINATED")
    return ValidCode(parsed.code, parsed.data, tuple(instructions), parsed.version)
