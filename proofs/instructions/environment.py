"""Reads of the frame's environment (spec 6.8)."""

from __future__ import annotations

from proofs.accounting import charge, copy_cost, grow_to, running, then, unless_empty
from proofs.instructions.memory import copy_into
from proofs.words import Width, little_endian_word


def models(w: Width) -> dict:
    def push(get):
        return lambda s, imm: [running(s.push(get(s)))]

    def CALLDATALOAD(s, imm):
        (offset,), s = s.pop(1)
        data = s.env.call_data
        return [running(s.push(little_endian_word(data.read, w.widen(offset), w.size)))]

    def copier(source_of):
        """memory_copy from a byte string outside memory (5.6.2): the source offset is never
        checked or charged; bytes past the source's end are zero."""
        def model(s, imm):
            (length, offset, dst), s = s.pop(3)
            ln, off, ds = w.widen(length), w.widen(offset), w.widen(dst)
            source = source_of(s)

            def copy(t):
                return [running(t.replace(memory=copy_into(
                    t.memory, ds, ln, lambda j: source.read(off + j))))]
            return unless_empty(s, ln, lambda t: then(then(
                grow_to(t, ds + ln), lambda u: charge(u, copy_cost(w, ln), "copy cost")), copy))
        return model

    return {
        "CALLER": push(lambda s: s.env.caller),
        "SELF": push(lambda s: s.env.address),
        "CALLDATASIZE": push(lambda s: w.narrow(s.env.call_data.length)),
        "CALLDATALOAD": CALLDATALOAD,
        "CALLDATACOPY": copier(lambda s: s.env.call_data),
        "COMPUTELEFT": push(lambda s: w.narrow(s.compute_limit - s.compute)),
        "DATASIZE": push(lambda s: w.narrow(s.env.data.length)),
        "DATACOPY": copier(lambda s: s.env.data),
        "RETURNDATASIZE": push(lambda s: w.narrow(s.return_data.length)),
        "RETURNDATACOPY": copier(lambda s: s.return_data),
    }

