"""Context instructions: TIME and RANDOM, and their policy gates."""

from __future__ import annotations

import hashlib
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import pytest
from hypothesis import given, settings, strategies as st

from conftest import returning_top, run_asm, word_out
from opspec import (
    S, PAGE_COST, COUNTER_SIZE, M, cost, fee, usage, RET_COLD, words,
    returning_stack as returning_words,
)
from reference_vm import Context, Limits, Policy

B = 0xB0B
TIME_OK = Policy(time_access="allowed")
RAND_OK = Policy(randomness="seeded")
SEED = bytes(range(32))


def random_word(seed: bytes, k: int) -> int:
    digest = hashlib.sha256(seed + k.to_bytes(COUNTER_SIZE, "little")).digest()
    return int.from_bytes(digest[:8], "little")


def test_table_rows():
    assert (S.by_mnemonic["TIME"].gate, S.by_mnemonic["RANDOM"].gate) == ("time", "randomness")
    for op in ("TIME", "RANDOM"):
        ins = S.by_mnemonic[op]
        assert (ins.inputs, ins.outputs, ins.cost_rule, ins.determinism) == (0, 1, None, "gated")
    assert S.policy["fields"]["time_access"]["default"] == "forbidden"
    assert S.policy["fields"]["randomness"]["default"] == "forbidden"


# ---- TIME ----------------------------------------------------------------------------------

@pytest.mark.parametrize("block_time", [0, 1, 1_700_000_000, 2 ** 63, M])
def test_time(block_time):
    result = run_asm(returning_top("time"), policy=TIME_OK, context=Context(block_time=block_time))
    assert word_out(result) == block_time
    compute = cost("TIME") + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


def test_time_default_context_is_zero():
    assert word_out(run_asm(returning_top("time"), policy=TIME_OK)) == 0


def test_time_is_constant_within_execution_and_in_callee():
    call = f"push8 {B}\npush8 -1\npush1 0\npush1 0\ncall\npop"
    body = (f"time\n{call}\npush1 0\npush1 0\npush1 8\nreturndatacopy\npush1 0\nmload\ntime")
    result = run_asm(returning_words(body, 3), policy=TIME_OK, context=Context(block_time=77),
                     others={B: returning_top("time")})
    assert words(result.output) == [77, 77, 77]


@pytest.mark.parametrize("src", ["time\nstop", "stop\ntime\nstop", "jump e\ntime\npop\ne:\nstop"])
def test_time_forbidden_by_default(src):
    result = run_asm(src, context=Context(block_time=5))
    assert (result.status, result.error, result.error_pc) == ("violation", "TIME_ACCESS_FORBIDDEN", None)
    assert result.output == b"" and usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0


def test_time_forbidden_explicitly():
    result = run_asm("time\nstop", policy=Policy(time_access="forbidden"))
    assert (result.status, result.error) == ("violation", "TIME_ACCESS_FORBIDDEN")


@pytest.mark.parametrize("op", ["time", "random"])
def test_overflow_on_full_stack(op):
    depth = S.limits["machine"]["stack_depth"]
    result = run_asm("push1 0\n" * depth + f"{op}\nstop", policy=Policy(time_access="allowed", randomness="seeded"))
    assert (result.status, result.error, result.error_pc) == ("fault", "STACK_OVERFLOW", 2 * depth)
    assert result.usage.compute == depth * cost("PUSH1")


@pytest.mark.parametrize("op", ["TIME", "RANDOM"])
def test_compute_limit_boundary(op):
    policy = Policy(time_access="allowed", randomness="seeded")
    src = f"{op.lower()}\nstop"
    assert run_asm(src, policy=policy, limits=Limits(compute=cost(op))).status == "success"
    bad = run_asm(src, policy=policy, limits=Limits(compute=cost(op) - 1))
    assert (bad.status, bad.error, bad.error_pc) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED", 0)
    assert bad.usage.compute == 0


@pytest.mark.parametrize("listing", [
    dict(forbidden_operations=("TIME",)), dict(forbidden_operations=("context",)),
    dict(allowed_operations=("RETURN", "STOP", "PUSH1", "SWAP1", "MSTORE")),
])
def test_time_forbidden_by_listing_even_when_allowed(listing):
    result = run_asm(returning_top("time"), policy=Policy(time_access="allowed", **listing))
    assert (result.status, result.error, result.error_pc) == ("violation", "INSTRUCTION_FORBIDDEN", None)


def test_allowed_operations_listing_time():
    policy = Policy(time_access="allowed", allowed_operations=("TIME", "stack", "MSTORE", "RETURN"))
    assert word_out(run_asm(returning_top("time"), policy=policy, context=Context(block_time=3))) == 3


# ---- RANDOM --------------------------------------------------------------------------------

def test_random_first_word():
    result = run_asm(returning_top("random"), policy=RAND_OK, context=Context(random_seed=SEED))
    assert word_out(result) == random_word(SEED, 0)
    compute = cost("RANDOM") + RET_COLD
    assert usage(result) == (compute, 1, 0, 0, 0, 0) and result.fee == fee(compute, 1)


def test_random_default_seed_is_zero_bytes():
    assert word_out(run_asm(returning_top("random"), policy=RAND_OK)) == random_word(bytes(32), 0)


def test_random_stream_advances():
    result = run_asm(returning_words("random\nrandom\nrandom", 3), policy=RAND_OK,
                     context=Context(random_seed=SEED))
    # returned top first: the third word (k=2) first
    assert words(result.output) == [random_word(SEED, 2), random_word(SEED, 1), random_word(SEED, 0)]
    assert len({random_word(SEED, k) for k in range(3)}) == 3


