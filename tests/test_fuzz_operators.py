"""Every generation, mutation, malformation and shrinking step of the fuzzer is total over every
request the pool can hold (hypothesis over arbitrary FuzzInputs, degenerate ones included).

The pool holds what ``conformance.fuzz.state.request_problem`` accepts: a FuzzInput in canonical
JSON form whose vector input is schema-valid. That admits requests no generator writes: no
contract at all, an entry address outside every contract or outside the word range (up to 128
bits), empty rows, raw containers of any bytes, limits that are negative, fractional, booleans
or beyond the maximum, policy and isolation names the spec does not know, call data and code at
and past their maximal sizes. The strategy below draws all of those; each operator must return
a request (no exception) whose vector input is again schema-valid. Requests are of every spec
version, each contract's rows of any container version (a 1.1 mnemonic in a 1.0 container too:
a pool may hold what a splice of two campaigns' rows would make).
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings, strategies as st

from conformance.fuzz.findings import program_text
from conformance.fuzz.build import ENTRY, MALFORMATIONS, MASK, MISSING, has_loop, malform, request_bound
from conformance.fuzz.generate import generate
from conformance.fuzz.mutate import MUTATIONS, mutate, mutate_once, tune_limit
import spec
from conformance.fuzz.program import ACCESS_ORDER, Code, FuzzInput, disassemble
from conformance.fuzz.shrink import Shrinker
from conformance.fuzz.state import request_problem
from conformance.corpus.vector import isolation_levels
from reference_vm.container import build as build_container

TABLE = spec.load(spec.latest())         # every mnemonic of every version (versions add rows)
VERSIONS = spec.names()
MACHINE = TABLE.limits["machine"]
WIDE = (1 << 128) - 1                     # a request word may state up to 128 bits
LOW, HIGH = TABLE.limits["minimum"], TABLE.limits["maximum"]
MNEMONICS = sorted(TABLE.by_mnemonic)

words = st.one_of(st.sampled_from([0, 1, ENTRY, ENTRY + 1, MISSING, MASK - 1, MASK, MASK + 1, WIDE]),
                  st.integers(0, MASK), st.integers(0, WIDE))
names = st.from_regex(r"\A[a-z][a-z_]{0,10}\Z")


@st.composite
def codes(draw) -> Code:
    shape = draw(st.sampled_from(["rows", "rows", "rows", "empty rows", "raw", "raw container", "maximal"]))
    if shape in ("rows", "empty rows"):
        rows = [] if shape == "empty rows" else draw(st.lists(st.tuples(
            st.sampled_from(MNEMONICS), st.one_of(st.integers(0, 8), st.integers(0, MASK), st.integers(0, WIDE))),
            min_size=1, max_size=24))
        return Code(rows=rows, data=draw(st.binary(max_size=40)), version=draw(st.sampled_from(VERSIONS)))
    if shape == "raw":
        return Code(raw=draw(st.binary(max_size=40)))
    if shape == "raw container":
        return Code(raw=build_container(draw(st.binary(max_size=40)), draw(st.binary(max_size=16)),
                                        spec.version(draw(st.sampled_from(VERSIONS))).number))
    def build(code: bytes, data: bytes) -> bytes:
        return build_container(code, data, spec.version(draw(st.sampled_from(VERSIONS))).number)
    # at and past the code and data sizes of the machine
    which = draw(st.sampled_from(["code", "code+1", "data", "data+1"]))
    n = MACHINE["code_size" if which.startswith("code") else "data_size"] + which.endswith("+1")
    return Code(raw=build(bytes(n), b"")) if which.startswith("code") else Code(raw=build(b"\x00", bytes(n)))


limits_values = st.one_of(
    st.integers(-2, 3), st.sampled_from([20000, 100000, MASK, MASK + 1, 1.5, 1000.0, True, False]),
    st.integers(0, WIDE))


@st.composite
def limits(draw) -> dict:
    out = {}
    for name in ("compute", "memory_pages", "storage_units"):
        out[name] = draw(st.one_of(limits_values, st.sampled_from([LOW[name] - 1, LOW[name], HIGH[name],
                                                                   HIGH[name] + 1])))
    return out


@st.composite
def policies(draw) -> dict:
    fields = TABLE.policy["fields"]
    policy = {n: draw(st.one_of(st.sampled_from(list(fields[n]["values"])), names))
              for n in ("time_access", "randomness", "external_call")}
    policy["storage_access"] = draw(st.one_of(st.sampled_from(ACCESS_ORDER), names))
    ops = st.lists(st.one_of(st.sampled_from(MNEMONICS + sorted(TABLE.instruction_types)), st.text(max_size=8)),
                   max_size=4)
    policy["allowed"] = draw(st.one_of(st.none(), ops))
    policy["forbidden"] = draw(ops)
    return policy


@st.composite
def fuzz_inputs(draw) -> FuzzInput:
    """Any request the pool can hold, degenerate ones often."""
    contracts = draw(st.dictionaries(words, st.tuples(codes(), st.dictionaries(words, st.integers(1, WIDE),
                                                                              max_size=3)), max_size=4))
    where = draw(st.sampled_from(["a contract", "a word", "beyond a word"]))
    to = draw(st.sampled_from(sorted(contracts))) if contracts and where == "a contract" else \
        draw(st.integers(MASK + 1, WIDE)) if where == "beyond a word" else draw(words)
    call_data = draw(st.one_of(st.binary(max_size=80),
                               st.sampled_from([bytes(MACHINE["call_data_size"]),
                                                bytes(MACHINE["call_data_size"] + 1)])))
    version = draw(st.sampled_from(VERSIONS))
    inp = FuzzInput(contracts, to, draw(words), call_data, draw(words),
                    draw(st.one_of(st.just(bytes(32)), st.binary(max_size=40))), draw(policies()),
                    draw(st.one_of(st.sampled_from(sorted(isolation_levels(version))), names)), draw(limits()),
                    version)
    return inp


def check_request(inp: FuzzInput) -> None:
    """What a campaign does with a request it generated: each conversion works and the pool
    (and a resumed campaign) accepts it."""
    assert isinstance(inp, FuzzInput)
    inp.vector_input()
    inp.mnemonics()
    inp.size()
    has_loop(inp)
    program_text(inp)
    problem = request_problem(inp.to_json())
    assert problem is None, problem


def as_pool(inp: FuzzInput) -> FuzzInput:
    """The entry as a resumed campaign reads it back."""
    import json
    return FuzzInput.from_json(json.loads(json.dumps(inp.to_json())))


OPERATORS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))


def test_the_strategy_draws_only_requests_the_pool_can_hold_and_the_degenerate_ones():
    """Every drawn request passes the resume check; and the strategy does reach the cases the
    operators crashed or could crash on (no contracts, an entry outside them, empty rows,
    limits out of range, unknown storage access)."""
    seen = set()

    @OPERATORS
    @given(fuzz_inputs())
    def draw(inp):
        assert request_problem(as_pool(inp).to_json()) is None
        seen.add("no contracts" if not inp.contracts else "entry missing" if inp.to not in inp.contracts else "x")
        seen.update({"to beyond a word"} if inp.to > MASK else set())
        seen.update({"empty rows"} if any(c.rows == [] for c, _ in inp.contracts.values()) else set())
        seen.update({"limit out of range"} if any(not isinstance(v, int) or isinstance(v, bool) or v < 0
                                                  for v in inp.limits.values()) else set())
        seen.update({"unknown storage access"} if inp.policy["storage_access"] not in ACCESS_ORDER else set())
    draw()
    assert {"no contracts", "entry missing", "to beyond a word", "empty rows", "limit out of range",
            "unknown storage access"} <= seen


@OPERATORS
@given(fuzz_inputs(), st.integers(0, MUTATIONS - 1), st.integers(0, 2 ** 32))
def test_every_mutation_is_total(inp, kind, seed):
    inp = as_pool(inp)
    if (has_loop(inp) or kind == 10) and isinstance(inp.limits["compute"], int):    # 10 runs the reference
        inp.limits["compute"] = min(inp.limits["compute"], 20000)
    mutate_once(random.Random(seed), inp, [inp.copy()], kind)
    check_request(inp.fixed_isolation())


@OPERATORS
@given(fuzz_inputs(), st.integers(0, MALFORMATIONS - 1), st.integers(0, 2 ** 32))
def test_every_malformation_is_total(inp, kind, seed):
    inp = as_pool(inp)
    malform(random.Random(seed), inp, kind)
    assert inp.contracts                       # it corrupted a container (one made if there was none)
    check_request(inp)


@OPERATORS
@given(fuzz_inputs(), st.integers(0, 2 ** 32))
def test_request_bounds_limit_tuning_and_isolation_are_total(inp, seed):
    inp = as_pool(inp)
    rng = random.Random(seed)
    request_bound(rng, inp)
    check_request(inp)
    tune_limit(rng, inp)
    check_request(inp.fixed_isolation())
    assert inp.policy["storage_access"] in ACCESS_ORDER or inp.policy["storage_access"] == as_pool(inp).policy[
        "storage_access"]


@OPERATORS
@given(st.lists(fuzz_inputs(), min_size=1, max_size=3), st.integers(0, 2 ** 20), st.integers(0, 1 << 30))
def test_generation_from_any_pool_is_total(pool, seed, index):
    pool = [as_pool(p) for p in pool]
    for p in pool:
        if isinstance(p.limits["compute"], int):      # the reference runs them (limit tuning): keep them quick
            p.limits["compute"] = min(p.limits["compute"], 20000)
    for i in range(index, index + 4):
        check_request(generate(seed, i, pool, pool[0].version))
    check_request(mutate(random.Random(seed), pool[0].copy(), pool))


# Shrinking a maximal request costs a copy and a digest per candidate (up to the budget's
# looks): fewer examples keep this test to about a minute on a 2-core machine.
@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(fuzz_inputs(), st.integers(0, 2 ** 32))
def test_shrinking_is_total(inp, seed):
    """The shrinker over any request, with a predicate that keeps a random half of the
    candidates (each candidate must be a request too)."""
    inp = as_pool(inp)
    rng = random.Random(seed)

    def keeps(cand: FuzzInput) -> bool:
        check_request(cand)
        return rng.random() < 0.5
    small = Shrinker(keeps, budget=60).shrink(inp)
    check_request(small)
    for code, _ in small.contracts.values():
        disassemble(code)


def test_the_request_that_stopped_campaign_seed_1_is_malformed_without_a_crash():
    """Request 95,077 of ``rtwo-vm fuzz --seed 1``: a pool entry with no contract whose entry
    address is 2^64 (outside the word range), drawn for malformation, made the campaign die with
    IndexError (``rng.choice`` of no contracts). Every malformation of such a request now makes
    a contract at a word address and corrupts it."""
    for kind in range(MALFORMATIONS):
        for seed in range(20):
            inp = FuzzInput(contracts={}, to=1 << 64)
            malform(random.Random(seed), inp, kind)
            assert list(inp.contracts) == [ENTRY] and inp.to == 1 << 64
            assert inp.contracts[ENTRY][0].raw is not None        # a corrupted container
            check_request(inp)
    inp = FuzzInput(contracts={}, to=MISSING)
    malform(random.Random(0), inp)
    assert list(inp.contracts) == [MISSING]
