"""The committed corpus's expectations checked against hand computations from the spec, so that
a filler bug cannot write wrong expectations unnoticed and a wrong number in the data files is
caught too: every number below is written by hand (PINNED: the instruction table as chapter 6
lists it; SCHEDULE; the machine limits), never read from spec/data or computed by reference_vm.

- one vector per opcode (its generic ``happy`` vector): status, output, usage in every
  dimension and fee, from the base costs of the instructions it runs and the cost rules of
  chapter 5 worked out by hand for its operands;
- one vector per outcome code: status, error_pc, usage and fee;
- the trace fields pc, op, cost, memSize and depth of two traced vectors, step by step.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import spec
from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.protocol import execute_request, hello_request

# mnemonic: (opcode, immediate size, inputs, outputs, base cost) -- chapter 6, by hand.
PINNED = {
    "STOP": (0x00, 0, 0, 0, 0),
    "NOP": (0x01, 0, 0, 0, 1),
    "JUMP": (0x02, 4, 0, 0, 2),
    "JUMPI": (0x03, 4, 1, 0, 3),
    "CALLSUB": (0x04, 4, 0, 0, 4),
    "RETSUB": (0x05, 0, 0, 0, 3),
    "RETURN": (0x06, 0, 2, 0, 1),
    "REVERT": (0x07, 0, 2, 0, 1),
    "TRAP": (0x08, 0, 0, 0, 0),
    "PUSH1": (0x10, 1, 0, 1, 1),
    "PUSH2": (0x11, 2, 0, 1, 1),
    "PUSH4": (0x12, 4, 0, 1, 1),
    "PUSH8": (0x13, 8, 0, 1, 1),
    "POP": (0x14, 0, 1, 0, 1),
    "DUP1": (0x20, 0, 1, 2, 1),
    "DUP2": (0x21, 0, 2, 3, 1),
    "DUP3": (0x22, 0, 3, 4, 1),
    "DUP4": (0x23, 0, 4, 5, 1),
    "DUP5": (0x24, 0, 5, 6, 1),
    "DUP6": (0x25, 0, 6, 7, 1),
    "DUP7": (0x26, 0, 7, 8, 1),
    "DUP8": (0x27, 0, 8, 9, 1),
    "DUP9": (0x28, 0, 9, 10, 1),
    "DUP10": (0x29, 0, 10, 11, 1),
    "DUP11": (0x2A, 0, 11, 12, 1),
    "DUP12": (0x2B, 0, 12, 13, 1),
    "DUP13": (0x2C, 0, 13, 14, 1),
    "DUP14": (0x2D, 0, 14, 15, 1),
    "DUP15": (0x2E, 0, 15, 16, 1),
    "DUP16": (0x2F, 0, 16, 17, 1),
    "SWAP1": (0x30, 0, 2, 2, 1),
    "SWAP2": (0x31, 0, 3, 3, 1),
    "SWAP3": (0x32, 0, 4, 4, 1),
    "SWAP4": (0x33, 0, 5, 5, 1),
    "SWAP5": (0x34, 0, 6, 6, 1),
    "SWAP6": (0x35, 0, 7, 7, 1),
    "SWAP7": (0x36, 0, 8, 8, 1),
    "SWAP8": (0x37, 0, 9, 9, 1),
    "SWAP9": (0x38, 0, 10, 10, 1),
    "SWAP10": (0x39, 0, 11, 11, 1),
    "SWAP11": (0x3A, 0, 12, 12, 1),
    "SWAP12": (0x3B, 0, 13, 13, 1),
    "SWAP13": (0x3C, 0, 14, 14, 1),
    "SWAP14": (0x3D, 0, 15, 15, 1),
    "SWAP15": (0x3E, 0, 16, 16, 1),
    "SWAP16": (0x3F, 0, 17, 17, 1),
    "ADD": (0x40, 0, 2, 1, 1),
    "SUB": (0x41, 0, 2, 1, 1),
    "MUL": (0x42, 0, 2, 1, 3),
    "DIVU": (0x43, 0, 2, 1, 5),
    "DIVS": (0x44, 0, 2, 1, 5),
    "REMU": (0x45, 0, 2, 1, 5),
    "REMS": (0x46, 0, 2, 1, 5),
    "EQ": (0x50, 0, 2, 1, 1),
    "ISZERO": (0x51, 0, 1, 1, 1),
    "LTU": (0x52, 0, 2, 1, 1),
    "LTS": (0x53, 0, 2, 1, 1),
    "GTU": (0x54, 0, 2, 1, 1),
    "GTS": (0x55, 0, 2, 1, 1),
    "AND": (0x60, 0, 2, 1, 1),
    "OR": (0x61, 0, 2, 1, 1),
    "XOR": (0x62, 0, 2, 1, 1),
    "NOT": (0x63, 0, 1, 1, 1),
    "SHL": (0x64, 0, 2, 1, 1),
    "SHRU": (0x65, 0, 2, 1, 1),
    "SHRS": (0x66, 0, 2, 1, 1),
    "ROTL": (0x67, 0, 2, 1, 1),
    "ROTR": (0x68, 0, 2, 1, 1),
    "MLOAD": (0x70, 0, 1, 1, 3),
    "MSTORE": (0x71, 0, 2, 0, 3),
    "MLOAD8": (0x72, 0, 1, 1, 3),
    "MSTORE8": (0x73, 0, 2, 0, 3),
    "MSIZE": (0x74, 0, 0, 1, 1),
    "MCOPY": (0x75, 0, 3, 0, 3),
    "SLOAD": (0x80, 0, 1, 1, 50),
    "SSTORE": (0x81, 0, 2, 0, 100),
    "CALLER": (0x90, 0, 0, 1, 1),
    "SELF": (0x91, 0, 0, 1, 1),
    "CALLDATASIZE": (0x92, 0, 0, 1, 1),
    "CALLDATALOAD": (0x93, 0, 1, 1, 2),
    "CALLDATACOPY": (0x94, 0, 3, 0, 3),
    "COMPUTELEFT": (0x95, 0, 0, 1, 1),
    "DATASIZE": (0x96, 0, 0, 1, 1),
    "DATACOPY": (0x97, 0, 3, 0, 3),
    "RETURNDATASIZE": (0x98, 0, 0, 1, 1),
    "RETURNDATACOPY": (0x99, 0, 3, 0, 3),
    "SHA256": (0xA0, 0, 3, 0, 30),
    "LOG0": (0xB0, 0, 2, 0, 20),
    "LOG1": (0xB1, 0, 3, 0, 30),
    "LOG2": (0xB2, 0, 4, 0, 40),
    "LOG3": (0xB3, 0, 5, 0, 50),
    "LOG4": (0xB4, 0, 6, 0, 60),
    "CALL": (0xC0, 0, 4, 1, 100),
    "TIME": (0xD0, 0, 0, 1, 2),
    "RANDOM": (0xD1, 0, 0, 1, 10),
}
INSTRUCTION_COUNT = 95
OUTCOME_CODES = {  # code: status (its kind), chapter 7
    "CONTAINER_TRUNCATED": "invalid", "BAD_MAGIC": "invalid", "UNSUPPORTED_VERSION": "invalid",
    "RESERVED_FLAGS_SET": "invalid", "CONTAINER_SIZE_MISMATCH": "invalid", "CODE_TOO_LARGE": "invalid",
    "DATA_TOO_LARGE": "invalid", "UNDEFINED_OPCODE": "invalid", "TRUNCATED_IMMEDIATE": "invalid",
    "INVALID_JUMP_TARGET": "invalid", "CODE_NOT_TERMINATED": "invalid",
    "INSTRUCTION_FORBIDDEN": "violation", "TIME_ACCESS_FORBIDDEN": "violation",
    "RANDOMNESS_FORBIDDEN": "violation", "EXTERNAL_CALL_FORBIDDEN": "violation",
    "STORAGE_READ_FORBIDDEN": "violation", "STORAGE_WRITE_FORBIDDEN": "violation",
    "STACK_UNDERFLOW": "fault", "STACK_OVERFLOW": "fault", "RETURN_STACK_UNDERFLOW": "fault",
    "RETURN_STACK_OVERFLOW": "fault", "TRAP_EXECUTED": "fault", "CALL_DEPTH_EXCEEDED": "fault",
    "CONTRACT_NOT_FOUND": "rejected", "INVALID_LIMITS": "rejected", "INVALID_REQUEST": "rejected",
    "COMPUTE_LIMIT_EXCEEDED": "exhausted", "MEMORY_LIMIT_EXCEEDED": "exhausted",
    "STORAGE_LIMIT_EXCEEDED": "exhausted", "INTERNAL_ERROR": "internal",
}
PAGE_SIZE, PAGE_COST = 4096, 32
COPY_WORD, COPY_COST = 8, 1
HASH_BLOCK, HASH_COST = 64, 6
NEW_SLOT_COST, READ_UNITS, WRITE_UNITS, NEW_SLOT_UNITS = 400, 1, 4, 16
COMPUTE_PRICE, PAGE_PRICE, UNIT_PRICE = 1, 100, 50
STACK_DEPTH, RETURN_STACK_DEPTH, CALL_DEPTH = 1024, 1024, 64
HEADER = 16  # magic 4, version 2, flags 2, code size 4, data size 4 (chapter 3)

VECTORS = {v["id"]: v for v in store.load(corpus_dir("1.0"))}
BY_OPCODE = {op: m for m, (op, *_) in PINNED.items()}


def cost(*mnemonics: str) -> int:
    return sum(PINNED[m][4] for m in mnemonics)


def fee(compute: int, pages: int = 0, units: int = 0) -> int:
    return compute * COMPUTE_PRICE + pages * PAGE_PRICE + units * UNIT_PRICE


def decode(container_hex: str) -> list[tuple[int, str, int]]:
    """(offset, mnemonic, immediate) of every instruction of a container's code section."""
    blob = bytes.fromhex(container_hex[2:])
    code = blob[HEADER:HEADER + int.from_bytes(blob[8:12], "little")]
    out, pc = [], 0
    while pc < len(code):
        mnemonic = BY_OPCODE[code[pc]]
        size = PINNED[mnemonic][1]
        out.append((pc, mnemonic, int.from_bytes(code[pc + 1:pc + 1 + size], "little")))
        pc += 1 + size
    return out


