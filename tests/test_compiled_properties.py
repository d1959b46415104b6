"""Properties of the compiled engine over random programs (hypothesis): at every limit
boundary of every resource, its canonical result is the reference's, compiled at once
(threshold 1, profiled from the first run), tiered (threshold 2, first runs interpreted) and
warm (code compiled by an earlier run); and
with a tracer it writes the reference's trace.

Two program shapes: the project's random programs (random instructions with static targets,
as in test_properties) and loops (a random stack-neutral body of any instructions, jumps and
subroutine calls inside it, closed by a JUMPI back to the head), so that counted loops, loops
made of several segments, loops with handler calls and nested calls are compiled and meet
their limits mid-loop.

Every program is drawn with a version to run under and a container version (the same or an
older one: a VM of 1.1 runs 1.0 containers, chapter 3.2.1), its instructions from that
container version's table, so that 1.1's instructions run in 1.1 containers and 1.0 code runs
under both versions.
"""

from __future__ import annotations

import io

from hypothesis import HealthCheck, given, settings, strategies as st

import spec
from compiled_vm import Engine
from conformance.corpus.random_source import EDGE_WORDS, encode
from reference_vm import Context, Contract, Limits, Message, Policy, WorldState, execute
from reference_vm.container import build
from reference_vm.trace import JsonLinesTracer

VERSIONS = tuple(v.version for v in spec.versions())
TABLES = {version: spec.load(version) for version in VERSIONS}
TABLE = TABLES[VERSIONS[0]]      # rows every version has (PUSH8, POP, JUMPI, the halts)
ENTRY, OTHER = 0x100, 0x101
OPEN = Policy(time_access="allowed", randomness="seeded")
CONTEXT = Context(block_time=1_700_000_000, random_seed=bytes(range(32)))
AMPLE = Limits(compute=30_000, memory_pages=4, storage_units=400)
BRANCHES = [TABLE.by_mnemonic[m] for m in ("JUMP", "JUMPI", "CALLSUB", "RETSUB")]
PUSH8, POP, JUMPI = (TABLE.by_mnemonic[m] for m in ("PUSH8", "POP", "JUMPI"))
HALTS = ["STOP", "RETURN", "REVERT", "TRAP"]

EAGER, TIERED = Engine(threshold=1, cold_segments=0), Engine(threshold=2)

CHECKS = settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

immediates = st.one_of(st.sampled_from(EDGE_WORDS), st.integers(0, 2**64 - 1), st.integers(0, 64))

# A program: the spec version it runs under and its container.
Program = tuple[str, bytes]


@st.composite
def versions(draw) -> tuple[str, spec.Spec]:
    """A version to run under and the table of a container version it runs (not newer)."""
    running = draw(st.integers(0, len(VERSIONS) - 1))
    return VERSIONS[running], TABLES[VERSIONS[draw(st.integers(0, running))]]


@st.composite
def random_programs(draw) -> Program:
    version, table = draw(versions())
    rows = [PUSH8] * draw(st.integers(0, 16))
    rows += [draw(st.sampled_from(table.instructions)) for _ in range(draw(st.integers(1, 40)))]
    rows.append(TABLE.by_mnemonic[draw(st.sampled_from(HALTS))])
    code = encode(rows, lambda offsets: draw(st.sampled_from(offsets)), lambda size: draw(immediates))
    return version, build(code, draw(st.binary(max_size=16)), table.number)


@st.composite
def loop_programs(draw) -> Program:
    version, table = draw(versions())
    continuing = [row for row in table.instructions if row.flow == "next"]
    primed = draw(st.integers(1, 8))
    rows_from = st.sampled_from(continuing + BRANCHES if draw(st.booleans()) else continuing)
    body = [draw(rows_from) for _ in range(draw(st.integers(0, 12)))]
    net = sum(r.outputs - r.inputs for r in body) - 1          # the closing JUMPI pops one
    pad_front = [PUSH8] * max(0, -net)                          # pushes first: fewer underflows
    pad_back = [POP] * max(0, net)
    head = primed
    rows = ([PUSH8] * primed + pad_front + body + pad_back + [JUMPI]
            + [TABLE.by_mnemonic[draw(st.sampled_from(HALTS))]])
    # Jumps inside the body go anywhere from the head to the halt after the loop: the loop
    # is then made of several segments; the closing JUMPI goes back to the head.
    targets = [draw(st.integers(head, len(rows) - 1)) for r in body if r.immediate_kind == "jump_target"]
    targets.append(head)
    order = iter(targets)
    code = encode(rows, lambda offsets: offsets[next(order)], lambda size: draw(immediates))
    return version, build(code, draw(st.binary(max_size=16)), table.number)


