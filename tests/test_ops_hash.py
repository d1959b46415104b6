"""Hash instruction: SHA256 dst src length (digest from hashlib, costs from schedule.toml)."""

from __future__ import annotations

import hashlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import run_asm
from opspec import (
    S, PAGE_SIZE, PAGE_COST, COPY_WORD, COPY_COST, BLOCK_COST, DIGEST, M, cost, fee, pages_for,
    blocks, usage,
)
from reference_vm import Limits


def hash_program(length: int, dst: int, src: int = 0) -> str:
    """Copy the call data to memory[src..], hash it to memory[dst..], return the digest."""
    return (f"push4 {src}\npush1 0\npush4 {length}\ncalldatacopy\n"
            f"push4 {dst}\npush4 {src}\npush4 {length}\nsha256\n"
            f"push4 {dst}\npush1 {DIGEST}\nreturn")


def hash_program_cost(length: int, dst: int, src: int = 0) -> tuple[int, int]:
    pages = pages_for(max(dst + DIGEST, src + length))
    compute = (cost("PUSH4", "PUSH1", "PUSH4", "CALLDATACOPY") + -(-length // COPY_WORD) * COPY_COST
               + cost("PUSH4", "PUSH4", "PUSH4", "SHA256") + blocks(length) * BLOCK_COST
               + cost("PUSH4", "PUSH1", "RETURN") + pages * PAGE_COST)
    return compute, pages


def test_table_row():
    ins = S.by_mnemonic["SHA256"]
    assert (ins.inputs, ins.outputs, ins.cost_rule, ins.type) == (3, 0, "hash", "hash")
    assert DIGEST == 32


def test_known_vectors():
    assert hashlib.sha256(b"").hexdigest().startswith("e3b0c442")
    result = run_asm(hash_program(3, 64), call_data=b"abc")
    assert result.output.hex() == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize("length", [0, 1, 3, 55, 56, 63, 64, 65, 127, 128, 129, 1000, 4096, 5000])
def test_digest_and_cost(length):
    data = bytes((i * 7 + 3) % 256 for i in range(length))
    dst = 8192
    result = run_asm(hash_program(length, dst), call_data=data)
    assert result.status == "success"
    assert result.output == hashlib.sha256(data).digest()
    compute, pages = hash_program_cost(length, dst)
    assert usage(result) == (compute, pages, 0, 0, 0, 0)
    assert result.fee == fee(compute, pages)


@pytest.mark.parametrize("length,n", [(0, 0), (1, 1), (64, 1), (65, 2), (128, 2), (129, 3)])
def test_hash_cost_per_started_block(length, n):
    assert blocks(length) == n
    result = run_asm(f"push1 0\npush1 0\npush1 {length}\nsha256\nstop")
    compute = cost("PUSH1", "PUSH1", "PUSH1", "SHA256", "STOP") + n * BLOCK_COST + PAGE_COST
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


def test_empty_input_at_huge_offset_touches_only_digest_range():
    src = f"push1 0\npush8 {M}\npush1 0\nsha256\npush1 0\npush1 32\nreturn"
    result = run_asm(src)
    assert result.output == hashlib.sha256(b"").digest()
    compute = cost("PUSH1", "PUSH8", "PUSH1", "SHA256", "PUSH1", "PUSH1", "RETURN") + PAGE_COST
    assert usage(result) == (compute, 1, 0, 0, 0, 0)


@pytest.mark.parametrize("dst,pages", [(0, 1), (4064, 1), (4065, 2), (4095, 2), (4096, 2), (12000, 3)])
def test_digest_range_grows_memory(dst, pages):
    result = run_asm(f"push2 {dst}\npush1 0\npush1 0\nsha256\nmsize\npush1 0\nswap1\nmstore\npush1 0\npush1 8\nreturn")
    assert int.from_bytes(result.output, "little") == pages * PAGE_SIZE
    compute = (cost("PUSH2", "PUSH1", "PUSH1", "SHA256", "MSIZE") + pages * PAGE_COST
               + cost("PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN"))
    assert usage(result) == (compute, pages, 0, 0, 0, 0)


def test_input_range_grows_memory_and_reads_zeros():
    # hashing 100 bytes of fresh memory at 4090 grows to cover [4090, 4190)
    src = "push1 0\npush2 4090\npush1 100\nsha256\npush1 0\npush1 32\nreturn"
    result = run_asm(src)
    assert result.output == hashlib.sha256(bytes(100)).digest()
    compute = (cost("PUSH1", "PUSH2", "PUSH1", "SHA256", "PUSH1", "PUSH1", "RETURN")
               + 2 * PAGE_COST + 2 * BLOCK_COST)
    assert usage(result) == (compute, 2, 0, 0, 0, 0)


@pytest.mark.parametrize("length", [1, 32, 40, 64, 100])
def test_digest_overwriting_its_input(length):
    data = bytes(range(1, length + 1))
    result = run_asm(hash_program(length, 0, 0), call_data=data)
    assert result.output == hashlib.sha256(data).digest()


def test_digest_overlapping_input_partially():
    data = bytes(range(200, 250))
    result = run_asm(hash_program(len(data), 10, 0), call_data=data)
    assert result.output == hashlib.sha256(data).digest()


def test_digest_leaves_surrounding_memory():
    src = ("push1 0\npush8 -1\nmstore\npush1 40\npush8 -1\nmstore\n"
           "push1 8\npush1 0\npush1 0\nsha256\npush1 0\npush1 48\nreturn")
    out = run_asm(src).output
    # the digest of the 0-byte input lands at [8, 40); the words around it survive
    assert out == b"\xff" * 8 + hashlib.sha256(b"").digest() + b"\xff" * 8


@pytest.mark.parametrize("dst,src,length", [(M, 0, 0), (M - 31, 0, 0), (0, M, 1), (0, 0, M),
                                            (2 ** 63, 0, 1), (4065, 0, 0), (0, 4000, 97)])
def test_memory_limit(dst, src, length):
    result = run_asm(f"push8 {dst}\npush8 {src}\npush8 {length}\nsha256\nstop",
                     limits=Limits(memory_pages=1))
    assert (result.status, result.error, result.error_pc) == ("exhausted", "MEMORY_LIMIT_EXCEEDED", 27)
    assert usage(result) == (cost("PUSH8", "PUSH8", "PUSH8", "SHA256"), 0, 0, 0, 0, 0)


def test_hash_cost_exceeding_compute():
    src = "push1 0\npush1 0\npush1 65\nsha256\nstop"
    need = cost("PUSH1", "PUSH1", "PUSH1", "SHA256", "STOP") + PAGE_COST + 2 * BLOCK_COST
    ok = run_asm(src, limits=Limits(compute=need))
    assert ok.status == "success" and ok.usage.compute == need
    bad = run_asm(src, limits=Limits(compute=need - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 6)


@pytest.mark.parametrize("items", [0, 1, 2])
def test_underflow(items):
    result = run_asm("push1 0\n" * items + "sha256\nstop")
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_UNDERFLOW", 2 * items)
    assert usage(result) == (items * cost("PUSH1"), 0, 0, 0, 0, 0)


def test_hash_of_hash():
    src = ("push1 0\npush1 0\npush1 3\ncalldatacopy\n"
           "push1 0\npush1 0\npush1 3\nsha256\n"
           "push1 0\npush1 0\npush1 32\nsha256\npush1 0\npush1 32\nreturn")
    result = run_asm(src, call_data=b"abc")
    assert result.output == hashlib.sha256(hashlib.sha256(b"abc").digest()).digest()


@settings(max_examples=50, deadline=None)
@given(data=st.binary(max_size=300), dst=st.integers(0, 400))
def test_property_digest(data, dst):
    result = run_asm(hash_program(len(data), dst, 0), call_data=data)
    assert result.output == hashlib.sha256(data).digest()
    compute, pages = hash_program_cost(len(data), dst, 0)
    assert usage(result) == (compute, pages, 0, 0, 0, 0)
