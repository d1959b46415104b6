"""Stack manipulation (spec section 6.2).

PUSHn, DUPn and SWAPn are families; one builder makes each member of the table, and the
member's docstring is its row. The members and their parameters come from the rows: a PUSH
reads immediate_size bytes, DUPn copies the inputs-th item, SWAPn exchanges the top with the
inputs-th item.
"""

from __future__ import annotations

import spec
from reference_vm.machine import Frame, Handler
from reference_vm.words import Word

FAMILIES = ("PUSH", "DUP", "SWAP")


def family_of(row: spec.Instruction) -> str | None:
    family = row.mnemonic.rstrip("0123456789")
    return family if family in FAMILIES and family != row.mnemonic else None


def handlers(word: Word) -> dict[str, Handler]:
    def POP(frame: Frame, imm: int) -> None:
        """a -- : Discard the top item."""
        frame.stack.pop()

    table: dict[str, Handler] = {"POP": POP}
    for row in spec.load().instructions:
        family = family_of(row)
        if family == "PUSH":
            table[row.mnemonic] = _push(row.mnemonic, word.mask)
        elif family == "DUP":
            table[row.mnemonic] = _dup(row.mnemonic, row.inputs)
        elif family == "SWAP":
            table[row.mnemonic] = _swap(row.mnemonic, row.inputs - 1)
    return table


def _documented(handler: Handler, mnemonic: str) -> Handler:
    row = spec.load().by_mnemonic[mnemonic]
    handler.__name__ = mnemonic
    handler.__doc__ = f"{row.signature} : {row.meaning}"
    return handler


def _push(mnemonic: str, mask: int) -> Handler:
    # The mask only bites at the reduced widths proofs use; at 64 bits every immediate fits.
    def PUSH(frame: Frame, value: int) -> None:
        frame.stack.append(value & mask)

    return _documented(PUSH, mnemonic)


def _dup(mnemonic: str, n: int) -> Handler:
    depth = -n

    def DUP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack.append(stack[depth])

    return _documented(DUP, mnemonic)


def _swap(mnemonic: str, n: int) -> Handler:
    other = -1 - n

    def SWAP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack[-1], stack[other] = stack[other], stack[-1]

    return _documented(SWAP, mnemonic)
