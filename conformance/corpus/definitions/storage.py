"""Storage (spec 6.7, 5.4): reads of absent and present slots, new slots, rewrites, deletes,
slots restored to their pre-state value, and state changes sorted by key."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, case, push_all, returning

READ_ONLY = {"storage_access": "read_only"}


def cases():
    yield case("storage/SLOAD/absent", "SLOAD of a slot never written reads 0.",
               "push 5\nsload\n" + returning(1), opcodes=("SLOAD",), categories=("semantics",))
    yield case("storage/SLOAD/present", "SLOAD of a pre-state slot.",
               "push 5\nsload\n" + returning(1), storage={5: 0xABCDEF}, opcodes=("SLOAD",),
               categories=("semantics",))
    yield case("storage/SLOAD/max_key", "SLOAD of key 2^64-1.",
               f"push {MASK}\nsload\n" + returning(1), storage={MASK: 77}, opcodes=("SLOAD",),
               categories=("semantics", "edge"))
    yield case("storage/SLOAD/read_only_policy", "SLOAD runs under storage_access read_only.",
               "push 5\nsload\n" + returning(1), storage={5: 3}, policy=READ_ONLY, opcodes=("SLOAD",),
               categories=("semantics", "policy"))
    yield case("storage/SLOAD/sees_own_write", "SLOAD after SSTORE in the same execution reads the new value.",
               "push 5\npush 9\nsstore\npush 5\nsload\n" + returning(1), storage={5: 3},
               opcodes=("SLOAD", "SSTORE"), categories=("semantics",))
    yield case("storage/SSTORE/new_slot", "SSTORE to an absent slot: a new slot (extra compute and units).",
               "push 1\npush 42\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "cost"))
    yield case("storage/SSTORE/rewrite", "SSTORE over a non-zero slot is not a new slot.",
               "push 1\npush 43\nsstore\nstop\n", storage={1: 42}, opcodes=("SSTORE",),
               categories=("semantics", "cost"))
    yield case("storage/SSTORE/delete", "SSTORE of 0 deletes the slot; after is 0x0.",
               "push 1\npush 0\nsstore\nstop\n", storage={1: 42}, opcodes=("SSTORE",),
               categories=("semantics",))
    yield case("storage/SSTORE/zero_to_absent", "SSTORE of 0 to an absent slot: no change, not new.",
               "push 1\npush 0\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "edge"))
    yield case("storage/SSTORE/restore_pre_state", "A slot written and then restored reports no change.",
               "push 1\npush 50\nsstore\npush 1\npush 42\nsstore\nstop\n", storage={1: 42},
               opcodes=("SSTORE",), categories=("semantics", "edge"))
    yield case("storage/SSTORE/delete_then_set", "A slot deleted and set again is new again.",
               "push 1\npush 0\nsstore\npush 1\npush 7\nsstore\nstop\n", storage={1: 42},
               opcodes=("SSTORE",), categories=("semantics", "cost", "edge"))
    yield case("storage/SSTORE/set_then_delete", "A new slot set then deleted: no change, one new slot.",
               "push 1\npush 7\nsstore\npush 1\npush 0\nsstore\nstop\n",
               opcodes=("SSTORE",), categories=("semantics", "cost", "edge"))
    yield case("storage/SSTORE/sorted_changes", "State changes are sorted by key, not by write order.",
               push_all([MASK, 1, 5, 2, 3, 3, 0, 4]) + "sstore\nsstore\nsstore\nsstore\nstop\n",
               opcodes=("SSTORE",), categories=("semantics",))
    yield case("storage/SSTORE/max_value", "SSTORE of 2^64-1.",
               f"push 0\npush {MASK}\nsstore\nstop\n", opcodes=("SSTORE",), categories=("semantics", "edge"))
    yield case("storage/SSTORE/then_revert", "SSTORE then REVERT: writes undone, usage kept.",
               "push 1\npush 7\nsstore\npush 0\npush 0\nrevert\n", opcodes=("SSTORE", "REVERT"),
               categories=("semantics",))
    yield case("storage/SSTORE/storage_units_exhausted", "SSTORE of a new slot with too few storage units.",
               "push 1\npush 7\nsstore\nstop\n", limits={"storage_units": 19},
               opcodes=("SSTORE",), categories=("limits",))
    yield case("storage/SLOAD/storage_units_exhausted", "SLOAD with no storage units left.",
               "push 1\nsload\nstop\n", limits={"storage_units": 0},
               opcodes=("SLOAD",), categories=("limits",))
