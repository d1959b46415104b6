"""The native tier's checkers have teeth: a bug planted in the native code generator makes the
property tests (tests/test_native_properties.py, tests/test_native_values.py) fail. Each planted
bug compiles into a private cache, so no machine code compiled without it can hide it. (A
wrong value that reaches no output goes unseen by the programs of test_native_properties —
the subtraction below is one — which is why test_native_values returns the final stack.)"""

from __future__ import annotations

import dataclasses

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

from hypothesis import Phase, given, settings, strategies as st  # noqa: E402
from llvmlite import ir  # noqa: E402

import native_vm  # noqa: E402
import test_native_properties as props  # noqa: E402
import test_native_values as values  # noqa: E402
from native_vm import ops  # noqa: E402
from native_vm.cache import NativeCache  # noqa: E402
from native_vm.lower import GOTO, I64, Lowering  # noqa: E402

# The property tests' settings, stopping at the first failure (no shrinking).
FIRST_FAILURE = settings(props.CHECKS, phases=[Phase.explicit, Phase.generate], database=None)


def fresh_engines(monkeypatch) -> None:
    cache = NativeCache()
    monkeypatch.setattr(props, "ENGINES", (
        native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1, per_handler=0, cache=cache),
        native_vm.Engine(threshold=2, native_work=40, min_block=4, per_handler=1, cache=cache)))


def fails(programs) -> str:
    """The property tests' check (props.agree_at_every_boundary) on their program strategy."""
    @FIRST_FAILURE
    @given(programs, st.binary(max_size=24))
    def test(code, call_data):
        props.agree_at_every_boundary(code, call_data)

    try:
        test()
    except AssertionError as err:
        assert "assert '{" in str(err), err      # two canonical results differ
        return str(err)
    except ExceptionGroup as group:
        assert group.subgroup(AssertionError) is not None, group
        return str(group)
    raise AssertionError("the planted bug went unnoticed")


def test_an_off_by_one_in_the_counted_loops_budget_is_caught(monkeypatch):
    # One iteration more than the compute left pays for: the meter passes the limit.
    budget = Lowering.budget
    monkeypatch.setattr(Lowering, "budget",
                        lambda self, left, cost: self.b.add(budget(self, left, cost), ir.Constant(I64, 1)))
    fresh_engines(monkeypatch)
    assert "Limits(compute=" in fails(props.loop_programs())   # a result differs at some limit


def test_an_off_by_one_in_native_subtraction_is_caught(monkeypatch):
    monkeypatch.setitem(ops.BINARY, "SUB", lambda b, x, y: b.add(b.sub(x, y), ir.Constant(x.type, 1)))
    fresh_engines(monkeypatch)
    fails(values.value_blocks())
    fails(values.value_loops())


def test_an_exit_that_leaves_one_item_too_few_is_caught(monkeypatch):
    leave = Lowering.leave

    def planted(self, exit, used=None):
        if exit.kind == GOTO and exit.height:
            exit = dataclasses.replace(exit, height=exit.height - 1)
        leave(self, exit, used)

    monkeypatch.setattr(Lowering, "leave", planted)
    fresh_engines(monkeypatch)
    fails(props.loop_programs())


def test_a_segment_charged_one_unit_too_little_is_caught(monkeypatch):
    segment = Lowering.segment

    def planted(self, seg, next_block, next_start):
        if not self.plan.counted and seg.cost:
            seg = dataclasses.replace(seg, cost=seg.cost - 1)
        segment(self, seg, next_block, next_start)

    monkeypatch.setattr(Lowering, "segment", planted)
    fresh_engines(monkeypatch)
    assert "Limits(compute=" in fails(props.random_programs())
