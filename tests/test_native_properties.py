"""The property tests of the compiled engine (tests/test_compiled_properties.py: random programs
and random loops at every limit boundary of every resource, reduced word widths) run for the
native tier: every region the native tier can take compiled to machine code at once (eager,
also blocks of one instruction and loops full of handlers), tiered (machine code after a few
compute units on the compiled tier, so that regions go native in the middle of a run), and
warm (code compiled by an earlier run). Programs come with the version they run under, as
there (1.1's instructions in 1.1 containers, 1.0 code under both versions). Expectations are
the reference's results."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

from hypothesis import given, settings, strategies as st  # noqa: E402

import native_vm  # noqa: E402
from reference_vm import Contract, Limits, Message, WorldState, execute  # noqa: E402
from test_compiled_properties import (  # noqa: E402
    AMPLE, CHECKS, CONTEXT, _run, boundaries, loop_programs, random_programs,
)

EAGER = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1, per_handler=0)
TIERED = native_vm.Engine(threshold=2, native_work=40, min_block=4, per_handler=1)
ENGINES = (EAGER, TIERED)


def agree_at_every_boundary(code: tuple[str, bytes], call_data: bytes) -> None:
    ample = _run(execute, code, call_data, AMPLE)
    for limits in [AMPLE, *boundaries(ample.usage)]:
        want = _run(execute, code, call_data, limits).canonical_json()
        for engine in ENGINES:
            for _ in range(2):   # the second run finds the first run's machine code
                assert _run(engine.execute, code, call_data, limits).canonical_json() == want, limits
    # No region fell back for a fault of the native tier itself.
    for engine in ENGINES:
        assert engine.native_failures == engine.compile_failures == 0


@CHECKS
@given(random_programs(), st.binary(max_size=24))
def test_random_programs_agree_with_the_reference_at_every_limit_boundary(code, call_data):
    agree_at_every_boundary(code, call_data)


@CHECKS
@given(loop_programs(), st.binary(max_size=24))
def test_random_loops_agree_with_the_reference_at_every_limit_boundary(code, call_data):
    agree_at_every_boundary(code, call_data)


@settings(CHECKS, max_examples=100)
@given(st.one_of(random_programs(), loop_programs()), st.binary(max_size=24),
       st.sampled_from([8, 16, 32]), st.integers(0, 5000))
def test_reduced_word_widths_agree_with_the_reference(program, call_data, bits, compute):
    version, code = program
    state = WorldState({0x10: Contract(code, {3: 5}), 0x11: Contract(code)})
    message = Message(0x10, 0x1, call_data)
    limits = Limits(compute=compute, memory_pages=2, storage_units=100)
    want = execute(state, message, CONTEXT, None, limits, version=version,
                   word_bits=bits).canonical_json()
    for engine in ENGINES:
        for _ in range(2):
            got = engine.execute(state, message, CONTEXT, None, limits, version=version,
                                 word_bits=bits)
            assert got.canonical_json() == want
    for engine in ENGINES:
        assert engine.native_failures == engine.compile_failures == 0
