"""Dynamic resource charges (spec chapter 5): the cost rules instructions name in cost_rule, with
the parameters of the execution's version (``Rules``).

Every function here either charges in full and returns, or raises before changing any meter.

May raise Exhausted with: COMPUTE_LIMIT_EXCEEDED, MEMORY_LIMIT_EXCEEDED, STORAGE_LIMIT_EXCEEDED.
"""

from __future__ import annotations

from reference_vm.errors import Exhausted
from reference_vm.machine import Frame, Meter
from reference_vm.rules import Rules


def charge(frame: Frame, units: int) -> None:
    """Charge compute units to the frame, or halt with COMPUTE_LIMIT_EXCEEDED charging nothing."""
    meter = frame.meter
    if meter.compute_used + units > frame.compute_limit:
        raise Exhausted("COMPUTE_LIMIT_EXCEEDED", f"needs {units} more")
    meter.compute_used += units


def grow_to(rules: Rules, frame: Frame, end: int) -> None:
    """Make memory cover [0, end): check the memory limit first, then charge page_cost per page.

    Memory grows to the least whole number of pages covering ``end``; it never shrinks.
    """
    memory = frame.memory
    if end <= len(memory):
        return
    meter = frame.meter
    page_size = rules.page_size
    new_pages = -(-end // page_size) - len(memory) // page_size
    if meter.pages_live + new_pages > meter.memory_limit:
        raise Exhausted("MEMORY_LIMIT_EXCEEDED", f"needs {new_pages} more pages")
    charge(frame, new_pages * rules.page_cost)
    memory.extend(bytes(new_pages * page_size))
    meter.pages_live += new_pages
    if meter.pages_live > meter.pages_peak:
        meter.pages_peak = meter.pages_live


def touch(rules: Rules, frame: Frame, offset: int, length: int) -> None:
    """The memory_expansion rule: a range of zero length touches nothing, wherever it is."""
    if length:
        grow_to(rules, frame, offset + length)


def copy_cost(rules: Rules, length: int) -> int:
    """Compute units for copying ``length`` bytes: word_cost per started copy word."""
    return -(-length // rules.copy_word_size) * rules.copy_word_cost


def hash_cost(rules: Rules, length: int) -> int:
    """Compute units for hashing ``length`` bytes: block_cost per started block."""
    return -(-length // rules.hash_block_size) * rules.hash_block_cost


def charge_storage(frame: Frame, units: int) -> None:
    """Charge storage units, or halt with STORAGE_LIMIT_EXCEEDED charging nothing."""
    meter = frame.meter
    if meter.storage_units + units > meter.storage_limit:
        raise Exhausted("STORAGE_LIMIT_EXCEEDED", f"needs {units} more")
    meter.storage_units += units


def pages_of(rules: Rules, frame: Frame) -> int:
    return len(frame.memory) // rules.page_size


def release(rules: Rules, meter: Meter, frame: Frame) -> None:
    """A returning frame's memory stops counting toward the pages alive."""
    meter.pages_live -= pages_of(rules, frame)
