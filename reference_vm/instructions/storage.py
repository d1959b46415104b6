"""Persistent storage (spec section 6.7).

Each contract has its own storage, a map from words to words in which every slot not yet
written reads as 0; writing 0 deletes a slot. Storage is reached through the execution's
journal so that a reverted or failed frame's writes can be undone.
"""

from __future__ import annotations

from reference_vm.accounting import charge, charge_storage
from reference_vm.errors import Fault
from reference_vm.machine import Frame, Handler
from reference_vm.rules import Rules


def handlers(rules: Rules) -> dict[str, Handler]:
    read_units, write_units = rules.read_units, rules.write_units
    new_slot_cost, new_slot_units = rules.new_slot_cost, rules.new_slot_units

    def SLOAD(frame: Frame, imm: int) -> None:
        """key -- value : Push the value of the executing contract's storage slot key (0 if never written).

        Cost rule storage_read: read_units storage units.
        """
        stack = frame.stack
        charge_storage(frame, read_units)
        frame.meter.storage_reads += 1
        stack[-1] = frame.execution.journal.load(frame.address, stack[-1])

    def SSTORE(frame: Frame, imm: int) -> None:
        """key value -- : Set the executing contract's storage slot key to value (0 deletes the slot).

        Cost rule storage_write: when the slot is 0 and value is not (a new slot), new_slot_cost
        compute units first; then write_units storage units, plus new_slot_units for a new slot.
        Fault READ_ONLY_WRITE first in a read-only frame (from 1.1: STATICCALL).
        """
        if frame.read_only:
            raise Fault("READ_ONLY_WRITE")
        stack = frame.stack
        value = stack.pop()
        key = stack.pop()
        journal = frame.execution.journal
        new_slot = value != 0 and journal.load(frame.address, key) == 0
        if new_slot:
            charge(frame, new_slot_cost)
        charge_storage(frame, write_units + (new_slot_units if new_slot else 0))
        meter = frame.meter
        meter.storage_writes += 1
        if new_slot:
            meter.storage_new_slots += 1
        journal.store(frame.address, key, value)

    return {"SLOAD": SLOAD, "SSTORE": SSTORE}
