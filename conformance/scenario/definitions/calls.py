"""Contracts that call each other across steps (11.9.2 with chapter 6.11): a re-entrancy lock
held during a call, refused to a nested re-entry, released for the next call and undone with
a failed step; a nested call's writes read by a later direct call and the other way round;
events in execution order within a step and step after step."""

from __future__ import annotations

from conformance.scenario.case import ScenarioCase, Step
from conformance.scenario.definitions.common import (
    CALLER, ENTRY, FORWARDER, GET, KV, OTHER, SET, SET_REVERT, data, word,
)

# vault: slot 0 is its lock, slot 1 counts completed calls, slot 2 records (1 + ok) of its last
# outgoing call. Call data word 0: a contract to call while locked (0: none); word 1: 1 makes it
# revert after that call. A call that finds the lock held reverts.
VAULT = """
    push 0
    sload
    jumpi locked
    push 0
    push 1
    sstore              ; lock
    push 0
    calldataload        ; target
    dup1
    iszero
    jumpi done
    dup1
    push 200000
    push 0
    push 0
    call
    push 1
    add
    push 2
    swap1
    sstore              ; slot 2 = 1 + ok
    push 8
    calldataload
    jumpi fail
done:
    push 1
    sload
    push 1
    add
    push 1
    swap1
    sstore              ; count += 1
    push 0
    push 0
    sstore              ; unlock
    stop
locked:
    push 0
    push 0
    revert
fail:
    push 0
    push 0
    revert
"""
# attacker: calls the vault (no target) and stores 1 + ok in its slot 0.
ATTACKER = f"""
    push {ENTRY}
    push 100000
    push 0
    push 0
    call
    push 1
    add
    push 0
    swap1
    sstore
    stop
"""
TRANSFER_TOPIC = 0x4C4F47        # "LOG"
# logger: counts its calls in slot 0 and emits LOG1(topic: its caller, data: the new count).
LOGGER = """
    push 0
    sload
    push 1
    add
    dup1
    push 0
    swap1
    sstore
    push 0
    swap1
    mstore
    push 0
    push 8
    caller
    log1
    stop
"""
# relay: calls the logger, then emits LOG1(topic "LOG", no data) itself.
RELAY = f"""
    push {OTHER}
    push 200000
    push 0
    push 0
    call
    pop
    push 0
    push 0
    push {TRANSFER_TOPIC}
    log1
    stop
"""


def _c(name: str, description: str, contracts, steps, **kw) -> ScenarioCase:
    kw.setdefault("categories", ("scenario", "call"))
    kw.setdefault("opcodes", ("CALL", "SSTORE", "SLOAD"))
    return ScenarioCase(f"scenario/calls/{name}", description, contracts, tuple(steps), **kw)


def cases():
    yield _c("reentrancy_lock", "A vault locks itself while it calls out: a nested re-entry is refused "
             "(the attacker records 1 + ok = 1), the lock is released for the next call (the attacker, "
             "called directly, enters: 2), a step that reverts after the refused re-entry undoes its "
             "lock and count, and the call after it enters.",
             {ENTRY: VAULT, OTHER: ATTACKER},
             [Step(call_data=data(OTHER, 0), expect="success"),
              Step(to=OTHER, expect="success"),
              Step(call_data=data(OTHER, 1), expect="reverted"),
              Step(expect="success")],
             expect_storage={ENTRY: {0: 0, 1: 3, 2: 2}, OTHER: {0: 2}},
             categories=("scenario", "call", "reentrancy", "undo"))
    yield _c("nested_write_read_directly", "A write made by a nested call (the forwarder calling the "
             "store) is read by a later direct call; a direct write is read through the forwarder; a "
             "nested write that reverts leaves the earlier value.",
             {ENTRY: FORWARDER, OTHER: KV},
             [Step(call_data=data(SET, 5, 77)),
              Step(to=OTHER, call_data=data(GET, 5), output=word(77)),
              Step(to=OTHER, call_data=data(SET, 5, 78)),
              Step(call_data=data(GET, 5), output=word(78)),
              Step(call_data=data(SET_REVERT, 5, 99), expect="success"),
              Step(to=OTHER, call_data=data(GET, 5), output=word(78))],
             expect_storage={OTHER: {5: 78}})
    yield _c("events_in_order", "Events are the step's own, in execution order (the logger's, then the "
             "relay's), and the logger's count goes on from step to step whoever calls it.",
             {ENTRY: RELAY, OTHER: LOGGER},
             [Step(expect="success"), Step(to=OTHER, caller=CALLER), Step(), Step(to=OTHER, caller=0xB0B)],
             expect_storage={OTHER: {0: 4}}, opcodes=("CALL", "LOG1"),
             categories=("scenario", "call", "event"))
