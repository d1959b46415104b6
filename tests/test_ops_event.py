"""Event instructions: LOG0..LOG4 — topics, data, cost, and discarding with failed frames."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest

from conftest import ENTRY, run_asm
from opspec import S, PAGE_COST, COPY_COST, M, cost, fee, pages_for, copy_words, usage
from reference_vm import Limits

OTHER = 0xE7E7


def events(result):
    return [(e.address, tuple(e.topics), e.data) for e in result.events]


SETUP = "push1 0\npush8 0x0807060504030201\nmstore\npush1 8\npush8 0x100f0e0d0c0b0a09\nmstore"
SETUP_COST = 2 * cost("PUSH1", "PUSH8", "MSTORE") + PAGE_COST
MEMORY = bytes(range(1, 17))
TOPICS = [0x11, M, 2 ** 63, 0]


def test_table_rows():
    for n in range(5):
        ins = S.by_mnemonic[f"LOG{n}"]
        assert (ins.inputs, ins.outputs, ins.cost_rule) == (2 + n, 0, "log_data")
        assert ins.type == "event"


@pytest.mark.parametrize("n", range(5))
@pytest.mark.parametrize("offset,length", [(0, 16), (0, 1), (3, 5), (15, 1), (0, 8), (0, 9), (4, 0)])
def test_log(n, offset, length):
    topics = "".join(f"push8 {t}\n" for t in TOPICS[:n])
    src = f"{SETUP}\npush1 {offset}\npush1 {length}\n{topics}log{n}\nstop"
    result = run_asm(src)
    assert result.status == "success"
    assert events(result) == [(ENTRY, tuple(TOPICS[:n]), MEMORY[offset:offset + length])]
    compute = (SETUP_COST + cost("PUSH1", "PUSH1", f"LOG{n}", "STOP") + n * cost("PUSH8")
               + copy_words(length) * COPY_COST)
    assert usage(result) == (compute, 1, 0, 0, 0, 0)
    assert result.fee == fee(compute, 1)


def test_topic_order_first_pushed_is_topic1():
    result = run_asm("push1 0\npush1 0\npush1 1\npush1 2\npush1 3\npush1 4\nlog4\nstop")
    assert events(result) == [(ENTRY, (1, 2, 3, 4), b"")]


@pytest.mark.parametrize("n", range(5))
@pytest.mark.parametrize("offset", [0, 2 ** 63, M])
def test_zero_length_touches_nothing(n, offset):
    src = f"push8 {offset}\npush1 0\n" + "push1 7\n" * n + f"log{n}\nstop"
    result = run_asm(src, limits=Limits(memory_pages=0))
    assert events(result) == [(ENTRY, (7,) * n, b"")]
    compute = cost("PUSH8", "PUSH1", f"LOG{n}", "STOP") + n * cost("PUSH1")
    assert usage(result) == (compute, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("offset,length", [(0, 4096), (4090, 10), (8000, 1), (0, 4097), (100, 9000)])
def test_data_from_fresh_memory_grows(offset, length):
    result = run_asm(f"push2 {offset}\npush2 {length}\nlog0\nstop")
    assert events(result) == [(ENTRY, (), bytes(length))]
    pages = pages_for(offset + length)
    compute = cost("PUSH2", "PUSH2", "LOG0", "STOP") + pages * PAGE_COST + copy_words(length) * COPY_COST
    assert usage(result) == (compute, pages, 0, 0, 0, 0)
    assert result.fee == fee(compute, pages)


@pytest.mark.parametrize("n", range(5))
def test_memory_limit(n):
    src = f"push1 0\npush2 4097\n" + "push1 1\n" * n + f"log{n}\nstop"
    result = run_asm(src, limits=Limits(memory_pages=1))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 5 + 2 * n)
    assert result.events == ()
    assert usage(result) == (cost("PUSH1", "PUSH2", f"LOG{n}") + n * cost("PUSH1"), 0, 0, 0, 0, 0)


@pytest.mark.parametrize("offset", [M, 2 ** 63])
def test_huge_offset_with_length(offset):
    result = run_asm(f"push8 {offset}\npush1 1\nlog0\nstop")
    assert (result.status, result.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")


def test_copy_cost_exceeding_compute():
    src = f"push1 0\npush1 9\nlog0\nstop"
    need = cost("PUSH1", "PUSH1", "LOG0", "STOP") + PAGE_COST + 2 * COPY_COST
    assert run_asm(src, limits=Limits(compute=need)).status == "success"
    bad = run_asm(src, limits=Limits(compute=need - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 4)
    assert bad.events == ()


@pytest.mark.parametrize("n", range(5))
def test_underflow(n):
    items = n + 1
    result = run_asm("push1 0\n" * items + f"log{n}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * items)
    assert usage(result) == (items * cost("PUSH1"), 0, 0, 0, 0, 0)


def test_events_in_emission_order():
    src = f"{SETUP}\npush1 0\npush1 1\nlog0\npush1 1\npush1 1\npush1 9\nlog1\npush1 2\npush1 1\nlog0\nstop"
    assert events(run_asm(src)) == [(ENTRY, (), b"\x01"), (ENTRY, (9,), b"\x02"), (ENTRY, (), b"\x03")]


def test_event_data_is_a_snapshot():
    # changing memory after LOG does not change the event
    src = f"{SETUP}\npush1 0\npush1 2\nlog0\npush1 0\npush1 0\nmstore\nstop"
    assert events(run_asm(src)) == [(ENTRY, (), b"\x01\x02")]


@pytest.mark.parametrize("ending,status", [
    ("push1 0\npush1 0\nrevert", "reverted"), ("trap", "fault"), ("pop\nstop", "fault"),
])
def test_events_discarded_when_frame_fails(ending, status):
    result = run_asm(f"push1 0\npush1 0\nlog0\n{ending}")
    assert result.status == status and result.events == ()
    assert result.usage.compute >= cost("PUSH1", "PUSH1", "LOG0")


def test_events_discarded_when_exhausted_later():
    src = "push1 0\npush1 0\nlog0\nloop:\njump loop"
    result = run_asm(src, limits=Limits(compute=100))
    assert (result.status, result.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")
    assert result.events == ()


# ---- events across calls -------------------------------------------------------------------

CALL = f"push8 {OTHER}\npush8 {M}\npush1 0\npush1 0\ncall"


def test_callee_events_kept_in_order_with_callee_address():
    caller = f"push1 0\npush1 0\npush1 1\nlog1\n{CALL}\npop\npush1 0\npush1 0\npush1 3\nlog1\nstop"
    callee = "push1 0\npush1 0\npush1 2\nlog1\nstop"
    result = run_asm(caller, others={OTHER: callee})
    assert events(result) == [(ENTRY, (1,), b""), (OTHER, (2,), b""), (ENTRY, (3,), b"")]


@pytest.mark.parametrize("ending", ["push1 0\npush1 0\nrevert", "trap", "pop\nstop"])
def test_failed_callee_events_discarded(ending):
    caller = f"{CALL}\npush1 0\npush1 0\npush1 5\nlog1\nstop"
    callee = f"push1 0\npush1 0\npush1 2\nlog1\n{ending}"
    result = run_asm(caller, others={OTHER: callee})
    assert events(result) == [(ENTRY, (5,), b"")]
    # and CALL pushed 0: log it as the topic (stack ok 0 0 -> swap2 -> 0 0 ok)
    check = run_asm(f"{CALL}\npush1 0\npush1 0\nswap2\nlog1\nstop", others={OTHER: callee})
    assert events(check) == [(ENTRY, (0,), b"")]


def test_successful_callee_events_discarded_when_caller_reverts():
    caller = f"{CALL}\npop\npush1 0\npush1 0\nrevert"
    result = run_asm(caller, others={OTHER: "push1 0\npush1 0\nlog0\nstop"})
    assert result.status == "reverted" and result.events == ()


def test_callee_event_data_from_callee_memory():
    callee = "push1 0\npush8 0x6f6c6c6568\nmstore\npush1 0\npush1 5\nlog0\nstop"
    result = run_asm(f"{CALL}\npop\nstop", others={OTHER: callee})
    assert events(result) == [(OTHER, (), b"hello")]
