"""``prove --strength --resume DIR`` (issue 38): every unit's result is kept, sealed, as it
finishes; a run started again with the same folder runs only what is not done; a state line
edited to change a verdict is refused (its unit runs again); a state of other mutants is
refused in one line. Units are NOP's (the cheapest proofs unit), run in copies of the tree."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fanout.resume import State, StateError
from proofs import cache
from proofs.strength import mutants, run
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
NOP = "def NOP(s, imm):\n        return [running(s)]"


def _crash() -> mutants.Mutant:          # NOP's model raises: its unit is killed
    return mutants.planted("proofs/instructions/control.py", "models.NOP", NOP,
                           NOP.replace("running(s)", "running(s, undefined_name)"), "nop_crash")


def _same() -> mutants.Mutant:           # the same model, written otherwise: it survives
    return mutants.planted("proofs/instructions/control.py", "models.NOP", NOP,
                           NOP.replace("[running(s)]", "list([running(s)])"), "nop_same")


def _state(tmp_path: Path, chosen, key: bytes) -> State:
    return State(tmp_path / "state", key, run.resume_digest(chosen, V, 900.0))


def test_kept_units_are_not_run_again_and_edited_lines_are_refused(tmp_path):
    chosen = [_crash(), _same()]
    key = cache.load_key(tmp_path / "key")
    first = run.run(chosen, V, timeout=900.0, baseline=False, state=_state(tmp_path, chosen, key))
    assert [v.status for v in first.verdicts] == ["killed", "survived"], run.lines(first)
    head, *lines = (tmp_path / "state" / "state.jsonl").read_text().splitlines()
    kept = {json.loads(line)["task"]: json.loads(line) for line in lines}
    assert sorted(kept) == sorted(m.id for m in chosen)

    # A line sealed by the key is believed without running its unit: the crash's line is
    # replaced by the survivor's result, sealed with the same key (the key holder is trusted).
    forged = _state(tmp_path / "second", chosen, key)
    forged.load(set())
    forged.record(chosen[0].id, kept[chosen[1].id]["result"])
    forged.record(chosen[1].id, kept[chosen[1].id]["result"])
    believed = run.run(chosen, V, timeout=900.0, baseline=False,
                       state=_state(tmp_path / "second", chosen, key))
    assert [v.status for v in believed.verdicts] == ["survived", "survived"]

    # The same edit without the key (the MAC of the line kept): refused, the unit runs again.
    path = tmp_path / "state" / "state.jsonl"
    edited = dict(kept[chosen[0].id], result=kept[chosen[1].id]["result"])
    path.write_text("\n".join([head, json.dumps(edited), json.dumps(kept[chosen[1].id])]) + "\n")
    state = _state(tmp_path, chosen, key)
    again = run.run(chosen, V, timeout=900.0, baseline=False, state=state)
    assert state.refused == 1
    assert [v.status for v in again.verdicts] == ["killed", "survived"], run.lines(again)


def test_a_state_of_other_mutants_is_refused(tmp_path):
    key = cache.load_key(tmp_path / "key")
    run.run([_same()], V, timeout=900.0, baseline=False, state=_state(tmp_path, [_same()], key))
    with pytest.raises(StateError, match="the state of another run"):
        run.run([_crash()], V, timeout=900.0, baseline=False,
                state=_state(tmp_path, [_crash()], key))


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "prove", "--strength", *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


def _resumed(stderr: str) -> tuple[int, int, int]:
    m = re.search(r"resume: (\d+) of (\d+) units done before, run again (\d+)", stderr)
    assert m, stderr
    return int(m[1]), int(m[2]), int(m[3])


@pytest.mark.slow
def test_the_command_resumes_and_refuses_a_foreign_state(tmp_path):
    """Two runs of the same command with one --resume folder: the second runs nothing and
    prints the same verdicts; a folder of another run is refused in one line, exit 2."""
    args = ["--strength-module", "reference_vm/instructions/control.py", "--limit", "1",
            "--resume", str(tmp_path / "state")]
    first = _cli(*args)
    assert first.returncode in (0, 1), first.stderr
    assert _resumed(first.stderr) == (0, 2, 2)        # STOP's unit: its baseline and one mutant
    second = _cli(*args)
    assert _resumed(second.stderr) == (2, 2, 0)
    verdict = [line for line in first.stdout.splitlines() if line.startswith("[1/1]")]
    assert verdict and verdict == [line for line in second.stdout.splitlines()
                                   if line.startswith("[1/1]")]
    other = _cli("--strength-module", "reference_vm/instructions/control.py", "--limit", "2",
                 "--resume", str(tmp_path / "state"))
    assert other.returncode == 2 and "the state of another run" in other.stderr
    assert len(other.stderr.strip().splitlines()) == 1
