"""Dynamic resource charges (spec chapter 5): the cost rules instructions name in cost_rule.

Every function here either charges in full and returns, or raises before changing any meter.

May raise Exhausted with: COMPUTE_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, STORAGE_LIMIT_EXCEEDED.
"""

from __future__ import annotations

import spec
from reference_vm.errors import Exhausted
from reference_vm.machine import Frame, Meter

_SCHEDULE = spec.load().schedule
PAGE_SIZE = _SCHEDULE["memory"]["page_size"]
PAGE_COST = _SCHEDULE["memory"]["page_cost"]
COPY_WORD_SIZE = _SCHEDULE["copy"]["word_size"]
COPY_WORD_COST = _SCHEDULE["copy"]["word_cost"]
HASH_BLOCK_SIZE = _SCHEDULE["hash"]["block_size"]
HASH_BLOCK_COST = _SCHEDULE["hash"]["block_cost"]
DIGEST_SIZE = _SCHEDULE["hash"]["digest_size"]
NEW_SLOT_COST = _SCHEDULE["storage"]["new_slot_cost"]
READ_UNITS = _SCHEDULE["storage"]["read_units"]
WRITE_UNITS = _SCHEDULE["storage"]["write_units"]
NEW_SLOT_UNITS = _SCHEDULE["storage"]["new_slot_units"]


def charge(frame: Frame, units: int) -> None:
    """Charge compute units to the frame, or halt with COMPUTE_LIMIT_EXCEEDED charging nothing."""
    meter = frame.meter
    if meter.compute_used + units > frame.compute_limit:
        raise Exhausted("COMPUTE_LIMIT_EXCEEDED", f"needs {units} more")
    meter.compute_used += units


def grow_to(frame: Frame, end: int) -> None:
    """Make memory cover [0, end): check the memory limit first, then charge page_cost per page.

    Memory grows to the least whole number of pages covering ``end``; it never shrinks.
    """
    memory = frame.memory
    if end <= len(memory):
        return
    meter = frame.meter
    new_pages = -(-end // PAGE_SIZE) - len(memory) // PAGE_SIZE
    if meter.pages_live + new_pages > meter.memory_limit:
        raise Exhausted("MEMORY_LIMIT_EXCEEDED", f"needs {new_pages} more pages")
    charge(frame, new_pages * PAGE_COST)
    memory.extend(bytes(new_pages * PAGE_SIZE))
    meter.pages_live += new_pages
    if meter.pages_live > meter.pages_peak:
        meter.pages_peak = meter.pages_live


def touch(frame: Frame, offset: int, length: int) -> None:
    """The memory_expansion rule: a range of zero length touches nothing, wherever it is."""
    if length:
        grow_to(frame, offset + length)


def copy_cost(length: int) -> int:
    """Compute units for copying ``length`` bytes: word_cost per started copy word."""
    return -(-length // COPY_WORD_SIZE) * COPY_WORD_COST


def hash_cost(length: int) -> int:
    """Compute units for hashing ``length`` bytes: block_cost per started block."""
    return -(-length // HASH_BLOCK_SIZE) * HASH_BLOCK_COST


def charge_storage(frame: Frame, units: int) -> None:
    """Charge storage units, or halt with STORAGE_LIMIT_EXCEEDED charging nothing."""
    meter = frame.meter
    if meter.storage_units + units > meter.storage_limit:
        raise Exhausted("STORAGE_LIMIT_EXCEEDED", f"needs {units} more")
    meter.storage_units += units


def pages_of(frame: Frame) -> int:
    return len(frame.memory) // PAGE_SIZE


def release(meter: Meter, frame: Frame) -> None:
    """A returning frame's memory stops counting toward the pages alive."""
    meter.pages_live -= pages_of(frame)


def fee(compute: int, memory_pages: int, storage_units: int) -> int:
    """The fee formula of chapter 5.5, in integers."""
    prices = _SCHEDULE["fee"]
    return (compute * prices["compute_price"] + memory_pages * prices["memory_page_price"]
            + storage_units * prices["storage_unit_price"])
