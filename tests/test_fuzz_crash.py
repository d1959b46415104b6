"""rtwo-vm fuzz survives its own bugs: a crash planted in a worker (in this process, in a spawned
worker process, on a Ray actor: tests/test_ray.py) or a worker process that dies is saved,
reported with the seed, the request and the traceback, exits 3 in one line, and ``--resume``
skips the crashed request. And bounded campaigns against seeded bugs run to their end (exit 1,
findings)."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.corpus import store

ROOT = Path(__file__).resolve().parents[1]
PLANTED = ROOT / "tests" / "fuzz_fixtures" / "planted_crash.py"
SEEDED = ROOT / "tests" / "fuzz_fixtures" / "seeded_bug_adapter.py"
HANG_ONCE = ROOT / "tests" / "fuzz_fixtures" / "hang_once_adapter.py"
CRASH_LINE = "IndexError: Cannot choose from an empty sequence"


def cli(*args, timeout=300):
    if args[:1] == ("fuzz",) and "--spec-version" not in args and "--resume" not in args:
        args = (*args, "--spec-version", "1.0")      # the campaigns of before 1.1, request for request
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def planted(*args, timeout=300):
    args = (*args, "--spec-version", "1.0")
    return subprocess.run([sys.executable, str(PLANTED), *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_crash_in_a_worker_is_saved_reported_and_skipped_on_resume(tmp_path, workers):
    out = tmp_path / "c"
    done = planted("--crash-at", "300", "fuzz", "--runs", "512", "--seed", "2", "--workers", workers,
                   "--out", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"rtwo-vm fuzz: could not run: internal error at request 300 of seed 2: {CRASH_LINE} ")
    assert "--resume skips it" in lines[0]
    # the report names the seed, the request and the exception with its traceback
    report = load(out / "report.json")
    [error] = report["internal_errors"]
    assert (error["index"], error["seed"], error["exception"], error["session"]) == (300, 2, CRASH_LINE, 1)
    assert "planted_crash.py" in error["traceback"] and "random.Random(seed).choice([])" in error["traceback"]
    assert error["traceback"].rstrip().endswith(CRASH_LINE)
    assert report["exit"] == 3 and report["stopped"] == "an internal error at request 300"
    text = (out / "report.txt").read_text()
    assert "INTERNAL ERROR (a bug of the fuzzer, not a divergence) at request 300 of campaign seed 2" in text
    assert "random.Random(seed).choice([])" in text
    # the state: the epoch of the crash (256 .. 511) is not counted, the request is to be skipped
    state = load(out / "state.json")
    assert (state["next_index"], state["skip"], state["executions"]) == (256, [300], 256)
    assert store.load(out / "findings") == []
    # a resume (the fuzzer without the planted crash) skips request 300 and runs the rest
    again = cli("fuzz", "--resume", str(out), "--runs", "512", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    report = json.loads(again.stdout)
    assert report["executions"] == 511 and report["stopped"] == "--runs 512"
    assert [(e["index"], e["session"]) for e in report["internal_errors"]] == [(300, 1)]
    assert load(out / "state.json")["sessions"] == 2


def test_a_crash_after_generation_records_the_request_and_a_resume_accepts_it(tmp_path):
    from conformance.fuzz.state import request_problem
    out = tmp_path / "after"
    done = planted("--crash-at", "40", "--after", "fuzz", "--runs", "64", "--seed", "5", "--out", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    [error] = load(out / "report.json")["internal_errors"]
    assert error["index"] == 40 and error["exception"] == CRASH_LINE
    [stored] = load(out / "state.json")["internal_errors"]
    assert isinstance(stored["input"], dict) and request_problem(stored["input"]) is None
    again = cli("fuzz", "--resume", str(out), "--runs", "64", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["executions"] == 63


def test_a_lost_worker_process_is_saved_and_reported(tmp_path):
    """The worker process ends (os._exit) while generating request 300: no traceback, but the
    state of the last whole epoch and a report are saved, and the epoch runs again on --resume."""
    out = tmp_path / "lost"
    done = planted("--crash-at", "300", "--exit", "fuzz", "--runs", "512", "--seed", "2", "--workers", "2",
                   "--out", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "internal error at requests 256..511 of seed 2" in lines[0], lines
    assert "exited unexpectedly (exit code 9)" in lines[0] and "--resume runs them again" in lines[0]
    [error] = load(out / "report.json")["internal_errors"]
    assert (error["index"], error["last_index"], error["worker"]) == (256, 511, None)
    state = load(out / "state.json")
    assert (state["next_index"], state["skip"]) == (256, [])
    again = cli("fuzz", "--resume", str(out), "--runs", "512", "--json")
    assert again.returncode == 0, again.stdout + again.stderr
    assert json.loads(again.stdout)["executions"] == 512


# -- bounded campaigns against seeded bugs run to their end ---------------------------------------
def test_a_campaign_against_a_seeded_bug_runs_to_its_end(tmp_path):
    """No --stop-on-finding: 3,072 requests (12 epochs) against a seeded bug that passes the
    corpus; the campaign finds it, shrinks it and goes on to the end."""
    out = tmp_path / "bug"
    impl = shlex.join([sys.executable, str(SEEDED), "--bug", "sstore-rewrite-new"])
    done = cli("fuzz", "--impl", impl, "--runs", "3072", "--seed", "1", "--out", str(out), "--json", timeout=900)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["stopped"] == "--runs 3072" and report["executions"] == 3072
    assert report["internal_errors"] == [] and report["buckets"]
    assert all("usage.storage_new_slots" in b["class"].split(",") for b in report["buckets"])
    assert len(store.load(out / "findings")) == len(report["buckets"])


def test_a_campaign_whose_every_request_diverges_runs_to_its_end(tmp_path):
    """Every answer has its fee off by one, so every pool entry the campaign adds is a divergent
    request, and every mutation in it is a mutation of one (2,048 requests, 8 epochs)."""
    markers = tmp_path / "markers"
    markers.mkdir()
    impl = shlex.join([sys.executable, str(HANG_ONCE), "--request-id", "no-such-request", "--wrong-fee", "*",
                       "--marker-dir", str(markers)])
    out = tmp_path / "all"
    done = cli("fuzz", "--impl", impl, "--runs", "2048", "--seed", "3", "--out", str(out), "--json", timeout=900)
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["stopped"] == "--runs 2048" and report["internal_errors"] == []
    assert report["executions"] == report["divergent_requests"] == 2048
    assert report["coverage"]["pool"] > 400               # the corpus seeds and the divergent requests added
    assert "fee" in [b["class"] for b in report["buckets"]]
