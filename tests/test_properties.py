"""Properties over random programs and random bytes (hypothesis).

- No input makes the interpreter raise or report INTERNAL_ERROR.
- The fast path (segments checked at once) and the defining path (every instruction
  stepped, as when tracing) give identical results.
- Repeated runs give byte-identical canonical results.
- Usage never passes a limit.
- Disassembly assembles back to the same bytes.
"""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings, strategies as st

import spec
from reference_vm import (
    Context, Contract, Limits, Message, Policy, WorldState, assemble, disassemble, execute,
)
from conformance.corpus.random_source import encode
from reference_vm.container import build
from reference_vm.result import STATUSES
from reference_vm.trace import JsonLinesTracer
from conftest import BASE_VERSION as V

NUMBER = spec.load(V).number  # the base version's containers

TABLE = spec.load(V)
ENTRY, OTHER = 0x100, 0x101
OPEN_POLICY = Policy(time_access="allowed", randomness="seeded")
SMALL = Limits(compute=20_000, memory_pages=4, storage_units=400)

# Interesting immediates and operands: boundaries of every shift, sign and size.
EDGE_WORDS = [0, 1, 2, 7, 8, 31, 63, 64, 65, 255, 4095, 4096, 2**31, 2**63 - 1, 2**63,
              2**64 - 1, 2**64 - 2]


@st.composite
def programs(draw, max_len: int = 40) -> bytes:
    """A valid container: a few pushes so that most instructions find operands, random
    instructions with static targets on instruction boundaries, then a halt."""
    primed = draw(st.integers(0, 16))
    n = draw(st.integers(1, max_len))
    rows = [TABLE.by_mnemonic["PUSH8"]] * primed
    rows += [draw(st.sampled_from(TABLE.instructions)) for _ in range(n)]
    rows.append(TABLE.by_mnemonic[draw(st.sampled_from(["STOP", "RETURN", "REVERT", "TRAP"]))])
    code = encode(rows, lambda offsets: draw(st.sampled_from(offsets)),
                  lambda size: draw(st.one_of(st.sampled_from(EDGE_WORDS),
                                              st.integers(0, 2**64 - 1), st.integers(0, 64))))
    data = draw(st.binary(max_size=16))
    return build(code, data, NUMBER)


def _run(code: bytes, call_data: bytes, *, traced: bool = False, limits: Limits = SMALL,
         storage: dict | None = None):
    state = WorldState({ENTRY: Contract(code, storage or {}), OTHER: Contract(code)})
    tracer = JsonLinesTracer(io.StringIO()) if traced else None
    return execute(state, Message(ENTRY, 0xCA11, call_data),
                   Context(block_time=1_700_000_000, random_seed=bytes(range(32))),
                   OPEN_POLICY, limits, tracer=tracer, version=V)


limits_strategy = st.one_of(
    st.just(SMALL),
    st.builds(Limits, compute=st.integers(0, 3000), memory_pages=st.integers(0, 3),
              storage_units=st.integers(0, 60)))

CHECKS = settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@CHECKS
@given(programs(), st.binary(max_size=24), limits_strategy)
def test_random_programs_end_in_spec_outcomes_and_paths_agree(code, call_data, limits):
    fast = _run(code, call_data, limits=limits)
    assert fast.status in STATUSES and fast.status != "internal", fast
    if fast.error is not None:
        assert fast.error in TABLE.errors
    stepped = _run(code, call_data, traced=True, limits=limits)
    assert stepped.canonical_json() == fast.canonical_json()
    assert _run(code, call_data, limits=limits).canonical_json() == fast.canonical_json()


@CHECKS
@given(programs(), st.binary(max_size=24), limits_strategy)
def test_usage_never_passes_a_limit(code, call_data, limits):
    result = _run(code, call_data, limits=limits)
    assert result.usage.compute <= limits.compute
    assert result.usage.memory_pages <= limits.memory_pages
    assert result.usage.storage_units <= limits.storage_units


@CHECKS
@given(st.binary(max_size=64))
def test_random_bytes_never_raise(blob):
    for code in (blob, build(blob, b"", NUMBER), build(blob[:len(blob) // 2], blob[len(blob) // 2:], NUMBER)):
        result = _run(code, b"")
        assert result.status in STATUSES and result.status != "internal", result


@CHECKS
@given(st.binary(max_size=80), st.binary(max_size=40))
def test_disassembly_round_trips_any_code(code, data):
    blob = build(code, data, NUMBER)
    assert assemble(disassemble(blob), V) == blob
    assert assemble(disassemble(blob, offsets=False), V) == blob


@CHECKS
@given(programs())
def test_disassembly_round_trips_valid_programs(blob):
    assert assemble(disassemble(blob), V) == blob
