"""The runner: the reference passes the whole corpus through its own adapter, and every seeded
fault (wrong result, miscounted cost, nondeterminism, crash, hang, garbage, extra line, wrong
id, usage above a limit, wrong stage) is reported as what it is while the run goes on."""

from __future__ import annotations

import json
import shlex
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.report.bundles import write_bundles
from conformance.report.document import to_json
from conformance.report.junit import junit_xml
from conformance.report.text import summary
from conformance.run.process import Settings
from conformance.corpus.selection import load_known_failures, select
from conformance.run.suite import Options, reference_command, run_suite

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
SUBSET = ["arithmetic/ADD/*", "storage/SSTORE/*", "call/CALL/callee_*"]
TARGET = "arithmetic/ADD/one__one"


def faulty(fault: str, target: str = TARGET, op: str = "ADD") -> str:
    return shlex.join([sys.executable, str(FAULTY), "--fault", fault, "--target", target, "--op", op])


@pytest.fixture(scope="module")
def vectors():
    return store.load(corpus_dir("1.0"))


@pytest.fixture(scope="module")
def subset(vectors):
    return select(vectors, SUBSET)


def _run(commands, vectors, repeat=1, timeout=10.0, known=(), version="1.0"):
    options = Options(repeat=repeat, settings=Settings(version, timeout=timeout, workers=2))
    return run_suite(commands, vectors, list(known), options)


@pytest.fixture(scope="module")
def reference_run(vectors):
    return _run([reference_command()], vectors, repeat=1)


def test_reference_passes_the_whole_corpus_through_its_adapter(reference_run, vectors):
    (run,) = reference_run.runs
    failing = [(o.vector_id, [str(m) for m in o.failures], o.reason)
               for o in run.outcomes.values() if o.status != "pass"]
    assert failing == [] and run.issues == [] and run.restarts == 0
    assert run.count("pass") == len(vectors) and reference_run.ok
    assert len(run.passes) == 2 and "PYTHONHASHSEED" in run.passes[1]


def test_reference_passes_the_whole_1_1_corpus_in_sessions_of_1_1():
    vectors = store.load(corpus_dir("1.1"))
    result = _run([reference_command()], vectors, repeat=0, version="1.1")
    (run,) = result.runs
    failing = [(o.vector_id, [str(m) for m in o.failures], o.reason)
               for o in run.outcomes.values() if o.status != "pass"]
    assert failing == [] and run.issues == [] and run.count("pass") == len(vectors) and result.ok
    assert result.version == "1.1" and run.hello["spec_versions"] == ["1.0", "1.1"]


def test_reports_are_written_and_parse(reference_run, tmp_path):
    manifest = store.read_manifest(corpus_dir("1.0"))
    doc = to_json(reference_run, manifest)
    assert doc["ok"] and doc["implementations"][0]["counts"]["pass"] == manifest["vector_count"]
    json.dumps(doc)
    suites = ET.fromstring(junit_xml(reference_run))
    assert suites.get("tests") == str(manifest["vector_count"]) and suites.get("failures") == "0"
    assert "every implementation conforms" in summary(reference_run, manifest)


def _only_failure(result, vector_id=TARGET):
    (run,) = result.runs
    failing = {o.vector_id: o for o in run.outcomes.values() if o.status == "fail"}
    assert set(failing) == {vector_id}, {k: [str(m) for m in o.failures] for k, o in failing.items()}
    assert run.count("pass") == len(run.outcomes) - 1, "the run must go on after the fault"
    return failing[vector_id]


def test_wrong_result_is_reported_field_by_field(subset):
    o = _only_failure(_run([faulty("wrong-result")], subset))
    assert o.categories == ["result"] and [m.field for m in o.failures] == ["output"]
    assert o.divergence is None  # the trace is right: only the result is wrong


def test_miscounted_cost_is_reported_with_its_first_trace_divergence(subset):
    o = _only_failure(_run([faulty("miscount-compute")], subset))
    fields = {m.field for m in o.failures}
    assert fields == {"usage.compute", "fee"} and o.categories == ["resource"]
    d = o.divergence
    assert d is not None and d.field == "computeUsed" and d.previous.startswith("ADD")
    assert d.actual == d.expected + 1


