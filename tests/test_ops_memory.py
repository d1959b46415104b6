"""Memory instructions: MLOAD MSTORE MLOAD8 MSTORE8 MSIZE MCOPY, page growth and the limit."""

from __future__ import annotations

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import returning_top, run_asm, word_out
from opspec import (
    S, PAGE_SIZE, PAGE_COST, COPY_COST, DEFAULT_PAGES, M, cost, fee, pages_for, copy_words, usage,
    RET_WARM, RET_COLD,
)
from reference_vm import Limits


# ---- MSTORE / MLOAD ------------------------------------------------------------------------

def test_mstore_is_little_endian():
    result = run_asm("push1 0\npush8 0x0102030405060708\nmstore\npush1 0\npush1 8\nreturn")
    assert result.output == bytes([8, 7, 6, 5, 4, 3, 2, 1])
    compute = cost("PUSH1", "PUSH8", "MSTORE", "PUSH1", "PUSH1", "RETURN") + PAGE_COST
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


def test_mload_is_little_endian():
    body = "\n".join(f"push1 {i}\npush1 {0x11 * (i + 1)}\nmstore8" for i in range(8))
    body += "\npush1 0\nmload"
    result = run_asm(returning_top(body))
    assert word_out(result) == 0x8877_6655_4433_2211
    compute = 8 * cost("PUSH1", "PUSH1", "MSTORE8") + PAGE_COST + cost("PUSH1", "MLOAD") + RET_WARM
    assert result.usage.compute == compute


@pytest.mark.parametrize("offset", [0, 1, 7, 100, 4088, 4089, 4095, 4096, 12345])
def test_mstore_mload_roundtrip(offset):
    value = 0xFEDC_BA98_7654_3210
    result = run_asm(returning_top(f"push2 {offset}\npush8 {value}\nmstore\npush2 {offset}\nmload"))
    assert word_out(result) == value
    pages = pages_for(offset + 8)
    compute = cost("PUSH2", "PUSH8", "MSTORE", "PUSH2", "MLOAD") + pages * PAGE_COST + RET_WARM
    assert usage(result) == (compute, pages, 0, 0, 0, 0)
    assert result.fee == fee(compute, pages)


@pytest.mark.parametrize("offset,pages", [(0, 1), (4088, 1), (4089, 2), (4095, 2), (4096, 2),
                                          (8184, 2), (8185, 3), (40000, 10)])
def test_mload_fresh_memory_reads_zero_and_grows(offset, pages):
    result = run_asm(returning_top(f"push2 {offset}\nmload"))
    assert word_out(result) == 0
    assert result.usage.memory_pages == pages
    assert result.usage.compute == cost("PUSH2", "MLOAD") + pages * PAGE_COST + RET_WARM


def test_mstore_overwrites_and_partial_overlap():
    body = ("push1 0\npush8 0x1111111111111111\nmstore\n"
            "push1 4\npush8 0x2222222222222222\nmstore\npush1 0\nmload")
    assert word_out(run_asm(returning_top(body))) == 0x2222_2222_1111_1111


