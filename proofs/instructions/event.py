"""Events (spec 6.10, cost rule log_data 5.6.6)."""

from __future__ import annotations

from proofs.accounting import charge, copy_cost, running, then, touch
from proofs.machine import Event, memory_range
from proofs.words import SPEC, Width


def models(w: Width) -> dict:
    table = {}
    for ins in SPEC.instructions:
        if ins.type == "event":
            table[ins.mnemonic] = _log(w, ins.inputs - 2)
    return table


def _log(w: Width, topics: int):
    def LOG(s, imm):
        items, s = s.pop(topics + 2)
        # Top first: topic_n ... topic_1, then length, then offset (signature bottom to top).
        topic_values = tuple(reversed(items[:topics]))
        ln, off = w.widen(items[topics]), w.widen(items[topics + 1])

        def emit(t):
            event = Event(t.env.address, topic_values, memory_range(t.memory, off, ln))
            return [running(t.replace(events=t.events + (event,)))]
        return then(then(touch(s, off, ln), lambda t: charge(t, copy_cost(ln), "copy cost")),
                    emit)
    return LOG
