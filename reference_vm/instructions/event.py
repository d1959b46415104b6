"""Event emission (spec section 6.10).

An event is (emitting address, topics, data). Events of a frame that does not succeed are
discarded with it; the entry frame's events, in emission order, are the execution's events.
"""

from __future__ import annotations

import spec
from reference_vm.accounting import charge, copy_cost, touch
from reference_vm.errors import Fault
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules

# A LOG row's inputs are offset, length and its topics.
FIXED_INPUTS = 2


def handlers(rules: Rules) -> dict[str, Handler]:
    return {row.mnemonic: _log(rules, row) for row in rules.spec.instructions if row.type == "event"}


def _log(rules: Rules, row: spec.Instruction) -> Handler:
    topic_count = row.inputs - FIXED_INPUTS

    def LOG(frame: Frame, imm: int) -> None:
        if frame.read_only:
            raise Fault("READ_ONLY_WRITE")
        stack = frame.stack
        topics = tuple(stack[len(stack) - topic_count:])
        del stack[len(stack) - topic_count:]
        length = stack.pop()
        offset = stack.pop()
        touch(rules, frame, offset, length)
        charge(frame, copy_cost(rules, length))
        frame.events.append((frame.address, topics, bytes(frame.memory[offset:offset + length])))

    LOG.__name__ = row.mnemonic
    LOG.__doc__ = f"{row.signature} : {row.meaning}\n\nCost rule log_data: memory_expansion, then copy_cost(rules, length)."
    return LOG
