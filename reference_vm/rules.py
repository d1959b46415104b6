"""What an execution runs by: one version of the specification at one word width.

A version is a value (spec chapter 1.7): every phase of the interpreter takes the ``Rules`` of
the execution it serves and reads its tables and numbers there, never from a process-wide
version. ``rules(version, bits)`` returns the one ``Rules`` of a version and width (cached, so
it can key caches and compares by identity); the spec's word width is the default width, as
the width is a parameter only for proofs and exhaustive checks (words.py).

The Python API's own defaults (``Policy()``, ``Limits()``, ``Context()``) are the base
version's values; :func:`rules` refuses a version whose values differ (a version that changes
them needs those defaults made per version first: CONTRIBUTING.md, "Adding a version").
"""

from __future__ import annotations

import functools
from types import MappingProxyType
from typing import Mapping

import spec
from reference_vm.errors import InternalInvariantError
from reference_vm.words import Word, word as word_of

# The values the Python API's defaults take from the base version (see the docstring).
API_DEFAULTS = (("limits", "default"), ("policy", "fields"), ("schedule", "randomness"),
                ("limits", "machine", "word_bits"))


def _at(doc, path):
    for part in path:
        doc = doc[part]
    return doc


class Rules:
    """One version's tables and numbers at one word width (immutable; one per version and width)."""

    __slots__ = (
        "version", "spec", "word", "bits", "mask", "stack_depth", "return_stack_depth",
        "call_depth", "code_size", "data_size", "call_data_size", "transient_slots",
        "page_size", "page_cost", "copy_word_size", "copy_word_cost", "hash_block_size",
        "hash_block_cost", "digest_size", "new_slot_cost", "read_units", "write_units",
        "new_slot_units", "transient_new_slot_cost", "prices", "_price_of", "seed_size", "counter_size",
        "container_versions", "_sets", "__weakref__",
    )

    def __init__(self, table: spec.Spec, word: Word):
        machine, schedule = table.limits["machine"], table.schedule
        self.version = table.version
        self.spec = table
        self.word = word
        self.bits = word.bits
        self.mask = word.mask
        self.stack_depth = machine["stack_depth"]
        self.return_stack_depth = machine["return_stack_depth"]
        self.call_depth = machine["call_depth"]
        self.code_size = machine["code_size"]
        self.data_size = machine["data_size"]
        self.call_data_size = machine["call_data_size"]
        self.transient_slots = machine.get("transient_slots")
        self.page_size = schedule["memory"]["page_size"]
        self.page_cost = schedule["memory"]["page_cost"]
        self.copy_word_size = schedule["copy"]["word_size"]
        self.copy_word_cost = schedule["copy"]["word_cost"]
        self.hash_block_size = schedule["hash"]["block_size"]
        self.hash_block_cost = schedule["hash"]["block_cost"]
        self.digest_size = schedule["hash"]["digest_size"]
        self.new_slot_cost = schedule["storage"]["new_slot_cost"]
        self.read_units = schedule["storage"]["read_units"]
        self.write_units = schedule["storage"]["write_units"]
        self.new_slot_units = schedule["storage"]["new_slot_units"]
        transient = schedule.get("transient")
        self.transient_new_slot_cost = transient["new_slot_cost"] if transient else None
        self.prices = schedule["fee"]
        self._price_of = (self.prices["compute_price"], self.prices["memory_page_price"],
                          self.prices["storage_unit_price"])
        self.seed_size = schedule["randomness"]["seed_size"]
        self.counter_size = schedule["randomness"]["counter_size"]
        self.container_versions = table.container_versions
        self._sets: dict[tuple[int, int], Mapping[int, spec.Instruction]] = {}

    def __repr__(self) -> str:
        return f"rules({self.version!r}, {self.bits})"

    def __reduce__(self):
        """Pickled as its version and width: unpickled, it is the same cached object."""
        return rules, (self.version, self.bits)

    def instruction_set(self, container_version: tuple[int, int]) -> Mapping[int, spec.Instruction]:
        """Opcode -> row for the code of a container of ``container_version`` under these rules
        (chapter 3.2.1 from 1.1): this version's rows whose opcode the container's version
        defines too. Only versions in ``container_versions`` are asked for."""
        found = self._sets.get(container_version)
        if found is None:
            own = self.spec.by_opcode
            if container_version == self.spec.number:
                found = own
            else:
                name = f"{container_version[0]}.{container_version[1]}"
                theirs = spec.load(name).by_opcode
                found = MappingProxyType({op: row for op, row in own.items() if op in theirs})
            self._sets[container_version] = found
        return found

    def fee(self, compute: int, memory_pages: int, storage_units: int) -> int:
        """The fee formula of chapter 5.5, in integers."""
        compute_price, page_price, unit_price = self._price_of
        return compute * compute_price + memory_pages * page_price + storage_units * unit_price


@functools.cache
def rules(version: str, bits: int | None = None) -> Rules:
    """The rules of spec version ``version`` at ``bits`` (the spec's word width by default).
    Raises spec.VersionError (a ValueError, one line) for an unknown version."""
    table = spec.load(version)
    base = spec.load(spec.versions()[0].version)
    for path in API_DEFAULTS:
        if _at(table.raw(path[0]), path[1:]) != _at(base.raw(path[0]), path[1:]):
            raise InternalInvariantError(
                f"version {version} changes {'.'.join(path)}: the Python API's defaults must "
                "become per version first")
    return Rules(table, word_of(bits if bits is not None else table.limits["machine"]["word_bits"]))
