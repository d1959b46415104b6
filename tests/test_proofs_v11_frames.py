"""Spec 1.1's transient storage (TLOAD, TSTORE: 6.13, 2.3.3, cost rule 5.6.8) and read-only
frames (STATICCALL: 6.11, 2.4) in the SMT models: their theorems proved, concrete cases
computed by hand from the spec's text on both the model and the reference interpreter, the
1.0 models left without either, and planted model bugs (TSTORE without its new-slot charge,
SSTORE allowed in a read-only frame, STATICCALL keeping its callee's writes) caught by the
theorems and by the agreement with the interpreter."""

from __future__ import annotations

import pytest

import spec
from proofs import agreement
from proofs.accounting import charge_storage, running, then
from proofs.concrete import concrete_state, observe, world_of
from proofs.replay import CALLEE_VALUE, callees
from proofs.instructions import models
from proofs.machine import fresh_state
from proofs.runner import AGREES, COUNTEREXAMPLE, DISAGREES, PROVED, Options, run_suite
from proofs.words import width

V = "1.1"
TABLE = spec.load(V)
ROW = TABLE.by_mnemonic
TRANSIENT_NEW_SLOT_COST = TABLE.schedule["transient"]["new_slot_cost"]
TRANSIENT_SLOTS = TABLE.limits["machine"]["transient_slots"]


def rows(opcodes, names=None, model=None, agreement_rows=False):
    overrides = {opcodes[0]: model} if model is not None else {}
    out = run_suite(Options(version=V, opcodes=tuple(opcodes), names=names,
                            agreement=agreement_rows, solver="z3", jobs=1, samples=4,
                            model_overrides=overrides))
    assert out
    return {(r["theorem"], r["opcode"]): r["status"] for r in out}


def test_the_transient_instructions_are_proved_and_agree():
    got = rows(("TLOAD", "TSTORE"), agreement_rows=True)
    theorems = {k: s for k, s in got.items() if not k[0].startswith("agreement_")}
    # six generic theorems each, and TSTORE's law (proofs/laws_v11.py)
    assert len(theorems) == 13 and set(theorems.values()) == {PROVED}, got
    assert ("tstore_then_tload_and_frame", "TSTORE") in theorems
    checks = {k: s for k, s in got.items() if k[0].startswith("agreement_")}
    assert len(checks) == 4 and set(checks.values()) == {AGREES}, got


def test_staticcall_frame_laws_are_proved():
    names = ("staticcall_outcome_and_return_data", "halts_exactly", "cost")
    got = rows(("STATICCALL",), names=names)
    assert got == {(n, "STATICCALL"): PROVED for n in names}


def test_the_1_0_state_has_no_transient_storage_and_no_read_only_flag():
    pre = fresh_state(width(64, "1.0"))
    assert pre.transient is None and pre.transient_alive is None and pre.env.read_only is None
    assert "TSTORE" not in models(64, "1.0") and "STATICCALL" not in models(64, "1.0")
    from proofs.execute import step
    assert not [b for b in step(pre, "SSTORE") if b.status == "READ_ONLY_WRITE"]
    assert [b.label for b in step(fresh_state(width(64, V)), "SSTORE")
            if b.status == "READ_ONLY_WRITE"] == ["read-only frame"]


BASE = {"width": 64, "version": V, "compute_used": 1000, "compute_limit": 100_000, "depth": 2}


def both(**inputs):
    """(model's observation, interpreter's) of one instruction, and their differences."""
    x = {**BASE, **inputs}
    diffs = agreement.compare(x)
    full = agreement.complete(x)
    pre = concrete_state(full)
    world = world_of(full, pre)
    branch = agreement.model_outcome(full, None, world, pre)
    return observe(full, branch, tuple(full["stack"][-2:]), world=world), diffs


