"""Memory and storage boundaries per instruction (spec 5.3, 5.4): each instruction that grows
memory or charges storage units, with its demand one below, at and one above the limit; and a
callee's compute at its CALL's compute operand.

Each states what its author expects (5.1): at and below the limit the demand is met in full
(the usage is the demand), one above it the dimension's code, nothing of the refused charge
applied."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    EXCEEDED, OPEN, OTHER, PAGE, TABLE, Boundary, Expect, case, limit_side, push_all,
)

POINTS = (("limit-1", 1), ("limit", 0), ("limit+1", -1))  # limit = demand + offset

# Operands that make each instruction grow memory from 0 to exactly 2 pages.
TWO_PAGES = {
    "MLOAD": ([PAGE], ""), "MSTORE": ([PAGE, 7], ""), "MLOAD8": ([PAGE], ""), "MSTORE8": ([PAGE, 7], ""),
    "MCOPY": ([PAGE, 0, 8], ""), "CALLDATACOPY": ([PAGE, 0, 8], ""), "DATACOPY": ([PAGE, 0, 8], ""),
    "RETURNDATACOPY": ([PAGE, 0, 8], ""), "SHA256": ([PAGE, 0, 8], ""),
    "RETURN": ([PAGE, 8], ""), "REVERT": ([PAGE, 8], ""), "CALL": ([OTHER, 1000, PAGE, 8], ""),
    **{f"LOG{n}": ([PAGE, 8] + [1] * n, "") for n in range(5)},
}
# opcode -> (case name, source, the reads it makes (SLOAD), storage before)
STORAGE: dict[str, tuple[str, str, int | None, dict[int, int]]] = {
    "SLOAD": ("three_reads", "push 1\nsload\npush 2\nsload\npush 3\nsload\nstop\n", 3, {}),
    "SSTORE": ("new_slot", "push 1\npush 5\nsstore\nstop\n", None, {}),
}
STORAGE_REWRITE = ("rewrite", "push 1\npush 5\nsstore\nstop\n", {1: 9})


def _storage_units(schedule) -> dict[str, int]:
    s = schedule["storage"]
    return {"new_slot": s["write_units"] + s["new_slot_units"], "rewrite": s["write_units"],
            "three_reads": 3 * s["read_units"]}


# The counters each storage case's operations increment when their charges fit (5.4).
COUNTS = {"new_slot": {"storage_writes": 1, "storage_new_slots": 1}, "rewrite": {"storage_writes": 1,
          "storage_new_slots": 0}, "three_reads": {"storage_reads": 3}}


def _memory_expect(mnemonic: str, at: str) -> Expect:
    """Memory grown to exactly 2 pages; or, the growth refused, memory as it was: growing to 2
    pages is one growth (5.3.3), so 0 pages. RETURN and REVERT end with the 8 bytes of fresh
    memory they return; a CALL that fits starts its call (the callee STOPs), one that does not
    starts none (6.11 step 1)."""
    calls = ("success",) if mnemonic == "CALL" else None
    passing = Expect(outcome="reverted" if mnemonic == "REVERT" else "success", calls=calls,
                     output=bytes(8) if mnemonic in ("RETURN", "REVERT") else None, usage={"memory_pages": 2})
    failing = Expect(outcome=EXCEEDED["memory_pages"], calls=() if calls else None, usage={"memory_pages": 0})
    return limit_side(at, passing, failing)


def cases():
    for mnemonic, (operands, _) in TWO_PAGES.items():
        ins = TABLE.by_mnemonic[mnemonic]
        tail = "" if ins.flow == "halt" else "stop\n"
        code = push_all(operands) + f"{mnemonic.lower()}\n" + tail
        for at, offset in POINTS:
            yield case(f"{ins.type}/{mnemonic}/memory_{at}", f"{mnemonic} grows memory to 2 pages; limit {2 + offset}.",
                       code, limits={"memory_pages": 2 + offset}, contracts={OTHER: "stop\n"}, policy=OPEN,
                       opcodes=(mnemonic,), categories=("boundary",), boundary=Boundary("memory_pages", at),
                       expect=_memory_expect(mnemonic, at))
    units = _storage_units(TABLE.schedule)
    for name, code, pre in (("three_reads", STORAGE["SLOAD"][1], {}), ("new_slot", STORAGE["SSTORE"][1], {}),
                            STORAGE_REWRITE):
        mnemonic = "SLOAD" if name == "three_reads" else "SSTORE"
        # The slot SSTORE writes (key 1): 5 when the write fits, its pre-state value when not.
        slot = {} if mnemonic == "SLOAD" else {0x100: {1: 5}}
        for at, offset in POINTS:
            limit = units[name] + offset
            passing = Expect(outcome="success", storage=slot, usage={"storage_units": units[name], **COUNTS[name]})
            failing = Expect(outcome=EXCEEDED["storage_units"], at_most={"storage_units": limit},
                             storage={a: {1: pre.get(1, 0)} for a in slot})
            yield case(f"storage/{mnemonic}/storage_units_{name}_{at}",
                       f"{mnemonic} ({name.replace('_', ' ')}) needing {units[name]} storage units; limit {limit}.",
                       code, storage=pre, limits={"storage_units": limit}, opcodes=(mnemonic,),
                       categories=("boundary",), boundary=Boundary("storage_units", at),
                       expect=limit_side(at, passing, failing))
    # A callee needing exactly 3 compute (PUSH1, PUSH1, ADD, STOP) under compute operands 4, 3, 2.
    callee = "push 1\npush 2\nadd\nstop\n"
    for at, offset in POINTS:
        compute = 3 + offset
        yield case(f"call/CALL/callee_compute_{at}", f"A callee needing 3 compute given a compute operand of {compute}.",
                   push_all([OTHER, compute, 0, 0]) + "call\nstop\n", contracts={OTHER: callee},
                   opcodes=("CALL",), categories=("boundary", "call"), boundary=Boundary("compute", at),
                   expect=Expect(outcome="success", calls=(limit_side(at, "success", EXCEEDED["compute"]),)))
