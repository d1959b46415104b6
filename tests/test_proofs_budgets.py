"""Verdicts that do not depend on the machine: deterministic budgets, timeout distinct from
unknown, partial runs kept apart from the full report, and users' own theorems."""

from __future__ import annotations


import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from proofs import solvers
from proofs.runner import PROVED, TIMEOUT, UNKNOWN, Options, run_suite
from proofs.report import assess
from rtwo_vm.cli import main
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parent.parent
# CALL's rows: cvc5's integer blasting claim by claim, re-checked by z3 within a small budget
# and by cvc5's script; LOG2's: z3's and cvc5's incremental scripts (budgets.toml).
HEAVY = Options(version=V, opcodes=("CALL", "LOG2"), names=("cost", "meters"), agreement=False, jobs=2)
SPIN = "import sys\nprint('spinning', flush=True)\nwhile True:\n    pass\n"


def verdicts(rows):
    return [(r["theorem"], r["opcode"], r["width"], r["status"], r.get("second_status"),
             r.get("proved_by"), r.get("rechecked_by"), r.get("resources")) for r in rows]


@pytest.mark.slow
def test_the_same_statuses_and_solver_work_quiet_and_beside_four_busy_processes():
    quiet = verdicts(run_suite(HEAVY))
    assert [v[3] for v in quiet] == [PROVED] * 4 and all(v[4] == "agrees" for v in quiet)
    assert {label for v in quiet for label in v[5]} == {
        "cvc5 (solve-bv-as-int=sum, logic ALL)", "z3 (phase_selection=2, incremental script)"}
    # CALL's rows (call-arithmetic): Bitwuzla's first attempt when it is installed (the test
    # extra installs it; it answers within its seconds here, loaded too), else z3 within a
    # small budget and cvc5's bit-blasting the rest; LOG2's (generic): cvc5's integer
    # blasting as a script
    call = ({"bitwuzla (at most 10 s, incremental script)"} if solvers.available("bitwuzla")
            else {"z3", "cvc5 (incremental script)"})
    assert {label for v in quiet for label in v[6]} == call | {
        "cvc5 (solve-bv-as-int=sum, incremental script, logic ALL)"}
    spinners = [subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True)
                for _ in range(4)]
    try:
        for p in spinners:  # every spinner is running before the loaded run starts
            assert p.stdout.readline().strip() == "spinning"
        loaded = verdicts(run_suite(HEAVY))
        assert all(p.poll() is None for p in spinners)  # ...and still running after it
    finally:
        for p in spinners:
            p.kill()
            p.wait()
    assert loaded == quiet  # statuses, provers, re-checkers and the work units spent


def budgets_file(tmp_path, z3_rlimit):
    text = solvers.BUDGETS_FILE.read_text()
    text = re.sub(r"(\[config\.z3\]\nsolver = \"z3\"\nrlimit = )[\d_]+", rf"\g<1>{z3_rlimit}", text)
    path = tmp_path / "budgets.toml"
    path.write_text(text)
    return path


def test_a_spent_budget_is_unknown_a_hit_safety_net_is_timeout_and_both_name_the_rerun(tmp_path, capsys):
    # A row proved by z3 claim by claim (budgets.toml: per-claim), with z3's budget cut.
    args = ["prove", "--opcode", "CALL", "--theorem", "call_flag_limit_and_undo", "--no-agreement",
            "--solver", "z3", "--no-table"]
    code = main(args + ["--budgets", str(budgets_file(tmp_path, 1000)), "--report", "a.json"])
    err = capsys.readouterr().err
    row = json.loads(Path("a.json").read_text())["results"][0]
    assert code == 1 and row["status"] == UNKNOWN and row["undecided_claims"]
    assert "rerun: rtwo-vm prove --theorem call_flag_limit_and_undo --opcode CALL --width 64" in err
    assert "left undecided within its resource budget" in err
    code = main(args + ["--timeout", "0.001", "--report", "b.json"])
    err = capsys.readouterr().err
    row = json.loads(Path("b.json").read_text())["results"][0]
    assert code == 1 and row["status"] == TIMEOUT and "hit the wall-clock safety net" in err


def test_a_partial_run_never_replaces_the_full_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RTWO_VM_DATA", str(tmp_path / "data"))   # where prove writes its reports
    full = tmp_path / "data" / "proofs-report.json"
    full.parent.mkdir()
    full.write_text('{"format": 2, "scope": {"complete": true}, "results": []}')
    before = full.read_bytes()
    assert main(["prove", "--opcode", "NOP", "--no-agreement", "--quiet"]) == 0
    assert full.read_bytes() == before
    partial = json.loads((tmp_path / "data" / "proofs-partial-report.json").read_text())
    assert partial["scope"]["complete"] is False and partial["scope"]["opcodes"] == ["NOP"]
    assert partial["budgets"]["configurations"]["z3"]["rlimit"] > 0
    assert {r["status"] for r in partial["results"]} == {PROVED}
    assert "partial run" in capsys.readouterr().err
    # What readiness concludes from it (proofs.report.assess, which readiness calls).
    usable, why = assess(partial)
    assert not usable and why.startswith("a partial run's report")


def guide_example() -> str:
    text = (ROOT / "docs" / "guides" / "proving.md").read_text()
    found = re.search(r"```python\n(# my_theorems\.py.*?)```", text, re.S)
    assert found, "the proving guide's user-theorem example"
    return found.group(1)