def test_nondeterministic_output_is_caught_by_the_perturbed_pass(subset, monkeypatch):
    monkeypatch.setenv("TZ", "UTC0")  # the main pass in UTC, where the fault hides
    o = _only_failure(_run([faulty("nondeterministic")], subset))
    assert o.categories == ["nondeterministic"]
    assert o.failures[0].field.startswith("determinism pass 1") and "usage.compute" in o.failures[0].field


def test_crash_fails_the_vector_restarts_the_adapter_and_goes_on(subset):
    result = _run([faulty("crash")], subset, repeat=0)
    o = _only_failure(result)
    assert o.categories == ["crash"] and "exit status 3" in o.reason
    assert result.runs[0].restarts == 1


def test_hang_is_a_timeout(subset):
    small = select(subset, ["arithmetic/ADD/one__*"])
    o = _only_failure(_run([faulty("hang")], small, repeat=0, timeout=1.5))
    assert o.categories == ["timeout"] and "hang" in o.reason


def _stalling(*extra: str, target: str = TARGET) -> str:
    return faulty("hang", target) + " " + shlex.join(list(extra))


def test_a_hang_is_run_again_before_it_fails(subset):
    """The wall clock is a safety net: a hang fails only after a second attempt with four
    times the limit (1.5 s, then 6 s), and the determinism pass does not run it a third time."""
    small = select(subset, ["arithmetic/ADD/one__*"])
    (run,) = _run([faulty("hang")], small, repeat=1, timeout=1.5).runs
    o = run.outcomes[TARGET]
    assert o.status == "fail" and o.categories == ["timeout"]
    assert o.reason == ("no answer within 1.5 s, nor within 6 s when run again in a fresh "
                        "process (a hang)")
    assert [p.name for p in o.passes] == ["main pass", "main pass, run again"]
    assert run.retried == 1 and run.count("fail") == 1


def test_a_one_off_stall_is_not_a_failure(subset, tmp_path):
    """A vector that meets the safety net once (a load spike) and then answers passes; the
    first attempt stays on record."""
    small = select(subset, ["arithmetic/ADD/one__*"])
    result = _run([_stalling("--once", str(tmp_path / "stalled"))], small, repeat=1, timeout=1.5)
    (run,) = result.runs
    o = run.outcomes[TARGET]
    assert (tmp_path / "stalled").exists(), "the stall happened"
    assert o.status == "pass" and o.failures == [] and result.ok
    assert [p.name for p in o.passes] == ["main pass", "main pass, first attempt (met the wall-clock "
                                          "safety net)", "determinism pass 1"]
    assert o.passes[1].reply.failure == "timeout" and run.retried == 1


def test_a_stall_in_a_determinism_pass_is_retried_not_called_nondeterminism(subset, tmp_path):
    small = select(subset, ["arithmetic/ADD/one__*"])
    once = _run([_stalling("--perturbed-only", "--once", str(tmp_path / "s"))], small, repeat=1,
                timeout=1.5)
    o = once.runs[0].outcomes[TARGET]
    assert (tmp_path / "s").exists() and o.status == "pass" and once.ok
    assert once.runs[0].retried == 1 and "after meeting the wall-clock safety net" in o.passes[1].label
    # Hanging in the perturbed environment every time: a hang there, not a different answer.
    always = _run([_stalling("--perturbed-only")], small, repeat=1, timeout=1.5)
    o = always.runs[0].outcomes[TARGET]
    assert o.status == "fail" and o.categories == ["timeout"], [str(m) for m in o.failures]
    assert o.failures[0].field == "determinism pass 1: response"


def test_a_stall_while_tracing_is_retried_and_a_hang_there_is_a_timeout(subset, tmp_path):
    small = select(subset, ["arithmetic/ADD/one__*"])
    traced = "arithmetic/ADD/one__min"   # the one vector of `small` whose trace is checked
    once = _run([_stalling("--traced-only", "--once", str(tmp_path / "t"), target=traced)], small,
                repeat=0, timeout=1.5)
    assert (tmp_path / "t").exists() and once.ok and once.runs[0].retried == 1
    always = _run([_stalling("--traced-only", target=traced)], small, repeat=0, timeout=1.5)
    o = always.runs[0].outcomes[traced]
    assert o.status == "fail" and o.categories == ["timeout"], [str(m) for m in o.failures]
    assert o.failures[0].field == "trace" and "(a hang)" in str(o.failures[0].actual)


