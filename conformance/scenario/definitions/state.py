"""State carried across top-level calls (11.9.2): a write is read by the next call; a step that
fails (reverted, a fault, out of compute or storage units) leaves the state of the earlier
steps as it was; limits bound each step, never the sequence; a slot written by several steps
ends with the last write (an implementation that applies the steps' state changes out of
order leaves another value)."""

from __future__ import annotations

from conformance.scenario.case import ScenarioCase, Step
from conformance.scenario.definitions.common import (
    COUNTER, ENTRY, GET, KV, SET, SET_REVERT, SET_SPIN, SET_TRAP, SET_TWO, TABLE, data, word,
)

STORAGE = TABLE.schedule["storage"]
NEW_SLOT_UNITS = STORAGE["write_units"] + STORAGE["new_slot_units"]   # one SSTORE to a zero slot


def _s(name: str, description: str, contracts, steps, **kw) -> ScenarioCase:
    kw.setdefault("opcodes", ("SSTORE", "SLOAD"))
    kw.setdefault("categories", ("scenario", "storage"))
    return ScenarioCase(f"scenario/state/{name}", description, contracts, tuple(steps), **kw)


def cases():
    yield _s("counter_three_calls", "The counter's slot written by each call is read by the next: 1, 2, 3.",
             {ENTRY: COUNTER}, [Step(expect="success", output=word(n)) for n in (1, 2, 3)],
             expect_storage={ENTRY: {0: 3}})
    yield _s("counter_from_stored_state", "The counter continues from the value its pre-state holds.",
             {ENTRY: (COUNTER, {0: 41})}, [Step(output=word(42)), Step(output=word(43))],
             expect_storage={ENTRY: {0: 43}})
    yield _s("set_then_get", "A slot set by one call is read by a later call of another caller.",
             {ENTRY: KV}, [Step(call_data=data(SET, 5, 77), expect="success"),
                           Step(call_data=data(GET, 5), caller=0xB0B, output=word(77))],
             expect_storage={ENTRY: {5: 77}})
    yield _s("last_write_wins", "Three calls write one slot; the state after them holds the last "
             "write (the steps' changes applied in step order), and a read sees each in turn.",
             {ENTRY: KV}, [Step(call_data=data(SET, 3, 10)), Step(call_data=data(GET, 3), output=word(10)),
                           Step(call_data=data(SET, 3, 20)), Step(call_data=data(SET, 3, 30)),
                           Step(call_data=data(GET, 3), output=word(30))],
             expect_storage={ENTRY: {3: 30}})
    yield _s("delete_then_read", "A slot set to 0 by a later call is absent from the state after it.",
             {ENTRY: (KV, {4: 9})}, [Step(call_data=data(GET, 4), output=word(9)),
                                     Step(call_data=data(SET, 4, 0)),
                                     Step(call_data=data(GET, 4), output=word(0))],
             expect_storage={ENTRY: {4: 0}})
    for op, name, outcome in ((SET_REVERT, "revert", "reverted"), (SET_TRAP, "trap", "TRAP_EXECUTED"),
                              (SET_SPIN, "compute", "COMPUTE_LIMIT_EXCEEDED")):
        limits = {"compute": 20_000} if op == SET_SPIN else {}
        yield _s(f"failed_step_{name}_keeps_earlier_steps",
                 f"A step that writes a slot and then ends {outcome} leaves the earlier steps' writes "
                 "and undoes its own; the next call reads the earlier value.",
                 {ENTRY: KV}, [Step(call_data=data(SET, 1, 5)), Step(call_data=data(SET, 2, 6)),
                               Step(call_data=data(op, 1, 9), limits=limits, expect=outcome),
                               Step(call_data=data(GET, 1), output=word(5))],
                 expect_storage={ENTRY: {1: 5, 2: 6}}, categories=("scenario", "storage", "undo"))
    yield _s("limits_bound_each_step", "Each call may use the storage units of one new slot: three "
             "calls that each write a new slot all succeed (limits are per call, never summed over "
             "a sequence).",
             {ENTRY: KV}, [Step(call_data=data(SET, k, k), limits={"storage_units": NEW_SLOT_UNITS},
                                expect="success") for k in (1, 2, 3)],
             expect_storage={ENTRY: {1: 1, 2: 2, 3: 3}}, categories=("scenario", "storage", "limits"))
    yield _s("storage_limit_mid_sequence", "The third of five calls writes two new slots with the units "
             "of one: STORAGE_LIMIT_EXCEEDED, its first write undone; the calls before and after it "
             "are unaffected.",
             {ENTRY: KV}, [Step(call_data=data(SET, 1, 1), limits={"storage_units": NEW_SLOT_UNITS}),
                           Step(call_data=data(SET, 2, 2)),
                           Step(call_data=data(SET_TWO, 7, 7), limits={"storage_units": NEW_SLOT_UNITS},
                                expect="STORAGE_LIMIT_EXCEEDED"),
                           Step(call_data=data(GET, 7), output=word(0)),
                           Step(call_data=data(SET_TWO, 7, 8), expect="success")],
             expect_storage={ENTRY: {1: 1, 2: 2, 7: 8, 8: 8}}, categories=("scenario", "storage", "limits"))
    yield _s("rejected_step_changes_nothing", "A step whose limits are refused (INVALID_LIMITS) runs "
             "nothing; the steps around it carry the state as if it were not there.",
             {ENTRY: COUNTER}, [Step(output=word(1)), Step(limits={"compute": -1}, expect="INVALID_LIMITS"),
                                Step(to=0x999, expect="CONTRACT_NOT_FOUND"), Step(output=word(2))],
             expect_storage={ENTRY: {0: 2}}, categories=("scenario", "storage", "request"))
    yield _s("read_only_step_then_write", "A step whose sandbox forbids storage writes fails with "
             "STORAGE_WRITE_FORBIDDEN (its policy is its own); the next step, allowed to write, does.",
             {ENTRY: COUNTER}, [Step(output=word(1)),
                                Step(policy={"storage_access": "read_only"}, expect="STORAGE_WRITE_FORBIDDEN"),
                                Step(output=word(2))],
             expect_storage={ENTRY: {0: 2}}, categories=("scenario", "storage", "policy"))
