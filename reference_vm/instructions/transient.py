"""Transient storage (spec section 6.13, from version 1.1).

A word-to-word map per contract that lives for one execution: every slot reads 0 when the
execution starts, writes are undone with a failed callee through the execution's journal (as
storage writes are), and nothing of it is ever reported. Its writes are metered by the cost
rule transient_write and bounded by ``limits.toml`` machine.transient_slots non-zero slots.
"""

from __future__ import annotations

from reference_vm.accounting import charge
from reference_vm.errors import Fault
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    if rules.transient_slots is None or rules.transient_new_slot_cost is None:
        return {}                                  # a version without transient storage
    slots_limit: int = rules.transient_slots
    new_slot_cost: int = rules.transient_new_slot_cost

    def TLOAD(frame: Frame, imm: int) -> None:
        """key -- value : The current value of transient slot key of the executing contract (0 if never written in this execution)."""
        stack = frame.stack
        stack[-1] = frame.execution.journal.transient_load(frame.address, stack[-1])

    def TSTORE(frame: Frame, imm: int) -> None:
        """key value -- : Sets transient slot key of the executing contract to value, for the rest of the execution.

        Fault READ_ONLY_WRITE first in a read-only frame. Cost rule transient_write: a write that
        makes a zero slot non-zero (a new transient slot) faults with TRANSIENT_STORAGE_FULL when
        transient_slots are already non-zero, else charges new_slot_cost compute units.
        """
        if frame.read_only:
            raise Fault("READ_ONLY_WRITE")
        stack = frame.stack
        value = stack.pop()
        key = stack.pop()
        journal = frame.execution.journal
        if value != 0 and journal.transient_load(frame.address, key) == 0:
            if journal.transient_alive >= slots_limit:
                raise Fault("TRANSIENT_STORAGE_FULL")
            charge(frame, new_slot_cost)
        journal.transient_store(frame.address, key, value)

    return {"TLOAD": TLOAD, "TSTORE": TSTORE}