def _run(engine_execute, program: Program, call_data: bytes, limits: Limits, tracer=None):
    version, code = program
    state = WorldState({ENTRY: Contract(code, {0: 1, 7: 2**64 - 1}), OTHER: Contract(code)})
    return engine_execute(state, Message(ENTRY, 0xCA11, call_data), CONTEXT, OPEN, limits,
                          version=version, tracer=tracer)


def boundaries(used) -> list[Limits]:
    """Limits at, just below and just above what the program used in each dimension."""
    out = []
    for name, value in (("compute", used.compute), ("memory_pages", used.memory_pages),
                        ("storage_units", used.storage_units)):
        for v in {max(0, value - 1), value, value + 1}:
            out.append(Limits(**{**{n: getattr(AMPLE, n) for n in Limits.DIMENSIONS}, name: v}))
    return out


def agree_at_every_boundary(code: Program, call_data: bytes) -> None:
    ample = _run(execute, code, call_data, AMPLE)
    for limits in [AMPLE, *boundaries(ample.usage)]:
        want = _run(execute, code, call_data, limits).canonical_json()
        for engine in (EAGER, TIERED):
            for _ in range(2):   # the second run finds the first run's compiled code
                assert _run(engine.execute, code, call_data, limits).canonical_json() == want, limits
    # Every region was compiled: none fell back to the interpreter for a generator's fault.
    assert EAGER.compile_failures == TIERED.compile_failures == 0


@CHECKS
@given(random_programs(), st.binary(max_size=24))
def test_random_programs_agree_with_the_reference_at_every_limit_boundary(code, call_data):
    agree_at_every_boundary(code, call_data)


@CHECKS
@given(loop_programs(), st.binary(max_size=24))
def test_random_loops_agree_with_the_reference_at_every_limit_boundary(code, call_data):
    agree_at_every_boundary(code, call_data)


@settings(CHECKS, max_examples=60)
@given(st.one_of(random_programs(), loop_programs()), st.binary(max_size=24),
       st.integers(0, 3000))
def test_traces_are_the_references(code, call_data, compute):
    limits = Limits(compute=compute, memory_pages=2, storage_units=100)
    want, got = io.StringIO(), io.StringIO()
    reference = _run(execute, code, call_data, limits, JsonLinesTracer(want))
    compiled = _run(EAGER.execute, code, call_data, limits, JsonLinesTracer(got))
    assert compiled.canonical_json() == reference.canonical_json()
    assert got.getvalue() == want.getvalue()
    assert want.getvalue()


@settings(CHECKS, max_examples=100)
@given(st.one_of(random_programs(), loop_programs()), st.binary(max_size=24),
       st.sampled_from([8, 16, 32]), st.integers(0, 5000))
def test_reduced_word_widths_agree_with_the_reference(program, call_data, bits, compute):
    version, code = program
    state = WorldState({0x10: Contract(code, {3: 5}), 0x11: Contract(code)})
    message = Message(0x10, 0x1, call_data)
    limits = Limits(compute=compute, memory_pages=2, storage_units=100)
    want = execute(state, message, CONTEXT, OPEN, limits, version=version,
                   word_bits=bits).canonical_json()
    for engine in (EAGER, TIERED):
        for _ in range(2):
            got = engine.execute(state, message, CONTEXT, OPEN, limits, version=version,
                                 word_bits=bits)
            assert got.canonical_json() == want
    assert EAGER.compile_failures == TIERED.compile_failures == 0
