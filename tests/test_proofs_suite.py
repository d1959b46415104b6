"""The whole proof suite, once, as CI runs it; and the CLI around it."""

from __future__ import annotations

import json

import pytest

from proofs import exports
from proofs.runner import PROVED, Options, run_suite
from proofs.theorems import registry
from rtwo_vm.cli import main

import spec
from conftest import BASE_VERSION as V


@pytest.mark.slow
def test_full_suite_proves_everything_and_agrees():
    rows = run_suite(Options(version=V, jobs=2))
    failures = [r for r in rows if r["status"] not in (PROVED, "agrees")]
    assert failures == []
    theorems = [r for r in rows if not r["theorem"].startswith("agreement")]
    # Every claim of every row re-checked by a second configuration, the signed division
    # identity at every width included (its sign case a >= 0, b < 0 is split, see _divs).
    signed = [r for r in theorems if r["theorem"] == "divs_rems_identity_and_truncation"]
    assert {r["width"] for r in signed} == {8, 16, 32, 64}
    for r in signed:
        assert sum(r["rechecked_by"].values()) == r["claims"]
    assert [r for r in theorems if r.get("second_status") != "agrees"] == []
    assert all(r["premises"].startswith("satisfiable") for r in theorems)
    widths = {}
    for r in theorems:
        widths.setdefault((r["theorem"], r["opcode"]), set()).add(r["width"])
    assert all(64 in w or w == {"-"} for w in widths.values())  # every theorem at 64 bits
    proved_opcodes = {r["opcode"] for r in theorems}
    assert set(spec.load(V).by_mnemonic) <= proved_opcodes
    assert len(theorems) == sum(len(t.widths) for t in registry(V))


def test_cli_prove_one_opcode_writes_report_and_smt2(tmp_path, capsys):
    report = tmp_path / "report.json"
    smt = tmp_path / "smt2"
    code = main(["prove", "--opcode", "ADD", "--report", str(report), "--export-smt2", str(smt),
                 "--samples", "3", "--no-crosshair", "--jobs", "1"])
    out = capsys.readouterr()
    assert code == 0
    assert "theorem" in out.out and "| ADD" in out.out
    doc = json.loads(report.read_text())
    assert doc["summary"]["failures"] == 0
    exported = sorted(smt.iterdir())
    claims = [p for p in exported if exports.class_of(p.name) == "claim"]
    assert claims and all("(set-info :status unsat)" in p.read_text() for p in claims)
    assert len(claims) == sum(r["claims"] for r in doc["results"] if "claims" in r)


def test_cli_rejects_bad_arguments(capsys):
    assert main(["prove", "--opcode", "NOPE"]) == 2
    assert main(["prove", "--width", "12"]) == 2
    assert "rtwo-vm: error" in capsys.readouterr().err


def test_a_version_without_models_is_refused_in_one_line(capsys):
    """The proofs have models of 1.0 and 1.1 (proofs/versions.py), and the symbolic executor
    runs whole programs of both: each refusal is one line naming what it has."""
    for argv, has in ((["prove", "--spec-version", "9.9"], "models of: 1.0, 1.1)"),
                      (["equivalence", "examples/max.rasm", "examples/max.rasm",
                        "--spec-version", "2.0"], "models of: 1.0, 1.1)"),
                      (["symbolic", "examples/counter.rasm", "--spec-version", "9.9"],
                       "models of: 1.0, 1.1)")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("rtwo-vm: error: --spec-version: ") and err.count("\n") == 1, err
        assert has in err, err


def test_cli_report_to_stdout_is_json_alone(capsys):
    code = main(["prove", "--opcode", "NOP", "--report", "-", "--no-crosshair"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["theorems"] == {"proved": 6}
    assert doc["scope"]["complete"] is False and doc["budgets"]["wall_seconds_safety_net"] > 0
