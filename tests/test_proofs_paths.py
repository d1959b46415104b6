"""Bugs planted for real in the running process (and so in the suite's forked workers) that
the agreement rows of `rtwo-vm prove` must report as `disagrees` (issue 22, item 4): the
interpreter's per-segment fast path ignoring a segment's stack peak, need or base cost,
compiled_vm miscompiling a stack or memory bound, SSTORE of 0 into an empty slot charged as
a new slot, CALL keeping stale return data when the callee cannot run, validation accepting
a jump target equal to the code length, and the MLOAD8/MSTORE8 memory-boundary mutants
`prove --strength` recorded as survivors. And the real code agrees on the same rows.

Expected values here are constants or computed from the spec table by hand, never by the
code under test.
"""

from __future__ import annotations

import importlib

import pytest

import spec
from proofs.runner import AGREES, DISAGREES, Options, run_suite
from planting import plant
from conftest import BASE_VERSION as V

SPEC = spec.load(V)
STACK_DEPTH = SPEC.limits["machine"]["stack_depth"]
execute_module = importlib.import_module("reference_vm.execute")
validate_module = importlib.import_module("reference_vm.validate")


def rows(name: str, opcodes=None, **options):
    found = run_suite(Options(version=V, opcodes=opcodes, names=(name,), jobs=1, solver="z3",
                              samples=0, **options))
    assert found and all(r["theorem"] == name for r in found)
    return found


def branch_row(opcode: str, **options) -> dict:
    (row,) = rows("agreement_branches", (opcode,), **options)
    return row


def differences(row: dict) -> list[str]:
    return [d for f in row["findings"] for d in f["differences"]]


# --- the fast path (Execution.run_segment) ------------------------------------------------

# Each aggregate check of Execution.run_segment, and the condition without it.
AGGREGATE_CHECKS = {
    "need": ("height >= segment.need and ", ""),
    "peak": ("height + segment.peak <= self.stack_depth and ", ""),
    "cost": (" and used <= frame.compute_limit", ""),
}


@pytest.mark.parametrize("check, opcode, where", [
    # ADD cannot overflow alone: only a program around it has a peak above its own.
    ("peak", "ADD", f"stack height {STACK_DEPTH}"),
    # PUSH1 cannot underflow alone: only a program popping first needs an item.
    ("need", "PUSH1", "0 stack items"),
    ("cost", "NOP", "the instruction"),
])
def test_a_fast_path_ignoring_an_aggregate_check_disagrees(monkeypatch, check, opcode, where):
    plant(monkeypatch, execute_module.Execution, "run_segment", *AGGREGATE_CHECKS[check])
    row = branch_row(opcode)
    assert row["status"] == DISAGREES
    found = differences(row)
    assert any(d.startswith("fast path") and where in d for d in found), found
    assert not any(d.startswith(("outcome", "meters", "stack")) for d in found)  # step is fine


# --- compiled_vm --------------------------------------------------------------------------

def test_compiled_code_with_its_stack_bound_one_too_high_disagrees(monkeypatch):
    from compiled_vm import codegen
    emit = codegen.Gen.emit

    def one_too_high(self, line):
        emit(self, line.replace(f" > {STACK_DEPTH}:", f" > {STACK_DEPTH + 1}:"))
    monkeypatch.setattr(codegen.Gen, "emit", one_too_high)
    row = branch_row("ADD")
    assert row["status"] == DISAGREES
    found = differences(row)
    assert any(d.startswith("compiled path") and f"stack height {STACK_DEPTH}" in d
               for d in found), found


def test_compiled_memory_access_one_byte_past_memory_disagrees(monkeypatch):
    """The in-place MLOAD8 of generated code admitting an offset one byte past memory."""
    from compiled_vm import codegen
    emit = codegen.Gen.emit

    def off_by_one(self, line):
        emit(self, line.replace("<= len(frame.memory):", "<= len(frame.memory) + 1:"))
    monkeypatch.setattr(codegen.Gen, "emit", off_by_one)
    row = branch_row("MLOAD8")
    assert row["status"] == DISAGREES
    found = differences(row)
    assert any(d.startswith("compiled path, the instruction: status") for d in found), found


