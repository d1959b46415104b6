"""Memory and storage boundaries per instruction (spec 5.3, 5.4): each instruction that grows
memory or charges storage units, with its demand one below, at and one above the limit; and a
callee's compute at its CALL's compute operand."""

from __future__ import annotations

from conformance.corpus.definitions.common import OPEN, OTHER, PAGE, TABLE, Boundary, case, push_all

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


def cases():
    for mnemonic, (operands, _) in TWO_PAGES.items():
        ins = TABLE.by_mnemonic[mnemonic]
        tail = "" if ins.flow == "halt" else "stop\n"
        code = push_all(operands) + f"{mnemonic.lower()}\n" + tail
        for at, offset in POINTS:
            yield case(f"{ins.type}/{mnemonic}/memory_{at}", f"{mnemonic} grows memory to 2 pages; limit {2 + offset}.",
                       code, limits={"memory_pages": 2 + offset}, contracts={OTHER: "stop\n"}, policy=OPEN,
                       opcodes=(mnemonic,), categories=("boundary",), boundary=Boundary("memory_pages", at))
    units = _storage_units(TABLE.schedule)
    for name, code, pre in (("three_reads", STORAGE["SLOAD"][1], {}), ("new_slot", STORAGE["SSTORE"][1], {}),
                            STORAGE_REWRITE):
        mnemonic = "SLOAD" if name == "three_reads" else "SSTORE"
        for at, offset in POINTS:
            limit = units[name] + offset
            yield case(f"storage/{mnemonic}/storage_units_{name}_{at}",
                       f"{mnemonic} ({name.replace('_', ' ')}) needing {units[name]} storage units; limit {limit}.",
                       code, storage=pre, limits={"storage_units": limit}, opcodes=(mnemonic,),
                       categories=("boundary",), boundary=Boundary("storage_units", at))
    # A callee needing exactly 3 compute (PUSH1, PUSH1, ADD, STOP) under compute operands 4, 3, 2.
    callee = "push 1\npush 2\nadd\nstop\n"
    for at, offset in POINTS:
        compute = 3 + offset
        yield case(f"call/CALL/callee_compute_{at}", f"A callee needing 3 compute given a compute operand of {compute}.",
                   push_all([OTHER, compute, 0, 0]) + "call\nstop\n", contracts={OTHER: callee},
                   opcodes=("CALL",), categories=("boundary", "call"), boundary=Boundary("compute", at))