def entry_code(vector) -> list[tuple[int, str, int]]:
    inp = vector["input"]
    return decode(inp["pre_state"]["contracts"][inp["message"]["to"]]["code"])


def test_the_data_files_hold_the_pinned_numbers():
    table = spec.load("1.0")
    assert len(table.instructions) == INSTRUCTION_COUNT
    assert {i.mnemonic: (i.opcode, i.immediate_size, i.inputs, i.outputs, i.cost) for i in table.instructions} == PINNED
    assert {e.code: e.kind for e in table.errors.values()} == OUTCOME_CODES
    s = table.schedule
    assert (s["memory"]["page_size"], s["memory"]["page_cost"]) == (PAGE_SIZE, PAGE_COST)
    assert (s["copy"]["word_size"], s["copy"]["word_cost"]) == (COPY_WORD, COPY_COST)
    assert (s["hash"]["block_size"], s["hash"]["block_cost"]) == (HASH_BLOCK, HASH_COST)
    assert (s["storage"]["new_slot_cost"], s["storage"]["read_units"], s["storage"]["write_units"],
            s["storage"]["new_slot_units"]) == (NEW_SLOT_COST, READ_UNITS, WRITE_UNITS, NEW_SLOT_UNITS)
    assert (s["fee"]["compute_price"], s["fee"]["memory_page_price"], s["fee"]["storage_unit_price"]) == \
        (COMPUTE_PRICE, PAGE_PRICE, UNIT_PRICE)
    m = table.limits["machine"]
    assert (m["stack_depth"], m["return_stack_depth"], m["call_depth"]) == (STACK_DEPTH, RETURN_STACK_DEPTH, CALL_DEPTH)


