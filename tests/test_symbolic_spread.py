"""``rtwo-vm symbolic --jobs N``: the witness and claim queries of every path solved ahead in
worker processes (proofs/symbolic/spread.py), each a pure function of its text
(proofs/symbolic/apart.py), and the phase's work counted by the driver in path order.

The report (JSON, byte for byte) and the exit code are those of the run that solves every
query in the driver, on contracts of several shapes; a work budget that runs out in the
middle of the phase stops at the same query; a worker process killed mid-batch (a real
``os._exit``) changes nothing; a worker that answers ``sat`` where the query is
unsatisfiable is caught (exit 3). Every run is a real ``rtwo-vm`` process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
PLANTED = ROOT / "tests" / "fanout_fixtures" / "planted_symbolic.py"

# Call data byte 0 selects: 1 sets slot 0 to 11, 2 sets slot 1 to 22, 3 reverts, any other
# stops. Six paths (a first write to a slot costs more than a rewrite: a fork each).
DISPATCH = """\
    push 0
    calldataload
    push 0xff
    and
    dup1
    push 1
    eq
    jumpi one
    dup1
    push 2
    eq
    jumpi two
    dup1
    push 3
    eq
    jumpi three
    stop
one:
    push 0
    push 11
    sstore
    stop
two:
    push 1
    push 22
    sstore
    stop
three:
    push 0
    push 0
    revert
"""
DISPATCH_PROPERTIES = """\
import z3
from proofs.symbolic.properties import contract_property

@contract_property("slot_1_never_changes")
def slot1(c):
    return [c.post.storage[1] == c.pre.storage[1]]

@contract_property("slot_0_is_11_or_unchanged")
def slot0(c):
    return [z3.Or(c.post.storage[0] == 11, c.post.storage[0] == c.pre.storage[0])]
"""


def _env() -> dict:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def symbolic(folder: Path, *args: str, planted: tuple = ()) -> subprocess.CompletedProcess:
    """One real run, its counterexamples written to folder/cx (the same relative path in
    every run, so the reports can be compared byte for byte)."""
    head = [sys.executable, str(PLANTED), *planted] if planted else \
        [sys.executable, "-m", "rtwo_vm.cli"]
    return subprocess.run([*head, "symbolic", *args, "--counterexamples", "cx", "--json"],
                          cwd=folder, capture_output=True, text=True, timeout=600, env=_env())


def shapes(tmp_path: Path) -> dict:
    (tmp_path / "dispatch.rasm").write_text(DISPATCH)
    (tmp_path / "dispatch_properties.py").write_text(DISPATCH_PROPERTIES)
    return {
        "token": (str(EX / "token.rasm"), "--max-calldata", "16", "--properties",
                  str(EX / "token_properties.py")),
        "counter": (str(EX / "counter.rasm"), "--properties", str(EX / "counter_properties.py"),
                    "--compute", "500"),
        "dispatch": (str(tmp_path / "dispatch.rasm"), "--max-calldata", "8", "--properties",
                     str(tmp_path / "dispatch_properties.py")),
        "proxy": (str(EX / "proxy.rasm"), "--contract", f"0x101={EX / 'counter.rasm'}",
                  "--compute", "600", "--properties", str(EX / "proxy_properties.py")),
    }


def _runs(tmp_path: Path, name: str, args: tuple, *extra: str, planted: tuple = ()):
    folder = tmp_path / f"{name}{len(list(tmp_path.glob(name + '*')))}"
    folder.mkdir()
    return folder, symbolic(folder, *args, *extra, planted=planted)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["token", "counter", "dispatch", "proxy"])
def test_worker_processes_give_the_drivers_report_byte_for_byte(tmp_path, name):
    args = shapes(tmp_path)[name]
    here, alone = _runs(tmp_path, name, args)
    there, spread = _runs(tmp_path, name, args, "--jobs", "2")
    assert alone.returncode in (0, 1, 4), alone.stderr
    assert spread.stdout == alone.stdout and spread.returncode == alone.returncode
    report = json.loads(alone.stdout)
    paths = len(report["paths"])
    # Every path's witness query at least was solved ahead, in the workers.
    line = [s for s in spread.stderr.splitlines() if s.startswith("spread: ")]
    assert line and int(line[0].split()[1]) >= paths, spread.stderr
    assert "spread:" not in alone.stderr
    for vectors in (here / "cx").glob("*.jsonl"):
        assert (there / "cx" / vectors.name).read_bytes() == vectors.read_bytes()


INVARIANTS = {
    "counter": (str(EX / "counter.rasm"), "--invariant", str(EX / "counter_invariants.py"),
                "--depth", "3"),
    "token": (str(EX / "token.rasm"), "--invariant", str(EX / "token_invariants.py"),
              "--depth", "2", "--storage", "0xa=100", "--concrete-storage"),
    "vault": (str(EX / "vault.rasm"), "--invariant", str(EX / "vault_invariants.py"),
              "--depth", "2", "--storage", "0xa=100", "--concrete-storage"),
}


@pytest.mark.parametrize("name", sorted(INVARIANTS))
def test_invariant_sequences_give_the_same_report_with_worker_processes(tmp_path, name):
    """symbolic --invariant: the first queries of every state's checks of one exploration
    solved ahead; the report (work units included) is the driver-alone run's."""
    here, alone = _runs(tmp_path, name, INVARIANTS[name])
    there, spread = _runs(tmp_path, name, INVARIANTS[name], "--jobs", "2")
    assert spread.returncode == alone.returncode
    assert spread.stdout.replace(str(there), "DIR") == alone.stdout.replace(str(here), "DIR")
    assert "spread: " in spread.stderr and " 0 queries solved ahead" not in spread.stderr
    # hand-derived: the counter and the token keep their invariants (exit 0); the vault's
    # withdrawal bug needs two calls (exit 1, a violated invariant)
    assert alone.returncode == (1 if name == "vault" else 0), alone.stderr


