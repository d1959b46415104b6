"""Stack manipulation (spec section 6.2).

PUSHn, DUPn and SWAPn are families; one builder makes each member of the table, and the
member's docstring is its row. The members and their parameters come from the rows: a PUSH
reads immediate_size bytes, DUPn copies the inputs-th item, SWAPn exchanges the top with the
inputs-th item.
"""

from __future__ import annotations

import spec
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules

FAMILIES = ("PUSH", "DUP", "SWAP")


def family_of(row: spec.Instruction) -> str | None:
    family = row.mnemonic.rstrip("0123456789")
    return family if family in FAMILIES and family != row.mnemonic else None


def handlers(rules: Rules) -> dict[str, Handler]:
    word = rules.word

    def POP(frame: Frame, imm: int) -> None:
        """a -- : Discard the top item."""
        frame.stack.pop()

    table: dict[str, Handler] = {"POP": POP}
    for row in rules.spec.instructions:
        family = family_of(row)
        if family == "PUSH":
            table[row.mnemonic] = _push(row, word.mask)
        elif family == "DUP":
            table[row.mnemonic] = _dup(row, row.inputs)
        elif family == "SWAP":
            table[row.mnemonic] = _swap(row, row.inputs - 1)
    return table


def _documented(handler: Handler, row: spec.Instruction) -> Handler:
    handler.__name__ = row.mnemonic
    handler.__doc__ = f"{row.signature} : {row.meaning}"
    return handler


def _push(row: spec.Instruction, mask: int) -> Handler:
    # The mask only bites at the reduced widths proofs use; at 64 bits every immediate fits.
    def PUSH(frame: Frame, value: int) -> None:
        frame.stack.append(value & mask)

    return _documented(PUSH, row)


def _dup(row: spec.Instruction, n: int) -> Handler:
    depth = -n

    def DUP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack.append(stack[depth])

    return _documented(DUP, row)


def _swap(row: spec.Instruction, n: int) -> Handler:
    other = -1 - n

    def SWAP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack[-1], stack[other] = stack[other], stack[-1]

    return _documented(SWAP, row)