@pytest.mark.parametrize("op", ["mload", "mstore"])
@pytest.mark.parametrize("offset", [M, M - 7, M - 8, 2 ** 63, 2 ** 40])
def test_word_access_at_huge_offset_exceeds_memory(op, offset):
    src = f"push8 {offset}\n" + ("push1 1\n" if op == "mstore" else "") + f"{op}\nstop"
    result = run_asm(src)
    assert (result.status, result.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")
    assert result.error_pc == (11 if op == "mstore" else 9)
    base = cost("PUSH8", op.upper()) + (cost("PUSH1") if op == "mstore" else 0)
    assert usage(result) == (base, 0, 0, 0, 0, 0)


@pytest.mark.parametrize("op,offset,ok", [
    ("mstore", 4088, True), ("mstore", 4089, False), ("mload", 4088, True), ("mload", 4089, False),
    ("mstore8", 4095, True), ("mstore8", 4096, False), ("mload8", 4095, True), ("mload8", 4096, False),
])
def test_memory_limit_one_page(op, offset, ok):
    value = "push1 1\n" if op.startswith("mstore") else ""
    result = run_asm(f"push2 {offset}\n{value}{op}\nstop", limits=Limits(memory_pages=1))
    if ok:
        assert result.status == "success" and result.usage.memory_pages == 1
    else:
        assert (result.status, result.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")
        assert result.usage.memory_pages == 0


@pytest.mark.parametrize("op", ["mload", "mload8"])
def test_memory_limit_zero_pages(op):
    result = run_asm(f"push1 0\n{op}\nstop", limits=Limits(memory_pages=0))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 2)


def test_default_memory_limit_boundary():
    last = DEFAULT_PAGES * PAGE_SIZE - 1
    ok = run_asm(f"push4 {last}\nmload8\nstop")
    assert ok.status == "success" and ok.usage.memory_pages == DEFAULT_PAGES
    assert ok.usage.compute == cost("PUSH4", "MLOAD8", "STOP") + DEFAULT_PAGES * PAGE_COST
    over = run_asm(f"push4 {last + 1}\nmload8\nstop")
    assert (over.status, over.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")


def test_page_cost_exceeding_compute_grows_nothing():
    src = "push1 0\nmload\nstop"
    need = cost("PUSH1", "MLOAD", "STOP") + PAGE_COST
    assert run_asm(src, limits=Limits(compute=need)).status == "success"
    r = run_asm(src, limits=Limits(compute=need - 1))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 2)
    assert r.usage.memory_pages == 0
    assert r.usage.compute == cost("PUSH1", "MLOAD")


def test_growth_charged_only_once():
    body = "push1 0\nmload\npop\npush1 8\nmload\npop\npush2 4000\npush1 1\nmstore\nmsize"
    result = run_asm(returning_top(body))
    assert word_out(result) == PAGE_SIZE
    compute = (cost("PUSH1", "MLOAD", "POP", "PUSH1", "MLOAD", "POP", "PUSH2", "PUSH1", "MSTORE", "MSIZE")
               + PAGE_COST + RET_WARM)
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


# ---- MSTORE8 / MLOAD8 ----------------------------------------------------------------------

@pytest.mark.parametrize("value,stored", [(0, 0), (0x34, 0x34), (0x1234, 0x34), (M, 0xFF),
                                          (0x100, 0), (2 ** 63 + 0x7F, 0x7F)])
def test_mstore8_stores_low_byte(value, stored):
    result = run_asm(f"push1 3\npush8 {value}\nmstore8\npush1 0\npush1 8\nreturn")
    assert result.output == bytes([0, 0, 0, stored, 0, 0, 0, 0])
    compute = cost("PUSH1", "PUSH8", "MSTORE8", "PUSH1", "PUSH1", "RETURN") + PAGE_COST
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


def test_mstore8_leaves_neighbours():
    body = "push1 0\npush8 -1\nmstore\npush1 2\npush1 0\nmstore8\npush1 0\nmload"
    assert word_out(run_asm(returning_top(body))) == 0xFFFF_FFFF_FF00_FFFF


@pytest.mark.parametrize("offset,pages", [(0, 1), (4095, 1), (4096, 2), (65535, 16)])
def test_mload8_zero_extended_and_growth(offset, pages):
    body = f"push4 {offset}\npush1 0xF0\nmstore8\npush4 {offset}\nmload8"
    result = run_asm(returning_top(body))
    assert word_out(result) == 0xF0
    compute = cost("PUSH4", "PUSH1", "MSTORE8", "PUSH4", "MLOAD8") + pages * PAGE_COST + RET_WARM
    assert usage(result) == (compute, pages, 0, 0, 0, 0)


def test_mload8_reads_one_byte_of_word():
    body = "push1 0\npush8 0x0807060504030201\nmstore\npush1 5\nmload8"
    assert word_out(run_asm(returning_top(body))) == 6


@pytest.mark.parametrize("op", ["mload8", "mstore8"])
@pytest.mark.parametrize("offset", [M, 2 ** 63])
def test_byte_access_at_huge_offset(op, offset):
    value = "push1 1\n" if op == "mstore8" else ""
    result = run_asm(f"push8 {offset}\n{value}{op}\nstop")
    assert (result.status, result.error) == ("exhausted", "MEMORY_LIMIT_EXCEEDED")


# ---- MSIZE ---------------------------------------------------------------------------------

def test_msize_initially_zero():
    # MSIZE itself does not grow memory; the returning_top afterwards does.
    result = run_asm(returning_top("msize"))
    assert word_out(result) == 0
    assert result.usage.compute == cost("MSIZE") + RET_COLD


@pytest.mark.parametrize("setup,size", [
    ("push1 0\nmload8\npop", PAGE_SIZE),
    ("push2 4095\npush1 1\nmstore", 2 * PAGE_SIZE),
    ("push2 10000\nmload\npop", 3 * PAGE_SIZE),
    ("push2 8191\nmload8\npop\npush1 0\nmload8\npop", 2 * PAGE_SIZE),     # never shrinks
    ("push8 -1\npush8 -1\npush1 0\nmcopy", 0),                             # zero length touches nothing
])
def test_msize_after_access(setup, size):
    result = run_asm(returning_top(f"{setup}\nmsize"))
    assert word_out(result) == size


# ---- MCOPY ---------------------------------------------------------------------------------

SIXTEEN = ("push1 0\npush8 0x0807060504030201\nmstore\n"
           "push1 8\npush8 0x100f0e0d0c0b0a09\nmstore")
SIXTEEN_COST = 2 * cost("PUSH1", "PUSH8", "MSTORE") + PAGE_COST


def after_copy(dst, src, length, size=16):
    mem = bytearray(range(1, 17)) + bytearray(max(0, max(dst, src) + length - 16))
    buffer = bytes(mem[src:src + length])       # "as if through a temporary buffer"
    mem[dst:dst + length] = buffer
    return bytes(mem[:size])


@pytest.mark.parametrize("dst,src,length", [
    (0, 8, 8), (8, 0, 8), (2, 0, 8), (0, 2, 8), (1, 0, 15), (0, 1, 15), (3, 3, 10), (0, 0, 16),
    (5, 4, 1), (4, 5, 1),
])
def test_mcopy_within_page(dst, src, length):
    src_text = f"{SIXTEEN}\npush1 {dst}\npush1 {src}\npush1 {length}\nmcopy\npush1 0\npush1 16\nreturn"
    result = run_asm(src_text)
    assert result.output == after_copy(dst, src, length)
    compute = (SIXTEEN_COST + cost("PUSH1", "PUSH1", "PUSH1", "MCOPY") + copy_words(length) * COPY_COST
               + cost("PUSH1", "PUSH1", "RETURN"))
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


def test_mcopy_overlap_forward_by_hand():
    src_text = f"{SIXTEEN}\npush1 2\npush1 0\npush1 8\nmcopy\npush1 0\npush1 16\nreturn"
    assert run_asm(src_text).output == bytes([1, 2, 1, 2, 3, 4, 5, 6, 7, 8, 11, 12, 13, 14, 15, 16])


def test_mcopy_overlap_backward_by_hand():
    src_text = f"{SIXTEEN}\npush1 0\npush1 2\npush1 8\nmcopy\npush1 0\npush1 16\nreturn"
    assert run_asm(src_text).output == bytes([3, 4, 5, 6, 7, 8, 9, 10, 9, 10, 11, 12, 13, 14, 15, 16])


@pytest.mark.parametrize("dst,src,length", [
    (4096, 0, 16), (0, 8192, 8), (4090, 0, 16), (0, 4090, 16), (20000, 30000, 1), (0, 0, 4096),
    (1, 0, 4096),
])
def test_mcopy_grows_to_cover_both_ranges(dst, src, length):
    body = f"{SIXTEEN}\npush2 {dst}\npush2 {src}\npush2 {length}\nmcopy\nmsize"
    result = run_asm(returning_top(body))
    pages = max(1, pages_for(max(dst, src) + length))
    assert word_out(result) == pages * PAGE_SIZE
    compute = (SIXTEEN_COST + cost("PUSH2", "PUSH2", "PUSH2", "MCOPY", "MSIZE")
               + copy_words(length) * COPY_COST + (pages - 1) * PAGE_COST + RET_WARM)
    assert usage(result) == (compute, pages, 0, 0, 0, 0)


def test_mcopy_from_fresh_memory_copies_zeros():
    body = f"{SIXTEEN}\npush1 0\npush2 8192\npush1 8\nmcopy\npush1 0\nmload"
    assert word_out(run_asm(returning_top(body))) == 0


@pytest.mark.parametrize("length,words", [(1, 1), (7, 1), (8, 1), (9, 2), (16, 2), (17, 3),
                                          (64, 8), (4095, 512), (4096, 512)])
def test_mcopy_copy_cost_per_started_word(length, words):
    assert copy_words(length) == words
    result = run_asm(f"push2 4096\npush1 0\npush2 {length}\nmcopy\nstop")
    pages = pages_for(4096 + length)
    compute = cost("PUSH2", "PUSH1", "PUSH2", "MCOPY", "STOP") + words * COPY_COST + pages * PAGE_COST
    assert usage(result) == (compute, pages, 0, 0, 0, 0)
    assert result.fee == fee(compute, pages)


@pytest.mark.parametrize("dst,src", [(0, 0), (M, M), (M, 0), (0, M), (2 ** 63, 2 ** 40)])
def test_mcopy_zero_length_touches_nothing(dst, src):
    result = run_asm(returning_top(f"push8 {dst}\npush8 {src}\npush1 0\nmcopy\nmsize"))
    assert word_out(result) == 0
    compute = cost("PUSH8", "PUSH8", "PUSH1", "MCOPY", "MSIZE") + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


@pytest.mark.parametrize("dst,src,length", [(M, 0, 1), (0, M, 1), (0, 0, M), (4096, 0, 1),
                                            (0, 4096, 1), (0, 0, 4097)])
def test_mcopy_memory_limit(dst, src, length):
    result = run_asm(f"push8 {dst}\npush8 {src}\npush8 {length}\nmcopy\nstop",
                     limits=Limits(memory_pages=1))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 27)
    assert usage(result) == (cost("PUSH8", "PUSH8", "PUSH8", "MCOPY"), 0, 0, 0, 0, 0)