@pytest.mark.parametrize("fault,category", [("garbage", "garbage"), ("extra-line", "extra_output"),
                                            ("wrong-id", "wrong_id")])
def test_protocol_faults_are_named(subset, fault, category):
    o = _only_failure(_run([faulty(fault)], subset, repeat=0))
    assert o.categories == [category], [str(m) for m in o.failures]


def test_usage_above_the_limit_is_a_resource_bound_failure(subset):
    o = _only_failure(_run([faulty("exceed-limit")], subset, repeat=0))
    assert "resource_bound" in o.categories


def test_wrong_stage_is_reported(subset):
    target = "storage/SSTORE/stack_underflow"
    o = _only_failure(_run([faulty("bad-stage", target=target)], subset, repeat=0), target)
    assert o.categories == ["stage"]


def test_an_adapter_that_fails_its_handshake_fails_every_vector_with_the_reason(subset):
    result = _run([faulty("bad-hello")], subset[:5], repeat=0)
    (run,) = result.runs
    assert run.count("fail") == 5 and not result.ok
    assert all("protocol" in o.reason for o in run.outcomes.values())


def test_logs_on_stderr_do_not_matter(subset):
    assert _run([faulty("noisy")], subset[:20], repeat=0).ok


def test_two_implementations_are_compared_with_each_other(subset):
    result = _run([reference_command(), faulty("wrong-result")], subset, repeat=0)
    assert [d["vector"] for d in result.disagreements] == [TARGET]
    ref, bad = result.runs
    assert ref.outcomes[TARGET].status == "pass" and ref.ok, "the implementation that matches is not blamed"
    assert set(bad.outcomes[TARGET].categories) == {"result", "disagreement"}
    assert not result.ok


def test_a_disagreement_names_the_fields_and_which_side_matches(subset):
    result = _run([reference_command(), faulty("miscount-compute")], subset, repeat=0)
    (d,) = result.disagreements
    assert d["fields"] == ["usage.compute", "fee"] and d["matches_expected"] == ["rtwo-reference"]
    assert d["differences"][0]["values"][1] == d["differences"][0]["values"][0] + 1
    bad = result.runs[1].outcomes[TARGET]
    agreement = [m for m in bad.failures if m.category == "disagreement"]
    assert [m.field for m in agreement] == ["agreement with rtwo-reference: usage.compute",
                                            "agreement with rtwo-reference: fee"]
    text = summary(result, {})
    assert "differ in usage.compute, fee; rtwo-reference matches the expected result" in text
    assert "differing fields" not in text


def _listing(tmp_path, *ids):
    listing = tmp_path / "faulty.toml"
    entries = "".join(f'[[known_failure]]\nid = "{i}"\nreason = "seeded fault"\n' for i in ids)
    listing.write_text(f'version = 1\nspec_version = "1.0"\nimplementation = "faulty-reference"\n'
                       f'fingerprint = "*faulty_adapter.py*"\n{entries}')
    return load_known_failures([listing], "1.0")


def test_a_listed_vector_still_runs_and_fails_as_expected_with_its_reason(subset, tmp_path):
    result = _run([faulty("wrong-result")], subset, repeat=0, known=_listing(tmp_path, TARGET))
    (run,) = result.runs
    o = run.outcomes[TARGET]
    assert result.ok and o.status == "xfail" and o.categories == ["result"]
    assert o.known == "seeded fault (faulty.toml)" and run.count("xfail") == 1
    text = summary(result, {})
    assert "1 known failure (expected)" in text and "reason: seeded fault (faulty.toml)" in text
    doc = to_json(result, {})["implementations"][0]
    assert [k["id"] for k in doc["known_failures"]] == [TARGET] and doc["counts"]["xfail"] == 1
    skipped = ET.fromstring(junit_xml(result)).find(".//skipped")
    assert skipped is not None and "seeded fault" in skipped.get("message")


