"""``prove --resume DIR`` (issue 38): a driver killed mid-run resumes without running its
finished tasks again, and a state file is never trusted — a line edited or forged to mark a
task done (its MAC under the local key does not verify) is refused and its task runs again;
a state of other options is refused in one line. Local runs (no Ray), three theorem tasks."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROVE = ("prove", "--opcode", "ADD", "--width", "64", "--no-agreement", "--no-table",
         "--no-cache", "--jobs", "1")
# ADD's seven theorems at 64 bits, all proved (three tasks: two groups and one theorem).
SEVEN = 7


def cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)}, **kw)


def verdicts(report: Path) -> list[tuple]:
    return sorted((r["theorem"], r["opcode"], r["width"], r["status"])
                  for r in json.loads(report.read_text())["results"])


def resumed(stderr: str) -> tuple[int, int, int]:
    m = re.search(r"resume: (\d+) of (\d+) tasks done before, run again (\d+)", stderr)
    assert m, stderr
    return int(m[1]), int(m[2]), int(m[3])


def test_a_driver_killed_mid_run_resumes_without_running_finished_tasks(tmp_path):
    state = tmp_path / "state"
    report = tmp_path / "report.json"
    proc = subprocess.Popen([sys.executable, "-m", "rtwo_vm.cli", *PROVE, "--resume", str(state),
                             "--report", str(report)], cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = state / "state.jsonl"
    deadline = time.monotonic() + 120
    while not (lines.exists() and len(lines.read_text().splitlines()) >= 2):   # one task done
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)          # the driver and its forked workers
    proc.wait()
    assert not report.exists()
    finished = len(lines.read_text().splitlines()) - 1
    again = cli(*PROVE, "--resume", str(state), "--report", str(report))
    assert again.returncode == 0, again.stdout + again.stderr
    before, total, ran = resumed(again.stderr)
    assert (before, total, ran) == (finished, 3, 3 - finished) and 1 <= finished < 3
    rows = verdicts(report)
    assert len(rows) == SEVEN and {r[3] for r in rows} == {"proved"}
    # A third run finds everything done and runs nothing.
    third = cli(*PROVE, "--resume", str(state), "--report", str(report))
    assert resumed(third.stderr) == (3, 3, 0) and verdicts(report) == rows


def test_a_state_file_edited_to_mark_tasks_done_is_not_believed(tmp_path):
    state = tmp_path / "state"
    report = tmp_path / "report.json"
    first = cli(*PROVE, "--resume", str(state), "--report", str(report))
    assert first.returncode == 0, first.stdout + first.stderr
    truth = verdicts(report)
    head, *entries = (state / "state.jsonl").read_text().splitlines()
    assert len(entries) == 3
    one, two = json.loads(entries[0]), json.loads(entries[1])
    # Forged: task one's rows replaced by a row that was never proved, its MAC kept; task
    # two's MAC replaced by task one's (a valid MAC of other content). The third is intact.
    one["result"] = [{"theorem": "forged_theorem", "opcode": "ADD", "width": 64, "status": "proved",
                      "seconds": 0.0}]
    two["mac"] = json.loads(entries[0])["mac"]
    (state / "state.jsonl").write_text("\n".join([head, json.dumps(one), json.dumps(two),
                                                  entries[2]]) + "\n")
    again = cli(*PROVE, "--resume", str(state), "--report", str(report))
    assert again.returncode == 0, again.stdout + again.stderr
    assert resumed(again.stderr) == (1, 3, 2)
    assert "2 state lines refused" in again.stderr
    assert verdicts(report) == truth and "forged_theorem" not in report.read_text()


def test_a_state_of_other_options_is_refused_in_one_line(tmp_path):
    state = tmp_path / "state"
    first = cli(*PROVE, "--resume", str(state), "--report", str(tmp_path / "a.json"))
    assert first.returncode == 0, first.stderr
    other = cli("prove", "--opcode", "SUB", "--width", "64", "--no-agreement", "--no-table", "--no-cache",
                "--resume", str(state), "--report", str(tmp_path / "b.json"))
    assert other.returncode == 2
    assert other.stderr.strip().count("\n") == 0 and "state of another run" in other.stderr


NO_RAY = ("import sys; sys.modules['ray'] = None; from rtwo_vm import cli; "   # import ray fails
          "sys.exit(cli.main(sys.argv[1:]))")


def test_without_ray_every_ray_option_is_refused_in_one_line(tmp_path):
    for args in (("prove", "--opcode", "ADD", "--ray", "local"),
                 ("prove", "--strength", "--limit", "1", "--ray", "local"),
                 ("vectors", "strength", "--curated-only", "--ray", "127.0.0.1:6379"),
                 ("vectors", "strength", "--curated-only", "--backend", "ray"),
                 ("fuzz", "--runs", "1", "--out", str(tmp_path / "fuzz"), "--ray", "local"),
                 ("symbolic", str(ROOT / "examples" / "counter.rasm"), "--ray", "local")):
        done = subprocess.run([sys.executable, "-c", NO_RAY, *args], cwd=tmp_path, capture_output=True,
                              text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "rtwo-vm: error: --ray needs Ray: pip install 'rtwo-vm[distributed]'"], (args, done.stderr)
    # and without --ray the command runs as before
    done = subprocess.run([sys.executable, "-c", NO_RAY, *PROVE, "--report", str(tmp_path / "r.json")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr


def test_a_cluster_address_that_does_not_answer_is_refused_in_one_line(tmp_path):
    """Ray itself retries a dead address for ever (its GCS client): every --ray command
    probes the port first and refuses it in one line, exit 2, within seconds."""
    pytest.importorskip("ray")
    for args in (("prove", "--opcode", "ADD", "--ray", "127.0.0.1:1"),
                 ("vectors", "strength", "--curated-only", "--ray", "127.0.0.1:1"),
                 ("symbolic", str(ROOT / "examples" / "counter.rasm"), "--ray", "127.0.0.1:1")):
        done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "rtwo-vm: error: Ray: cannot join 127.0.0.1:1: no answer on 127.0.0.1:1 "
            "(Connection refused)"], (args, done.stderr)
