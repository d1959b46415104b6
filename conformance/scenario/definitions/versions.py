"""Scenarios of version 1.1: transient storage is empty at the start of every top-level call
(chapter 2.3.3: each step is one), whatever the step before it did; and upgrades, steps that
name their versions: a state built under 1.0 read and written under 1.1, SHA256 repriced (P1)
from the step that runs 1.1, and a 1.1 container invalid under a 1.0 step."""

from __future__ import annotations

from conformance.corpus.definitions.common import returning
from conformance.scenario.case import ScenarioCase, Step
from conformance.scenario.definitions.common import COUNTER, ENTRY, GET, KV, OTHER, SET, data, forwarder, word
from reference_vm import assemble

V11 = "1.1"
ZERO_64_SHA256 = bytes.fromhex("f5a5fd42d16a20302798ef6ed309979b43003d2320d9f0e8ea9831a92759fb4b")
# transient: word 0 selects: 1 stores 7 in transient slot 1 and returns it; 2 returns transient
# slot 1; 3 stores 9 there and reverts; 4 copies transient slot 1 into storage slot 1.
TRANSIENT = ("    push 0\n    calldataload\n"
             + "".join(f"    dup1\n    push {op}\n    eq\n    jumpi {label}\n"
                       for op, label in ((1, "put"), (2, "read"), (3, "put_revert"), (4, "keep")))
             + "    stop\n"
             "put:\n    push 1\n    push 7\n    tstore\n    push 1\n    tload\n" + returning(1)
             + "read:\n    push 1\n    tload\n" + returning(1)
             + "put_revert:\n    push 1\n    push 9\n    tstore\n    push 0\n    push 0\n    revert\n"
             "keep:\n    push 1\n    push 1\n    tload\n    sstore\n    stop\n")
# static forwarder: STATICCALLs the contract at OTHER with its own call data, stores 1 + ok in its
# slot 0 and returns what the callee returned.
STATIC_FORWARDER = forwarder("staticcall", "    push 1\n    add\n    push 0\n    swap1\n    sstore\n")
# hashing: writes SHA256 of 64 zero bytes of memory after them and returns the 32 bytes (its
# cost is repriced by P1).
HASHING = "    push 64\n    push 0\n    push 64\n    sha256\n    push 64\n    push 32\n    return\n"


def cases():
    yield ScenarioCase(
        "scenario/transient/cleared_between_calls", "A transient slot written by one call reads 0 in "
        "the next (a top-level call starts with empty transient storage), also after a call that "
        "wrote it and reverted; nothing of it reaches storage.",
        {ENTRY: TRANSIENT},
        (Step(call_data=data(1), output=word(7)), Step(call_data=data(2), output=word(0)),
         Step(call_data=data(3), expect="reverted"), Step(call_data=data(2), output=word(0)),
         Step(call_data=data(1), output=word(7)), Step(call_data=data(4), expect="success")),
        opcodes=("TLOAD", "TSTORE"), categories=("scenario", "transient"), since=V11,
        expect_storage={ENTRY: {1: 0}})
    yield ScenarioCase(
        "scenario/calls/read_only_call_then_write", "A write through a read-only call (STATICCALL) "
        "fails in the callee (READ_ONLY_WRITE) and changes nothing; the same write made directly in "
        "the next call stays, and a read through a read-only call in the call after sees it.",
        {ENTRY: STATIC_FORWARDER, OTHER: KV},
        (Step(call_data=data(SET, 5, 77), expect="success"), Step(to=OTHER, call_data=data(SET, 5, 77)),
         Step(call_data=data(GET, 5), output=word(77))),
        opcodes=("STATICCALL", "SSTORE", "SLOAD"), categories=("scenario", "call", "read_only"), since=V11,
        expect_storage={ENTRY: {0: 2}, OTHER: {5: 77}})
    steps = [Step(version="1.0", output=word(1)), Step(output=word(2)),
             Step(version=V11, output=word(3)), Step(output=word(4))]
    yield ScenarioCase(
        "scenario/upgrade/counter_1_0_to_1_1", "A 1.0 counter called twice under 1.0 and twice under "
        "1.1 on the same state: the count goes on.", {ENTRY: COUNTER}, tuple(steps),
        opcodes=("SLOAD", "SSTORE"), categories=("scenario", "upgrade"), expect_storage={ENTRY: {0: 4}})
    yield ScenarioCase(
        "scenario/upgrade/sha256_repriced", "The same SHA256 call under 1.0 then 1.1 returns the same "
        "digest; its usage and fee are those of each step's version (P1).",
        {ENTRY: HASHING}, (Step(version="1.0", output=ZERO_64_SHA256), Step(version=V11, output=ZERO_64_SHA256)),
        opcodes=("SHA256",), categories=("scenario", "upgrade", "hash"))
    yield ScenarioCase(
        "scenario/upgrade/container_1_1_under_1_0", "A 1.1 container (CLZ) deployed beside a 1.0 "
        "counter: under a 1.0 step it is refused (UNSUPPORTED_VERSION) and the counter runs; under "
        "1.1 both run.",
        {ENTRY: COUNTER, OTHER: assemble("    push 1\n    clz\n" + returning(1), V11)},
        (Step(version="1.0", to=OTHER, expect="UNSUPPORTED_VERSION"), Step(output=word(1)),
         Step(version=V11, to=OTHER, output=word(63)), Step(output=word(2))),
        opcodes=("CLZ",), categories=("scenario", "upgrade", "validation"))