def test_a_listed_vector_that_now_passes_is_reported_and_fails_the_run(subset, tmp_path):
    fixed = "arithmetic/ADD/one__zero"     # the seeded fault only hits TARGET
    result = _run([faulty("wrong-result")], subset, repeat=0, known=_listing(tmp_path, TARGET, fixed))
    (run,) = result.runs
    assert run.outcomes[fixed].status == "xpass" and run.outcomes[TARGET].status == "xfail"
    assert not result.ok, "strict: an unexpected pass fails the run until the entry is removed"
    text = summary(result, {})
    assert "NOW PASSING (1)" in text and f"{fixed}  (listed: seeded fault (faulty.toml))" in text
    assert to_json(result, {})["implementations"][0]["now_passing"][0]["id"] == fixed
    failure = ET.fromstring(junit_xml(result)).find(".//failure")
    assert failure is not None and failure.get("type") == "xpass"


@pytest.mark.parametrize("fault,status", [("exit-70", "exit status 70"), ("killed", "killed by SIGTERM")])
def test_a_crash_reports_the_exit_status_even_when_stdout_closes_first(subset, fault, status):
    o = _only_failure(_run([faulty(fault)], subset, repeat=0))
    assert o.categories == ["crash"] and status in o.reason, o.reason
    assert "closed its stdout" not in o.reason and "Traceback: internal error" in o.reason


def test_an_adapter_that_cannot_start_is_reported_once_with_its_stderr(subset):
    broken = shlex.join([sys.executable, "-c", "import sys; print('no VM library', file=sys.stderr); sys.exit(70)"])
    result = _run([broken], subset[:20], repeat=0)
    (run,) = result.runs
    assert not result.ok and run.count("fail") == 20 and run.start_error
    text = summary(result, {})
    assert text.count("could not start") == 1 and text.count("stderr: no VM library") == 1, text
    assert "exit status 70" in text and "20 vectors not run" in text and " ?" not in text


def test_summary_wording(subset, vectors):
    target = "validation/BAD_MAGIC/zeros"      # no opcodes: no empty "opcodes with failures:" line
    result = _run([faulty("wrong-result", target=target)], select(vectors, ["validation/BAD_MAGIC/*"]), repeat=0)
    text = summary(result, {})
    assert "opcodes with failures" not in text and "1 implementation," in text and "(s)" not in text
    assert "1 adapter restart" not in text and "0 adapter restarts" in text


def test_failures_become_replay_bundles_and_junit_failures(subset, tmp_path):
    result = _run([faulty("miscount-compute", target="arithmetic/ADD/one__*")], subset, repeat=0)
    bundles = write_bundles(result, tmp_path)
    assert len(bundles) == 6
    doc = json.loads(next(iter(bundles.values())).read_text())
    assert doc["vector"]["id"].startswith("arithmetic/ADD/one__") and doc["divergence"]["field"] == "computeUsed"
    assert doc["replay"].startswith("rtwo-vm conformance replay")
    suites = ET.fromstring(junit_xml(result))
    assert suites.get("failures") == "6"
    failure = suites.find(".//failure")
    assert failure is not None and "usage.compute" in failure.text


def test_two_implementations_with_one_name_get_separate_bundles():
    from types import SimpleNamespace

    from conformance.report.bundles import bundle_name, bundle_prefixes

    runs = [SimpleNamespace(name="my vm"), SimpleNamespace(name="other"), SimpleNamespace(name="my vm")]
    prefixes = bundle_prefixes(runs)
    assert len(set(prefixes)) == 3 and prefixes[1] == "other"
    assert bundle_name(prefixes[0], "a/B/c") != bundle_name(prefixes[2], "a/B/c")


def test_a_correct_answer_longer_than_max_line_is_not_oversized(vectors):
    """Chapter 11.5.1: a vector's bound is twice its expected result plus 8 KiB, whatever
    --max-line says (that bounds only requests without an expected result)."""
    big = "smt/CALL/16_memory_covers_range_call_depth_exceeded_compute_limit_reached_exactly"
    chosen = select(vectors, [big])
    size = len(json.dumps(chosen[0]["expected"]["result"], separators=(",", ":")))
    assert size > 8192   # the answer is longer than the max_line below
    options = Options(repeat=0, settings=Settings("1.0", timeout=30.0, workers=1, max_line=8192))
    result = run_suite([reference_command()], chosen, [], options)
    (run,) = result.runs
    assert run.outcomes[big].status == "pass", [str(m) for m in run.outcomes[big].failures]