def test_mcopy_copy_cost_exceeding_compute():
    src = "push1 0\npush1 8\npush1 16\nmcopy\nstop"
    need = cost("PUSH1", "PUSH1", "PUSH1", "MCOPY", "STOP") + PAGE_COST + 2 * COPY_COST
    assert run_asm(src, limits=Limits(compute=need)).status == "success"
    r = run_asm(src, limits=Limits(compute=need - 1))
    assert (r.status, r.error, r.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 6)


# ---- stack underflow for every memory op ---------------------------------------------------

@pytest.mark.parametrize("op,inputs", [("MLOAD", 1), ("MSTORE", 2), ("MLOAD8", 1), ("MSTORE8", 2),
                                       ("MCOPY", 3)])
def test_underflow(op, inputs):
    assert S.by_mnemonic[op].inputs == inputs
    result = run_asm("push1 0\n" * (inputs - 1) + f"{op.lower()}\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * (inputs - 1))
    assert usage(result) == ((inputs - 1) * cost("PUSH1"), 0, 0, 0, 0, 0)


def test_msize_overflow_on_full_stack():
    depth = S.limits["machine"]["stack_depth"]
    result = run_asm("push1 0\n" * depth + "msize\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_OVERFLOW", 2 * depth)


# ---- properties ----------------------------------------------------------------------------

prop = settings(max_examples=40, deadline=None)


@prop
@given(offset=st.integers(0, 3 * PAGE_SIZE), value=st.integers(0, M))
def test_property_store_load_word(offset, value):
    result = run_asm(returning_top(f"push2 {offset}\npush8 {value}\nmstore\npush2 {offset}\nmload"))
    assert word_out(result) == value
    assert result.usage.memory_pages == pages_for(offset + 8)


@prop
@given(dst=st.integers(0, 40), src=st.integers(0, 40), length=st.integers(0, 24))
def test_property_mcopy_model(dst, src, length):
    setup = "\n".join(f"push1 {i}\npush1 {(i * 37 + 5) % 256}\nmstore8" for i in range(64))
    body = f"{setup}\npush1 {dst}\npush1 {src}\npush1 {length}\nmcopy\npush1 0\npush1 64\nreturn"
    mem = bytearray((i * 37 + 5) % 256 for i in range(64))
    mem[dst:dst + length] = bytes(mem[src:src + length])
    result = run_asm(body)
    assert result.output == bytes(mem)
