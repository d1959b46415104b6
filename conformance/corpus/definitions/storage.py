"""Storage (spec 6.7, 5.4): reads of absent and present slots, new slots, rewrites, deletes,
slots restored to their pre-state value, and state changes sorted by key.

Each states what its author expects from 6.7 and 5.4: the value read, the slots after the
call, and which writes make a new slot."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MASK, TABLE, Expect, case, push_all, returning, words,
)

READ_ONLY = {"storage_access": "read_only"}
UNITS = TABLE.schedule["storage"]


def reads(value: int) -> Expect:
    """An SLOAD that returns ``value``."""
    return Expect(outcome="success", output=words(value))


def writes(slot: int, writes: int = 1, new: int = 0, outcome: str = "success") -> Expect:
    """SSTOREs to key 1 leaving ``slot`` there: ``writes`` writes, ``new`` of them new slots (5.4)."""
    return Expect(outcome=outcome, storage={ENTRY: {1: slot}},
                  usage={"storage_writes": writes, "storage_new_slots": new,
                         "storage_units": writes * UNITS["write_units"] + new * UNITS["new_slot_units"]})


def cases():
    yield case("storage/SLOAD/absent", "SLOAD of a slot never written reads 0.",
               "push 5\nsload\n" + returning(1), opcodes=("SLOAD",), categories=("semantics",),
               expect=reads(0))
    yield case("storage/SLOAD/present", "SLOAD of a pre-state slot.",
               "push 5\nsload\n" + returning(1), storage={5: 0xABCDEF}, opcodes=("SLOAD",),
               categories=("semantics",), expect=reads(0xABCDEF))
    yield case("storage/SLOAD/max_key", "SLOAD of key 2^64-1.",
               f"push {MASK}\nsload\n" + returning(1), storage={MASK: 77}, opcodes=("SLOAD",),
               categories=("semantics", "edge"), expect=reads(77))
    yield case("storage/SLOAD/read_only_policy", "SLOAD runs under storage_access read_only.",
               "push 5\nsload\n" + returning(1), storage={5: 3}, policy=READ_ONLY, opcodes=("SLOAD",),
               categories=("semantics", "policy"), expect=reads(3))
    yield case("storage/SLOAD/sees_own_write", "SLOAD after SSTORE in the same execution reads the new value.",
               "push 5\npush 9\nsstore\npush 5\nsload\n" + returning(1), storage={5: 3},
               opcodes=("SLOAD", "SSTORE"), categories=("semantics",),
               expect=Expect(outcome="success", output=words(9), storage={ENTRY: {5: 9}}))
    yield case("storage/SSTORE/new_slot", "SSTORE to an absent slot: a new slot (extra compute and units).",
               "push 1\npush 42\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "cost"),
               expect=writes(42, new=1))
    yield case("storage/SSTORE/rewrite", "SSTORE over a non-zero slot is not a new slot.",
               "push 1\npush 43\nsstore\nstop\n", storage={1: 42}, opcodes=("SSTORE",),
               categories=("semantics", "cost"), expect=writes(43))
    yield case("storage/SSTORE/delete", "SSTORE of 0 deletes the slot; after is 0x0.",
               "push 1\npush 0\nsstore\nstop\n", storage={1: 42}, opcodes=("SSTORE",),
               categories=("semantics",), expect=writes(0))
    yield case("storage/SSTORE/zero_to_absent", "SSTORE of 0 to an absent slot: no change, not new.",
               "push 1\npush 0\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "edge"),
               expect=writes(0))
    yield case("storage/SSTORE/restore_pre_state", "A slot written and then restored reports no change.",
               "push 1\npush 50\nsstore\npush 1\npush 42\nsstore\nstop\n", storage={1: 42},
               opcodes=("SSTORE",), categories=("semantics", "edge"), expect=writes(42, writes=2))
    yield case("storage/SSTORE/delete_then_set", "A slot deleted and set again is new again.",
               "push 1\npush 0\nsstore\npush 1\npush 7\nsstore\nstop\n", storage={1: 42},
               opcodes=("SSTORE",), categories=("semantics", "cost", "edge"), expect=writes(7, writes=2, new=1))
    yield case("storage/SSTORE/set_then_delete", "A new slot set then deleted: no change, one new slot.",
               "push 1\npush 7\nsstore\npush 1\npush 0\nsstore\nstop\n",
               opcodes=("SSTORE",), categories=("semantics", "cost", "edge"), expect=writes(0, writes=2, new=1))
    yield case("storage/SSTORE/sorted_changes", "State changes are sorted by key, not by write order.",
               push_all([MASK, 1, 5, 2, 3, 3, 0, 4]) + "sstore\nsstore\nsstore\nsstore\nstop\n",
               opcodes=("SSTORE",), categories=("semantics",),
               expect=Expect(outcome="success", storage={ENTRY: {MASK: 1, 5: 2, 3: 3, 0: 4}}))
    yield case("storage/SSTORE/max_value", "SSTORE of 2^64-1.",
               f"push 0\npush {MASK}\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "edge"),
               expect=Expect(outcome="success", storage={ENTRY: {0: MASK}}))
    yield case("storage/SSTORE/then_revert", "SSTORE then REVERT: writes undone, usage kept.",
               "push 1\npush 7\nsstore\npush 0\npush 0\nrevert\n", opcodes=("SSTORE", "REVERT"),
               categories=("semantics",), expect=writes(0, new=1, outcome="reverted"))
    yield case("storage/SSTORE/storage_units_exhausted", "SSTORE of a new slot with too few storage units.",
               "push 1\npush 7\nsstore\nstop\n", limits={"storage_units": 19},
               opcodes=("SSTORE",), categories=("limits",),
               expect=writes(0, writes=0, outcome=EXCEEDED["storage_units"]))
    yield case("storage/SLOAD/storage_units_exhausted", "SLOAD with no storage units left.",
               "push 1\nsload\nstop\n", limits={"storage_units": 0},
               opcodes=("SLOAD",), categories=("limits",),
               expect=Expect(outcome=EXCEEDED["storage_units"], usage={"storage_reads": 0, "storage_units": 0}))
