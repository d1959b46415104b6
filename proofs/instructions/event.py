"""Events (spec 6.10, cost rule log_data 5.6.6)."""

from __future__ import annotations

from proofs.accounting import (
    charge, copy_cost, grow_to, running, then, unless_empty, unless_read_only,
)
from proofs.machine import Event, memory_range
from proofs.words import Width


def models(w: Width) -> dict:
    table = {}
    for ins in w.spec.instructions:
        if ins.type == "event":
            table[ins.mnemonic] = _log(w, ins.inputs - 2)
    return table


def _log(w: Width, topics: int):
    def LOG(s, imm):
        return unless_read_only(s, emit_event)

    def emit_event(s):
        items, s = s.pop(topics + 2)
        # Top first: topic_n ... topic_1, then length, then offset (signature bottom to top).
        topic_values = tuple(reversed(items[:topics]))
        ln, off = w.widen(items[topics]), w.widen(items[topics + 1])

        def emit(t):
            event = Event(t.env.address, topic_values, memory_range(t.memory, off, ln))
            return [running(t.replace(events=t.events + (event,)))]
        # An empty range touches nothing and copies nothing: no copy charge to fail.
        body = lambda t: then(grow_to(t, off + ln),  # noqa: E731
                              lambda u: charge(u, copy_cost(w, ln), "copy cost"))
        return then(unless_empty(s, ln, body), emit)
    return LOG
