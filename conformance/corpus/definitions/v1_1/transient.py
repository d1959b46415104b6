"""Transient storage (spec 2.3.3, 5.6.8, 6.13, item T1): a slot reads 0 at the start of every
execution; TSTORE then TLOAD in one frame and across frames (one map per contract, shared by
its frames, separate per address); writes undone with a reverted or failed callee (its callees'
too) and kept with a successful one; never in the result; the transient_write rule (new slots
only, never storage units) and its compute; the machine.transient_slots boundary at limit-1,
limit and limit+1, in the entry frame and in a callee, with slots freed by a zero write or an
undo. TSTORE in a read-only frame is in staticcall.py.

Every vector's entry is at 0x100 and most read key 1 or 9: an implementation that kept
transient storage from one execution to the next (in its process) reads a non-zero value where
these vectors expect 0 (blinding keeps the addresses of requests that use transient storage,
conformance.run.blind).

Each states what its author expects from 2.3.3, 5.6.8 and 6.13 (1.1): the values read back
(an undone write's value gone), the compute of the transient_write rule on top of the base
costs, no storage units, and TRANSIENT_STORAGE_FULL where a new slot would pass the limit."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MASK, OTHER, THIRD, Boundary, Expect, base_costs, limit_side, push_all, returning, words,
)
from conformance.corpus.definitions.v1_1.common import MACHINE, TABLE, VERSION, case

SLOTS = MACHINE["transient_slots"]
MACHINE_COSTS = TABLE.schedule["transient"]
TSTORE_COST = TABLE.by_mnemonic["TSTORE"].cost
FULL = "TRANSIENT_STORAGE_FULL"


def returns(*values: int, **kw) -> Expect:
    return Expect(outcome="success", output=words(*values), **kw)


def charged(code: str, new_slots: int) -> Expect:
    """A straight-line program making ``new_slots`` new transient slots: its base costs and the
    new-slot charge for each (5.6.8); no storage units, no storage counters."""
    return Expect(outcome="success", usage={
        "compute": base_costs(code, VERSION) + new_slots * MACHINE_COSTS["new_slot_cost"],
        "storage_units": 0, "storage_reads": 0, "storage_writes": 0, "storage_new_slots": 0})


def _t(mnemonic: str, name: str, description: str, code: str, **kw):
    kw.setdefault("opcodes", ("TLOAD", "TSTORE") if mnemonic == "TSTORE" else ("TLOAD",))
    kw.setdefault("categories", ("semantics", "transient"))
    return case(f"transient/{mnemonic}/{name}", description, code, **kw)


def fill(count: int, label: str = "fill", key_base: int = 0) -> str:
    """TSTORE value 1 into ``count`` distinct keys (key_base + count down to key_base + 1)."""
    if count <= 0:
        return ""
    return (f"push {count}\n{label}:\ndup1\n" + (f"push {key_base}\nadd\n" if key_base else "")
            + f"push 1\ntstore\npush 1\nsub\ndup1\njumpi {label}\npop\n")


def self_call(selector: int, compute: int = 1_000_000) -> str:
    """CALL the executing contract with the 8-byte call data ``selector`` (memory word 0)."""
    return push_all([0, selector]) + "mstore\nself\n" + push_all([compute, 0, 8]) + "call\n"


# A contract whose call data selects what it does (the first word; 0: the entry's own path).
def dispatch(paths: dict[int, str], entry: str) -> str:
    code = "push 0\ncalldataload\n"
    for selector in sorted(paths):
        code += f"dup1\npush {selector}\neq\njumpi path_{selector}\n"
    code += "pop\n" + entry
    for selector, body in sorted(paths.items()):
        code += f"path_{selector}:\npop\n{body}"
    return code


# The new transient slots each cost-rule case makes (5.6.8: a non-zero value into a zero slot).
NEW_SLOTS = {"new_slot_charge": 1, "zero_write_no_charge": 0, "rewrite_no_charge": 1,
             "clear_then_new_charges_again": 2, "no_storage_units": 2}
# How a self-call that overwrites key 9 ends (its write undone in every case, 6.11).
ENDS = {"revert": "reverted", "trap": "TRAP_EXECUTED", "stack_underflow": "STACK_UNDERFLOW",
        "compute_exhausted": EXCEEDED["compute"]}


def cases():
    yield _t("TLOAD", "unwritten_is_zero", "TLOAD of a slot never written in this execution: 0.",
             "push 1\ntload\npush 9\ntload\n" + returning(2), expect=returns(0, 0))
    yield _t("TLOAD", "max_key_unwritten_is_zero", "TLOAD of key 2^64-1: 0.", f"push {MASK}\ntload\n" + returning(1),
             expect=returns(0))
    yield _t("TLOAD", "storage_is_not_transient", "A storage slot's value is not its transient value: TLOAD 0.",
             "push 1\ntload\npush 1\nsload\n" + returning(2), storage={1: 0x55}, opcodes=("TLOAD", "SLOAD"),
             expect=returns(0, 0x55))
    yield _t("TSTORE", "then_tload", "TSTORE key 1 = 5, then TLOAD key 1: 5; key 2 still 0.",
             "push 1\npush 5\ntstore\npush 1\ntload\npush 2\ntload\n" + returning(2), expect=returns(5, 0))
    yield _t("TSTORE", "overwrite", "Two TSTOREs to one slot: the last value is read.",
             "push 1\npush 5\ntstore\npush 1\npush 6\ntstore\npush 1\ntload\n" + returning(1), expect=returns(6))
    yield _t("TSTORE", "zero_clears", "TSTORE 0 after a value: TLOAD reads 0.",
             "push 1\npush 5\ntstore\npush 1\npush 0\ntstore\npush 1\ntload\n" + returning(1), expect=returns(0))
    yield _t("TSTORE", "not_in_result", "Transient writes never appear in state_changes (the storage write does).",
             "push 1\npush 5\ntstore\npush 2\npush 6\nsstore\nstop\n", opcodes=("TSTORE", "SSTORE"),
             expect=Expect(outcome="success", storage={ENTRY: {1: 0, 2: 6}}))
    yield _t("TSTORE", "not_storage", "TSTORE leaves storage alone: SLOAD of the same key reads the pre-state.",
             "push 1\npush 5\ntstore\npush 1\nsload\n" + returning(1), storage={1: 0x55},
             opcodes=("TSTORE", "SLOAD"), expect=returns(0x55, storage={ENTRY: {1: 0x55}}))
    yield _t("TSTORE", "max_key_and_value", "Key and value 2^64-1.",
             f"push {MASK}\npush {MASK}\ntstore\npush {MASK}\ntload\n" + returning(1), expect=returns(MASK))
    yield _t("TSTORE", "gone_after_revert", "The entry frame writes and reverts: the result shows nothing of it.",
             "push 1\npush 5\ntstore\npush 0\npush 0\nrevert\n", expect=Expect(outcome="reverted", output=b""))
    # Cost rule transient_write (5.6.8): the new-slot charge is for a zero slot made non-zero only.
    for name, code, what in (
            ("new_slot_charge", "push 1\npush 5\ntstore\nstop\n", "a new slot: base cost and the new-slot charge"),
            ("zero_write_no_charge", "push 1\npush 0\ntstore\nstop\n", "0 to a zero slot: the base cost alone"),
            ("rewrite_no_charge", "push 1\npush 5\ntstore\npush 1\npush 6\ntstore\nstop\n",
             "a rewrite of a non-zero slot: the base cost alone for the second"),
            ("clear_then_new_charges_again", "push 1\npush 5\ntstore\npush 1\npush 0\ntstore\npush 1\npush 7\ntstore\nstop\n",
             "a slot cleared and written again: a new slot again"),
            ("no_storage_units", "push 1\npush 5\ntstore\npush 2\npush 5\ntstore\nstop\n",
             "two new slots: compute only, no storage units or counters")):
        yield _t("TSTORE", name, f"TSTORE of {what}.", code, categories=("cost", "transient"),
                 expect=charged(code, NEW_SLOTS[name]))
    # One map per contract (SELF), shared by every frame of that contract.
    reader = "push 0\npush 9\ntload\nmstore\npush 0\npush 8\nreturn\n"
    read_back = dispatch({1: reader}, "push 9\npush 0x99\ntstore\n" + self_call(1) + "pop\n"
                         "push 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(1))
    yield _t("TSTORE", "read_back_in_callee", "The caller writes key 9; a self-call (same contract) reads it.",
             read_back, opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0x99, calls=("success",)))
    yield _t("TSTORE", "other_contract_separate", "Another contract's key 9 is its own: its TLOAD reads 0.",
             "push 9\npush 0x99\ntstore\n" + push_all([OTHER, 100000, 0, 0]) + "call\npop\n"
             "push 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(1),
             contracts={OTHER: reader}, opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0))
    writer = "push 9\npush 0x77\ntstore\nstop\n"
    after = "pop\npush 9\ntload\n" + returning(1)
    yield _t("TSTORE", "callee_write_visible", "A self-call writes key 9 and succeeds: the caller reads 0x77.",
             dispatch({1: writer}, self_call(1) + after), opcodes=("TLOAD", "TSTORE", "CALL"),
             expect=returns(0x77, calls=("success",)))
    for name, ending, what in (("revert", "push 0\npush 0\nrevert\n", "reverts"), ("trap", "trap\n", "traps"),
                               ("stack_underflow", "add\nstop\n", "faults (stack underflow)"),
                               ("compute_exhausted", "here:\njump here\n", "runs out of its compute")):
        yield _t("TSTORE", f"undone_by_callee_{name}",
                 f"A self-call overwrites key 9 and {what}: its write is undone, the caller reads its own 0x11.",
                 dispatch({1: "push 9\npush 0x77\ntstore\n" + ending},
                          "push 9\npush 0x11\ntstore\n" + self_call(1, 5000) + after),
                 opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0x11, calls=(ENDS[name],)))
    yield _t("TSTORE", "undone_with_grandchild", "A grandchild's write is undone when its parent reverts.",
             dispatch({1: self_call(2) + "pop\npush 0\npush 0\nrevert\n", 2: writer}, self_call(1) + after),
             opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0, calls=("reverted", "success")))
    yield _t("TSTORE", "kept_with_grandchild", "A grandchild's write stays when every frame above it succeeds.",
             dispatch({1: self_call(2) + "pop\nstop\n", 2: writer}, self_call(1) + after),
             opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0x77, calls=("success", "success")))
    yield _t("TSTORE", "undo_restores_clear", "A callee clears key 9 and reverts: the value is back.",
             dispatch({1: "push 9\npush 0\ntstore\npush 0\npush 0\nrevert\n"},
                      "push 9\npush 0x11\ntstore\n" + self_call(1) + after), opcodes=("TLOAD", "TSTORE", "CALL"),
             expect=returns(0x11, calls=("reverted",)))
    # machine.transient_slots: non-zero slots alive at once, over every contract.
    for at, count in (("limit-1", SLOTS - 1), ("limit", SLOTS), ("limit+1", SLOTS + 1)):
        yield _t("TSTORE", f"transient_slots_{at}", f"TSTORE into {count} distinct keys (limit {SLOTS} slots alive).",
                 fill(count) + "push 1\ntload\n" + returning(1), categories=("boundary", "transient"),
                 boundary=Boundary("transient_slots", at), expect=limit_side(at, returns(1), Expect(outcome=FULL)))
    yield _t("TSTORE", "full_rewrite_allowed", f"With {SLOTS} slots alive, rewriting one and writing 0 to a "
             "zero slot are no new slots: both run.",
             fill(SLOTS) + f"push 1\npush 2\ntstore\npush {SLOTS + 5}\npush 0\ntstore\npush 1\ntload\n" + returning(1),
             categories=("boundary", "transient"), expect=returns(2))
    yield _t("TSTORE", "full_cleared_slot_frees_room", f"With {SLOTS} slots alive, a zero write frees one: the "
             "next new slot fits.", fill(SLOTS) + f"push 1\npush 0\ntstore\npush {SLOTS + 5}\npush 3\ntstore\n"
             f"push {SLOTS + 5}\ntload\n" + returning(1), categories=("boundary", "transient"), expect=returns(3))
    yield _t("TSTORE", "full_in_callee", f"The entry holds {SLOTS} slots; a callee at another address writes a "
             "new slot: TRANSIENT_STORAGE_FULL in its call record, the caller goes on.",
             fill(SLOTS) + push_all([OTHER, 100000, 0, 0]) + "call\n" + returning(1),
             contracts={OTHER: "push 1\npush 1\ntstore\nstop\n"}, opcodes=("TSTORE", "CALL"),
             categories=("boundary", "transient"), expect=returns(0, calls=(FULL,)))
    yield _t("TSTORE", "callee_slots_count", f"A callee at another address holds {SLOTS - 1} slots and succeeds; "
             "the caller's second new slot is one too many.",
             push_all([OTHER, 10_000_000, 0, 0]) + "call\npop\npush 1\npush 1\ntstore\npush 2\npush 1\ntstore\nstop\n",
             contracts={OTHER: fill(SLOTS - 1) + "stop\n"}, opcodes=("TSTORE", "CALL"),
             categories=("boundary", "transient"), expect=Expect(outcome=FULL, calls=("success",)))
    yield _t("TSTORE", "undone_slots_free_room", f"A callee fills {SLOTS} slots and reverts: undone, they are "
             "free again and the caller's new slot fits.",
             push_all([OTHER, 10_000_000, 0, 0]) + "call\npop\npush 1\npush 1\ntstore\npush 1\ntload\n" + returning(1),
             contracts={OTHER: fill(SLOTS) + "push 0\npush 0\nrevert\n"}, opcodes=("TSTORE", "CALL"),
             categories=("boundary", "transient"), expect=returns(1, calls=("reverted",)))
    # The limit is checked before the charge (5.6.8 steps 2 and 3): at the limit, with compute
    # for the base cost but not for the charge, the fault is TRANSIENT_STORAGE_FULL.
    full = fill(SLOTS) + f"push {SLOTS + 5}\npush 1\n"
    rule = MACHINE_COSTS["new_slot_cost"]
    yield _t("TSTORE", "full_before_compute", "With the limit reached and compute for TSTORE's base cost "
             "but not for the new-slot charge: TRANSIENT_STORAGE_FULL, the limit is checked first.",
             full + "tstore\nstop\n", limits={"compute": _compute_of(full) + TSTORE_COST + rule - 1},
             categories=("boundary", "transient"), expect=Expect(outcome=FULL))
    yield _t("TLOAD", "in_three_contracts", "Three contracts write key 1 in turn; each reads its own.",
             "push 1\npush 0x10\ntstore\n" + push_all([OTHER, 100000, 0, 0]) + "call\npop\n"
             + push_all([THIRD, 100000, 0, 0]) + "call\npop\npush 1\ntload\n" + returning(1),
             contracts={OTHER: "push 1\npush 0x20\ntstore\npush 1\ntload\n" + returning(1),
                        THIRD: "push 1\ntload\n" + returning(1)},
             opcodes=("TLOAD", "TSTORE", "CALL"), expect=returns(0x10, calls=("success", "success")))


def _compute_of(code: str) -> int:
    """The compute a 1.1 program (ending with STOP appended) uses under 1.1."""
    from conformance.corpus.vector import input_of, run_reference
    return run_reference(input_of(case("x/y/z", "measure", code + "stop\n")), VERSION).usage.compute
