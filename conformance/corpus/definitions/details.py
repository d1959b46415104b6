"""Details the per-opcode vectors do not reach (spec 5.2.3, 3.1, 6.11, 7.5): faults and
exhaustion in the middle of a segment, container size fields with a non-zero high byte,
results with several entries in every list, storage slots written twice in one execution,
callee writes undone by a fault, return data after a failed call, and MSTORE8 of a value whose
low byte is zero.

Each states what its author expects: the fault or code of each mid-segment halt (5.2.3), the
validation code (3.1), the slots and counters of repeated writes (5.4), the slots a failed
callee leaves (its writes undone, its counters kept, 6.11), the bytes MSTORE8 leaves (6.6)."""

from __future__ import annotations


from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MACHINE, OTHER, THIRD, TABLE, Expect, build, case, fill_stack, push_all, refused, returning, words,
)
from conformance.corpus.vector import BASE, input_of, run_reference

STACK_DEPTH = MACHINE["stack_depth"]
UNITS = TABLE.schedule["storage"]


def writes(slots: dict[int, int], count: int, new: int, output: bytes | None = None, reads: int = 0) -> Expect:
    """SSTOREs (and ``reads`` SLOADs) of the entry leaving ``slots``: ``count`` writes, ``new`` of
    them new slots (5.4)."""
    return Expect(outcome="success", output=output, storage={ENTRY: slots}, usage={
        "storage_writes": count, "storage_new_slots": new, "storage_reads": reads,
        "storage_units": count * UNITS["write_units"] + new * UNITS["new_slot_units"] + reads * UNITS["read_units"]})


def _header(code_size: int, data_size: int, code: bytes, data: bytes = b"") -> bytes:
    blob = build(code, data)
    return blob[:8] + code_size.to_bytes(4, "little") + data_size.to_bytes(4, "little") + blob[16:]


# How the callee of call/CALL/callee_*_writes_undone ends, and the writes counted (kept when
# undone, 6.11 step 5): the caller's and the trapping callee's. The exhausted callee never
# writes: its compute operand runs out at its first SSTORE's new-slot charge (instructions.toml
# SSTORE cost plus schedule.toml storage.new_slot_cost), so that vector shows a failed callee,
# not an undone write.
ENDS = {"trap": "TRAP_EXECUTED", "exhausted": EXCEEDED["compute"]}
WRITES_COUNTED = {"trap": {"storage_writes": 2}, "exhausted": {"storage_writes": 1}}
# call/CALL/callee_exhausted_after_a_write_writes_undone: the callee's compute pays its first
# SSTORE (a new slot: instructions.toml SSTORE cost plus schedule.toml storage.new_slot_cost)
# and the four pushes, not the second SSTORE's base cost: its write is made, then undone.
_PUSH, _SSTORE = TABLE.by_mnemonic["PUSH1"].cost, TABLE.by_mnemonic["SSTORE"].cost
EXHAUSTED_AT_SECOND_SSTORE = 4 * _PUSH + _SSTORE + UNITS["new_slot_cost"] + _SSTORE - 1