# --- handlers and the call path -----------------------------------------------------------

def sstore_zero_into_empty_is_new(frame, imm):
    """SSTORE charging a write of 0 into an empty slot as a new slot."""
    from reference_vm.accounting import charge, charge_storage
    rules = frame.execution.rules
    stack = frame.stack
    value = stack.pop()
    key = stack.pop()
    journal = frame.execution.journal
    new_slot = journal.load(frame.address, key) == 0
    if new_slot:
        charge(frame, rules.new_slot_cost)
    charge_storage(frame, rules.write_units + (rules.new_slot_units if new_slot else 0))
    frame.meter.storage_writes += 1
    if new_slot:
        frame.meter.storage_new_slots += 1
    journal.store(frame.address, key, value)


def test_sstore_of_zero_into_an_empty_slot_charged_as_new_disagrees():
    row = branch_row("SSTORE", handler_overrides={"SSTORE": sstore_zero_into_empty_is_new})
    assert row["status"] == DISAGREES
    x = row["findings"][0]["inputs"]
    value, key = x["stack"][-1], x["stack"][-2]
    assert value == 0 and key not in x["storage"]


def test_call_keeping_stale_return_data_when_the_callee_cannot_run_disagrees(monkeypatch):
    real = execute_module.Execution.call

    def call(self, caller, address, compute, call_data, read_only=False):
        ok, data = real(self, caller, address, compute, call_data, read_only)
        if self.calls[-1].error == "CONTRACT_NOT_FOUND":
            return ok, caller.return_data
        return ok, data
    monkeypatch.setattr(execute_module.Execution, "call", call)
    row = branch_row("CALL")
    assert row["status"] == DISAGREES
    finding = row["findings"][0]
    assert finding["inputs"]["callee"] == "absent" and finding["inputs"]["return_data"]
    assert any(d.startswith("return data: model (0, ())") for d in finding["differences"])


# --- the recorded strength survivors: MLOAD8 / MSTORE8 at the memory boundary -------------

def _grow(frame, end):
    from reference_vm.accounting import grow_to
    grow_to(frame.execution.rules, frame, end)


def mload8_grows_only_past_size(frame, imm):      # `>=` -> `>`
    stack = frame.stack
    offset = stack[-1]
    if offset > len(frame.memory):
        _grow(frame, offset + 1)
    stack[-1] = frame.memory[offset]


def mload8_grows_to_the_offset(frame, imm):       # `offset + 1` -> `offset + 0`
    stack = frame.stack
    offset = stack[-1]
    if offset >= len(frame.memory):
        _grow(frame, offset)
    stack[-1] = frame.memory[offset]


def mstore8_grows_only_past_size(frame, imm):     # `>=` -> `>`
    stack = frame.stack
    value = stack.pop()
    offset = stack.pop()
    if offset > len(frame.memory):
        _grow(frame, offset + 1)
    frame.memory[offset] = value & 0xFF


@pytest.mark.parametrize("opcode, handler", [
    ("MLOAD8", mload8_grows_only_past_size), ("MLOAD8", mload8_grows_to_the_offset),
    ("MSTORE8", mstore8_grows_only_past_size)])
def test_the_memory_boundary_survivors_disagree(opcode, handler):
    row = branch_row(opcode, handler_overrides={opcode: handler})
    assert row["status"] == DISAGREES
    page = SPEC.schedule["memory"]["page_size"]
    x = row["findings"][0]["inputs"]
    offset = x["stack"][-1] if opcode == "MLOAD8" else x["stack"][-2]
    assert offset == x["memory_pages"] * page          # exactly at the memory's size


# --- validation ---------------------------------------------------------------------------