def test_tstore_new_slot_charges_base_plus_new_slot_cost():
    # 6.13 / 5.6.8: key 7 := 5 in an empty slot: a new transient slot; base 8 + 20.
    mine, diffs = both(mnemonic="TSTORE", stack=[7, 5])
    assert diffs == []
    assert mine.status == "running"
    assert mine.meters["compute"] == 1000 + ROW["TSTORE"].cost + TRANSIENT_NEW_SLOT_COST == 1028
    assert mine.transient == {5: 0, 7: 5} and mine.transient_alive == 1
    assert mine.meters["storage_units"] == 0 and mine.meters["writes"] == 0


def test_tstore_rewrite_and_clear_charge_the_base_cost_only():
    mine, diffs = both(mnemonic="TSTORE", stack=[7, 9], transient={7: 5})
    assert diffs == [] and mine.meters["compute"] == 1008 and mine.transient[7] == 9
    mine, diffs = both(mnemonic="TSTORE", stack=[7, 0], transient={7: 5}, transient_alive=3)
    assert diffs == [] and mine.meters["compute"] == 1008
    assert mine.transient[7] == 0 and mine.transient_alive == 2


def test_tstore_a_new_slot_at_the_limit_is_transient_storage_full():
    mine, diffs = both(mnemonic="TSTORE", stack=[7, 5], transient_alive=TRANSIENT_SLOTS)
    assert diffs == [] and mine.status == "TRANSIENT_STORAGE_FULL"
    assert mine.meters["compute"] == 1008          # nothing charged by the rule
    # Rewriting a live slot at the limit makes no new slot: it runs.
    mine, diffs = both(mnemonic="TSTORE", stack=[7, 6], transient={7: 5},
                       transient_alive=TRANSIENT_SLOTS)
    assert diffs == [] and mine.status == "running" and mine.transient[7] == 6


def test_tload_reads_the_slot_or_zero():
    mine, diffs = both(mnemonic="TLOAD", stack=[7], transient={7: 42})
    assert diffs == [] and mine.stack == [42] and mine.meters["compute"] == 1005
    mine, diffs = both(mnemonic="TLOAD", stack=[8], transient={7: 42})
    assert diffs == [] and mine.stack == [0]


@pytest.mark.parametrize("mnemonic,stack", [("SSTORE", [1, 2]), ("TSTORE", [1, 2]),
                                            ("LOG0", [0, 64]), ("LOG4", [1, 2, 3, 4, 0, 64])])
def test_a_write_in_a_read_only_frame_faults_after_the_base_cost(mnemonic, stack):
    mine, diffs = both(mnemonic=mnemonic, stack=stack, read_only=True)
    assert diffs == []
    assert mine.status == "READ_ONLY_WRITE"
    assert mine.meters["compute"] == 1000 + ROW[mnemonic].cost
    assert mine.meters["pages_live"] == 0 and mine.meters["storage_units"] == 0
    # Below the base cost, the compute limit comes first (5.2.3 step 3 before step 4).
    mine, diffs = both(mnemonic=mnemonic, stack=stack, read_only=True,
                       compute_limit=1000 + ROW[mnemonic].cost - 1)
    assert diffs == [] and mine.status == "COMPUTE_LIMIT_EXCEEDED"


def test_staticcall_callee_writes_nothing_and_call_in_read_only_frame_too():
    # The "store" callee writes its own slot and stops: under STATICCALL it faults with
    # READ_ONLY_WRITE (ok = 0, empty return data), its slot stays 0.
    for mnemonic, read_only in (("STATICCALL", False), ("CALL", True)):
        mine, diffs = both(mnemonic=mnemonic, stack=[0x200, 50_000, 0, 0], callee="store",
                           read_only=read_only)
        assert diffs == [], (mnemonic, diffs)
        assert mine.stack == [0] and mine.callee_storage == 0 and mine.return_data[0] == 0
    mine, diffs = both(mnemonic="CALL", stack=[0x200, 50_000, 0, 0], callee="store")
    assert diffs == [] and mine.stack == [1] and mine.callee_storage != 0


