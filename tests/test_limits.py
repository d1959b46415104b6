"""Every example at limit - 1, limit and limit + 1 in each resource dimension.

At exactly the usage it needs, and one above, a call gives the same result as with the
default limits; one below, it halts with that dimension's exhaustion code (for a single-frame
call) or at least gives a different result that still respects the limit.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from reference_vm import Limits
from rtwo_vm.examples import requests_with_results

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
# the boundaries hold in every version: the examples run under each
PAIRS = [pair for version in ("1.0", "1.1") for f in sorted(EXAMPLES.glob("*.toml"))
         for pair in requests_with_results(f, version)]
DIMENSIONS = {"compute": ("compute", "COMPUTE_LIMIT_EXCEEDED"),
              "memory_pages": ("memory_pages", "MEMORY_LIMIT_EXCEEDED"),
              "storage_units": ("storage_units", "STORAGE_LIMIT_EXCEEDED")}
NESTED = {"proxy"}  # scenarios whose calls run more than one frame


@pytest.mark.parametrize("pair", PAIRS, ids=[f"{r.version}-{r.scenario}-{r.index}" for r, _ in PAIRS])
@pytest.mark.parametrize("dimension", list(DIMENSIONS))
def test_limit_boundaries(pair, dimension):
    request, full = pair
    usage_field, code = DIMENSIONS[dimension]
    used = getattr(full.usage, usage_field)
    for limit in (used, used + 1):
        at = request.run(replace(Limits(), **{dimension: limit}))
        assert at.canonical_json() == full.canonical_json(), (dimension, limit)
    if used == 0:
        return
    below = request.run(replace(Limits(), **{dimension: used - 1}))
    assert getattr(below.usage, usage_field) <= used - 1
    if request.scenario in NESTED:
        assert below.canonical_json() != full.canonical_json()
    else:
        assert (below.status, below.error) == ("exhausted", code)
        assert below.state_changes == () and below.events == () and below.output == b""