# The dynamic part of each happy vector, by hand from chapter 5 for the operands the generic
# definitions give it: (extra compute, memory pages, storage units, reads, writes, new slots).
ONE_PAGE = (PAGE_COST, 1, 0, 0, 0, 0)
COPY_8 = (PAGE_COST + COPY_COST, 1, 0, 0, 0, 0)       # a copy of 8 bytes to offset 0
DYNAMIC = {
    "RETURN": ONE_PAGE, "REVERT": ONE_PAGE, "MLOAD": ONE_PAGE, "MSTORE": ONE_PAGE, "MLOAD8": ONE_PAGE,
    "MSTORE8": ONE_PAGE, "MCOPY": COPY_8, "CALLDATACOPY": COPY_8, "DATACOPY": COPY_8,
    "RETURNDATACOPY": COPY_8, **{f"LOG{n}": COPY_8 for n in range(5)},
    "SHA256": (PAGE_COST + HASH_COST, 1, 0, 0, 0, 0),   # 8 bytes hashed (1 block), 32 written at 0
    "SLOAD": (0, 0, READ_UNITS, 1, 0, 0),
    "SSTORE": (NEW_SLOT_COST, 0, WRITE_UNITS + NEW_SLOT_UNITS, 0, 1, 1),  # slot 1 from 0 to 1
    "CALL": (cost("PUSH1", "STOP"), 0, 0, 0, 0, 0),     # the callee runs push 1, stop
}


