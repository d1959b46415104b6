"""Environment instructions: CALLER SELF CALLDATASIZE CALLDATALOAD CALLDATACOPY COMPUTELEFT
DATASIZE DATACOPY RETURNDATASIZE RETURNDATACOPY."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import CALLER, ENTRY, returning_top, run_asm, word_out
from opspec import (
    S, PAGE_SIZE, PAGE_COST, COPY_COST, MAX_CALL_DATA, DEFAULT_COMPUTE, M, cost, fee, pages_for,
    copy_words, usage, RET_WARM, RET_COLD, words,
)
from reference_vm import Limits

OTHER = 0xBEEF
OTHER2 = 0xBEEF2


CALL_SEQ = "push8 {addr}\npush8 {compute}\npush8 0\npush8 0\ncall"
CALL_SEQ_COST = 4 * cost("PUSH8") + cost("CALL")
RETURN_TWO = "push1 0\nswap1\nmstore\npush1 8\nswap1\nmstore\npush1 0\npush1 16\nreturn"
RETURN_TWO_COST = cost("PUSH1", "SWAP1", "MSTORE") * 2 + cost("PUSH1", "PUSH1", "RETURN") + PAGE_COST


def call_and_copy_return(addr, n_bytes):
    """Caller code: CALL addr, then return the return data (n_bytes of it) preceded by ok."""
    return (CALL_SEQ.format(addr=addr, compute=M) + "\npush1 0\nswap1\nmstore\n"
            f"push1 8\npush1 0\npush2 {n_bytes}\nreturndatacopy\npush1 0\npush2 {8 + n_bytes}\nreturn")


# ---- CALLER / SELF -------------------------------------------------------------------------

def test_caller_and_self_in_entry_frame():
    result = run_asm("caller\nself\n" + RETURN_TWO)
    assert words(result.output) == [ENTRY, CALLER]
    assert usage(result) == (cost("CALLER", "SELF") + RETURN_TWO_COST, 1, 0, 0, 0, 0)


def test_caller_and_self_in_callee():
    result = run_asm(call_and_copy_return(OTHER, 16), others={OTHER: "caller\nself\n" + RETURN_TWO})
    assert words(result.output) == [1, OTHER, ENTRY]


@pytest.mark.parametrize("op", ["CALLER", "SELF", "CALLDATASIZE", "DATASIZE", "RETURNDATASIZE",
                                "COMPUTELEFT"])
def test_pushers_overflow_full_stack(op):
    depth = S.limits["machine"]["stack_depth"]
    result = run_asm("push1 0\n" * depth + f"{op.lower()}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_OVERFLOW", 2 * depth)


# ---- CALLDATASIZE / CALLDATALOAD -----------------------------------------------------------

@pytest.mark.parametrize("data", [b"", b"\x01", bytes(range(100)), bytes(MAX_CALL_DATA)])
def test_calldatasize(data):
    result = run_asm(returning_top("calldatasize"), call_data=data)
    assert word_out(result) == len(data)
    assert result.usage.compute == cost("CALLDATASIZE") + RET_COLD


CD = bytes(range(1, 21))   # 20 bytes: 01 02 .. 14


@pytest.mark.parametrize("offset,expected", [
    (0, 0x0807_0605_0403_0201),
    (1, 0x0908_0706_0504_0302),
    (12, 0x1413_1211_100F_0E0D),          # exactly the last 8 bytes
    (13, 0x0014_1312_1110_0F0E),          # one byte past the end reads as zero
    (19, 0x14),
    (20, 0), (21, 0), (4096, 0), (2 ** 63, 0), (M, 0), (M - 7, 0),
])
def test_calldataload(offset, expected):
    result = run_asm(returning_top(f"push8 {offset}\ncalldataload"), call_data=CD)
    assert word_out(result) == expected
    compute = cost("PUSH8", "CALLDATALOAD") + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0)     # CALLDATALOAD touches no memory


def test_calldataload_empty_call_data():
    assert word_out(run_asm(returning_top("push1 0\ncalldataload"))) == 0


def test_calldataload_at_max_call_data():
    data = bytes(MAX_CALL_DATA - 4) + b"\xaa\xbb\xcc\xdd"
    result = run_asm(returning_top(f"push4 {MAX_CALL_DATA - 4}\ncalldataload"), call_data=data)
    assert word_out(result) == 0xDDCC_BBAA


# ---- the three copies: CALLDATACOPY, DATACOPY, RETURNDATACOPY ------------------------------
# Each is driven with the same 20-byte source. For RETURNDATACOPY the source is produced by a
# callee returning CD; for DATACOPY by the data section.

CALLEE_RETURNING_CD = (
    f"push1 0\npush8 {int.from_bytes(CD[0:8], 'little')}\nmstore\n"
    f"push1 8\npush8 {int.from_bytes(CD[8:16], 'little')}\nmstore\n"
    f"push1 16\npush4 {int.from_bytes(CD[16:20], 'little')}\nmstore\n"
    "push1 0\npush1 20\nreturn"
)
CALLEE_COST = (3 * cost("PUSH1", "MSTORE") + 2 * cost("PUSH8") + cost("PUSH4") + PAGE_COST
               + cost("PUSH1", "PUSH1", "RETURN"))


def run_copy(op, dst, offset, length, prefill=False, limits=None, tail=None):
    """Run `op dst offset length` against the 20-byte source; return (result, extra compute)."""
    pre, pre_cost, others, call_data, data = "", 0, None, b"", ""
    if op == "returndatacopy":
        pre = CALL_SEQ.format(addr=OTHER, compute=M) + "\npop\n"
        pre_cost = CALL_SEQ_COST + cost("POP") + CALLEE_COST   # the callee's run is charged too
        others = {OTHER: CALLEE_RETURNING_CD}
    elif op == "calldatacopy":
        call_data = CD
    else:
        data = "\n.data\n.hex " + CD.hex()
    if prefill:
        pre += "push1 0\npush8 -1\nmstore\npush1 8\npush8 -1\nmstore\npush1 16\npush8 -1\nmstore\n"
        pre_cost += 3 * cost("PUSH1", "PUSH8", "MSTORE") + PAGE_COST
    tail = "push1 0\npush1 32\nreturn" if tail is None else tail
    src = f"{pre}push8 {dst}\npush8 {offset}\npush8 {length}\n{op}\n{tail}{data}"
    result = run_asm(src, call_data=call_data, others=others, limits=limits)
    return result, pre_cost + 3 * cost("PUSH8") + cost(op)


COPY_OPS = ["calldatacopy", "datacopy", "returndatacopy"]
COPY_CASES = [
    # dst, offset, length
    (0, 0, 20), (0, 0, 8), (3, 5, 4), (0, 16, 8), (0, 19, 1), (0, 20, 8), (0, 4096, 8),
    (0, M, 8), (0, M - 3, 8), (10, 0, 20), (4, 12, 12), (0, 2 ** 63, 1),
]


def expected_memory(dst, offset, length, prefill):
    mem = bytearray(b"\xff" * 24 + bytes(8) if prefill else bytes(32))
    chunk = CD[offset:offset + length] if offset < len(CD) else b""
    chunk = chunk + bytes(length - len(chunk))
    mem[dst:dst + length] = chunk
    return bytes(mem[:32])


@pytest.mark.parametrize("op", COPY_OPS)
@pytest.mark.parametrize("dst,offset,length", COPY_CASES)
@pytest.mark.parametrize("prefill", [False, True])
def test_copy_contents_and_cost(op, dst, offset, length, prefill):
    result, base = run_copy(op, dst, offset, length, prefill)
    assert result.status == "success", result.error
    assert result.output == expected_memory(dst, offset, length, prefill)
    compute = (base + copy_words(length) * COPY_COST + cost("PUSH1", "PUSH1", "RETURN")
               + (0 if prefill else PAGE_COST))
    assert usage(result) == (compute, 1, 0, 0, 0, 0)
    assert result.fee == fee(compute, 1)


def test_calldatacopy_by_hand():
    result, _ = run_copy("calldatacopy", 0, 17, 8, prefill=True)
    assert result.output[:8] == bytes([0x12, 0x13, 0x14, 0, 0, 0, 0, 0])
    assert result.output[8:24] == b"\xff" * 16


@pytest.mark.parametrize("op", COPY_OPS)
@pytest.mark.parametrize("dst,offset", [(0, 0), (M, 0), (M, M), (2 ** 63, 5), (4096, 0)])
def test_copy_zero_length_touches_nothing(op, dst, offset):
    result, base = run_copy(op, dst, offset, 0, tail="msize\npush1 0\nswap1\nmstore\npush1 0\npush1 8\nreturn")
    assert word_out(result) == 0
    compute = base + cost("MSIZE") + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


@pytest.mark.parametrize("op", COPY_OPS)
@pytest.mark.parametrize("dst,length", [(4090, 10), (4096, 1), (8192, 4096), (100, 20000)])
def test_copy_grows_destination(op, dst, length):
    result, base = run_copy(op, dst, 0, length, tail="msize\npush1 0\nswap1\nmstore\npush1 0\npush1 8\nreturn")
    pages = pages_for(dst + length)
    assert word_out(result) == pages * PAGE_SIZE
    compute = base + copy_words(length) * COPY_COST + pages * PAGE_COST + cost("MSIZE") + RET_WARM
    assert usage(result) == (compute, pages, 0, 0, 0, 0)


@pytest.mark.parametrize("op", COPY_OPS)
@pytest.mark.parametrize("dst,length", [(M, 1), (0, M), (4096, 1), (0, 4097)])
def test_copy_memory_limit(op, dst, length):
    result, base = run_copy(op, dst, 0, length, limits=Limits(memory_pages=1))
    assert (result.status, result.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")
    assert result.usage.compute == base
    assert result.usage.memory_pages == (1 if op == "returndatacopy" else 0)   # the callee's page


@pytest.mark.parametrize("op", COPY_OPS)
def test_copy_cost_exceeding_compute(op):
    _, base = run_copy(op, 0, 0, 9)
    need = base + PAGE_COST + 2 * COPY_COST + cost("STOP")
    ok, _ = run_copy(op, 0, 0, 9, limits=Limits(compute=need), tail="stop")
    assert ok.status == "success" and ok.usage.compute == need
    bad, _ = run_copy(op, 0, 0, 9, limits=Limits(compute=need - 1), tail="stop")
    assert (bad.status, bad.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")


@pytest.mark.parametrize("op", ["calldataload", "calldatacopy", "datacopy", "returndatacopy"])
def test_underflow(op):
    n = S.by_mnemonic[op.upper()].inputs - 1
    result = run_asm("push1 0\n" * n + f"{op}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * n)
    assert usage(result) == (n * cost("PUSH1"), 0, 0, 0, 0, 0)


# ---- COMPUTELEFT ---------------------------------------------------------------------------

@pytest.mark.parametrize("limit", [1000, 12345, 10 ** 9])
def test_computeleft_first_instruction(limit):
    result = run_asm(returning_top("computeleft"), limits=Limits(compute=limit))
    assert word_out(result) == limit - cost("COMPUTELEFT")
    assert result.usage.compute == cost("COMPUTELEFT") + RET_COLD


def test_computeleft_default_limit():
    assert word_out(run_asm(returning_top("computeleft"))) == DEFAULT_COMPUTE - cost("COMPUTELEFT")


def test_computeleft_counts_prior_costs_and_pages():
    body = "push1 1\npop\npush2 5000\nmload8\npop\ncomputeleft"
    result = run_asm(returning_top(body), limits=Limits(compute=5000))
    used = cost("PUSH1", "POP", "PUSH2", "MLOAD8", "POP", "COMPUTELEFT") + 2 * PAGE_COST
    assert word_out(result) == 5000 - used


def test_computeleft_twice_decreases_by_its_cost():
    body = "computeleft\nnop\ncomputeleft\nsub"
    assert word_out(run_asm(returning_top(body))) == cost("NOP", "COMPUTELEFT")


def test_computeleft_with_exactly_enough():
    limit = cost("COMPUTELEFT") + RET_COLD
    result = run_asm(returning_top("computeleft"), limits=Limits(compute=limit))
    assert word_out(result) == RET_COLD and result.usage.compute == limit


def test_computeleft_in_callee_is_capped_by_call_compute():
    result = run_asm(call_and_copy_return(OTHER, 8).replace(f"push8 {M}", "push8 500", 1),
                     others={OTHER: returning_top("computeleft")})
    assert words(result.output) == [1, 500 - cost("COMPUTELEFT")]


def test_computeleft_in_callee_is_capped_by_caller_limit():
    limit = 10000
    result = run_asm(call_and_copy_return(OTHER, 8), others={OTHER: returning_top("computeleft")},
                     limits=Limits(compute=limit))
    used_before_callee = CALL_SEQ_COST
    assert words(result.output) == [1, limit - used_before_callee - cost("COMPUTELEFT")]


# ---- DATASIZE ------------------------------------------------------------------------------

@pytest.mark.parametrize("data_hex,size", [("", 0), ("00", 1), ("01" * 100, 100), ("ff" * 4096, 4096)])
def test_datasize(data_hex, size):
    src = returning_top("datasize") + (f"\n.data\n.hex {data_hex}" if data_hex else "")
    result = run_asm(src)
    assert word_out(result) == size
    assert result.usage.compute == cost("DATASIZE") + RET_COLD


def test_datacopy_with_labels_and_ascii():
    src = "push1 0\npush msg\npush1 5\ndatacopy\npush1 0\npush1 5\nreturn\n.data\npad: .zero 3\nmsg: .ascii \"hello world\""
    assert run_asm(src).output == b"hello"


def test_datacopy_no_data_section_reads_zero():
    src = "push1 0\npush8 -1\nmstore\npush1 0\npush1 0\npush1 8\ndatacopy\npush1 0\npush1 8\nreturn"
    assert run_asm(src).output == bytes(8)


# ---- RETURNDATASIZE ------------------------------------------------------------------------

def test_returndatasize_before_any_call():
    result = run_asm(returning_top("returndatasize"))
    assert word_out(result) == 0
    assert result.usage.compute == cost("RETURNDATASIZE") + RET_COLD


@pytest.mark.parametrize("callee,size,ok", [
    ("push1 0\npush1 13\nreturn", 13, 1),
    ("push1 0\npush1 0\nreturn", 0, 1),
    ("stop", 0, 1),
    ("push1 0\npush1 7\nrevert", 7, 0),          # a revert's output is return data
    ("push1 0\npush1 7\ntrap", 0, 0),            # a fault leaves no return data
    ("pop\nstop", 0, 0),
])
def test_returndatasize_after_call(callee, size, ok):
    body = CALL_SEQ.format(addr=OTHER, compute=M) + "\nreturndatasize"
    result = run_asm(body + "\n" + RETURN_TWO, others={OTHER: callee})
    assert words(result.output) == [size, ok]


def test_returndatasize_nonexistent_contract():
    body = CALL_SEQ.format(addr=0x5555, compute=M) + "\nreturndatasize"
    assert words(run_asm(body + "\n" + RETURN_TWO).output) == [0, 0]


def test_returndata_replaced_by_most_recent_call():
    body = (CALL_SEQ.format(addr=OTHER, compute=M) + "\npop\n"
            + CALL_SEQ.format(addr=OTHER2, compute=M) + "\npop\nreturndatasize")
    result = run_asm(returning_top(body), others={OTHER: "push1 0\npush1 40\nreturn", OTHER2: "stop"})
    assert word_out(result) == 0


def test_returndata_is_per_frame():
    # The caller has 40 bytes of return data; the second callee's own RETURNDATASIZE is 0.
    body = (CALL_SEQ.format(addr=OTHER, compute=M) + "\npop\n" + call_and_copy_return(OTHER2, 8))
    result = run_asm(body, others={OTHER: "push1 0\npush1 40\nreturn",
                                   OTHER2: returning_top("returndatasize")})
    assert words(result.output) == [1, 0]


def test_returndatacopy_of_reverted_output():
    callee = "push1 0\npush8 0x1122334455667788\nmstore\npush1 0\npush1 8\nrevert"
    result = run_asm(call_and_copy_return(OTHER, 8), others={OTHER: callee})
    assert words(result.output) == [0, 0x1122_3344_5566_7788]


def test_returndatacopy_before_any_call_reads_zero():
    src = "push1 0\npush8 -1\nmstore\npush1 0\npush1 0\npush1 8\nreturndatacopy\npush1 0\npush1 8\nreturn"
    assert run_asm(src).output == bytes(8)


# ---- properties ----------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(data=st.binary(max_size=40), offset=st.one_of(st.integers(0, 48), st.just(M)))
def test_property_calldataload(data, offset):
    window = data[offset:offset + 8] if offset < len(data) else b""
    expected = int.from_bytes(window + bytes(8 - len(window)), "little")
    assert word_out(run_asm(returning_top(f"push8 {offset}\ncalldataload"), call_data=data)) == expected
