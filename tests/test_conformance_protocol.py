"""The adapter protocol: the reference adapter's answers, the adapter self-test (passing on the
reference, failing on broken adapters), and the CLI commands end to end."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.adapter import Adapter
from conformance.protocol import decode, encode, execute_request, hello_request
from conformance.corpus.schema import schema_problems
from conformance.run.selftest import run_selftest
from conformance.run.suite import reference_command

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"


@pytest.fixture(scope="module")
def vectors():
    return {v["id"]: v for v in store.load(corpus_dir("1.0"))}


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_reference_adapter_answers_every_message_kind(vectors):
    adapter = Adapter()
    hello, go_on = adapter.handle(encode(hello_request("1.0")))
    assert go_on and schema_problems("adapter-message", hello, authoritative=True) == []
    assert hello["spec_versions"] == ["1.0", "1.1"] and adapter.spec_version == "1.0"
    v = vectors["storage/SSTORE/new_slot"]
    reply, _ = adapter.handle(encode(execute_request(v["id"], v["input"], trace=True)))
    assert reply["result"] == v["expected"]["result"] and reply["stage"] is None
    assert reply["trace"][-1]["status"] == "success" and reply["trace"][0]["opName"] == "PUSH1"
    assert schema_problems("adapter-message", reply, authoritative=True) == []
    assert adapter.handle(b"[1, 2]\n")[0]["code"] == "BAD_MESSAGE"
    bad_input = {"type": "execute", "id": "x", "input": {"pre_state": {}}}
    bad_reply = adapter.handle(encode(bad_input))[0]
    assert (bad_reply["type"], bad_reply["id"], bad_reply["code"]) == ("error", "x", "BAD_MESSAGE")
    assert adapter.handle(encode({"type": "shutdown"})) == ({"type": "bye"}, False)
    refused, go_on = adapter.handle(encode({**hello_request("1.0"), "spec_version": "9.9"}))
    assert refused["code"] == "UNSUPPORTED_SPEC_VERSION" and not go_on
    assert refused["spec_versions"] == ["1.0", "1.1"]      # 11.5.3: which versions it implements
    assert schema_problems("adapter-message", refused, authoritative=True) == []


def test_a_session_runs_the_version_of_its_hello():
    # One request, two sessions: SHA256 is repriced by 1.1 (P1), the bytes hashed are not.
    v = next(x for x in store.load(corpus_dir("1.0")) if x["id"] == "hash/SHA256/length_64")
    results = {}
    for version in ("1.0", "1.1"):
        adapter = Adapter()
        adapter.handle(encode(hello_request(version)))
        reply, _ = adapter.handle(encode(execute_request("r", v["input"])))
        results[version] = reply["result"]
    assert results["1.0"] == v["expected"]["result"]
    assert results["1.1"]["output"] == results["1.0"]["output"]
    assert results["1.1"]["usage"]["compute"] < results["1.0"]["usage"]["compute"]


def test_request_messages_pass_the_runner_schema(vectors):
    v = vectors["call/CALL/callee_trap"]
    assert schema_problems("runner-message", decode(encode(execute_request(v["id"], v["input"]))), True) == []
    assert schema_problems("runner-message", hello_request("1.1"), True) == []
    assert schema_problems("runner-message", hello_request("1.x"), True) != []


@pytest.mark.parametrize("version,samples", [("1.0", 12), ("1.1", 17)])
def test_selftest_passes_on_the_reference(version, samples):
    vectors = {v["id"]: v for v in store.load(corpus_dir(version))}
    checks = run_selftest(reference_command(), vectors, version)
    assert [c.name for c in checks if not c.ok] == []
    # 23 protocol checks and the 2 of the capability scenario the reference announces (11.9.4)
    assert len(checks) == 25 and f"executes {samples} sample vectors of every outcome kind exactly" in \
        [c.name for c in checks]
    assert sum(c.name.startswith("capability scenario: ") for c in checks) == 2
    assert [c.note for c in checks if c.note] == []     # every sample answered: no coverage note


@pytest.mark.parametrize("fault,failing_check", [
    ("wrong-result", "sample vectors"),
    ("garbage", "pipelined"),
    ("bad-hello", "handshake"),
])
def test_selftest_names_what_a_broken_adapter_gets_wrong(vectors, fault, failing_check):
    command = shlex.join([sys.executable, str(FAULTY), "--fault", fault])
    checks = run_selftest(command, vectors, "1.0", timeout=5)
    assert any(failing_check in c.name and not c.ok for c in checks), [(c.name, c.ok) for c in checks]


# Each adapter rule of 11.5, broken by a real adapter process (conformance.run.selftest_mutants):
# exactly the checks of that rule fail, and their messages say what was expected and what came.
DETAILS = {
    "execute-before-hello": "expected an error BAD_MESSAGE, got {'type': 'result'",
    "any-spec-version": "expected an error UNSUPPORTED_SPEC_VERSION, got {'type': 'hello'",
    "stays-after-refusal": "the adapter did not exit within 5 s after refusing the handshake (expected exit status 3)",
    "no-depth-bound": "the line nested 33 levels deep: expected an error BAD_MESSAGE, got {'type': 'error', 'id': 'deep', 'code': 'UNKNOWN_TYPE'",
    "traced-format-only": "trace_format \"json\" with trace False: expected an error BAD_MESSAGE, got {'type': 'result'",
    "lenient-input": "an execute with a to in upper-case hex: expected an error BAD_MESSAGE",
    "extra-member": "an execute with an unknown top-level member: expected an error BAD_MESSAGE, got {'type': 'result'",
    "empty-id": "an execute with an empty id: expected an error BAD_MESSAGE, got {'type': 'result'",
    "null-trace-format": "an execute with a null trace_format: expected an error BAD_MESSAGE, got {'type': 'result'",
    "python-patterns": "an execute with a to followed by a newline: expected an error BAD_MESSAGE, got {'type': 'result'",
    "duplicate-members": "a line with two members named type: expected an error BAD_MESSAGE, got {'type': 'bye'}",
    "untyped-request": "a request without a type: expected an error BAD_MESSAGE, got {'type': 'error', 'id': 'no-type', 'code': 'UNKNOWN_TYPE'",
    "loose-shutdown": "a shutdown with a member besides type: expected an error BAD_MESSAGE, got {'type': 'bye'}",
    "loose-hello": "a hello with an unknown member: expected an error BAD_MESSAGE, got {'type': 'hello'",
    "eip3155-native": "the EIP-3155 trace differs at line 0",
    "exact-decimal": "expected the result of compute limit 1000000000000 (success), got {'type': 'error'",
}


@pytest.mark.slow
def test_every_adapter_mutant_fails_exactly_the_checks_of_its_rule(vectors):
    from conformance.run.selftest_mutants import MUTANTS
    from conformance.run.selftest_strength import CAUGHT, run_strength
    verdicts = run_strength(vectors, "1.0", timeout=5)
    assert [v.mutant for v in verdicts] == list(MUTANTS) and len(verdicts) >= 23
    for v in verdicts:
        rule = MUTANTS[v.mutant]
        assert v.verdict == CAUGHT, v
        assert not rule.exact or all(f.startswith((rule.check, *rule.also)) for f in v.failing), v   # no other
        if v.mutant in DETAILS:
            assert any(DETAILS[v.mutant] in d for d in v.details), (v.mutant, v.details)


def test_a_selftest_without_a_rules_check_lets_its_mutant_through(vectors, monkeypatch):
    # The checks of the message forms planted away: their mutants are missed, and the
    # strength says so (the others stay caught).
    from conformance.run import selftest_messages
    from conformance.run.selftest_strength import CAUGHT, MISSED, report, run_strength
    monkeypatch.setattr(selftest_messages, "register", lambda checks, probe, version: None)
    verdicts = run_strength(vectors, "1.0", timeout=5, names=("empty-id", "untyped-request", "no-bye"))
    assert [v.verdict for v in verdicts] == [MISSED, MISSED, CAUGHT]
    assert report(verdicts, "1.0")[-1] == ("selftest strength (spec 1.0): 1/3 adapter mutants caught by the "
                                           "check of their rule (33%)")


def test_cli_selftest_strength_of_chosen_mutants():
    done = cli("conformance", "selftest", "--strength", "--mutant", "no-bye", "--mutant", "loose-hello")
    assert done.returncode == 0, done.stderr
    assert "2/2 adapter mutants caught by the check of their rule (100%)" in done.stdout
    bad = cli("conformance", "selftest", "--strength", "--mutant", "nonsense")
    assert bad.returncode == 2 and "no mutant 'nonsense'" in bad.stderr


def test_the_reference_adapter_answers_inputs_outside_the_schema_bad_message():
    # Spec 1.0.2, D7 and D8: 1.0.1's reference ran "to": "0x1AB" and took "trace": "yes" as true.
    adapter = Adapter()
    adapter.handle(encode(hello_request("1.0")))
    v = store.load(corpus_dir("1.0"))[0]
    for change in ({"trace": "yes"}, {"trace": None}, {"trace_format": "json", "trace": False},
                   {"input": {**v["input"], "message": {**v["input"]["message"], "to": "0x1AB"}}}):
        request = {**execute_request("r", v["input"]), **change}
        if request["trace"] is None:
            del request["trace"]
        reply, go_on = adapter.handle(encode(request))
        assert (reply["type"], reply["id"], reply["code"], go_on) == ("error", "r", "BAD_MESSAGE", True), change
    # trace_format eip3155 with trace false: no trace, no error.
    reply, _ = adapter.handle(encode({**execute_request("r", v["input"]), "trace_format": "eip3155"}))
    assert reply["type"] == "result" and "trace" not in reply


def test_each_selftest_check_reports_its_own_problem(vectors):
    # A stray line before one sample's response: only the checks that send that vector's
    # input fail, each naming the stray line; the lost response does not leak into later checks.
    target = "control/TRAP/alone"     # the third sample: not the input of the error checks' probe
    command = shlex.join([sys.executable, str(FAULTY), "--fault", "garbage", "--target", target])
    checks = run_selftest(command, vectors, "1.0", timeout=5)
    failing = {c.name: c.detail for c in checks if not c.ok}
    trace_check = "capability trace: step traces equal the reference's (jumps, subroutine calls, nested calls)"
    eip3155_check = "capability trace_eip3155: EIP-3155 traces equal the reference's"
    assert sorted(failing) == ["answers 40 pipelined requests in order with their ids", trace_check, eip3155_check,
                               "executes 12 sample vectors of every outcome kind exactly"], failing
    assert all("panic: unexpected state" in d for d in failing.values())
    assert f"response to {target}" in failing[trace_check]
    assert len(checks) == 25      # with the 2 checks of the capability scenario (11.9.4)


def test_selftest_of_an_adapter_that_dies_names_its_exit_status_and_stderr(vectors):
    command = shlex.join([sys.executable, str(FAULTY), "--fault", "exit-70", "--target", "control/TRAP/alone"])
    checks = run_selftest(command, vectors, "1.0", timeout=5)
    failing = [c for c in checks if not c.ok]
    assert [c.name.split(":")[0].split(" ")[0] for c in failing] == ["executes", "answers", "capability", "capability"]
    for c in failing:
        assert "closed its stdout (exit status 70)" in c.detail, c.detail
        assert "stderr: Traceback: internal error on " in c.detail and "TRAP" not in c.detail.split("stderr:")[1]


def test_cli_run_on_a_filter_writes_reports(tmp_path):
    done = cli("conformance", "run", "--filter", "hash/*", "--filter", "opcode=CALL,source=definition",
               "--out", str(tmp_path), "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    # The reference adapter announces both versions: one suite, one report per version.
    assert done.stdout.count("RESULT: every implementation conforms") == 2
    assert "checked: spec 1.0 conforms, spec 1.1 conforms (2 versions)" in done.stdout
    for version in ("1.0", "1.1"):
        doc = json.loads((tmp_path / version / "report.json").read_text())
        assert doc["ok"] and doc["corpus"]["filters"] == ["hash/*", "opcode=CALL,source=definition"]
        assert doc["spec_version"] == version and (tmp_path / version / "junit.xml").exists()
    one = cli("conformance", "run", "--filter", "hash/*", "--spec-version", "1.1", "--out", str(tmp_path / "one"),
              "--no-progress", "--fresh", "0", "--repeat", "0", "--json")
    assert one.returncode == 0, one.stdout + one.stderr
    summary = json.loads(one.stdout)
    assert list(summary["versions"]) == ["1.1"] and summary["not_checked"] == [] and summary["ok"]
    assert not (tmp_path / "one" / "1.0").exists()


def test_cli_run_fails_a_faulty_adapter_and_its_bundle_replays(tmp_path):
    impl = shlex.join([sys.executable, str(FAULTY), "--fault", "wrong-result", "--target", "hash/SHA256/length_0"])
    # No fresh sample: a variant of another hash vector may equal this input, and fail too.
    done = cli("conformance", "run", "--impl", impl, "--filter", "hash/*", "--repeat", "0", "--fresh", "0",
               "--out", str(tmp_path))
    assert done.returncode == 1 and "NOT CONFORMING" in done.stdout
    for version in ("1.0", "1.1"):        # the vector is in both corpora (one request, two results)
        (bundle,) = (tmp_path / version / "bundles").glob("*.json")
        assert json.loads(bundle.read_text())["spec_version"] == version
        replay = cli("conformance", "replay", str(bundle), "--impl", impl)
        assert replay.returncode == 1 and "output: expected" in replay.stdout
        assert f"(spec {version})" in replay.stdout
        fixed = cli("conformance", "replay", str(bundle), "--impl", reference_command())
        assert fixed.returncode == 0, fixed.stdout


def test_cli_rejects_bad_arguments_with_exit_2():
    assert cli("conformance", "run", "--filter", "colour=blue").returncode == 2
    assert cli("conformance", "run", "--filter", "no/such/vector").returncode == 2
    assert cli("conformance", "run", "--workers", "0").returncode == 2
    assert cli("vectors", "show", "no/such").returncode == 2


def test_cli_vectors_commands():
    coverage = cli("vectors", "coverage")
    assert coverage.returncode == 0 and coverage.stdout.count("targets met") == 2 and "DIVS" in coverage.stdout
    count = json.loads((ROOT / "conformance" / "vectors" / "1.0" / "manifest.json").read_text())["vector_count"]
    assert f"coverage of {count} vectors of spec 1.0" in coverage.stdout and "MULHS" in coverage.stdout
    check = cli("vectors", "check")
    lines = check.stdout.strip().splitlines()
    assert check.returncode == 0 and [line.split(":")[0] for line in lines] == ["spec 1.0"] * 2 + ["spec 1.1"] * 2
    assert all(line.endswith("valid") for line in lines) and "scenario vectors" in lines[1] + lines[3]
    shown = cli("vectors", "show", "arithmetic/DIVS/min__minus_one")
    assert shown.returncode == 0 and json.loads(shown.stdout)["expected"]["result"]["status"] == "success"
    assert json.loads(shown.stdout)["_meta"]["spec_version"] == "1.1" and "--spec-version" in shown.stderr
    old = cli("vectors", "show", "validation/UNSUPPORTED_VERSION/v1_1")        # in 1.0's corpus alone
    assert old.returncode == 0 and json.loads(old.stdout)["_meta"]["spec_version"] == "1.0"
    assert cli("vectors", "show", "bitwise/CLZ/zero", "--spec-version", "1.0").returncode == 2
    listed = cli("vectors", "list", "--filter", "outcome=CALL_DEPTH_EXCEEDED")
    # Only ever in call records: the filter selects nothing, a usage error in every command.
    assert listed.returncode == 2 and listed.stdout == "" and "select no vector" in listed.stderr
    listed = cli("vectors", "list", "--filter", "call_outcome=CALL_DEPTH_EXCEEDED,source=definition")
    assert "call/CALL/depth_limit+1" in listed.stdout


def test_cli_selftest_of_the_reference():
    done = cli("conformance", "selftest")
    assert done.returncode == 0 and done.stdout.count("25/25 checks passed") == 2
    assert "(spec 1.0): 25/25" in done.stdout and "(spec 1.1): 25/25" in done.stdout


def test_the_eip3155_example_of_11_5_5_is_what_the_reference_writes():
    # The example in the spec text is written by hand (11.5.5); the reference must agree with it.
    import io
    import re

    from conformance.corpus.definitions.common import case
    from conformance.corpus.vector import input_of, run_reference
    from reference_vm.trace import Eip3155Tracer

    text = (ROOT / "spec" / "chapters" / "11-conformance.md").read_text()
    step = re.search(r'`(\{"depth":1,"gas":"0x64"[^`]*\})`', text).group(1)
    summary = re.search(r'`(\{"gasUsed":[^`]*\})`', text).group(1)
    out = io.StringIO()
    run_reference(input_of(case("x", "x", "push1 1\nstop\n", limits={"compute": 100})), "1.0", Eip3155Tracer(out))
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and lines[0] == step and lines[2] == summary
    assert json.loads(lines[1]) == {**json.loads(step), "pc": 2, "op": 0, "opName": "STOP", "gas": "0x63",
                                    "gasCost": "0x0", "stack": ["0x1"]}