def test_the_guides_user_theorem_example_proves_from_the_command_line(tmp_path):
    (tmp_path / "my_theorems.py").write_text(guide_example())
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "prove", "--theorems",
                           "my_theorems.py", "--report", "mine.json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    doc = json.loads((tmp_path / "mine.json").read_text())
    rows = {(r["theorem"], r["width"]): r for r in doc["results"]}
    assert set(rows) == {("sub_undoes_add", 8), ("sub_undoes_add", 64),
                         ("lts_is_ltu_with_sign_flipped", 64)}
    assert all(r["status"] == PROVED and r["second_status"] == "agrees" for r in rows.values())
    assert doc["scope"]["theorems_file"] == "my_theorems.py" and not doc["scope"]["complete"]


def test_a_false_user_theorem_is_a_counterexample_replayed_on_the_interpreter(tmp_path, capsys):
    (tmp_path / "false.py").write_text(
        "from proofs.registry import word_law, words\n"
        "@word_law('sub_commutes', 'SUB', widths=(8,))\n"
        "def sub_commutes(bits, op):\n"
        "    a, b = words(bits, 'a b')\n"
        "    return [op('SUB', a, b) == op('SUB', b, a)]\n")
    assert main(["prove", "--theorems", "false.py", "--report", "f.json", "--quiet"]) == 1
    row = json.loads(Path("f.json").read_text())["results"][0]
    assert row["status"] == "counterexample"
    a, b = row["counterexample"]["operand_values"][:2]
    assert (a - b) % 256 != (b - a) % 256


def test_bad_theorem_files_and_budgets_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "empty.py").write_text("x = 1\n")
    (tmp_path / "broken.py").write_text("raise SystemExit('no')\nimport nothing\n")
    (tmp_path / "bad.toml").write_text("wall_seconds = 'x'\n")
    for args in (["--theorems", "missing.py"], ["--theorems", "empty.py"], ["--theorems", "broken.py"],
                 ["--budgets", "bad.toml"], ["--timeout", "nan"], ["--timeout", "-1"],
                 ["--theorem", "no_such_theorem"]):
        assert main(["prove", *args]) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, (args, err)


def test_the_docs_show_statuses_only_from_a_complete_current_report(tmp_path, monkeypatch):
    import spec
    from rtwo_vm.site import instructions as docinstructions
    from test_runtime_readiness import complete_report

    def add_page() -> str:          # ADD's page of the newest version, where its proofs are listed
        return docinstructions.pages(spec.latest())["reference/instructions/add.md"]
    monkeypatch.setenv("RTWO_VM_DATA", str(tmp_path / "data"))   # where `rtwo-vm prove` writes it
    report = tmp_path / "data" / "proofs-report.json"
    report.parent.mkdir()
    assert "No `rtwo-vm prove` report was present" in add_page()
    doc = complete_report()
    doc["scope"]["complete"] = False
    report.write_text(json.dumps(doc))
    page = add_page()
    assert "was refused: a partial run" in page and "| `cost` | 64 | proved |" not in page
    doc["scope"]["complete"] = True
    report.write_text(json.dumps(doc))
    page = add_page()
    assert "| `cost` | 64 | proved |" in page and "was refused" not in page


def test_each_query_names_the_smallest_logic_and_a_configuration_can_override_it():
    import dataclasses

    import z3

    from proofs import smtlib
    x, y = z3.BitVecs("x y", 8)
    memory = z3.Array("memory", z3.BitVecSort(8), z3.BitVecSort(8))
    n = z3.Int("n")
    bv = smtlib.export([z3.ULT(x, 10)], z3.ULT(x + 1, 12))
    arrays = smtlib.export([], z3.Store(memory, x, y)[x] == y)
    ints = smtlib.export([n > 1], n > 0)
    assert [t.splitlines()[0] for t in (bv, arrays, ints)] == [
        "(set-logic QF_BV)", "(set-logic QF_AUFBV)", "(set-logic ALL)"]
    cvc5 = solvers.load().configs["cvc5"]
    for text in (bv, arrays, ints):
        assert solvers.check(dataclasses.replace(cvc5, script=False), text, 60).status == "unsat"
    # A configuration's logic replaces the query's own, and the report's label names it.
    told = solvers.load().configs["cvc5-int"]
    assert told.logic == "ALL" and told.told(bv).startswith("(set-logic ALL)\n; ")
    assert "logic ALL" in told.label
    assert solvers.check(told, bv, 60).status == "unsat"
    # QF_BV leaves out the integer theories that integer blasting solves in: told ALL, it
    # proves a 64-bit division law.
    a, b = z3.BitVecs("a b", 64)
    law = smtlib.export([b != 0], z3.UDiv(a, b) * b + z3.URem(a, b) == a)
    assert law.startswith("(set-logic QF_BV)")
    assert solvers.check(told, law, 60).status == "unsat"


def test_a_budgets_logic_must_be_a_logic_name(tmp_path, capsys):
    text = solvers.BUDGETS_FILE.read_text().replace('logic = "ALL"', 'logic = "ALL) (exit"', 1)
    (tmp_path / "b.toml").write_text(text)
    assert main(["prove", "--budgets", str(tmp_path / "b.toml"), "--opcode", "NOP"]) == 2
    err = capsys.readouterr().err
    assert "logic must be an SMT-LIB logic name" in err and err.count("\n") == 1
