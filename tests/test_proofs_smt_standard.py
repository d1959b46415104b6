"""Every exported query is standard SMT-LIB 2.6 and every class of query is exported.

z3 prints ``z3.Or([x])`` as ``(or x)`` (and ``z3.Or([])`` as a bare ``or``), which z3 and
cvc5 read but the standard and Bitwuzla's strict reader refuse: smtlib.standard writes each
as what it means. ``prove --export-smt2`` writes the claims, the premises, the antecedents
and the branch searches (proofs/exports.py), and Bitwuzla's parser reads every file.
"""

from __future__ import annotations

import json

import pytest
import z3

from proofs import exports, smtlib
from rtwo_vm.cli import main
from conftest import need_bitwuzla


@pytest.mark.parametrize("text, standard", [
    ("(assert (or a))", "(assert a)"),
    ("(assert (and (or (and x)) y))", "(assert (and x y))"),
    ("(assert (or (bvult a\n  b)\n  ))", "(assert (bvult a\n  b))"),
    ("(assert (or))", "(assert false)"),
    ("(assert (and ))", "(assert true)"),
    ("(assert (=> or and))", "(assert (=> false true))"),
    ("(assert (or a b))", "(assert (or a b))"),                      # two: left alone
    ("(assert (bvor a))", "(assert (bvor a))"),                      # not or
    ("(assert (and |(or x)| (or |a b|)))", "(assert (and |(or x)| |a b|))"),
    ('(assert (or "(and x)"))', '(assert "(and x)")'),
    ("; (or x)\n(assert (and (f (or x) y)))", "; (or x)\n(assert (f x y))"),
    ("(assert (or (f |)| a)))", "(assert (f |)| a))"),               # a quoted ")" skipped
])
def test_standard_writes_what_one_or_no_argument_means(text, standard):
    assert smtlib.standard(text) == standard


def test_an_export_of_a_one_argument_or_is_standard_and_means_the_same():
    x = z3.BitVec("x", 8)
    claim = z3.Implies(z3.Or([z3.ULT(x, 3)]), z3.And([z3.ULT(x, 4)]))
    raw = smtlib.fresh_solver([z3.Not(claim)]).to_smt2()
    assert "(or (bvult" in raw and "(and (bvult" in raw        # what z3 prints
    text = smtlib.export([], claim)
    assert "(or " not in text and "(and " not in text
    solver = z3.Solver()
    solver.from_string(text)
    assert solver.check() == z3.unsat


def _strict(text: str) -> None:
    """Bitwuzla's reader: it refuses what the standard does not allow (``got 1``)."""
    bitwuzla = need_bitwuzla()
    bitwuzla.Parser(bitwuzla.TermManager(), bitwuzla.Options()).parse(text, True, False)


def test_the_strict_reader_refuses_what_z3_prints():
    bitwuzla = need_bitwuzla()
    x = z3.Bool("x")
    raw = "(set-logic QF_BV)\n" + smtlib.fresh_solver([z3.Or([x])]).to_smt2()
    with pytest.raises(bitwuzla.BitwuzlaException, match="got 1"):
        _strict(raw)
    _strict(smtlib.standard(raw))


def test_every_class_of_query_is_exported_and_each_file_is_standard(tmp_path):
    """STOP's cost and deterministic rows hold one-argument ors (z3.Or of one branch)."""
    need_bitwuzla()
    out = tmp_path / "smt"
    assert main(["prove", "--opcode", "STOP", "--export-smt2", str(out), "--samples", "1",
                 "--solver", "z3", "--quiet", "--report", str(tmp_path / "r.json")]) == 0
    rows = json.loads((tmp_path / "r.json").read_text())["results"]
    files = sorted(out.iterdir())
    by_class: dict[str, list[str]] = {}
    for path in files:
        text = path.read_text()
        _strict(text)
        status = text.split("(set-info :status ", 1)[1].split(")", 1)[0]
        by_class.setdefault(exports.class_of(path.name), []).append(status)
    expected = {"claim": "unsat", "premises": "sat", "antecedent": "sat", "branch": "unknown"}
    assert {k: set(v) for k, v in by_class.items()} == {k: {s} for k, s in expected.items()}
    theorems = [r for r in rows if not r["theorem"].startswith("agreement")]
    assert len(by_class["claim"]) == sum(r["claims"] for r in theorems)
    assert len(by_class["premises"]) == len(theorems)     # every STOP row has premises
    cost = [p.name for p in files if p.name.startswith("cost__STOP__w64__")]
    assert cost == ["cost__STOP__w64__000.smt2", "cost__STOP__w64__000__antecedent.smt2",
                    "cost__STOP__w64__001.smt2", "cost__STOP__w64__001__antecedent.smt2",
                    "cost__STOP__w64__premises.smt2"]
    assert any(p.name.startswith("agreement_branches__STOP__w64__000__") for p in files)


def test_prove_solver_bitwuzla_rechecks_every_claim(tmp_path):
    """The documented ``--solver bitwuzla`` (it read none of STOP's texts before they were
    standard: "BitwuzlaException: got 1")."""
    need_bitwuzla()
    report = tmp_path / "r.json"
    assert main(["prove", "--opcode", "STOP", "--solver", "bitwuzla", "--no-agreement",
                 "--quiet", "--report", str(report)]) == 0
    rows = json.loads(report.read_text())["results"]
    assert rows and all(r["status"] == "proved" and r["second_status"] == "agrees"
                        for r in rows)
    assert all(sum(n for label, n in r["rechecked_by"].items() if label.startswith("bitwuzla"))
               == r["claims"] for r in rows)


def test_the_strict_reading_of_every_script_notices_a_text_left_as_z3_prints_it(monkeypatch):
    """proofs.digests --strict (the determinism test's first run reads every theorem task's
    scripts so): with smtlib.standard planted away, STOP's cost group is refused."""
    need_bitwuzla()
    from proofs import digests, runner, versions
    options = runner.Options(version=versions.newest(), opcodes=("STOP",), agreement=False)
    assert digests.lines(options, read=digests.strict)          # standard: every script read
    monkeypatch.setattr(smtlib, "standard", lambda text: text)
    with pytest.raises(SystemExit, match=r"cost/STOP.* w64: not standard SMT-LIB: .*got 1"):
        digests.lines(options, read=digests.strict)


def test_the_guides_export_listing_is_what_prove_writes(tmp_path):
    """docs/guides/proving.md, "A second solver": its `ls` and `head` of an export of SHL."""
    import re
    from pathlib import Path
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "proving.md").read_text()
    block = re.search(r"\$ rtwo-vm prove --opcode SHL --export-smt2 smt\n(.*?)```", guide,
                      re.S).group(1)
    shown = dict(re.findall(r"\$ (.*)\n((?:[^$].*\n)+)", block))
    smt = tmp_path / "smt"
    assert main(["prove", "--opcode", "SHL", "--export-smt2", str(smt), "--quiet", "--theorem",
                 "cost", "--theorem", "charges_before_effect", "--theorem",
                 "agreement_branches", "--report", str(tmp_path / "r.json")]) == 0
    names = sorted(p.name for p in smt.iterdir())
    assert shown["ls smt | grep '^cost__'"].split() == [n for n in names
                                                       if n.startswith("cost__")]
    assert shown["ls smt | grep '^agreement_branches__' | head -3"].split() == [
        n for n in names if n.startswith("agreement_branches__")][:3]
    head = (smt / "charges_before_effect__SHL__w64__000.smt2").read_text().splitlines()[:4]
    assert shown["head -4 smt/charges_before_effect__SHL__w64__000.smt2"].splitlines() == head