def cases():
    # 5.2.3: every instruction is checked, not only a segment's net effect.
    yield case("stack/PUSH1/overflow_inside_segment",
               f"On {STACK_DEPTH - 1} items, PUSH1 PUSH1 POP POP: the second PUSH1 overflows though the segment ends lower.",
               fill_stack(STACK_DEPTH - 1) + "push1 1\npush1 2\npop\npop\nstop\n", opcodes=("PUSH1", "POP"),
               categories=("fault", "segment"), sections=("5.2.3",), expect=Expect(outcome="STACK_OVERFLOW"))
    yield case("stack/DUP1/overflow_inside_segment",
               f"On {STACK_DEPTH - 1} items, DUP1 DUP1 POP POP: the second DUP1 overflows.",
               fill_stack(STACK_DEPTH - 1) + "dup1\ndup1\npop\npop\nstop\n", opcodes=("DUP1", "POP"),
               categories=("fault", "segment"), sections=("5.2.3",), expect=Expect(outcome="STACK_OVERFLOW"))
    yield case("arithmetic/ADD/underflow_inside_segment",
               "PUSH1 ADD in the middle of a segment: ADD underflows after PUSH1 was charged.",
               "push1 1\nadd\npush1 2\npop\nstop\n", opcodes=("ADD",), categories=("fault", "segment"),
               expect=Expect(outcome="STACK_UNDERFLOW", usage={"compute": TABLE.by_mnemonic["PUSH1"].cost}))
    for limit in (1, 2, 3):
        yield case(f"arithmetic/ADD/compute_exhausted_inside_segment_{limit}",
                   f"PUSH1 PUSH1 ADD PUSH1 POP STOP under a compute limit of {limit}: exhausted mid-segment.",
                   "push1 1\npush1 2\nadd\npush1 3\npop\nstop\n", limits={"compute": limit}, opcodes=("ADD",),
                   categories=("limits", "segment"),
                   expect=Expect(outcome=EXCEEDED["compute"], at_most={"compute": limit}))
    # 3.1: the size fields are 4-byte little-endian integers; a non-zero high byte counts.
    code = bytes([0x10, 0x01, 0x00])   # push1 1; stop
    for name, blob in (("code_size_high_byte", _header(len(code) + (1 << 24), 0, code)),
                       ("code_size_third_byte", _header(len(code) + (1 << 16), 0, code)),
                       ("data_size_high_byte", _header(len(code), 1 << 24, code)),
                       ("data_size_third_byte", _header(len(code), 1 << 16, code))):
        yield case(f"validation/CONTAINER_SIZE_MISMATCH/{name}",
                   f"A container whose {name.replace('_', ' ')} is set: the sizes do not add up.",
                   blob, categories=("invalid",), sections=("3.1",), expect=refused("CONTAINER_SIZE_MISMATCH"))
    # 7.5: several entries in every list of the result.
    writer = "push 21\npush 2100\nsstore\npush 0\npush 0\npush 0x77\nlog1\npush 0\npush 8\nreturn\n"
    reverter = "push 22\npush 2200\nsstore\npush 0\npush 0\nlog0\npush 0\npush 8\nrevert\n"
    many = (push_all([1, 0x11]) + "sstore\n" + push_all([2, 0x22]) + "sstore\n" + push_all([3, 0]) + "sstore\n"
            + "push 0\npush 0xAB\nmstore\n"
            + push_all([0, 8, 0xE1]) + "log1\n" + push_all([0, 4, 0xE2, 0xE3]) + "log2\n"
            + push_all([OTHER, 5000, 0, 8]) + "call\n" + push_all([THIRD, 5000, 0, 8]) + "call\n"
            + push_all([OTHER, 5000, 0, 0]) + "call\n" + returning(3))
    yield case("call/CALL/several_entries_in_every_list",
               "Three slot writes (one to zero), two events, three calls (one reverting): every list has several entries.",
               many, storage={3: 0x33}, contracts={OTHER: writer, THIRD: reverter},
               opcodes=("SSTORE", "LOG1", "LOG2", "CALL"), categories=("semantics", "call", "result"))
    nested = "push 0\ncalldataload\ndup1\njumpi deeper\npop\npush 31\npush 3100\nsstore\nstop\n" \
             f"deeper:\npush 1\nsub\npush 0\nswap1\npush 0\nswap1\nmstore\npush {OTHER}\npush 100000\npush 0\npush 8\ncall\n" \
             "push 0\npush 0\nlog0\nstop\n"
    yield case("call/CALL/nested_records_in_order",
               "Calls nested three deep: call records come in the order calls started, with their depths and usage.",
               "push 0\npush 3\nmstore\n" + push_all([OTHER, 200000, 0, 8]) + "call\n" + returning(1),
               contracts={OTHER: nested}, opcodes=("CALL",), categories=("call", "result"))
    # SSTORE's new-slot rule looks at the slot's current value, earlier writes included (5.4).
    yield case("storage/SSTORE/new_slot_after_delete",
               "A slot holding 9 is cleared, then set to 5: the second write makes a new slot again.",
               push_all([1, 0]) + "sstore\n" + push_all([1, 5]) + "sstore\nstop\n", storage={1: 9},
               opcodes=("SSTORE",), categories=("semantics", "storage"), expect=writes({1: 5}, 2, 1))
    yield case("storage/SSTORE/rewrite_of_a_pending_new_slot",
               "An empty slot is set to 5, then to 6: only the first write makes a new slot.",
               push_all([1, 5]) + "sstore\n" + push_all([1, 6]) + "sstore\nstop\n",
               opcodes=("SSTORE",), categories=("semantics", "storage"), expect=writes({1: 6}, 2, 1))
    yield case("storage/SSTORE/three_writes_one_slot",
               "An empty slot is set to 5, cleared, and set to 7: two new slots are charged.",
               push_all([4, 5]) + "sstore\n" + push_all([4, 0]) + "sstore\n" + push_all([4, 7]) + "sstore\n"
               + "push 4\nsload\n" + returning(1), opcodes=("SSTORE", "SLOAD"), categories=("semantics", "storage"),
               expect=writes({4: 7}, 3, 2, output=words(7), reads=1))
    # 6.11: a callee that faults or is exhausted loses its writes; the caller goes on.
    for name, tail, limit in (("trap", "trap\n", 100000), ("exhausted", "push 1\npush 2\nsstore\nstop\n", 430)):
        callee = "push 7\npush 70\nsstore\n" + tail
        yield case(f"call/CALL/callee_{name}_writes_undone",
                   f"A callee writes a slot, then ends {name}: its write is undone, the caller's survives.",
                   push_all([8, 80]) + "sstore\n" + push_all([OTHER, limit, 0, 0]) + "call\n" + returning(1),
                   contracts={OTHER: callee}, opcodes=("CALL", "SSTORE"), categories=("call", "storage"),
                   expect=Expect(outcome="success", calls=(ENDS[name],), output=words(0),
                                 storage={ENTRY: {8: 80}, OTHER: {7: 0}}, usage=WRITES_COUNTED[name]))
    callee = "push 7\npush 70\nsstore\npush 1\npush 2\nsstore\nstop\n"
    yield case("call/CALL/callee_exhausted_after_a_write_writes_undone",
               "A callee writes a slot, then runs out of compute at its second write: its write is undone, "
               "the caller's survives.",
               push_all([8, 80]) + "sstore\n" + push_all([OTHER, EXHAUSTED_AT_SECOND_SSTORE, 0, 0]) + "call\n"
               + returning(1), contracts={OTHER: callee}, opcodes=("CALL", "SSTORE"), categories=("call", "storage"),
               expect=Expect(outcome="success", calls=(EXCEEDED["compute"],), output=words(0),
                             storage={ENTRY: {8: 80}, OTHER: {7: 0}}, usage={"storage_writes": 2}))
    yield case("call/CALL/entry_underflow_after_a_call_outputs_nothing",
               "The entry frame receives 8 bytes of return data, then ADD underflows: the result's output is empty.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\nadd\nstop\n",
               contracts={OTHER: "push 0\npush 0x5151\nmstore\npush 0\npush 8\nreturn\n"},
               opcodes=("CALL", "ADD"), categories=("call", "result"), sections=("7.1", "7.5"),
               expect=Expect(outcome="STACK_UNDERFLOW", calls=("success",), output=b""))
    # 6.11: after a failed call the return data is empty, whatever an earlier call returned.
    talker = "push 0\npush 0x5151\nmstore\npush 0\npush 8\nreturn\n"
    for name, failing in (("trap", "trap\n"), ("exhausted", "push 1\npush 1\npush 1\npush 1\nstop\n")):
        yield case(f"call/CALL/return_data_cleared_by_{name}",
                   f"A call that returns 8 bytes, then one that ends {name}: RETURNDATASIZE is 0 again.",
                   push_all([OTHER, 1000, 0, 0]) + "call\n" + push_all([THIRD, 2, 0, 0]) + "call\n"
                   + "returndatasize\n" + returning(3), contracts={OTHER: talker, THIRD: failing},
                   opcodes=("CALL", "RETURNDATASIZE"), categories=("call",))
    # 6.6: MSTORE8 stores value mod 256 only.
    for value in (0x1200, 0xFF00, 0x0100_0000_0000_0100):
        yield case(f"memory/MSTORE8/low_byte_zero_{value:#x}",
                   f"MSTORE8 of {value:#x}: its low byte 0 is stored, nothing else.",
                   f"push 1\npush 0xEE\nmstore8\npush 1\npush {value}\nmstore8\npush 0\npush 8\nreturn\n",
                   opcodes=("MSTORE8",), categories=("semantics", "edge"))
    # 2.2: a pre-state slot holding 1 is a slot like any other.
    yield case("storage/SLOAD/pre_state_value_one", "SLOAD of a pre-state slot holding 1, and of one holding 2.",
               "push 5\nsload\npush 6\nsload\n" + returning(2), storage={5: 1, 6: 2}, opcodes=("SLOAD",),
               categories=("semantics", "storage"))
    # 6.11, 8.4: undoing a reverted frame restores a slot's earlier pending value, not the pre-state.
    self_call = ("calldatasize\njumpi inner\n" + push_all([1, 5]) + "sstore\n"
                 + push_all([0x100, 100000, 0, 1]) + "call\npop\npush 1\nsload\n" + returning(1)
                 + "inner:\n" + push_all([1, 6]) + "sstore\npush 0\npush 0\nrevert\n")
    yield case("call/CALL/revert_restores_pending_write",
               "A contract sets slot 1 to 5, calls itself to set it to 6 and revert: the slot is 5 again.",
               self_call, storage={1: 9}, opcodes=("CALL", "SSTORE", "REVERT"), categories=("call", "storage"),
               expect=Expect(outcome="success", calls=("reverted",), output=words(5), storage={ENTRY: {1: 5}}))
    # 5.2.3: when a segment's compute does not fit, each instruction is checked on its own, near
    # the top of the stack too (the stack checks of the stepping path).
    near_top = fill_stack(STACK_DEPTH - 3) + "push1 1\nadd\npush1 2\nadd\npush1 3\nmul\npush1 9\npop\nstop\n"
    used = run_reference(input_of(case("x", "x", near_top)), BASE).usage.compute
    yield case("arithmetic/ADD/stepped_near_the_top_of_the_stack",
               f"Binary instructions on a stack {STACK_DEPTH - 3} deep in a segment whose compute does not fit: "
               "each is checked on its own and runs; the final POP is exhausted.",
               near_top, limits={"compute": used - 1}, opcodes=("ADD", "MUL"), categories=("limits", "segment"))
