"""Persistent storage of the executing contract (spec 6.7, cost rules 5.6.3 and 5.6.4)."""

from __future__ import annotations

import z3

from proofs.accounting import (
    charge, charge_storage, running,
    then, unless_read_only,
)
from proofs.words import Width


def models(w: Width) -> dict:
    one = w.cval(1)

    def SLOAD(s, imm):
        (key,), s = s.pop(1)
        return then(charge_storage(s, w.num.read_units), lambda t: [running(
            t.replace(reads=t.reads + one).push(t.storage[key]))])

    def SSTORE(s, imm):
        return unless_read_only(s, write_slot)

    def write_slot(s):
        (value, key), s = s.pop(2)
        # A new slot: the current value (earlier writes included) is 0 and value is not.
        new_slot = z3.And(value != 0, s.storage[key] == 0)

        def write(t, is_new):
            units = w.num.write_units + (w.num.new_slot_units if is_new else 0)

            def done(u):
                return [running(u.replace(writes=u.writes + one,
                                          new_slots=u.new_slots + (one if is_new else 0),
                                          storage=z3.Store(u.storage, key, value)))]
            return then(charge_storage(t, units), done)

        fresh = then(charge(s, w.num.new_slot_cost, "new slot cost"), lambda t: write(t, True))
        fresh = [b.__class__("new slot; " + b.label if b.label else "new slot", b.status,
                             z3.And(new_slot, b.cond), b.state) for b in fresh]
        old = [b.__class__("existing or zero; " + b.label if b.label else "existing or zero",
                           b.status, z3.And(z3.Not(new_slot), b.cond), b.state)
               for b in write(s, False)]
        return fresh + old

    return {"SLOAD": SLOAD, "SSTORE": SSTORE}