def test_validation_accepting_a_target_equal_to_the_code_length_disagrees(monkeypatch):
    from reference_vm import container
    from reference_vm.decode import decode
    from reference_vm.errors import InvalidCode

    def validate(blob, rules):
        parsed = container.parse(blob, rules)
        instructions = decode(parsed.code, rules.instruction_set(parsed.version))
        boundaries = {d.offset for d in instructions} | {len(parsed.code)}
        for d in instructions:
            if d.instruction.immediate_kind == "jump_target" and d.immediate not in boundaries:
                raise InvalidCode("INVALID_JUMP_TARGET")
        if not instructions or instructions[-1].instruction.flow not in {"halt", "jump",
                                                                         "return_sub"}:
            raise InvalidCode("CODE_NOT_TERMINATED")
        return validate_module.ValidCode(parsed.code, parsed.data, tuple(instructions),
                                         parsed.version)
    monkeypatch.setattr(validate_module, "validate", validate)
    (row,) = rows("agreement_validate")
    assert row["status"] == DISAGREES
    jump, stop = SPEC.by_mnemonic["JUMP"].opcode, SPEC.by_mnemonic["STOP"].opcode
    to_the_end = bytes([jump]) + (6).to_bytes(4, "little") + bytes([stop])   # 6 bytes long
    assert f"code {to_the_end.hex()}: model False interpreter True" in row["findings"]


# --- the real code ------------------------------------------------------------------------

def test_the_real_code_agrees_on_every_path():
    found = rows("agreement_branches", ("ADD", "PUSH1", "NOP", "MLOAD8", "MSTORE8", "SSTORE",
                                        "CALL"))
    assert {r["opcode"]: r["status"] for r in found} == dict.fromkeys(
        ("ADD", "PUSH1", "NOP", "MLOAD8", "MSTORE8", "SSTORE", "CALL"), AGREES)
    assert [r["status"] for r in rows("agreement_validate")] == [AGREES]


def test_branch_inputs_meet_the_split_cases_and_distinct_state():
    from proofs.branches import branch_inputs
    sstore = {x["branch"]: x for x in branch_inputs("SSTORE", 64, V)}
    empty = sstore["existing or zero [value 0 into an empty slot]"]
    assert empty["stack"][-1] == 0 and empty["stack"][-2] not in empty["storage"]
    set_slot = sstore["existing or zero [value 0 into a set slot]"]
    assert set_slot["stack"][-1] == 0 and set_slot["storage"][set_slot["stack"][-2]] != 0
    page = SPEC.schedule["memory"]["page_size"]
    for x in branch_inputs("MLOAD8", 64, V):
        if x["branch"].endswith("[offset range ends at memory size]"):
            assert x["stack"][-1] == x["memory_pages"] * page - 1
            assert bytes.fromhex(x["memory"])[x["stack"][-1]] != 0   # the byte read
        if x["branch"].endswith("[offset range ends 1 byte past memory size]"):
            assert x["stack"][-1] == x["memory_pages"] * page
    calls = [x for x in branch_inputs("CALL", 64, V) if x["outcome"] == "running"]
    assert {x["callee"] for x in calls} == {"absent", "stop", "revert", "trap"}
    assert all(x["return_data"] and x["caller"] != x["address"] for x in calls)


def test_program_shapes_are_the_spec_tables():
    from proofs import paths
    cost = {m: SPEC.by_mnemonic[m].cost for m in ("PUSH1", "POP", "ADD", "PUSH8")}
    # PUSH1 POP ADD: needs ADD's 2 items, peaks at +1, costs the three base costs
    assert paths.shape([("PUSH1", 1), ("POP", 0), ("ADD", 0)], V) == (
        2, 1, cost["PUSH1"] + cost["POP"] + cost["ADD"])
    # POP PUSH8 PUSH1: needs 1 item, peaks at +1
    assert paths.shape([("POP", 0), ("PUSH8", 5), ("PUSH1", 1)], V) == (
        1, 1, cost["POP"] + cost["PUSH8"] + cost["PUSH1"])
