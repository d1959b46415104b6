"""Event emission (spec section 6.10).

An event is (emitting address, topics, data). Events of a frame that does not succeed are
discarded with it; the entry frame's events, in emission order, are the execution's events.
"""

from __future__ import annotations

import spec
from reference_vm.accounting import charge, copy_cost, touch
from reference_vm.machine import Frame, Handler
from reference_vm.words import Word

# A LOG row's inputs are offset, length and its topics.
FIXED_INPUTS = 2


def handlers(word: Word) -> dict[str, Handler]:
    return {row.mnemonic: _log(row) for row in spec.load().instructions if row.type == "event"}


def _log(row: spec.Instruction) -> Handler:
    topic_count = row.inputs - FIXED_INPUTS

    def LOG(frame: Frame, imm: int) -> None:
        stack = frame.stack
        topics = tuple(stack[len(stack) - topic_count:])
        del stack[len(stack) - topic_count:]
        length = stack.pop()
        offset = stack.pop()
        touch(frame, offset, length)
        charge(frame, copy_cost(length))
        frame.events.append((frame.address, topics, bytes(frame.memory[offset:offset + length])))

    LOG.__name__ = row.mnemonic
    LOG.__doc__ = f"{row.signature} : {row.meaning}\n\nCost rule log_data: memory_expansion, then copy_cost(length)."
    return LOG
