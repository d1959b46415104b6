"""rtwo-vm fuzz --sequences K (issue 35, item 6): sequences of calls on a shared state sent as one
scenario request, planted cross-call bugs found and shrunk to two steps, findings as scenario
vectors, the refusal of an adapter without the capability, determinism and resume."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.fuzz.generate import generate
from conformance.fuzz.sequence import SequenceInput, generate_sequence
from conformance.fuzz.sequence_check import ScenarioSession, compare_scenario, run_of_vector
from conformance.run.process import Settings
from conformance.run.suite import reference_command
from conformance.scenario import store as scenario_store
from conformance.scenario.schema import input_problems, vector_problems

ROOT = Path(__file__).resolve().parents[1]
BUGGY = ROOT / "tests" / "fuzz_fixtures" / "sequence_bug_adapter.py"
# Campaign seed 1 of spec 1.1 meets both planted bugs within its first 64 sequences.
SEED, RUNS, STEPS = "1", "64", "4"


def cli(*args):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=240)


def buggy(bug: str) -> str:
    return shlex.join([sys.executable, str(BUGGY), "--bug", bug])


def campaign(out: Path, *extra: str):
    return cli("fuzz", "--runs", RUNS, "--seed", SEED, "--sequences", STEPS, "--spec-version", "1.1",
               "--out", str(out), *extra)


def replay(command: str, vector: dict):
    """The divergence of ``command``'s answer to the vector's scenario from what it records."""
    session = ScenarioSession(command, Settings("1.1", timeout=30.0, window=4, workers=1))
    try:
        answer = session.run([("replay", vector["input"], False)])["replay"]
    finally:
        session.close()
    return compare_scenario(run_of_vector(vector), vector["input"], answer)


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("seq") / "ref"
    return out, campaign(out)


@pytest.fixture(scope="module", params=["keep-failed-writes", "transient-kept"])
def planted(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("seq") / request.param
    return request.param, out, campaign(out, "--impl", buggy(request.param))


# -- generation ------------------------------------------------------------------------------
def test_a_sequence_is_a_function_of_seed_index_and_pool_and_a_valid_scenario():
    pool = [generate(9, i, (), "1.1") for i in range(4)]
    first = [generate_sequence(4, i, pool, "1.1", 5).to_json() for i in range(40)]
    assert first == [generate_sequence(4, i, pool, "1.1", 5).to_json() for i in range(40)]
    assert first != [generate_sequence(5, i, pool, "1.1", 5).to_json() for i in range(40)]
    lengths, storage, transient = set(), 0, 0
    for j in first:
        seq = SequenceInput.from_json(j)
        assert seq.to_json() == j and input_problems(seq.scenario_input()) == []
        lengths.add(len(seq.steps))
        storage += {"SSTORE", "SLOAD"} <= set(seq.mnemonics())
        transient += {"TSTORE", "TLOAD"} <= set(seq.mnemonics())
    assert lengths == {2, 3, 4, 5}           # 2..K steps
    assert storage > 10 and transient > 5     # storage-touching programs are common


# -- campaigns -------------------------------------------------------------------------------
def test_the_reference_adapter_gives_no_finding(reference_run):
    out, done = reference_run
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["sequences"] == 4 and report["executions"] == 64 and report["buckets"] == []
    assert "each a sequence of 2 to 4 calls" in done.stdout and "no divergence" in done.stdout
    assert scenario_store.load(out / "findings" / "scenarios") == []


def test_a_planted_cross_call_bug_is_found_shrunk_to_two_steps_and_written(planted):
    bug, out, done = planted
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["buckets"], done.stdout
    vectors = scenario_store.load(out / "findings" / "scenarios")     # each checked on loading
    assert len(vectors) == sum(b["finding"] is not None for b in report["buckets"]) > 0
    for vector in vectors:
        assert vector_problems(vector) == []
        assert vector["id"].startswith(f"scenario/fuzz/s{SEED}-") and vector["tags"]["source"] == "fuzz"
        # Hand-derived: each bug needs one step to leave something behind and a second to see it.
        assert len(vector["input"]["steps"]) == 2
        ops = set(vector["tags"]["opcodes"])
        if bug == "keep-failed-writes":
            # the first step writes storage and does not succeed (its writes must be undone)
            assert "SSTORE" in ops and vector["tags"]["outcomes"][0] != "success"
        else:
            assert "TSTORE" in ops           # a transient write of the first step
        assert replay(reference_command(), vector) is None
        assert replay(buggy(bug), vector) is not None
    state = json.loads((out / "state.json").read_text())
    finding = next(b["finding"] for b in state["buckets"].values() if b["finding"])
    assert finding["steps"] == 2 and finding["original_steps"] >= 2 and finding["minimal"] is True
    assert "shrunk from" in done.stdout and "steps of" in done.stdout


def test_transient_storage_kept_is_no_finding_under_1_0(tmp_path):
    # 1.0 has no transient storage: the same planted adapter is right on every sequence of 1.0
    out = tmp_path / "old"
    done = cli("fuzz", "--runs", RUNS, "--seed", SEED, "--sequences", STEPS, "--spec-version", "1.0",
               "--out", str(out), "--impl", buggy("transient-kept"))
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_adapter_without_the_scenario_capability_is_refused(tmp_path):
    out = tmp_path / "never"
    done = campaign(out, "--impl", buggy("no-scenario"))
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and '"scenario"' in lines[0] and "sequence-bug" in lines[0], done.stderr
    assert not out.exists()                   # nothing of the refused campaign is left


@pytest.mark.parametrize("k", ["1", "65", "x"])
def test_a_number_of_steps_out_of_range_is_refused(tmp_path, k):
    done = cli("fuzz", "--runs", "1", "--sequences", k, "--out", str(tmp_path / "o"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) <= 2
    assert not (tmp_path / "o").exists()


def test_same_campaign_with_two_workers_and_resumed_in_its_own_mode(reference_run, tmp_path):
    out, _ = reference_run
    two = tmp_path / "two"
    assert campaign(two, "--workers", "2").returncode == 0
    a, b = (json.loads((d / "state.json").read_text()) for d in (out, two))
    for key in ("pool", "cells", "outcomes", "executions", "buckets", "sequences"):
        assert a[key] == b[key], key
    wrong = cli("fuzz", "--resume", str(two), "--runs", "128", "--sequences", "3")
    assert wrong.returncode == 2 and "its own mode" in wrong.stderr
    again = cli("fuzz", "--resume", str(two), "--runs", "96")
    assert again.returncode == 0, again.stderr
    assert json.loads((two / "state.json").read_text())["next_index"] == 96


# -- shrinking -------------------------------------------------------------------------------
def _sequence(rows, calls, storage=None) -> SequenceInput:
    from conformance.fuzz.program import Code, FuzzInput
    steps = [FuzzInput({}, call_data=bytes(c), version="1.1") for c in calls]
    return SequenceInput({0x100: (Code(rows=rows, version="1.1"), dict(storage or {}))}, steps, "1.1")


def test_folding_the_first_step_puts_what_it_left_into_the_pre_state():
    from conformance.fuzz.sequence_shrink import folded
    # SSTORE pops the value then the key: slot 1 := 5, then STOP (success)
    writes = [("PUSH1", 1), ("PUSH1", 5), ("SSTORE", 0), ("STOP", 0)]
    seq = _sequence(writes, [[], [], []], {7: 9})
    out = folded(seq)
    assert out is not None and len(out.steps) == 2 and out.contracts[0x100][1] == {1: 5, 7: 9}
    assert seq.contracts[0x100][1] == {7: 9} and len(seq.steps) == 3       # the original unchanged
    # the same writes undone by REVERT leave nothing to fold
    reverts = writes[:3] + [("PUSH1", 0), ("PUSH1", 0), ("REVERT", 0)]
    assert folded(_sequence(reverts, [[], [], []])) is None


def test_the_shrinker_keeps_the_shortest_sequence_that_keeps_the_class():
    from conformance.fuzz.sequence_shrink import SequenceShrinker
    # "the class": two steps whose call data is 0x01 (the other steps, and the program, do not matter)
    seq = _sequence([("PUSH1", 1), ("PUSH1", 5), ("SSTORE", 0), ("STOP", 0)],
                    [[2], [1], [3, 3], [1], [4], [1]])

    def keeps(s):
        return sum(step.call_data == b"\x01" for step in s.steps) >= 2
    first, second = SequenceShrinker(keeps, 300), SequenceShrinker(keeps, 300)
    small = first.shrink(seq)
    assert [step.call_data for step in small.steps] == [b"\x01", b"\x01"]
    assert small.contracts[0x100][0].rows == [("STOP", 0)] and first.minimal
    assert second.shrink(seq).to_json() == small.to_json() and first.tests == second.tests


def test_a_damaged_sequence_finding_in_the_state_is_refused_on_resume(planted, tmp_path):
    import shutil
    _, out, _ = planted
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    state = json.loads((copy / "state.json").read_text())
    finding = next(b["finding"] for b in state["buckets"].values() if b["finding"])
    finding["input"]["steps"] = finding["input"]["steps"][:1]           # one step: no sequence
    (copy / "state.json").write_text(json.dumps(state))
    before = sorted(p.name for p in copy.rglob("*"))
    done = cli("fuzz", "--resume", str(copy), "--runs", "96", "--impl", buggy("keep-failed-writes"))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "damaged state" in done.stderr and "2 to 64 steps" in done.stderr, done.stderr
    assert sorted(p.name for p in copy.rglob("*")) == before
