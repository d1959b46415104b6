"""``rtwo-vm spec coverage`` (rtwo_vm/clause_coverage.py): every clause of every version is
checked or explained, the committed confirmations are current, and a clause whose text is
edited (planted here through a patched text source, never in the files) lists its checks for
review until they are confirmed again. The links are gathered once per module."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import spec
from rtwo_vm import clause_coverage as cc
from rtwo_vm.cli import main
from spec import clauses, prose
from spec.clauses import Link

ROOT = Path(__file__).resolve().parent.parent
EDITED = "6.3-divs"
SENTENCE = "For *sb* = 0 it pushes 2^W − 1"


@pytest.fixture(scope="module")
def gathered():
    out = {}
    for version in spec.names():
        links, missing = cc.gather(version)
        assert missing == []
        out[version] = links
    return out


@pytest.fixture
def edited(monkeypatch):
    """Version 1.0's text with one sentence of 6.3-divs changed (the caches cleared around it)."""
    original = prose.chapter_units

    def units(version):
        found = original(version)
        return {name: tuple(prose.Unit(u.number, u.text.replace(SENTENCE, "For *sb* = 0 it pushes 0"))
                            for u in us) for name, us in found.items()}
    _clear()
    monkeypatch.setattr(prose, "chapter_units", units)
    assert SENTENCE not in clauses.by_id("1.0")[EDITED].text
    yield
    monkeypatch.undo()
    _clear()


def _clear():
    for cached in (clauses._parsed, clauses.by_id, clauses.defining, clauses.rule_section):
        cached.cache_clear()


@pytest.mark.parametrize("version", spec.names())
def test_every_clause_is_checked_or_explained_and_every_link_confirmed(gathered, version):
    report = cc.coverage(version, gathered[version])
    assert report.problems == [] and report.obsolete == [] and report.review == []
    assert report.of_status("unexplained") == []
    assert len(report.of_status("checked")) > 300
    entries = {e.clause.id: e for e in report.clauses}
    divs = {link.key: link for link in entries["6.3-divs"].links}
    assert "arithmetic/DIVS/min__minus_one" in divs["opcode=DIVS"].checks
    assert "DIVS divs_rems_identity_and_truncation" in divs["divs_rems_identity_and_truncation"].checks
    assert "control/TRAP/alone" in {c for link in entries["7.2-trap-executed"].links for c in link.checks}
    assert any(link.kind == "selftest" for link in entries["11.5.6-exit"].links)
    assert entries["9.3-forward"].reason.kind == "tests"


def test_an_edited_clause_lists_its_checks_for_review(gathered, edited):
    report = cc.coverage("1.0", gathered["1.0"])
    expected = {cc.key_of(link) for link in gathered["1.0"] if EDITED in link.clauses}
    assert {key for clause_id, key, _ in report.review if clause_id == EDITED} == expected
    assert {clause_id for clause_id, _, _ in report.review} == {EDITED}
    assert all("text changed" in why for _, _, why in report.review)
    assert {"vector:opcode=DIVS", "theorem:divs_rems_identity_and_truncation", "agreement:branches DIVS"} <= expected
    assert not report.ok


