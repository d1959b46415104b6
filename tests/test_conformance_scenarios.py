"""The runner's scenario pass (spec chapter 11.9): bugs in carrying state planted in real adapter
processes (tests/conformance_fixtures/scenario_bug_adapter.py) fail the scenario corpus through
``rtwo-vm conformance run`` at the step the chapter's rules say, while every single-call vector
of the selection passes; an adapter without the capability is told what it misses; a failing
scenario's bundle replays its divergent step; blinding and the fresh sample cover scenarios.

Every expected step index below is derived by hand from the scenario definitions
(conformance/scenario/definitions) and 11.9.2, never read from the runner's output.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from conformance.constants import corpus_dir
from conformance.scenario import store

ROOT = Path(__file__).resolve().parent.parent
BUGGY = ROOT / "tests" / "conformance_fixtures" / "scenario_bug_adapter.py"
SINGLE = "arithmetic/ADD/*"          # the single-call part: a small selection, every vector must pass


def _scenarios(version: str) -> list[dict]:
    return store.load(store.folder(corpus_dir(version)), version)


def _run(tmp_path: Path, bug: str | None, *extra: str) -> tuple[subprocess.CompletedProcess, dict]:
    command = shlex.join([sys.executable, str(BUGGY), "--bug", bug]) if bug else \
        shlex.join([sys.executable, "-m", "conformance.adapter"])
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--impl", command,
                           "--spec-version", "1.1", "--filter", SINGLE, "--filter", "scenario/*",
                           "--repeat", "0", "--fresh", "0", "--workers", "1", "--seed", "11",
                           "--no-progress", "--out", str(tmp_path), *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    report = json.loads((tmp_path / "1.1" / "report.json").read_text())
    return done, report["implementations"][0]


def _divergences(impl: dict) -> dict[str, object]:
    """Failing scenario id -> its first divergent step (an index, or "post_state")."""
    out = {}
    for entry in impl["scenarios"]["failures"]:
        d = entry["divergence"]
        out[entry["id"]] = d["where"] if d and d["step"] is None else d["step"] if d else entry["kind"]
    return out


def _single_calls_pass(impl: dict) -> None:
    assert impl["counts"]["fail"] == 0 and impl["counts"]["pass"] > 0, impl["counts"]


def test_transient_storage_kept_between_steps_fails_at_the_step_after_the_write(tmp_path):
    done, impl = _run(tmp_path, "transient-between-steps")
    assert done.returncode == 1, done.stdout + done.stderr
    _single_calls_pass(impl)
    # Step 0 writes transient slot 7 and returns it; step 1 reads it: 0 by 11.9.2 (3), 7 here.
    # No other scenario of 1.1 has a transient storage instruction.
    assert _divergences(impl) == {"scenario/transient/cleared_between_calls": 1}
    assert "first divergent step: 1 of 6" in done.stdout
    assert "does NOT carry state across calls" in done.stdout


def test_a_failed_steps_writes_kept_fail_the_step_that_reads_them(tmp_path):
    done, impl = _run(tmp_path, "keeps-failed-writes")
    assert done.returncode == 1, done.stdout + done.stderr
    _single_calls_pass(impl)
    found = _divergences(impl)
    # set 1=5, set 2=6, a step that sets 1=9 then fails, get 1: 5 by 11.9.2 (1), 9 here.
    for name in ("revert", "trap", "compute"):
        assert found[f"scenario/state/failed_step_{name}_keeps_earlier_steps"] == 3
    # set 1, set 2, set_two 7 (slot 7 written, the second new slot over the units), get 7: 0, here 7.
    assert found["scenario/state/storage_limit_mid_sequence"] == 3
    # Steps that fail without writing anything (refused requests, a forbidden first write) are right.
    for ok in ("rejected_step_changes_nothing", "read_only_step_then_write", "counter_three_calls"):
        assert f"scenario/state/{ok}" not in found


def test_state_changes_applied_out_of_order_fail_the_step_or_the_post_state(tmp_path):
    done, impl = _run(tmp_path, "reverse-order")
    assert done.returncode == 1, done.stdout + done.stderr
    _single_calls_pass(impl)
    found = _divergences(impl)
    # counter: step 2's state is the pre-state with step 1's change (0 -> 2) then step 0's (-> 1):
    # it reads 1 and returns 2 where 3 is expected.
    assert found["scenario/state/counter_three_calls"] == 2
    # set 3=10, get, set 3=20, set 3=30: step 3's state is 3=20 then 3=10: its change is 10 -> 30.
    assert found["scenario/state/last_write_wins"] == 3
    # Every step reads right (one write between reads), only the post-state holds the first
    # write instead of the last: a post-state divergence, reported as such.
    for name in ("read_only_step_then_write", "rejected_step_changes_nothing", "counter_from_stored_state"):
        assert found[f"scenario/state/{name}"] == "post_state", name
    assert "the post-state diverges" in done.stdout
    # Scenarios whose steps write distinct slots are right whatever the order.
    for ok in ("set_then_get", "limits_bound_each_step", "failed_step_revert_keeps_earlier_steps"):
        assert f"scenario/state/{ok}" not in found


def test_no_carried_state_fails_at_the_first_step_that_reads_an_earlier_write_and_replays(tmp_path):
    done, impl = _run(tmp_path, "no-carry")
    assert done.returncode == 1, done.stdout + done.stderr
    _single_calls_pass(impl)
    found = _divergences(impl)
    assert found["scenario/state/counter_three_calls"] == 1       # reads 0 again: 1, not 2
    assert found["scenario/state/set_then_get"] == 1              # get 5 on the pre-state: 0, not 77
    assert found["scenario/state/counter_from_stored_state"] == 1  # 41 + 1 again: 42, not 43
    entry = next(e for e in impl["scenarios"]["failures"] if e["id"] == "scenario/state/counter_three_calls")
    divergence = entry["divergence"]
    assert divergence["expected"]["output"] == "0x" + (2).to_bytes(8, "little").hex()
    assert divergence["got"]["output"] == "0x" + (1).to_bytes(8, "little").hex()
    assert [int(v, 16) for c in divergence["state_before"]["contracts"].values()
            for k, v in c["storage"].items() if k == "0x0"] == [1]        # the state after step 0
    # The bundle holds the scenario sent; replay re-sends it and shows the same divergent step.
    bundle = Path(entry["bundle"])
    doc = json.loads(bundle.read_text())
    assert doc["bundle"] == "rtwo-conformance scenario bundle/1" and doc["scenario"]["blinding"]["seed"] == 11
    buggy = shlex.join([sys.executable, str(BUGGY), "--bug", "no-carry"])
    again = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "replay", str(bundle),
                            "--impl", buggy], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert again.returncode == 1 and "first divergent step: 1 of 3" in again.stdout, again.stdout + again.stderr


def test_an_adapter_without_the_capability_is_checked_on_single_calls_and_told_what_it_misses(tmp_path):
    done, impl = _run(tmp_path, "no-capability")
    assert done.returncode == 0, done.stdout + done.stderr
    _single_calls_pass(impl)
    scenarios = impl["scenarios"]
    count = len(_scenarios("1.1"))
    assert scenarios["sent"] == 0 and scenarios["not_run"] == count > 0
    assert list(scenarios["not_run_reasons"]) == ['the adapter does not announce the capability "scenario" (11.9.4)']
    assert scenarios["carries_state"] is False
    assert f"scenarios not run: {count} scenario vectors" in done.stdout
    assert "does not establish that the implementation carries state across calls" in done.stdout
    assert "conforms on single calls only" in done.stdout
    junit = (tmp_path / "1.1" / "junit.xml").read_text()
    assert f"{count} scenario vectors not run" in junit and 'type="not_run"' in junit
    assert "capability" in (tmp_path / "1.1" / "report.html").read_text()


def test_a_crash_and_a_flood_on_scenarios_are_charged_to_those_scenarios(tmp_path):
    done, impl = _run(tmp_path, "misbehaves", "--timeout", "20")
    assert done.returncode == 1, done.stdout + done.stderr
    _single_calls_pass(impl)
    steps = {s["id"]: len(s["input"]["steps"]) for s in _scenarios("1.1")}
    kinds = {e["id"]: e["kind"] for e in impl["scenarios"]["failures"]}
    assert kinds == {vid: "crash" if n == 5 else "oversized" for vid, n in steps.items() if n in (5, 6)}
    assert impl["scenarios"]["counts"]["pass"] == sum(1 for n in steps.values() if n not in (5, 6))


def test_scenarios_whose_step_versions_the_adapter_lacks_are_not_run_with_the_reason():
    from conformance.run.scenarios import NO_CAPABILITY, not_run_reason
    upgrade = next(s for s in _scenarios("1.1") if s["id"] == "scenario/upgrade/counter_1_0_to_1_1")
    plain = next(s for s in _scenarios("1.1") if s["id"] == "scenario/state/set_then_get")
    only_new = {"spec_versions": ["1.1"], "capabilities": ["scenario"]}
    assert not_run_reason(only_new, upgrade) == "its steps run spec 1.0, which the adapter does not announce"
    assert not_run_reason(only_new, plain) is None
    assert not_run_reason({"spec_versions": ["1.0", "1.1"], "capabilities": ["trace"]}, plain) == NO_CAPABILITY


def test_blinding_changes_every_scenario_consistently_and_the_reference_still_passes(tmp_path):
    from conformance.run.blind_scenario import blind_all
    published = _scenarios("1.1")
    blinded, summary = blind_all(published, 11, "1.1")
    assert summary.verdicts["unblinded"] == 0
    for before, after in zip(published, blinded):
        assert after["input"] != before["input"]
        names = after["blinding"]["transformations"]
        assert {"block_time", "decoy_contract", "unread_slot"} <= set(names)
        # the context of every step changed, each step its own value
        times = [s["context"]["block_time"] for s in after["input"]["steps"]]
        assert all(t != s["context"]["block_time"] for t, s in zip(times, before["input"]["steps"]))
        assert len(after["input"]["pre_state"]["contracts"]) == len(before["input"]["pre_state"]["contracts"]) + 1
        if "addresses" in names:     # one exchange for the whole scenario: no published address is left
            assert not set(after["input"]["pre_state"]["contracts"]) & set(before["input"]["pre_state"]["contracts"])
            assert [s["message"]["to"] in after["input"]["pre_state"]["contracts"] for s in after["input"]["steps"]] \
                == [s["message"]["to"] in before["input"]["pre_state"]["contracts"] for s in before["input"]["steps"]]
    transient = next(b for b in blinded if b["id"] == "scenario/transient/cleared_between_calls")
    assert "addresses" not in transient["blinding"]["transformations"]   # TLOAD/TSTORE: kept, as for single calls
    counter = next(b for b in blinded if b["id"] == "scenario/state/counter_three_calls")
    assert "addresses" in counter["blinding"]["transformations"]
    assert [s["result"]["output"] for s in counter["expected"]["steps"]] == \
        ["0x" + n.to_bytes(8, "little").hex() for n in (1, 2, 3)]
    # The reference adapter passes the blinded scenarios and a fresh sample of them.
    done, impl = _run(tmp_path, None, "--fresh", "30")
    assert done.returncode == 0, done.stdout + done.stderr
    assert impl["scenarios"]["counts"]["pass"] == len(published) and impl["scenarios"]["fresh_counts"]["pass"] == 3
    assert impl["scenarios"]["carries_state"] is True


def test_fresh_scenarios_are_new_variants_filled_by_the_reference():
    from conformance.corpus.fresh_scenario import count_for, sample
    published = _scenarios("1.1")
    first, second = sample(5, 6, published), sample(5, 6, published)
    assert first == second and len(first) == 6                    # the seed repeats them
    assert [v["id"] for v in first] == [f"fresh/5/scenario-{n:02d}" for n in range(6)]
    inputs = [json.dumps(v["input"], sort_keys=True) for v in published]
    for v in first:
        assert json.dumps(v["input"], sort_keys=True) not in inputs and "_meta" not in v
        assert len(v["expected"]["steps"]) == len(v["input"]["steps"])
    assert sample(6, 6, published) != first
    assert count_for(100, 19) == 10 and count_for(0, 19) == 0 and count_for(100, 0) == 0 and count_for(5, 3) == 1


def test_selftest_checks_a_scenario_answer_and_malformed_scenario_requests():
    from conformance.run import selftest, selftest_scenario
    from conformance.run.process import Settings
    from conformance.run.suite import reference_command
    from conformance.corpus import store as corpus_store
    vectors = {v["id"]: v for v in corpus_store.load(corpus_dir("1.0"))}
    scenarios = _scenarios("1.0")

    def scenario_checks(command: str) -> list:
        checks = selftest._Checks(shlex.split(command), Settings("1.0", timeout=30, handshake_timeout=30), None)
        selftest_scenario.add(checks, scenarios, [vectors[selftest.PROBE_ID]], "1.0", selftest._schema_problem,
                              selftest._error_then_alive)
        return checks.results

    good = scenario_checks(reference_command())
    assert [c.ok for c in good] == [True, True], [c.detail for c in good]
    bad = scenario_checks(shlex.join([sys.executable, str(BUGGY), "--bug", "no-carry"]))
    # the counter's step 1 reads the pre-state's 0 again (11.9.2): answered 1, expected 2
    assert not bad[0].ok and "first divergent step: 1 of 3" in bad[0].detail and bad[1].ok