def test_the_dispatchers_counterexample_is_the_path_that_writes_slot_1(tmp_path):
    """Hand-derived: slot 1 changes only on selector 2 (call data byte 0 = 0x02) when slot 1
    did not hold 22 already; slot 0 becomes 11 or stays: proved on all six paths."""
    args = shapes(tmp_path)["dispatch"]
    _, done = _runs(tmp_path, "dispatch", args, "--jobs", "2")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    verdicts = {v["property"]: v for v in report["properties"]}
    assert verdicts["slot_0_is_11_or_unchanged"]["verdict"] == "proved"
    found = verdicts["slot_1_never_changes"]
    assert found["verdict"] == "counterexample"
    cx = found["counterexample"]
    assert bytes.fromhex(cx["input"]["call_data"][2:])[0] == 2
    assert int(cx["input"]["storage"].get("0x100", {}).get("0x1", "0x0"), 16) != 22
    assert [(c["key"], c["after"]) for c in cx["result"]["state_changes"]] == [("0x1", "0x16")]


def test_a_work_budget_spent_mid_phase_stops_at_the_same_query(tmp_path):
    """--max-work 15000000: the token's witnesses and first two properties fit, the integer
    claim of transfer_conserves_when_balances_fit on path 2 (the transfer that writes two
    slots) needs more than is left: unknown, named, in both runs; the phase spends exactly
    its budget (the driver charges what was left, in path order)."""
    args = shapes(tmp_path)["token"] + ("--max-work", "15000000")
    _, alone = _runs(tmp_path, "token", args)
    _, spread = _runs(tmp_path, "token", args, "--jobs", "2")
    assert spread.stdout == alone.stdout and alone.returncode == spread.returncode == 1
    report = json.loads(alone.stdout)
    verdicts = {v["property"]: v for v in report["properties"]}
    assert verdicts["transfer_conserves_the_two_balances"]["verdict"] == "counterexample"
    assert verdicts["transfer_leaves_every_other_slot_unchanged"]["verdict"] == "proved"
    fit = verdicts["transfer_conserves_when_balances_fit"]
    assert fit["verdict"] == "unknown"
    assert fit["undecided"] == ["transfer_conserves_when_balances_fit on path 2: "
                                "unknown (max-work 15000000 spent)"]


def test_a_worker_process_that_dies_on_its_third_query_changes_nothing(tmp_path):
    args = shapes(tmp_path)["dispatch"]
    _, alone = _runs(tmp_path, "dispatch", args)
    marks = tmp_path / "marks"
    marks.mkdir()
    _, planted = _runs(tmp_path, "dispatch", args, "--jobs", "2",
                       planted=("--exit-at", "3", str(marks)))
    assert planted.stdout == alone.stdout and planted.returncode == alone.returncode == 1
    line = [s for s in planted.stderr.splitlines() if s.startswith("spread: ")][0]
    assert " 0 retried" not in line, planted.stderr
    # the third start died; its query (and those the broken pool lost) ran again
    assert (marks / "task-3").exists() and len(list(marks.iterdir())) > 8


@pytest.mark.parametrize("name,mode,message", [
    # A lying worker would turn the token's proved property into a counterexample: its
    # answer's own values leave the query unsatisfiable on the driver.
    ("token", "--lie-sat", "the worker that solved it did not answer it"),
    # A worker's values are spliced into the driver's pinning script only when they are a
    # symbol and a numeral: one that would close the assertion and add its own is refused.
    ("dispatch", "--inject", "not constants and values"),
])
def test_a_worker_whose_answer_is_not_one_is_caught(tmp_path, name, mode, message):
    marks = tmp_path / "marks"
    marks.mkdir()
    _, bad = _runs(tmp_path, name, shapes(tmp_path)[name], "--jobs", "2",
                   planted=(mode, str(marks)))
    assert bad.returncode == 3, bad.stdout + bad.stderr
    assert message in bad.stderr


def test_spreading_options_are_checked_in_one_line(tmp_path):
    for extra, message in ((("--jobs", "0"), "--jobs"), (("--jobs", "65"), "--jobs"),
                           (("--ray", "not an address"), "--ray"),
                           (("--jobs", "two"), "--jobs")):
        done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "symbolic",
                               str(EX / "counter.rasm"), *extra], cwd=tmp_path,
                              capture_output=True, text=True, timeout=120, env=_env())
        assert done.returncode == 2, (extra, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1 and message in done.stderr, done.stderr
