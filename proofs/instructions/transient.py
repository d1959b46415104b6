"""Transient storage of the executing contract (from 1.1: spec 6.13, 2.3.3, cost rule
transient_write 5.6.8).

The state holds the executing contract's transient slots (``State.transient``) and the
execution's transient slots alive (``State.transient_alive``, every contract's). Neither
instruction charges storage units or changes a storage counter.
"""

from __future__ import annotations

import z3

from proofs.accounting import charge, halt, running, then, unless_read_only
from proofs.machine import Branch
from proofs.words import Width


def models(w: Width) -> dict:
    one = w.cval(1)

    def TLOAD(s, imm):
        (key,), s = s.pop(1)
        return [running(s.push(s.transient[key]))]

    def TSTORE(s, imm):
        def write(s):
            (value, key), s = s.pop(2)
            previous = s.transient[key]
            # 5.6.8 step 1: a new transient slot: value is not 0 and the current one is.
            new_slot = z3.And(value != 0, previous == 0)
            alive = (s.transient_alive + z3.If(value != 0, one, w.cval(0))
                     - z3.If(previous != 0, one, w.cval(0)))

            def done(t):
                return [running(t.replace(transient=z3.Store(t.transient, key, value),
                                          transient_alive=alive))]
            full = z3.And(new_slot, s.transient_alive == w.cval(w.num.transient()[0]))
            fresh = then(charge(s, w.num.transient()[1], "new transient slot cost"),
                         done)
            return ([halt(s, "TRANSIENT_STORAGE_FULL", full, "transient slots full")]
                    + [Branch("new transient slot; " + b.label if b.label
                              else "new transient slot", b.status,
                              z3.And(new_slot, z3.Not(full), b.cond), b.state) for b in fresh]
                    + [Branch("existing or zero", b.status, z3.And(z3.Not(new_slot), b.cond),
                              b.state) for b in done(s)])
        return unless_read_only(s, write)

    return {"TLOAD": TLOAD, "TSTORE": TSTORE}