def _tstore_without_new_slot_charge(s, imm):
    """TSTORE that never charges transient.new_slot_cost (a planted bug)."""
    (value, key), s = s.pop(2)
    import z3
    return [running(s.replace(transient=z3.Store(s.transient, key, value),
                              transient_alive=s.transient_alive))]


def test_a_tstore_without_the_new_slot_charge_is_caught():
    got = rows(("TSTORE",), names=("cost", "halts_exactly", "agreement_branches"),
               model=_tstore_without_new_slot_charge, agreement_rows=True)
    assert got[("cost", "TSTORE")] == COUNTEREXAMPLE
    assert got[("halts_exactly", "TSTORE")] == COUNTEREXAMPLE
    assert got[("agreement_branches", "TSTORE")] == DISAGREES


def _sstore_ignoring_read_only(s, imm):
    """SSTORE that writes in a read-only frame (a planted bug): 1.0's rule, without the
    read-only check."""
    (value, key), s = s.pop(2)
    w = s.w
    import z3
    return then(charge_storage(s, w.num.write_units), lambda t: [running(t.replace(
        writes=t.writes + w.cval(1), storage=z3.Store(t.storage, key, value)))])


def test_an_sstore_allowed_in_a_read_only_frame_is_caught():
    got = rows(("SSTORE",), names=("halts_exactly", "charges_before_effect",
                                   "agreement_branches"),
               model=_sstore_ignoring_read_only, agreement_rows=True)
    assert got[("halts_exactly", "SSTORE")] == COUNTEREXAMPLE
    assert got[("agreement_branches", "SSTORE")] == DISAGREES


def test_a_staticcall_keeping_its_callees_writes_is_caught():
    call = models(64, V)["CALL"]
    got = rows(("STATICCALL",), names=("staticcall_outcome_and_return_data",), model=call)
    assert got == {("staticcall_outcome_and_return_data", "STATICCALL"): COUNTEREXAMPLE}


def test_staticcall_agrees_across_frames_with_every_callee():
    """Every callee program of replay.CALLEES (storage writes, events, re-entry) run under
    STATICCALL on both sides: the writes fault READ_ONLY_WRITE in the callee."""
    from proofs import frames
    cases, found = frames.check(V, mnemonic="STATICCALL")
    assert cases == len(frames.frame_inputs(V, "STATICCALL")) > 100 and found == []
    # CALL's cases gain one per callee kind from a read-only frame under 1.1 only.
    kinds = callees(V)
    assert set(kinds) - set(callees("1.0")) == {"transient", "transient_revert",
                                                 "transient_trap"}
    read_only = [x["callee"] for x in frames.frame_inputs(V) if x.get("read_only")]
    assert read_only == list(kinds)
    assert not [x for x in frames.frame_inputs("1.0") if "read_only" in x]


@pytest.mark.parametrize("kind,stays", [("transient", True), ("transient_revert", False),
                                        ("transient_trap", False)])
def test_a_callees_transient_write_stays_on_success_and_is_undone_otherwise(kind, stays):
    """6.13: the callee writes its own transient slot CALLEE_KEY; it stays for the rest of
    the execution when the callee succeeds, and is undone when it reverts or faults."""
    mine, diffs = both(mnemonic="CALL", stack=[0x200, 50_000, 0, 0], callee=kind)
    assert diffs == []
    assert mine.stack == [1 if stays else 0]
    assert mine.callee_transient == (CALLEE_VALUE if stays else 0)
    assert mine.transient_alive == (1 if stays else 0)
    # Under STATICCALL the write faults READ_ONLY_WRITE: nothing stays.
    mine, diffs = both(mnemonic="STATICCALL", stack=[0x200, 50_000, 0, 0], callee=kind)
    assert diffs == [] and mine.stack == [0] and mine.callee_transient == 0
