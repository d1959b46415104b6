"""``vectors strength --resume DIR`` (issue 38): a driver killed mid-run resumes without
running the mutants it finished (prescreens and survivors' confirmations), with the verdicts
of an uninterrupted run; a state line edited to turn a survivor into a killed mutant is refused
and the mutant runs again. Tiny runs: four comparison mutants against one ADD vector."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUN = ["vectors", "strength", "--no-curated", "--module", "instructions/comparison", "--limit", "4",
       "--filter", "arithmetic/ADD/one__one", "--workers", "1", "--no-progress"]
MUTANTS = 4


def _argv(tmp_path: Path, report: str) -> list[str]:
    return [sys.executable, "-m", "rtwo_vm.cli", *RUN, "--resume", str(tmp_path / "state"),
            "--json", str(tmp_path / report)]


def _run(tmp_path: Path, report: str) -> subprocess.CompletedProcess:
    return subprocess.run(_argv(tmp_path, report), capture_output=True, text=True, cwd=ROOT,
                          timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _resumed(stderr: str) -> tuple[int, int, int]:
    m = re.search(r"resume: (\d+) of (\d+) mutants done before, run again (\d+)", stderr)
    assert m, stderr
    return int(m[1]), int(m[2]), int(m[3])


def _verdicts(path: Path) -> dict[str, tuple]:
    return {m["id"]: (m["status"], m["how"], tuple(m["killers"]))
            for m in json.loads(path.read_text())["mutants"]}


def test_killed_driver_resumes_and_an_edited_line_is_refused(tmp_path):
    plain = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *RUN, "--json",
                            str(tmp_path / "plain.json")], capture_output=True, text=True,
                           cwd=ROOT, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert plain.returncode == 1, plain.stderr            # survivors: below the target
    truth = _verdicts(tmp_path / "plain.json")
    # ADD's vector runs no comparison: the mutants that still import survive.
    assert len(truth) == MUTANTS and "survived" in {s for s, _, _ in truth.values()}

    proc = subprocess.Popen(_argv(tmp_path, "cut.json"), cwd=ROOT, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    lines = tmp_path / "state" / "state.jsonl"
    deadline = time.monotonic() + 300
    while not (lines.exists() and len(lines.read_text().splitlines()) >= 2):   # one mutant done
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)                    # the driver and its forked children
    proc.wait()
    assert not (tmp_path / "cut.json").exists()
    finished = sum(json.loads(e)["task"] in truth for e in lines.read_text().splitlines()[1:])
    again = _run(tmp_path, "again.json")
    assert again.returncode == 1, again.stderr
    assert _resumed(again.stderr) == (finished, MUTANTS, MUTANTS - finished) and finished >= 1
    assert _verdicts(tmp_path / "again.json") == truth

    # Every task is done now: a third run runs nothing. Then a survivor's line is edited into
    # a killed mutant (its MAC kept): refused, the mutant runs again and survives again.
    head, *entries = lines.read_text().splitlines()
    third = _run(tmp_path, "third.json")
    survivors = sum(s == "survived" for s, _, _ in truth.values())
    assert _resumed(third.stderr) == (MUTANTS, MUTANTS, 0)
    assert f"; {survivors} survivors' confirmations kept" in third.stderr
    docs = [json.loads(e) for e in entries]
    edit = next(d for d in docs if d["task"] in truth and d["result"]["status"] == "survived")
    edit["result"] = {**edit["result"], "status": "killed", "how": "vector",
                      "killers": ["arithmetic/ADD/one__one"]}
    lines.write_text("\n".join([head, *(json.dumps(d) for d in docs)]) + "\n")
    edited = _run(tmp_path, "edited.json")
    assert "1 state lines refused" in edited.stderr and _resumed(edited.stderr)[2] == 1
    assert _verdicts(tmp_path / "edited.json") == truth
