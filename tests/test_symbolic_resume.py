"""``rtwo-vm symbolic --resume DIR``: every query answered after the exploration is kept in
DIR as it is answered (fanout/resume.py: sealed with the local cache key), and a run with
the same DIR takes those answers instead of solving them again, with the same report byte
for byte. A driver killed mid-run (SIGKILL to its process group) resumes with the report
of an uninterrupted run; a state line edited to turn an ``unsat`` into a ``sat`` is refused
(its query solved again); a state of another per-query budget is refused in one line. Every
run is a real ``rtwo-vm`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_symbolic_spread import DISPATCH as DISPATCH_CODE

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
TOKEN = ("symbolic", str(EX / "token.rasm"), "--max-calldata", "16", "--properties",
         str(EX / "token_properties.py"), "--counterexamples", "cx", "--json")
# Six paths, each with an integer claim about a product that takes its whole budget: about
# half a second per query, time to kill the driver between two of them.
PRODUCTS = ("symbolic", str(ROOT / "benchmarks" / "products.rasm"), "--max-calldata", "24",
            "--properties", str(ROOT / "benchmarks" / "products_properties.py"),
            "--rlimit", "2000000", "--counterexamples", "cx", "--json")
# The six-path dispatcher of test_symbolic_spread: a second's run.
DISPATCH = ("symbolic", "dispatch.rasm", "--max-calldata", "8", "--counterexamples", "cx",
            "--json")


def cli(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=folder,
                          capture_output=True, text=True, timeout=600,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def answers(state: Path) -> list[dict]:
    return [json.loads(line) for line in (state / "state.jsonl").read_text().splitlines()[1:]]


def test_a_second_run_takes_every_answer_and_gives_the_same_report(tmp_path):
    state = tmp_path / "state"
    first = cli(tmp_path, *TOKEN, "--resume", str(state))
    assert first.returncode == 1, first.stderr          # the overflow counterexample
    assert "resume: 0 answers kept before" in first.stderr
    kept = answers(state)
    assert kept and {a["result"]["status"] for a in kept} <= {"sat", "unsat", "unknown"}
    again = cli(tmp_path, *TOKEN, "--resume", str(state))
    assert again.stdout == first.stdout and again.returncode == 1
    unique = len({a["task"] for a in kept})
    assert f"resume: {unique} answers kept before" in again.stderr, again.stderr
    assert "resume: 0 answers solved and kept" in again.stderr    # nothing solved again
    assert answers(state) == kept


def test_an_unsat_edited_into_sat_is_refused_and_solved_again(tmp_path):
    state = tmp_path / "state"
    honest = cli(tmp_path, *TOKEN, "--resume", str(state))
    lines = (state / "state.jsonl").read_text().splitlines()
    at = next(i for i, line in enumerate(lines[1:], 1)
              if json.loads(line)["result"]["status"] == "unsat")
    doc = json.loads(lines[at])
    doc["result"]["status"] = "sat"               # the MAC is left as it was
    lines[at] = json.dumps(doc, sort_keys=True)
    (state / "state.jsonl").write_text("\n".join(lines) + "\n")
    again = cli(tmp_path, *TOKEN, "--resume", str(state))
    assert "1 state lines refused" in again.stderr, again.stderr
    assert "resume: 1 answers solved and kept" in again.stderr, again.stderr
    assert again.stdout == honest.stdout and again.returncode == honest.returncode == 1


@pytest.mark.slow
def test_a_driver_killed_mid_run_resumes_with_the_uninterrupted_report(tmp_path):
    whole = cli(tmp_path, *PRODUCTS)
    assert whole.returncode == 4, whole.stderr     # every claim unknown at its budget
    state = tmp_path / "state"
    proc = subprocess.Popen([sys.executable, "-m", "rtwo_vm.cli", *PRODUCTS, "--resume",
                             str(state)], cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 300
        while not ((state / "state.jsonl").exists() and len(answers(state)) >= 8):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    before = len({a["task"] for a in answers(state)})
    resumed = cli(tmp_path, *PRODUCTS, "--resume", str(state))
    assert resumed.stdout == whole.stdout and resumed.returncode == 4
    assert f"resume: {before} answers kept before" in resumed.stderr, resumed.stderr


def test_a_state_of_another_budget_is_refused_in_one_line(tmp_path):
    (tmp_path / "dispatch.rasm").write_text(DISPATCH_CODE)
    state = tmp_path / "state"
    assert cli(tmp_path, *DISPATCH, "--resume", str(state)).returncode == 0
    assert answers(state)
    other = cli(tmp_path, *DISPATCH, "--resume", str(state), "--rlimit", "1000000")
    assert other.returncode == 2
    assert len(other.stderr.strip().splitlines()) == 1 and "state of another run" in other.stderr
