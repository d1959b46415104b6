"""Hypothesis-generated agreement inputs at 64 bits (replay.py's inputs format).

Operands mix uniform words, the edge words of every rule (0, 1, W-1, W, W+1, MIN, MAX, ...)
and small offsets, so memory and copy instructions mostly succeed while huge offsets still
exercise the limits. Runs are derandomized: the same examples every run.
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from proofs.agreement import compare
from proofs.replay import CALLEES
from proofs.words import SPEC

BITS = 64
MASK = (1 << BITS) - 1
EDGES = sorted({0, 1, 2, 7, 8, 31, 32, 63, 64, 65, 255, 256, 4095, 4096, 4097,
                1 << 63, (1 << 63) - 1, (1 << 63) + 1, MASK, MASK - 1})


def operand():
    return st.one_of(st.integers(0, MASK), st.sampled_from(EDGES), st.integers(0, 300))


@st.composite
def inputs(draw, mnemonic: str) -> dict:
    ins = SPEC.by_mnemonic[mnemonic]
    stack = [draw(operand()) for _ in range(ins.inputs)]
    extra = draw(st.integers(0, 3))
    pages = draw(st.integers(0, 2))
    live = pages + draw(st.integers(0, 2))
    used = draw(st.integers(0, 5_000))
    units = draw(st.integers(0, 200))
    keys = stack[-2:] + [draw(operand())]
    x = {
        "mnemonic": mnemonic, "width": BITS,
        "immediate": draw(st.integers(0, (1 << (8 * ins.immediate_size)) - 1)),
        "stack": stack, "height": len(stack) + extra,
        "return_stack": draw(st.lists(st.integers(0, 1000), max_size=3)),
        "pc": draw(st.integers(0, 1000)),
        "compute_used": used,
        "compute_limit": used + draw(st.one_of(st.integers(0, 600), st.just(10_000_000))),
        "memory_pages": pages,
        "memory": draw(st.binary(max_size=64)).hex() if pages else "",
        "pages_live": live, "pages_peak": live + draw(st.integers(0, 2)),
        "memory_limit": live + draw(st.integers(0, 4)),
        "storage_units": units, "storage_limit": units + draw(st.integers(0, 40)),
        "storage": draw(st.dictionaries(st.sampled_from(keys), st.integers(0, MASK),
                                        max_size=2)),
        "call_data": draw(st.binary(max_size=40)).hex(),
        "data": draw(st.binary(max_size=40)).hex(),
        "return_data": draw(st.binary(max_size=40)).hex(),
        "block_time": draw(st.integers(0, MASK)),
        "seed": draw(st.binary(min_size=32, max_size=32)).hex(),
        "random_counter": draw(st.integers(0, 1000)), "depth": draw(st.integers(1, 64)),
    }
    if mnemonic == "CALL":
        x["callee"] = draw(st.sampled_from(sorted(CALLEES)))
        if x["callee"] == "spin":  # keep the callee's loop short
            x["stack"][1] = draw(st.integers(0, 300))
        if x["stack"][0] == 0x100:
            x["stack"][0] = 0x200
        x["address"] = 0x100
    return x


def check(mnemonic: str, examples: int, handler=None, model=None) -> list[dict]:
    """Run ``examples`` derandomized examples; return the (shrunk) disagreement, if any."""
    found: list[dict] = []

    @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.generate, Phase.shrink])
    @given(inputs(mnemonic))
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
