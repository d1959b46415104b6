"""Execution results and their canonical JSON form (spec chapter 7.5).

The canonical form is what implementations compare: UTF-8 JSON with sorted keys and no
insignificant whitespace; words as "0x"-prefixed lowercase hex without leading zeros; byte
strings as "0x"-prefixed lowercase hex of every byte; counts as JSON integers. It holds no ids
and no timestamps, so two runs of the same request give byte-identical text.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from reference_vm.machine import Meter
from reference_vm.rules import Rules
from reference_vm.state import StateChange

STATUSES = ("success", "reverted", "invalid", "rejected", "violation", "fault", "exhausted",
            "internal")


def word_hex(value: int) -> str:
    return hex(value)


def bytes_hex(value: bytes) -> str:
    return "0x" + value.hex()


@dataclass(frozen=True, slots=True)
class Event:
    address: int
    topics: tuple[int, ...]
    data: bytes


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One nested frame a CALL started, in the order calls started (spec 7.5.2).

    ``compute`` and the storage counts are what the call used from its start to its end, its
    own nested calls included; ``memory_pages`` is the callee frame's own memory at its end,
    which is its peak since memory never shrinks. (The callee's compute limit is left out on
    purpose: it follows from the caller's limit, and a result must not change when a limit
    that was not reached is raised.)"""

    depth: int
    caller: int
    callee: int
    status: str
    error: str | None
    error_pc: int | None
    compute: int
    memory_pages: int = 0
    storage_reads: int = 0
    storage_writes: int = 0
    storage_new_slots: int = 0
    storage_units: int = 0


@dataclass(frozen=True, slots=True)
class Usage:
    """Resources used: compute units, peak memory pages, storage operations and units."""

    compute: int = 0
    memory_pages: int = 0
    storage_reads: int = 0
    storage_writes: int = 0
    storage_new_slots: int = 0
    storage_units: int = 0
    fee: int = 0          # by the prices of the execution's version (chapter 5.5)

    @classmethod
    def of(cls, meter: Meter, rules: Rules) -> "Usage":
        return cls(meter.compute_used, meter.pages_peak, meter.storage_reads,
                   meter.storage_writes, meter.storage_new_slots, meter.storage_units,
                   rules.fee(meter.compute_used, meter.pages_peak, meter.storage_units))


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    """The outcome of one execution. ``error_pc`` is the entry frame's offset where it halted
    with an error, or None when it did not (or nothing ran). ``calls`` records every nested
    frame started, whatever the entry frame's outcome."""

    status: str
    error: str | None
    error_pc: int | None
    output: bytes
    state_changes: tuple[StateChange, ...]
    events: tuple[Event, ...]
    calls: tuple[CallRecord, ...]
    usage: Usage

    @property
    def fee(self) -> int:
        return self.usage.fee

    @property
    def ok(self) -> bool:
        return self.status == "success"

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "error": self.error,
            "error_pc": self.error_pc,
            "output": bytes_hex(self.output),
            "state_changes": [
                {"address": word_hex(c.address), "key": word_hex(c.key),
                 "before": word_hex(c.before), "after": word_hex(c.after)}
                for c in self.state_changes],
            "events": [
                {"address": word_hex(e.address), "topics": [word_hex(t) for t in e.topics],
                 "data": bytes_hex(e.data)}
                for e in self.events],
            "calls": [
                {"depth": c.depth, "caller": word_hex(c.caller), "callee": word_hex(c.callee),
                 "status": c.status, "error": c.error, "error_pc": c.error_pc,
                 "compute": c.compute, "memory_pages": c.memory_pages, "storage_reads": c.storage_reads,
                 "storage_writes": c.storage_writes, "storage_new_slots": c.storage_new_slots,
                 "storage_units": c.storage_units}
                for c in self.calls],
            "usage": {"compute": self.usage.compute, "memory_pages": self.usage.memory_pages,
                      "storage_reads": self.usage.storage_reads,
                      "storage_writes": self.usage.storage_writes,
                      "storage_new_slots": self.usage.storage_new_slots,
                      "storage_units": self.usage.storage_units},
            "fee": self.fee,
        }

    def canonical_json(self) -> str:
        return canonical(self.to_json())

    def digest(self) -> str:
        """SHA-256 of the canonical JSON: equal digests mean equal results."""
        return hashlib.sha256(self.canonical_json().encode()).hexdigest()


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
