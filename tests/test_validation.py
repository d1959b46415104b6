"""Container and code validation, policy binding and request checks: each error code, in the
order the spec fixes, with nothing executed or charged."""

from __future__ import annotations

import pytest

import spec
from conftest import BASE_VERSION
from reference_vm import Context, Contract, Limits, Message, Policy, WorldState
from reference_vm import execute as execute_any
from reference_vm.container import build as build_any

V = BASE_VERSION
TABLE = spec.load(V)
OP = {i.mnemonic: i.opcode for i in TABLE.instructions}
STOP = bytes([OP["STOP"]])
MACHINE = TABLE.limits["machine"]


def build(code: bytes, data: bytes = b"") -> bytes:
    return build_any(code, data, TABLE.number)


def execute(*args, **kw):
    return execute_any(*args, version=V, **kw)


def run_blob(blob: bytes, **kw):
    return execute(WorldState({0x100: Contract(blob)}), Message(0x100, 1), **kw)


def header(code_size: int, data_size: int, *, magic=b"RTWO", version=(1, 0), flags=b"\0\0"):
    return (magic + bytes(version) + flags + code_size.to_bytes(4, "little")
            + data_size.to_bytes(4, "little"))


@pytest.mark.parametrize("blob, code", [
    (b"", "CONTAINER_TRUNCATED"),
    (b"RTWO\x01\x00\x00\x00\x01\x00\x00", "CONTAINER_TRUNCATED"),
    (header(1, 0, magic=b"RTW0") + STOP, "BAD_MAGIC"),
    (header(1, 0, version=(2, 0)) + STOP, "UNSUPPORTED_VERSION"),
    (header(1, 0, version=(1, 1)) + STOP, "UNSUPPORTED_VERSION"),
    (header(1, 0, flags=b"\x01\x00") + STOP, "RESERVED_FLAGS_SET"),
    (header(2, 0) + STOP, "CONTAINER_SIZE_MISMATCH"),
    (header(1, 0) + STOP + b"\0", "CONTAINER_SIZE_MISMATCH"),
    (header(MACHINE["code_size"] + 1, 0) + STOP * (MACHINE["code_size"] + 1), "CODE_TOO_LARGE"),
    (header(1, MACHINE["data_size"] + 1) + STOP + bytes(MACHINE["data_size"] + 1), "DATA_TOO_LARGE"),
    (build(b""), "CODE_NOT_TERMINATED"),
    (build(bytes([0xFF])), "UNDEFINED_OPCODE"),
    (build(bytes([OP["PUSH8"], 1, 2, 3])), "TRUNCATED_IMMEDIATE"),
    (build(bytes([OP["JUMP"], 1, 0, 0])), "TRUNCATED_IMMEDIATE"),
    (build(bytes([OP["JUMP"], 2, 0, 0, 0]) + STOP), "INVALID_JUMP_TARGET"),
    (build(bytes([OP["PUSH1"], 0, OP["JUMPI"], 1, 0, 0, 0]) + STOP), "INVALID_JUMP_TARGET"),
    (build(bytes([OP["CALLSUB"], 0x10, 0, 0, 0]) + STOP), "INVALID_JUMP_TARGET"),
    (build(bytes([OP["NOP"]])), "CODE_NOT_TERMINATED"),
    (build(bytes([OP["PUSH1"], 0, OP["JUMPI"], 0, 0, 0, 0])), "CODE_NOT_TERMINATED"),
    (build(bytes([OP["CALLSUB"], 0, 0, 0, 0])), "CODE_NOT_TERMINATED"),
])
def test_invalid_code_is_rejected_before_execution(blob, code):
    result = run_blob(blob)
    assert (result.status, result.error, result.error_pc) == ("invalid", code, None)
    assert result.usage.compute == 0 and result.fee == 0


def test_the_size_limits_themselves_are_allowed():
    code = bytes([OP["NOP"]]) * (MACHINE["code_size"] - 1) + STOP
    result = run_blob(build(code, bytes(MACHINE["data_size"])))
    assert result.status == "success"
    assert result.usage.compute == (MACHINE["code_size"] - 1) * TABLE.by_mnemonic["NOP"].cost


def test_first_error_in_offset_order_wins():
    # An undefined opcode after a bad jump target: decoding runs first, so UNDEFINED_OPCODE.
    blob = build(bytes([OP["JUMP"], 9, 0, 0, 0, 0xFF]) + STOP)
    assert run_blob(blob).error == "UNDEFINED_OPCODE"
    # Two bad jumps: the error names the first.
    blob = build(bytes([OP["JUMP"], 9, 0, 0, 0, OP["JUMP"], 1, 0, 0, 0]))
    assert run_blob(blob).error == "INVALID_JUMP_TARGET"


def test_jump_to_the_middle_of_an_immediate_is_invalid():
    blob = build(bytes([OP["PUSH2"], OP["STOP"], 0, OP["JUMP"], 1, 0, 0, 0]))
    assert run_blob(blob).error == "INVALID_JUMP_TARGET"