@pytest.mark.parametrize("mnemonic", list(PINNED))
def test_happy_vector_of_every_opcode_matches_the_hand_computation(mnemonic):
    (vector,) = [v for i, v in VECTORS.items() if i.endswith(f"/{mnemonic}/happy")]
    result = vector["expected"]["result"]
    executed = [m for _, m, _ in entry_code(vector)]
    assert mnemonic in executed
    extra, pages, units, reads, writes, new = DYNAMIC.get(mnemonic, (0, 0, 0, 0, 0, 0))
    compute = cost(*executed) + extra
    expected_status = {"TRAP": "fault", "REVERT": "reverted"}.get(mnemonic, "success")
    assert result["status"] == expected_status
    assert result["error"] == ("TRAP_EXECUTED" if mnemonic == "TRAP" else None)
    assert result["usage"] == {"compute": compute, "memory_pages": pages, "storage_units": units,
                               "storage_reads": reads, "storage_writes": writes, "storage_new_slots": new}
    assert result["fee"] == fee(compute, pages, units)
    assert result["output"] == ("0x" + "00" * 8 if mnemonic in ("RETURN", "REVERT") else "0x")
    assert len(result["events"]) == (1 if mnemonic.startswith("LOG") else 0)
    if mnemonic.startswith("LOG"):
        n = int(mnemonic[3:])
        assert result["events"][0] == {"address": "0x100", "topics": ["0x1"] * n, "data": "0x" + "00" * 8}
    assert result["state_changes"] == ([{"address": "0x100", "key": "0x1", "before": "0x0", "after": "0x1"}]
                                       if mnemonic == "SSTORE" else [])
    assert len(result["calls"]) == (1 if mnemonic == "CALL" else 0)


def zero_usage():
    return {"compute": 0, "memory_pages": 0, "storage_units": 0, "storage_reads": 0, "storage_writes": 0,
            "storage_new_slots": 0}


BEFORE_EXECUTION = {  # code: a vector decided before anything runs
    "CONTAINER_TRUNCATED": "validation/CONTAINER_TRUNCATED/0_bytes", "BAD_MAGIC": "validation/BAD_MAGIC/lower_case",
    "UNSUPPORTED_VERSION": "validation/UNSUPPORTED_VERSION/v0_0",
    "RESERVED_FLAGS_SET": "validation/RESERVED_FLAGS_SET/high_bit",
    "CONTAINER_SIZE_MISMATCH": "validation/CONTAINER_SIZE_MISMATCH/code_size_too_big",
    "CODE_TOO_LARGE": "validation/code_size/limit+1", "DATA_TOO_LARGE": "validation/data_size/limit+1",
    "UNDEFINED_OPCODE": "request/order/invalid_code_before_policy",
    "TRUNCATED_IMMEDIATE": "validation/TRUNCATED_IMMEDIATE/CALLSUB_missing_4",
    "INVALID_JUMP_TARGET": "validation/order/jump_target_before_termination",
    "CODE_NOT_TERMINATED": "validation/CODE_NOT_TERMINATED/empty",
    "INSTRUCTION_FORBIDDEN": "control/STOP/forbidden_by_name",
    "TIME_ACCESS_FORBIDDEN": "policy/TIME/allowed_by_type_gate_still_closed",
    "RANDOMNESS_FORBIDDEN": "policy/RANDOM/gate_closed", "EXTERNAL_CALL_FORBIDDEN": "policy/CALL/gate_closed",
    "STORAGE_READ_FORBIDDEN": "policy/SLOAD/gate_closed", "STORAGE_WRITE_FORBIDDEN": "policy/SSTORE/gate_closed",
    "CONTRACT_NOT_FOUND": "request/CONTRACT_NOT_FOUND/empty_state",
    "INVALID_LIMITS": "request/compute.minimum/limit-1", "INVALID_REQUEST": "request/INVALID_REQUEST/seed_31_bytes",
}


