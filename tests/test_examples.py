"""The example scenarios, with expected results written out by hand from the spec.

Compute totals are summed in the comments from the base costs (instructions.toml) and the
cost rules (schedule.toml: page_cost 32, copy word_cost 1 per 8 bytes, hash block_cost 6,
new_slot_cost 400); storage units from read 1, write 4, new slot 16; fee = compute
+ 100 * peak pages + 50 * storage units.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from rtwo_vm.examples import run_directory

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _runs(version: str):
    return {(r.scenario, r.index): r.result for r in run_directory(EXAMPLES, version)}


RUNS = _runs("1.0")   # the sums below use 1.0's schedule


def usage(result):
    u = result.usage
    return (u.compute, u.memory_pages, u.storage_reads, u.storage_writes, u.storage_new_slots,
            u.storage_units)


def le(value: int) -> bytes:
    return value.to_bytes(8, "little")


def test_counter_counts_and_charges_a_new_slot_once():
    first, second, third = (RUNS[("counter", i)] for i in (1, 2, 3))
    # push 1 + sload 50 + push 1 + add 1 + push 1 + dup2 1 + sstore (100 + new slot 400)
    # + push 1 + swap1 1 + mstore (3 + one page 32) + push 1 + push 1 + return 1 = 595
    assert (first.status, first.output) == ("success", le(1))
    assert usage(first) == (595, 1, 1, 1, 1, 1 + 4 + 16)
    assert first.fee == 595 + 100 * 1 + 50 * 21
    assert [(c.address, c.key, c.before, c.after) for c in first.state_changes] == [(0x100, 0, 0, 1)]
    # The slot exists now: no new-slot cost or units.
    assert (second.output, usage(second)) == (le(2), (195, 1, 1, 1, 0, 5))
    assert (third.output, usage(third)) == (le(3), (195, 1, 1, 1, 0, 5))
    assert third.fee == 195 + 100 + 250


def test_token_transfer_moves_balance_and_emits_transfer():
    ok = RUNS[("token", 1)]
    # checks 60 (caller 1, sload 50, push 1, calldataload 2, dup2 dup2 ltu 3, jumpi 3)
    # + debit 105 (dup2 dup2 sub 3, caller 1, swap1 1, sstore 100 on an existing slot)
    # + credit 556 (push 1, calldataload 2, dup1 1, sload 50, dup3 1, add 1, sstore 100 + 400)
    # + event data 37 (push 1, dup2 1, mstore 3 + page 32)
    # + log 58 (push push push caller push 5, calldataload 2, log3 20 + 3*10 + one word 1)
    assert ok.status == "success" and ok.output == b""
    assert usage(ok) == (816, 1, 2, 2, 1, 2 * 1 + 2 * 4 + 16)
    assert ok.fee == 816 + 100 + 50 * 26
    assert [(c.address, c.key, c.before, c.after) for c in ok.state_changes] == [
        (0x200, 0xA, 1000, 700), (0x200, 0xB, 0, 300)]
    assert [(e.address, e.topics, e.data) for e in ok.events] == [
        (0x200, (int.from_bytes(b"TRANSFER", "big"), 0xA, 0xB), le(300))]


def test_token_refuses_an_overdraft_with_a_revert_message():
    refused = RUNS[("token", 2)]
    # checks 60, then push push datasize 3 + datacopy (3 + page 32 + 3 words for 20 bytes)
    # + push datasize revert 3 = 104; one storage read.
    assert refused.status == "reverted"
    assert refused.output == b"insufficient balance"
    assert usage(refused) == (104, 1, 1, 0, 0, 1)
    assert refused.fee == 104 + 100 + 50
    assert refused.state_changes == () and refused.events == ()


def test_proxy_sees_callee_output_and_a_reverted_callee_leaves_no_trace():
    r = RUNS[("proxy", 1)]
    # proxy: 4 pushes + call 100 = 104; counter callee (slot holds 41) = 195;
    # push swap1 mstore (3 + page 32) = 37; 3 pushes + returndatacopy (3 + 1 word) = 7;
    # 4 pushes + call 100 = 104; reverter callee: push push sstore (100 + 400) push push
    # mstore8 (3 + page 32) push push revert = 542; push swap1 mstore 5; push push return 3.
    assert r.status == "success"
    assert r.output == le(1) + le(42) + le(0)
    assert r.usage.compute == 104 + 195 + 37 + 7 + 104 + 542 + 5 + 3
    # Peak pages: the proxy's page and the reverter's page alive together.
    assert r.usage.memory_pages == 2
    # Storage units are consumption: the reverted write still counts (4 + 16), plus the
    # counter's read and write (1 + 4).
    assert r.usage.storage_units == 25
    assert [(c.address, c.key, c.before, c.after) for c in r.state_changes] == [(0x101, 0, 41, 42)]
    # Each call record carries what that callee used, reverted or not: the counter read and
    # rewrote its slot (1 + 4 units) on one page; the reverter wrote a new slot (4 + 16).
    assert [(c.callee, c.status, c.compute, c.memory_pages, c.storage_reads, c.storage_writes,
             c.storage_new_slots, c.storage_units) for c in r.calls] == [
        (0x101, "success", 195, 1, 1, 1, 0, 5), (0x102, "reverted", 542, 1, 0, 1, 1, 20)]


def test_hashing_returns_sha256_of_call_data():
    r = RUNS[("hashing", 1)]
    digest = hashlib.sha256(b"abc").digest()
    # calldatacopy: 3 pushes + 3 + page 32 + 1 word = 39; sha256: 3 pushes + 30 + second page
    # 32 + one block 6 = 71; log1: 3 pushes + 30 + 4 words = 37; return with pushes = 3.
    assert r.status == "success" and r.output == digest
    assert usage(r) == (150, 2, 0, 0, 0, 0)
    assert r.fee == 150 + 200
    assert [(e.topics, e.data) for e in r.events] == [((3,), digest)]


def test_hashing_under_1_1_costs_one_block_3_less_and_answers_the_same():
    # 1.1 item P1: hash block_cost 6 -> 3. One block of "abc": 150 - 3 = 147 compute; the
    # fee falls by as much; output, events and every other dimension stay.
    old, new = RUNS[("hashing", 1)], _runs("1.1")[("hashing", 1)]
    assert usage(new) == (147, 2, 0, 0, 0, 0) and new.fee == 147 + 200
    assert (new.status, new.output, new.events) == (old.status, old.output, old.events)


def test_loop_returns_the_recurrence_and_charges_per_iteration():
    r = RUNS[("loop", 1)]
    acc = 0
    for i in range(10):
        acc = (acc * 31 + i) % 2**64
    # prologue 5; per iteration 16 (mul 3, jumpi 3, ten others 1); epilogue 41 (mstore grows
    # a page: 3 + 32).
    assert r.output == le(acc)
    assert usage(r) == (5 + 10 * 16 + 41, 1, 0, 0, 0, 0)
