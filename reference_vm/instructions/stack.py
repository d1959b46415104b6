"""Stack manipulation (spec section 6.2).

PUSHn, DUPn and SWAPn are families; one builder makes each member, and the member's
docstring is its row of the spec table.
"""

from __future__ import annotations

import spec
from reference_vm.machine import Frame, Handler
from reference_vm.words import Word

FAMILY_SIZE = 16
PUSH_SIZES = (1, 2, 4, 8)


def handlers(word: Word) -> dict[str, Handler]:
    def POP(frame: Frame, imm: int) -> None:
        """a -- : Discard the top item."""
        frame.stack.pop()

    table = {"POP": POP}
    for size in PUSH_SIZES:
        table[f"PUSH{size}"] = _push(size, word.mask)
    for n in range(1, FAMILY_SIZE + 1):
        table[f"DUP{n}"] = _dup(n)
        table[f"SWAP{n}"] = _swap(n)
    return table


def _documented(handler: Handler, mnemonic: str) -> Handler:
    row = spec.load().by_mnemonic[mnemonic]
    handler.__name__ = mnemonic
    handler.__doc__ = f"{row.signature} : {row.meaning}"
    return handler


def _push(size: int, mask: int) -> Handler:
    # The mask only bites at the reduced widths proofs use; at 64 bits every immediate fits.
    def PUSH(frame: Frame, value: int) -> None:
        frame.stack.append(value & mask)

    return _documented(PUSH, f"PUSH{size}")


def _dup(n: int) -> Handler:
    depth = -n

    def DUP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack.append(stack[depth])

    return _documented(DUP, f"DUP{n}")


def _swap(n: int) -> Handler:
    other = -1 - n

    def SWAP(frame: Frame, imm: int) -> None:
        stack = frame.stack
        stack[-1], stack[other] = stack[other], stack[-1]

    return _documented(SWAP, f"SWAP{n}")