@pytest.mark.parametrize("code", sorted(BEFORE_EXECUTION))
def test_a_code_decided_before_execution_has_the_empty_result(code):
    result = VECTORS[BEFORE_EXECUTION[code]]["expected"]["result"]
    assert result == {"status": OUTCOME_CODES[code], "error": code, "error_pc": None, "output": "0x",
                      "state_changes": [], "events": [], "calls": [], "usage": zero_usage(), "fee": 0}


def _loop_fill(height: int) -> tuple[int, int]:
    """(compute, code bytes) of definitions.common.fill_stack(height) for a height above 32:
    push the turn count (push1), then per turn eight push1 0 / swap1 and the counter's
    push1 1, sub, dup1, jumpi; then the remaining push1 0."""
    turns, rest = divmod(height - 1, 8)
    assert turns < 256
    turn = 8 * cost("PUSH1", "SWAP1") + cost("PUSH1", "SUB", "DUP1", "JUMPI")
    size = 2 + 8 * (2 + 1) + 2 + 1 + 1 + (1 + 4) + 2 * rest
    return cost("PUSH1") + turns * turn + rest * cost("PUSH1"), size


def runtime_cases():
    """code: (vector, status, error_pc, usage, fee), all by hand."""
    u = zero_usage
    fill_compute, fill_size = _loop_fill(STACK_DEPTH)   # PUSH1 on a full stack: growth 1
    three_reads = 3 * cost("PUSH1") + 3 * cost("SLOAD")  # the third SLOAD's base cost is charged
    return {
        "STACK_UNDERFLOW": ("arithmetic/ADD/stack_underflow", 2, {**u(), "compute": cost("PUSH1")}),
        "STACK_OVERFLOW": ("stack/PUSH1/stack_depth_limit+1", fill_size, {**u(), "compute": fill_compute}),
        "RETURN_STACK_UNDERFLOW": ("validation/CODE_NOT_TERMINATED/ends_with_RETSUB_is_valid", 0,
                                   {**u(), "compute": cost("RETSUB")}),
        "TRAP_EXECUTED": ("control/TRAP/alone", 0, {**u(), "compute": cost("TRAP")}),
        "COMPUTE_LIMIT_EXCEEDED": ("arithmetic/ADD/compute_limit+1", 4, {**u(), "compute": 2 * cost("PUSH1")}),
        "MEMORY_LIMIT_EXCEEDED": ("memory/MLOAD/memory_limit+1", 3, {**u(), "compute": cost("PUSH2", "MLOAD")}),
        "STORAGE_LIMIT_EXCEEDED": ("storage/SLOAD/storage_units_three_reads_limit+1", 2 + 1 + 2 + 1 + 2,
                                   {**u(), "compute": three_reads, "storage_reads": 2, "storage_units": 2 * READ_UNITS}),
    }


@pytest.mark.parametrize("code", sorted(runtime_cases()))
def test_a_runtime_code_has_the_hand_computed_usage(code):
    vid, error_pc, usage = runtime_cases()[code]
    result = VECTORS[vid]["expected"]["result"]
    assert (result["status"], result["error"], result["error_pc"]) == (OUTCOME_CODES[code], code, error_pc)
    assert result["usage"] == usage
    assert result["fee"] == fee(usage["compute"], usage["memory_pages"], usage["storage_units"])
    assert result["output"] == "0x" and result["state_changes"] == [] and result["events"] == []