def test_random_same_in_every_execution():
    one = run_asm(returning_top("random"), policy=RAND_OK, context=Context(random_seed=SEED))
    two = run_asm(returning_top("random"), policy=RAND_OK, context=Context(random_seed=SEED))
    assert one.output == two.output and one.digest() == two.digest()


def test_random_depends_on_seed():
    other = bytes(31) + b"\x01"
    result = run_asm(returning_top("random"), policy=RAND_OK, context=Context(random_seed=other))
    assert word_out(result) == random_word(other, 0) != random_word(bytes(32), 0)


CALL_B = f"push8 {B}\npush8 -1\npush1 0\npush1 0\ncall\npop"


def test_random_counter_is_shared_by_frames():
    body = (f"random\n{CALL_B}\npush1 0\npush1 0\npush1 8\nreturndatacopy\npush1 0\nmload\nrandom")
    result = run_asm(returning_words(body, 3), policy=RAND_OK, context=Context(random_seed=SEED),
                     others={B: returning_top("random")})
    assert words(result.output) == [random_word(SEED, 2), random_word(SEED, 1), random_word(SEED, 0)]


def test_random_counter_advances_in_failed_callee():
    # The callee's RANDOM is the execution's k=0 word even though the callee reverts.
    result = run_asm(returning_top(f"{CALL_B}\nrandom"), policy=RAND_OK, context=Context(random_seed=SEED),
                     others={B: "random\npush1 0\npush1 0\nrevert"})
    assert word_out(result) == random_word(SEED, 1)


@pytest.mark.parametrize("src", ["random\nstop", "stop\nrandom\nstop"])
def test_random_forbidden_by_default(src):
    result = run_asm(src, context=Context(random_seed=SEED))
    assert (result.status, result.error, result.error_pc) == ("violation", "RANDOMNESS_FORBIDDEN", None)
    assert usage(result) == (0, 0, 0, 0, 0, 0) and result.fee == 0


def test_random_forbidden_explicitly():
    result = run_asm("random\nstop", policy=Policy(randomness="forbidden"))
    assert (result.status, result.error) == ("violation", "RANDOMNESS_FORBIDDEN")


def test_random_forbidden_by_listing():
    result = run_asm("random\nstop", policy=Policy(randomness="seeded", forbidden_operations=("RANDOM",)))
    assert (result.status, result.error) == ("violation", "INSTRUCTION_FORBIDDEN")


def test_time_gate_does_not_open_random():
    result = run_asm("time\nrandom\nstop", policy=TIME_OK)
    assert (result.status, result.error) == ("violation", "RANDOMNESS_FORBIDDEN")
    result = run_asm("time\nrandom\nstop", policy=RAND_OK)
    assert (result.status, result.error) == ("violation", "TIME_ACCESS_FORBIDDEN")


def test_time_and_random_together():
    policy = Policy(time_access="allowed", randomness="seeded")
    result = run_asm(returning_words("time\nrandom", 2), policy=policy,
                     context=Context(block_time=12, random_seed=SEED))
    assert words(result.output) == [random_word(SEED, 0), 12]
    compute = cost("TIME", "RANDOM") + 2 * cost("PUSH1", "SWAP1", "MSTORE") + cost("PUSH1", "PUSH1", "RETURN") + PAGE_COST
    assert result.usage.compute == compute


@settings(max_examples=30, deadline=None)
@given(seed=st.binary(min_size=32, max_size=32), n=st.integers(1, 5))
def test_property_random_stream(seed, n):
    result = run_asm(returning_words("random\n" * n, n), policy=RAND_OK, context=Context(random_seed=seed))
    assert words(result.output) == [random_word(seed, k) for k in reversed(range(n))]


@settings(max_examples=30, deadline=None)
@given(t=st.integers(0, M))
def test_property_time(t):
    assert word_out(run_asm(returning_top("time"), policy=TIME_OK, context=Context(block_time=t))) == t


# ---- binding order (chapter 4.4) -----------------------------------------------------------

@pytest.mark.parametrize("src,policy,error", [
    ("time\nrandom\nstop", Policy(), "TIME_ACCESS_FORBIDDEN"),          # first in offset order
    ("random\ntime\nstop", Policy(), "RANDOMNESS_FORBIDDEN"),
    ("time\nstop", Policy(time_access="allowed", forbidden_operations=("context",)), "INSTRUCTION_FORBIDDEN"),
    ("nop\ntime\nstop", Policy(forbidden_operations=("NOP",)), "INSTRUCTION_FORBIDDEN"),
    ("time\nnop\nstop", Policy(forbidden_operations=("NOP",)), "TIME_ACCESS_FORBIDDEN"),
    ("time\nstop", Policy(time_access="allowed", allowed_operations=("TIME",),
                          forbidden_operations=("TIME",)), "INSTRUCTION_FORBIDDEN"),
    ("stop", Policy(allowed_operations=()), "INSTRUCTION_FORBIDDEN"),
])
def test_binding_order(src, policy, error):
    result = run_asm(src, policy=policy)
    assert (result.status, result.error, result.error_pc) == ("violation", error, None)
    assert usage(result) == (0, 0, 0, 0, 0, 0) and result.calls == ()


@pytest.mark.parametrize("policy", [Policy(forbidden_operations=("time",)), Policy(time_access="yes"),
                                    Policy(allowed_operations=("Context",))])
def test_malformed_policy_is_rejected(policy):
    result = run_asm("time\nstop", policy=policy)
    assert (result.status, result.error) == ("rejected", "INVALID_REQUEST")
    assert result.fee == 0