@pytest.mark.parametrize("mnemonic, policy, code", [
    ("TIME", Policy(), "TIME_ACCESS_FORBIDDEN"),
    ("RANDOM", Policy(), "RANDOMNESS_FORBIDDEN"),
    ("CALL", Policy(external_call="forbidden"), "EXTERNAL_CALL_FORBIDDEN"),
    ("SLOAD", Policy(storage_access="none"), "STORAGE_READ_FORBIDDEN"),
    ("SSTORE", Policy(storage_access="none"), "STORAGE_WRITE_FORBIDDEN"),
    ("SSTORE", Policy(storage_access="read_only"), "STORAGE_WRITE_FORBIDDEN"),
    ("ADD", Policy(forbidden_operations=("ADD",)), "INSTRUCTION_FORBIDDEN"),
    ("MUL", Policy(forbidden_operations=("arithmetic",)), "INSTRUCTION_FORBIDDEN"),
    ("MUL", Policy(allowed_operations=("control", "stack")), "INSTRUCTION_FORBIDDEN"),
])
def test_policy_refuses_code_holding_a_forbidden_instruction(mnemonic, policy, code):
    # The instruction sits behind a STOP: it would never run, and is refused all the same.
    blob = build(STOP + bytes([OP[mnemonic]]) + bytes(TABLE.by_mnemonic[mnemonic].immediate_size) + STOP)
    result = run_blob(blob, policy=policy)
    assert (result.status, result.error, result.usage.compute) == ("violation", code, 0)


def test_policy_allows_what_it_lists():
    blob = build(bytes([OP["PUSH1"], 2, OP["PUSH1"], 3, OP["MUL"], OP["POP"]]) + STOP)
    assert run_blob(blob, policy=Policy(allowed_operations=("control", "stack", "MUL"))).ok
    assert run_blob(blob, policy=Policy(storage_access="none", external_call="forbidden")).ok


def test_listing_is_checked_before_gates_at_each_instruction():
    blob = build(STOP + bytes([OP["TIME"]]) + STOP)
    result = run_blob(blob, policy=Policy(forbidden_operations=("TIME",)))
    assert result.error == "INSTRUCTION_FORBIDDEN"


@pytest.mark.parametrize("kwargs", [
    {"policy": Policy(time_access="sometimes")},
    {"policy": Policy(forbidden_operations=("FLY",))},
    {"policy": Policy(allowed_operations=["ADD"])},  # type: ignore[arg-type]  # a list, not the tuple asked for
    {"context": Context(block_time=-1)},
    {"context": Context(block_time=2**64)},
    {"context": Context(random_seed=b"short")},
])
def test_malformed_requests_are_rejected(kwargs):
    result = run_blob(build(STOP), **kwargs)
    assert (result.status, result.error) == ("rejected", "INVALID_REQUEST")


def test_message_fields_must_be_words_and_call_data_bounded():
    state = WorldState({0x100: Contract(build(STOP))})
    assert execute(state, Message(2**64, 1)).error == "INVALID_REQUEST"
    assert execute(state, Message(0x100, -1)).error == "INVALID_REQUEST"
    assert execute(state, Message(0x100, 1, "text")).error == "INVALID_REQUEST"
    big = bytes(MACHINE["call_data_size"] + 1)
    assert execute(state, Message(0x100, 1, big)).error == "INVALID_REQUEST"
    assert execute(state, Message(0x100, 1, big[:-1])).ok
    assert execute(state, Message(0x101, 1)).error == "CONTRACT_NOT_FOUND"
    assert execute("not a state", Message(0x100, 1)).error == "INVALID_REQUEST"


@pytest.mark.parametrize("contracts", [
    {0x100: Contract(build(STOP), {1: -1})},
    {0x100: Contract(build(STOP), {2**64: 1})},
    {0x100: Contract("code")},  # type: ignore[arg-type]  # text, not bytes: refused
    {-1: Contract(build(STOP)), 0x100: Contract(build(STOP))},
    {0x100: "not a contract"},
])
def test_malformed_pre_state_is_rejected(contracts):
    result = execute(WorldState(contracts), Message(0x100, 1))
    assert (result.status, result.error) == ("rejected", "INVALID_REQUEST")


@pytest.mark.parametrize("limits", [
    Limits(compute=-1), Limits(memory_pages=-1), Limits(storage_units=-1),
    Limits(compute=TABLE.limits["maximum"]["compute"] + 1),
    Limits(memory_pages="4"),  # type: ignore[arg-type]  # a string: refused
    Limits(compute=1.5),  # type: ignore[arg-type]  # a float: refused
    Limits(storage_units=True),
])
def test_limits_outside_the_spec_range_are_rejected(limits):
    result = run_blob(build(STOP), limits=limits)
    assert (result.status, result.error, result.usage.compute) == ("rejected", "INVALID_LIMITS", 0)


def test_request_errors_come_before_code_errors_which_come_before_limit_errors():
    bad_code = build(b"\xff")
    assert run_blob(bad_code, limits=Limits(compute=-1)).error == "UNDEFINED_OPCODE"
    assert run_blob(bad_code, context=Context(block_time=-1)).error == "INVALID_REQUEST"


def test_a_vm_of_1_1_takes_containers_of_1_0_and_1_1_and_keeps_1_0s_instruction_set():
    """Chapter 3.2.1 from 1.1: a 1.1 container is refused by 1.0 and runs under 1.1; a 1.0
    container under 1.1 has 1.0's instruction set (CLZ, 1.1's, is an undefined opcode there)."""
    new = spec.load("1.1")
    clz = bytes([new.by_mnemonic["CLZ"].opcode])
    code = bytes([OP["PUSH1"], 1]) + clz + bytes([OP["POP"]]) + STOP
    for container, version, want in [
            ((1, 1), "1.0", ("invalid", "UNSUPPORTED_VERSION")), ((1, 1), "1.1", ("success", None)),
            ((1, 0), "1.1", ("invalid", "UNDEFINED_OPCODE")), ((1, 0), "1.0", ("invalid", "UNDEFINED_OPCODE")),
            ((1, 2), "1.1", ("invalid", "UNSUPPORTED_VERSION"))]:
        state = WorldState({0x100: Contract(build_any(code, b"", container))})
        result = execute_any(state, Message(0x100, 1), version=version)
        assert (result.status, result.error) == want, (container, version)
