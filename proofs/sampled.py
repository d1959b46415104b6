"""Hypothesis-generated agreement inputs at 64 bits (replay.py's inputs format).

Operands mix uniform words, the edge words of every rule (0, 1, W-1, W, W+1, MIN, MAX, ...)
and small offsets, so memory and copy instructions mostly succeed while huge offsets still
exercise the limits. Runs are derandomized: the same examples every run.
"""

from __future__ import annotations

import functools

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from proofs.agreement import compare
from proofs.replay import POLICIES, callees
from proofs.words import width

BITS = 64
MASK = (1 << BITS) - 1
EDGES = sorted({0, 1, 2, 7, 8, 31, 32, 63, 64, 65, 255, 256, 4095, 4096, 4097,
                1 << 63, (1 << 63) - 1, (1 << 63) + 1, MASK, MASK - 1})


def operand():
    return st.one_of(st.integers(0, MASK), st.sampled_from(EDGES), st.integers(0, 300))


# The strategies that do not depend on earlier draws, made once (a strategy is validated
# on its first draw; making them per example was most of the cost of drawing).
OPERAND = operand()
LIMIT_MARGIN = st.one_of(st.integers(0, 600), st.just(10_000_000))
RETURN_STACK = st.lists(st.integers(0, 1000), max_size=3)
MEMORY = st.binary(max_size=64)
BYTES = st.binary(max_size=40)
SEED = st.binary(min_size=32, max_size=32)
WORD = st.integers(0, MASK)
POLICY = st.sampled_from(sorted(POLICIES))
# Instructions whose effects cross frames or end one get more examples per run (their inputs
# span callee programs, policies and output ranges): this many times the per-opcode count.
MORE_EXAMPLES = {"CALL": 4, "STATICCALL": 4, "RETURN": 4, "REVERT": 4}


@functools.cache
def ints(low: int, high: int):
    """st.integers(low, high), made once per range."""
    return st.integers(low, high)


@st.composite
def inputs(draw, mnemonic: str, version: str) -> dict:
    w = width(BITS, version)
    ins = w.spec.by_mnemonic[mnemonic]
    stack = [draw(OPERAND) for _ in range(ins.inputs)]
    extra = draw(ints(0, 3))
    pages = draw(ints(0, 2))
    live = pages + draw(ints(0, 2))
    used = draw(ints(0, 5_000))
    units = draw(ints(0, 200))
    keys = stack[-2:] + [draw(OPERAND)]
    x = {
        "mnemonic": mnemonic, "width": BITS, "version": version,
        "immediate": draw(ints(0, (1 << (8 * ins.immediate_size)) - 1)),
        "stack": stack, "height": len(stack) + extra,
        "return_stack": draw(RETURN_STACK),
        "pc": draw(ints(0, 1000)),
        "compute_used": used,
        "compute_limit": used + draw(LIMIT_MARGIN),
        "memory_pages": pages,
        "memory": draw(MEMORY).hex() if pages else "",
        "pages_live": live, "pages_peak": live + draw(ints(0, 2)),
        "memory_limit": live + draw(ints(0, 4)),
        "storage_units": units, "storage_limit": units + draw(ints(0, 40)),
        "storage": draw(st.dictionaries(st.sampled_from(keys), WORD, max_size=2)),
        "call_data": draw(BYTES).hex(),
        "data": draw(BYTES).hex(),
        "return_data": draw(BYTES).hex(),
        "block_time": draw(WORD),
        "seed": draw(SEED).hex(),
        "random_counter": draw(ints(0, 1000)), "depth": draw(ints(1, 64)),
    }
    table, slots = w.spec.by_mnemonic, w.num.transient_slots
    if slots is not None:    # from 1.1: transient slots at the keys the stack names
        x["transient"] = draw(st.dictionaries(st.sampled_from(keys), WORD, max_size=2))
        own = sum(1 for v in x["transient"].values() if v)
        # Other contracts' slots: none, one, or the limit reached or one short of it.
        x["transient_alive"] = min(slots, own + draw(st.sampled_from([0, 1, slots - 1, slots])))
    if "STATICCALL" in table:
        x["read_only"] = x["depth"] > 1 and draw(st.booleans())
    if mnemonic in ("CALL", "STATICCALL"):
        x["callee"] = draw(st.sampled_from(sorted(callees(version))))
        x["policy"] = draw(POLICY)
        if x["callee"] == "spin":  # keep the callee's loop short
            x["stack"][1] = draw(ints(0, 300))
        if x["stack"][0] == 0x100:
            x["stack"][0] = 0x200
        x["address"] = 0x100
    return x


def examples_for(mnemonic: str, examples: int) -> int:
    """The examples a run with ``examples`` per opcode gives ``mnemonic`` (MORE_EXAMPLES)."""
    return examples * MORE_EXAMPLES.get(mnemonic, 1)


# Fixed inputs run before the drawn ones: TSTORE's new-slot rule (5.6.8 step 1) at the values
# where "value is not 0 and the slot is 0" turns (0, 1, the largest word) into an empty slot
# and a set one; the branch inputs meet only one value per branch.
def edges(mnemonic: str, version: str) -> list[dict]:
    if mnemonic != "TSTORE" or width(BITS, version).num.transient_slots is None:
        return []
    return [{"mnemonic": "TSTORE", "width": BITS, "version": version, "stack": [7, value],
             "transient": {7: held} if held else {}, "transient_alive": 1 if held else 0,
             "compute_used": 100, "compute_limit": 10_000}
            for value in (0, 1, MASK) for held in (0, 5)]


def check(mnemonic: str, examples: int, version: str, handler=None, model=None) -> list[dict]:
    """Run the fixed ``edges`` then ``examples_for(mnemonic, examples)`` derandomized
    examples; return the (shrunk) disagreement, if any."""
    for x in edges(mnemonic, version):
        diffs = compare(x, handler, model)
        if diffs:
            return [{"inputs": x, "differences": diffs}]
    found: list[dict] = []
    examples = examples_for(mnemonic, examples)

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(inputs(mnemonic, version))
    def agree(x):
        diffs = compare(x, handler, model)
        if diffs:
            found[:] = [{"inputs": x, "differences": diffs}]
            raise AssertionError(diffs)

    try:
        agree()
    except AssertionError:
        pass
    return found