def test_return_stack_overflow_and_call_depth_by_hand():
    # CALLSUB nested one deeper than the return stack holds: the last CALLSUB faults after its
    # base cost is charged (chapter 5.2.3).
    result = VECTORS["control/CALLSUB/return_stack_limit+1"]["expected"]["result"]
    assert (result["status"], result["error"]) == ("fault", "RETURN_STACK_OVERFLOW")
    # push2 1025; callsub L; stop; L: push1 1; sub; dup1; jumpi M; stop; M: callsub L; retsub.
    # CALLSUB 1 enters L with 1025; each pass through L subtracts 1 and calls again while the
    # counter is not 0, so passes 1..1024 (counter 1024..1) make CALLSUBs 2..1025, and the
    # 1025th faults once charged: the return stack holds RETURN_STACK_DEPTH = 1024 entries.
    assert [m for _, m, _ in entry_code(VECTORS["control/CALLSUB/return_stack_limit+1"])] == [
        "PUSH2", "CALLSUB", "STOP", "PUSH1", "SUB", "DUP1", "JUMPI", "STOP", "CALLSUB", "RETSUB"]
    compute = cost("PUSH2", "CALLSUB") + RETURN_STACK_DEPTH * cost("PUSH1", "SUB", "DUP1", "JUMPI", "CALLSUB")
    assert result["usage"]["compute"] == compute and result["fee"] == fee(compute)
    # CALL_DEPTH_EXCEEDED is only ever a call record's status, at depth CALL_DEPTH + 1.
    records = [c for v in VECTORS.values() for c in v["expected"]["result"]["calls"]
               if c["error"] == "CALL_DEPTH_EXCEEDED"]
    assert records and all(c["depth"] == CALL_DEPTH + 1 and c["status"] == "fault" and c["compute"] == 0
                           for c in records)


def traced(vector_id):
    text = "".join(json.dumps(m) + "\n" for m in (hello_request("1.0"),
                                                   execute_request(vector_id, VECTORS[vector_id]["input"], True)))
    proc = subprocess.run([sys.executable, "-m", "conformance.adapter"], input=text, capture_output=True,
                          text=True, timeout=60)
    return json.loads(proc.stdout.splitlines()[1])["trace"]


def test_trace_fields_of_a_straight_line_vector_by_hand():
    # arithmetic/ADD/one__one: push 1, push 1, add, then returning(1): push 0, swap1, mstore,
    # push 0, push 8, return.
    steps = traced("arithmetic/ADD/one__one")
    program = [("PUSH1", 0), ("PUSH1", 2), ("ADD", 4), ("PUSH1", 5), ("SWAP1", 7), ("MSTORE", 8),
               ("PUSH1", 9), ("PUSH1", 11), ("RETURN", 13)]
    assert len(steps) == len(program) + 1
    used = 0
    for (mnemonic, pc), step in zip(program, steps):
        assert (step["pc"], step["op"], step["opName"], step["cost"], step["depth"]) == \
               (pc, PINNED[mnemonic][0], mnemonic, PINNED[mnemonic][4], 1)
        assert step["computeUsed"] == used
        assert step["memSize"] == (PAGE_SIZE if pc > 8 else 0)   # MSTORE at 8 grows one page
        used += PINNED[mnemonic][4] + (PAGE_COST if mnemonic == "MSTORE" else 0)
    assert steps[-1] == {"status": "success", "error": None, "output": "0x0200000000000000", "computeUsed": used}


def test_trace_fields_of_a_call_by_hand():
    # call/CALL/happy: push 0x101 (push2), push 1000 (push2), push 0, push 0, call, stop; the
    # callee runs push 1, stop at depth 2 with a fresh memory.
    steps = traced("call/CALL/happy")
    shape = [(s["pc"], s["opName"], s["depth"], s["memSize"], s["cost"]) for s in steps[:-1]]
    assert shape == [(0, "PUSH2", 1, 0, cost("PUSH2")), (3, "PUSH2", 1, 0, cost("PUSH2")),
                     (6, "PUSH1", 1, 0, cost("PUSH1")), (8, "PUSH1", 1, 0, cost("PUSH1")),
                     (10, "CALL", 1, 0, cost("CALL")), (0, "PUSH1", 2, 0, cost("PUSH1")),
                     (2, "STOP", 2, 0, cost("STOP")), (11, "STOP", 1, 0, cost("STOP"))]
    assert steps[5]["stack"] == [] and steps[6]["stack"] == ["0x1"] and steps[7]["stack"] == ["0x1"]
    assert steps[-1]["computeUsed"] == cost("PUSH2", "PUSH2", "PUSH1", "PUSH1", "CALL", "PUSH1")