def test_the_command_lists_them_until_they_are_confirmed(gathered, edited, monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(cc, "gather", lambda version: (gathered[version], []))
    store = tmp_path / "confirmed.toml"
    shutil.copy(ROOT / "spec" / "coverage" / "confirmed.toml", store)
    assert main(["spec", "coverage", "--version", "1.0", "--summary", "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert f"{EDITED:<36} vector:opcode=DIVS  [text changed" in out
    assert f"{EDITED:<36} theorem:divs_rems_identity_and_truncation  [text changed" in out
    assert main(["spec", "coverage", "--version", "1.0", "--confirm", "--store", str(store)]) == 0
    capsys.readouterr()
    assert main(["spec", "coverage", "--version", "1.0", "--summary", "--store", str(store)]) == 0
    assert "0 links for review" in capsys.readouterr().out
    assert main(["spec", "coverage", "--version", "1.0", "--clause", EDITED, "--store", str(store)]) == 0
    assert "arithmetic/DIVS/min__minus_one" in capsys.readouterr().out


def test_unconfirmed_and_gone_links_are_listed():
    link = Link("vector", "id=x/*", ("6.1-trap",), ("x/1",))
    report = cc.coverage("1.0", [link], store={}, reasons={})
    assert ("6.1-trap", "vector:id=x/*", "never confirmed") in report.review
    store = cc.confirmed_store([report], {})
    assert cc.coverage("1.0", [link], store=store, reasons={}).review == []
    gone = cc.coverage("1.0", [], store=store, reasons={})
    assert gone.obsolete == [("6.1-trap", "vector:id=x/*")] and not gone.ok
    assert cc.load_store_text(cc.render_store(store)) == store


def test_a_clause_both_checked_and_listed_as_untestable_is_a_problem():
    link = Link("vector", "id=x/*", ("6.1-trap",), ("x/1",))
    reasons = {"6.1-trap": cc.Reason("untestable", "planted")}
    assert any("6.1-trap is listed as untestable" in p for p in cc.coverage("1.0", [link], {}, reasons).problems)
    unknown = Link("theorem", "t", ("6.1-nothing-here",), ("t",))
    assert any("6.1-nothing-here, which no version has" in p for p in cc.coverage("1.0", [unknown], {}, {}).problems)


def test_every_declared_clause_exists_and_every_named_test_file_too():
    from conformance.links import scenarios, selftest, vectors
    from proofs import links as proof_links
    known = {c for v in spec.names() for c in clauses.by_id(v)}
    named = {c for rule in vectors.RULES + scenarios.RULES for c in rule.clauses}
    named |= {c for _, ids in selftest.RULES for c in ids.split()}
    for table in (proof_links.GENERIC, proof_links.LAWS, proof_links.AGREEMENT):
        named |= {c for ids in table.values() for c in ids.split()}
    assert named - known == set()
    reasons = cc.load_reasons()
    assert set(reasons) - known == set()
    assert all((ROOT / test).is_file() for r in reasons.values() for test in r.tests)


def _written(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("args", [
    ["--clause", "../../etc/passwd"], ["--clause", "6.3-nothing-here"], ["--store", "/dev/zero"],
    ["--store", "{tmp}/missing.toml"], ["--store", "bad.toml:[x"], ["--store", 'digest.toml:["1.0"]\n'
                                                                              '"6.3-divs" = { digest = "zz", links = [] }'],
    ["--reasons", 'reasons.toml:[[group]]\nkind = "maybe"\nreason = "x"\nclauses = ["6.3-divs"]'],
    ["extra-name"], ["--version", "9.9"], ["--store", "{tmp}"],
])
def test_hostile_arguments_are_refused_in_one_line(args, tmp_path, capsys):
    argv = []
    for arg in args:
        if ":" in arg and arg.split(":", 1)[0].endswith(".toml"):
            name, body = arg.split(":", 1)
            arg = _written(tmp_path, name, body)
        argv.append(arg.replace("{tmp}", str(tmp_path)))
    assert main(["spec", "coverage", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1


def test_coverage_options_belong_to_coverage_and_confirm_writes_only_the_checkout_one_is_in(
        gathered, monkeypatch, capsys, tmp_path):
    assert main(["spec", "show", "ADD", "--confirm"]) == 2
    monkeypatch.setattr(cc, "gather", lambda version: (gathered[version], []))
    store = ROOT / "spec" / "coverage" / "confirmed.toml"
    before = store.read_bytes()
    monkeypatch.chdir(tmp_path)              # not in the checkout whose file it would write
    assert main(["spec", "coverage", "--version", "1.0", "--confirm"]) == 2
    assert "in no checkout of the project you are in" in capsys.readouterr().err
    assert store.read_bytes() == before


def test_spec_check_reports_a_paragraph_without_its_identifier(monkeypatch, capsys):
    original = prose.chapter_units

    def units(version):
        return {name: tuple(prose.Unit(u.number, u.text.replace(" {#6.1-trap}", "")) for u in us)
                for name, us in original(version).items()}
    _clear()
    monkeypatch.setattr(prose, "chapter_units", units)
    try:
        assert main(["spec", "check"]) == 1
        out = capsys.readouterr().out
        assert "1.0: 06-instructions.md section 6.1: a paragraph without a clause marker: '**TRAP** halts" in out
    finally:
        monkeypatch.undo()
        _clear()


def test_a_selftest_check_that_names_no_clause_is_a_problem(monkeypatch):
    from conformance.links import selftest
    found = selftest.checks()
    assert "shutdown: answers bye and exits with status 0" in found and selftest.unlinked() == ()
    monkeypatch.setattr(selftest, "checks", lambda: found + ("answers a planted new check",))
    problems = cc.coverage("1.0", [], store={}, reasons={}).problems
    assert "self-test check names no clause: answers a planted new check" in problems
