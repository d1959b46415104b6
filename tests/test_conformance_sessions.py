"""One session per spec version (chapter 11.5.3): the runner learns an adapter's versions from
its hello, or from an UNSUPPORTED_SPEC_VERSION error that lists them, tries the next older
version when the error lists none, checks exactly the versions announced, reports each apart
and says which it did not check and why. Real adapter processes throughout."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

from conformance.run.process import Settings
from conformance.run.versions import discover

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"


def faulty(fault: str) -> str:
    return shlex.join([sys.executable, str(FAULTY), "--fault", fault])


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def _discover(command: str, wanted=("1.0", "1.1")):
    return discover(command, shlex.split(command), Settings("1.1", timeout=10.0), list(wanted))


def test_the_reference_announces_both_versions():
    from conformance.run.suite import reference_command
    found = _discover(reference_command())
    assert found.announced == ["1.0", "1.1"] and found.not_checked == {} and not found.start_error
    assert found.checks("1.0") and found.checks("1.1")


def test_an_adapter_of_1_0_is_learnt_from_its_error():
    found = _discover(faulty("only-1.0"))
    assert found.announced == ["1.0"] and found.checks("1.0") and not found.checks("1.1")
    assert found.not_checked == {"1.1": "not announced: the adapter implements 1.0"}
    assert found.hello["implementation"]["name"] == "faulty-reference"   # asked again, on 1.0


def test_an_adapter_refusing_without_a_list_is_tried_on_the_next_older_version():
    found = _discover(faulty("only-1.0-silent"))
    assert found.announced == ["1.0"] and found.checks("1.0")
    assert found.not_checked == {"1.1": "refused: the adapter answered the hello of spec 1.1 with "
                                        "UNSUPPORTED_SPEC_VERSION, listing no version"}


def test_a_hello_listing_an_unknown_version_is_refused():
    found = _discover(faulty("hello-lists-unknown"))
    assert found.announced == [] and found.start_error == (
        "bad hello: spec_versions lists '9.9', not a version of spec/versions.toml (1.0, 1.1)")


def test_a_run_checks_only_what_an_adapter_of_1_0_announces_and_says_so(tmp_path):
    done = cli("conformance", "run", "--impl", faulty("only-1.0"), "--filter", "arithmetic/ADD/one__*",
               "--fresh", "0", "--repeat", "0", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert list(summary["versions"]) == ["1.0"] and summary["ok"]
    assert summary["not_checked"] == [{"spec_version": "1.1", "implementation": "faulty-reference",
                                       "command": faulty("only-1.0"),
                                       "why": "not announced: the adapter implements 1.0"}]
    assert (tmp_path / "1.0" / "report.json").exists() and not (tmp_path / "1.1").exists()
    # the 1.0 report says so too (what a CI job keeps)
    report = json.loads((tmp_path / "1.0" / "report.json").read_text())
    assert report["spec_version"] == "1.0" and report["not_checked"] == summary["not_checked"]
    # Asked for 1.1 alone, it has nothing to check: could not run (exit 3), in words.
    alone = cli("conformance", "run", "--impl", faulty("only-1.0"), "--spec-version", "1.1", "--filter",
                "arithmetic/ADD/one__*", "--fresh", "0", "--repeat", "0", "--out", str(tmp_path / "b"))
    assert alone.returncode == 3, alone.stdout + alone.stderr
    assert "spec 1.1: not checked for faulty-reference: not announced: the adapter implements 1.0" in alone.stdout
    assert "nothing checked: no adapter implements 1.1" in alone.stdout


def test_a_run_of_two_adapters_checks_each_version_with_those_that_announce_it(tmp_path):
    from conformance.run.suite import reference_command
    done = cli("conformance", "run", "--impl", reference_command(), "--impl", faulty("only-1.0-silent"),
               "--filter", "hash/SHA256/length_6*", "--fresh", "0", "--repeat", "0", "--out", str(tmp_path), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert [len(summary["versions"][v]["implementations"]) for v in ("1.0", "1.1")] == [2, 1]
    (skipped,) = summary["not_checked"]
    assert skipped["spec_version"] == "1.1" and skipped["why"].startswith("refused:")


def test_selftest_runs_per_announced_version():
    done = cli("conformance", "selftest", "--impl", faulty("only-1.0"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(spec 1.0): 25/25 checks passed" in done.stdout and "(spec 1.1)" not in done.stdout
    assert "spec 1.1: not checked: not announced: the adapter implements 1.0" in done.stdout
    bad = cli("conformance", "selftest", "--impl", faulty("hello-lists-unknown"))
    assert bad.returncode == 3 and "FAIL  handshake" in bad.stdout and "'9.9'" in bad.stdout
