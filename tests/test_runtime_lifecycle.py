"""The 10-stage lifecycle: legal moves only, in memory, in the database and through real runs."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine, initialize, invariant, precondition, rule,
)

import spec
from reference_vm import Limits
from rtwo_vm.runtime import CallRequest, IllegalTransition, Lifecycle, RuntimeBusy
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.execution import RunFinished
from rtwo_vm.runtime.lifecycle import is_legal_path, path_for_outcome
from test_runtime_support import VERSION, example, program, runtime

CAT = catalog()
STAGES = list(CAT.stages)


def _clock():
    return "2025-01-01T00:00:00+00:00"


def test_every_move_not_in_lifecycle_toml_is_refused_and_changes_nothing():
    for start in STAGES:
        for target in STAGES:
            life = Lifecycle(_clock)
            # Reach ``start`` along the shortest legal path, if there is one.
            path = _path_to(start)
            if path is None:
                continue
            for stage in path[1:]:
                life.advance(stage)
            before = list(life.history)
            if target in CAT.transitions.get(start, ()):
                life.advance(target)
                assert life.stage == target
            else:
                with pytest.raises(IllegalTransition):
                    life.advance(target)
                assert life.history == before


def _path_to(target):
    frontier, seen = [[CAT.roles["initial"]]], set()
    while frontier:
        path = frontier.pop(0)
        if path[-1] == target:
            return path
        for nxt in CAT.transitions.get(path[-1], ()):
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(path + [nxt])
    return None


def test_the_lifecycle_data_has_ten_stages_and_a_terminal_final_stage():
    orders = {s["order"] for s in spec.load(VERSION).lifecycle["stage"]}
    assert orders == set(range(1, 11))
    assert CAT.roles["final"] not in CAT.transitions
    assert CAT.roles["commit"] in STAGES and CAT.roles["rollback"] in STAGES


@pytest.mark.parametrize("code", sorted(spec.load(VERSION).errors))
def test_every_outcome_code_gives_a_legal_path(code):
    kind = spec.load(VERSION).errors[code].kind
    for callee in (False, True):
        for survived in (False, True):
            path = path_for_outcome(kind, code, callee=callee, survived=survived)
            assert is_legal_path(path) and path[-1] == CAT.roles["final"], (code, path)
            assert CAT.roles["commit"] not in path


class LifecycleMachine(RuleBasedStateMachine):
    """Random move attempts on one lifecycle: legal ones happen, the rest are refused."""

    @initialize()
    def start(self):
        self.life = Lifecycle(_clock)
        self.model = [CAT.roles["initial"]]

    @rule(stage=st.sampled_from(STAGES))
    def attempt(self, stage):
        if stage in CAT.transitions.get(self.model[-1], ()):
            self.life.advance(stage)
            self.model.append(stage)
        else:
            with pytest.raises(IllegalTransition):
                self.life.advance(stage)

    @invariant()
    def history_is_a_legal_path(self):
        stages = self.life.stages()
        assert stages == self.model and is_legal_path(stages)
        assert sum(s in (CAT.roles["commit"], CAT.roles["rollback"]) for s in stages) <= 1
        assert [e.seq for e in self.life.history] == list(range(len(stages)))
        assert self.life.finished == (stages[-1] == CAT.roles["final"])


TestLifecycleMachine = LifecycleMachine.TestCase
TestLifecycleMachine.settings = settings(max_examples=60, stateful_step_count=25, deadline=None)


def test_the_database_refuses_an_illegal_stage_history(tmp_path):
    with runtime(tmp_path / "db") as rt:
        rt.deploy(example("counter"), 0x100)
        cid = rt.call(to=0x100).context.context_id
        conn = rt.store.conn
        with pytest.raises(sqlite3.IntegrityError, match="illegal lifecycle transition"):
            conn.execute("INSERT INTO stage_history VALUES (?, 10, 'executing', 'finalized', 'x')",
                         (cid,))
        with pytest.raises(sqlite3.IntegrityError, match="append-only"):
            conn.execute("UPDATE stage_history SET stage = 'committed' WHERE context_id = ?", (cid,))
        with pytest.raises(sqlite3.IntegrityError, match="illegal lifecycle transition"):
            # A new context must start at the initial stage.
            conn.execute("INSERT INTO stage_history VALUES (?, 0, 'executing', NULL, 'x')", (cid + "x",))
        assert len(rt.contexts.history(cid)) == 10


# Contracts the stateful runtime test deploys: (name, code, validate at deploy).
CONTRACTS = {
    0x100: example("counter"), 0x101: example("proxy"), 0x102: example("reverter"),
    0x103: program("trap"), 0x104: program("time"), 0x105: b"\x00\x01",
}


class RuntimeLifecycleMachine(RuleBasedStateMachine):
    """Runs driven stage by stage against a real database file, with illegal moves attempted
    at every stage; the database must only ever hold complete, legal records."""

    @initialize()
    def open(self):
        self.folder = Path(tempfile.mkdtemp())
        self.rt = runtime(self.folder / "vm.db")
        for address, code in CONTRACTS.items():
            self.rt.deploy(code, address, {0: 41} if address == 0x101 else None,
                           validate_code=address != 0x105)
        self.run = None
        self.recorded = 0
        self.counter = 0  # the model of counter storage slot 0 at 0x100

    def teardown(self):
        if getattr(self, "run", None) is not None:
            self.run.abandon()
        if getattr(self, "rt", None) is not None:
            self.rt.close()
            shutil.rmtree(self.folder, ignore_errors=True)

    @precondition(lambda self: self.run is None)
    @rule(to=st.sampled_from(sorted(CONTRACTS) + [0x1FF]),
          isolation=st.sampled_from([None, "pure", "view", "standard"]),
          compute=st.sampled_from([None, 5, 300, 10 ** 13]),
          pages=st.sampled_from([None, 0, 1]))
    def start(self, to, isolation, compute, pages):
        limits = {k: v for k, v in (("compute", compute), ("memory_pages", pages)) if v is not None}
        self.run = self.rt.lifecycle.start(
            CallRequest(to=to, isolation_level=isolation, limits=Limits(**limits)))
        assert self.run.stage == CAT.roles["initial"]

    @precondition(lambda self: self.run is not None)
    @rule()
    def step(self):
        before = self.run.stage
        after = self.run.step()
        assert after in CAT.transitions[before]
        if self.run.finished:
            self._finished()

    @precondition(lambda self: self.run is not None)
    @rule()
    def finish(self):
        self.run.run()
        self._finished()

    def _finished(self):
        rec = self.run.recorded
        assert [e.stage for e in rec.history] == self.run.lifecycle.stages()
        self.recorded += 1 + _count(rec.children)
        if rec.context.contract_id == "0x100" and rec.result.execution_status == "success":
            self.counter += 1
        with pytest.raises(RunFinished):
            self.run.step()
        self.run = None

    @precondition(lambda self: self.run is not None)
    @rule(stage=st.sampled_from(STAGES))
    def illegal_move_is_refused(self, stage):
        if stage in CAT.transitions.get(self.run.stage, ()):
            return  # legal moves belong to the run's own work
        before = self.run.stage
        with pytest.raises(IllegalTransition):
            self.run.lifecycle.advance(stage)
        assert self.run.stage == before

    @precondition(lambda self: self.run is not None and self.run.stage == "state_loaded")
    @rule()
    def a_second_run_waits_for_the_write_lock(self):
        other = self.rt.lifecycle.start(CallRequest(to=0x103))
        while other.stage != "sandbox_provisioned":
            other.step()
        with pytest.raises(RuntimeBusy):
            other.step()
        assert other.stage == "sandbox_provisioned"
        other.abandon()

    @invariant()
    def the_database_holds_only_complete_legal_records(self):
        rt = self.rt
        assert rt.contexts.count() == self.recorded
        assert rt.contexts.incomplete() == []
        for context in rt.contexts.list():
            assert is_legal_path([e.stage for e in rt.contexts.history(context.context_id)])
        slot = rt.contract(0x100)["storage"].get("0x0", "0x0")
        assert int(slot, 16) == self.counter


def _count(children):
    return sum(1 + _count(c.children) for c in children)


TestRuntimeLifecycle = RuntimeLifecycleMachine.TestCase
TestRuntimeLifecycle.settings = settings(
    max_examples=30, stateful_step_count=40, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
