"""A user's false theorem, proved by ``rtwo-vm prove --theorems FILE`` in a subprocess, prints a
counterexample for people: each operand by the theorem's own name in hex and decimal, the value
of each side of the failing claim, and the interpreter's result on the same input (or why
there is none). Expectations are computed by hand from the claims."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from test_progress import run_with_stderr

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
M64 = (1 << 64) - 1

THEOREMS = '''
import z3
from proofs.registry import Query, state_law, theorem, word_law, words


@word_law("sub_from_zero", "SUB", widths=(64,))
def sub_from_zero(bits, op):
    x, y = words(bits, "x y")
    return [z3.Implies(z3.And(x == 0, y == 1), z3.ULE(op("SUB", x, y), x))]


@word_law("sub_never_overflows", "SUB", widths=(64,))
def sub_never_overflows(bits, op):
    left, right = words(bits, "left right")
    return [z3.ULE(op("SUB", left, right), left)]


@theorem("halves_add_up")
def halves_add_up(bits, model=None):
    n = z3.BitVec("n", 64)
    return Query([z3.UDiv(n, 2) + z3.UDiv(n, 2) == n], assumptions=[n == 7])


@state_law("add_keeps_height", "ADD", widths=(64,))
def add_keeps_height(w, pre, run):
    return [post.state.height == pre.height for post in run(pre, "ADD")]
'''


def prove(tmp_path, source: str, *extra: str) -> tuple[int, str, str]:
    file = tmp_path / "my_theorems.py"
    file.write_text(source)
    done = subprocess.run([*CLI, "prove", "--theorems", str(file), "--report",
                           str(tmp_path / "report.json"), *extra], cwd=tmp_path,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout, done.stderr


def block(stderr: str, name: str) -> str:
    """The lines of row ``name``'s failure description."""
    lines = stderr.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name} "))
    end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith(" ")),
               len(lines))
    return "\n".join(lines[start:end])


def h(v: int) -> str:
    return f"{v:#x} ({v})"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return prove(tmp_path_factory.mktemp("cex"), THEOREMS)


def test_exit_code_is_1_for_a_counterexample(run):
    code, stdout, stderr = run
    assert code == 1, stdout + stderr
    assert "prove: FAIL: 4 rows, 4 failing" in stdout


def test_operands_by_name_both_sides_and_the_interpreter(run):
    text = block(run[2], "sub_from_zero")
    # x = 0, y = 1 by the premise; SUB pushes x - y mod 2^64 = 2^64 - 1 > 0 = x
    assert "    x = 0x0 (0)" in text and "    y = 0x1 (1)" in text, text
    assert re.search(r"\n    A: .* =  true", text) and re.search(r"\n    B: .* =  false", text), text
    assert re.search(rf"\n    lhs: .* =  {re.escape(h(M64))}", text), text
    assert re.search(r"\n    rhs: x  =  0x0 \(0\)", text), text
    assert (f"interpreter: SUB w64 on (x=0x0 (0), y=0x1 (1)) [bottom to top]: completes "
            f"(the frame keeps running), pushes {h(M64)}; the model pushes {h(M64)}") in text, text
    assert "model and interpreter agree on this input" in text
    assert "inputs: {" not in text and "None" not in text and "[]" not in text


def test_the_solvers_choice_is_shown_with_consistent_sides(run):
    text = block(run[2], "sub_never_overflows")
    left = int(re.search(r"    left = 0x[0-9a-f]+ \((\d+)\)", text).group(1))
    right = int(re.search(r"    right = 0x[0-9a-f]+ \((\d+)\)", text).group(1))
    lhs = (left - right) & M64                   # what SUB pushes, by hand
    assert lhs > left                            # the claim lhs <= left is false there
    assert re.search(rf"\n    lhs: .* =  {re.escape(h(lhs))}", text), text
    assert f"\n    rhs: left  =  {h(left)}" in text, text
    assert f"pushes {h(lhs)}; the model pushes {h(lhs)}" in text, text


def test_a_model_only_theorem_says_why_it_is_not_replayed(run):
    text = block(run[2], "halves_add_up")
    # n = 7: 7/2 + 7/2 = 3 + 3 = 6 != 7
    assert "    n = 0x7 (7)" in text, text
    assert re.search(r"\n    lhs: .* =  0x6 \(6\)", text) and "\n    rhs: n  =  0x7 (7)" in text, text
    assert ("interpreter: not replayed: the theorem is about the SMT model only (no instruction "
            "input to run on the interpreter)") in text


def test_a_state_law_shows_its_pre_state_and_the_interpreters_outcome(run):
    text = block(run[2], "add_keeps_height")
    height = int(re.search(r"    height = 0x[0-9a-f]+ \((\d+)\)", text).group(1))
    assert f"height {h(height)}" in text, text          # the pre-state line
    assert "interpreter: ADD from the counterexample's pre-state (inputs): " in text, text
    lhs = re.search(r"\n    lhs: .* =  0x[0-9a-f]+ \((\d+)\)", text)
    assert lhs and int(lhs.group(1)) != height, text   # height - 1 (mod the counter) != height


def test_premises_is_a_one_line_error_naming_assumptions(tmp_path):
    code, stdout, stderr = prove(tmp_path, (
        "import z3\nfrom proofs.registry import Query, theorem\n"
        "@theorem('typo')\ndef typo(bits, model=None):\n"
        "    n = z3.BitVec('n', 64)\n    return Query([n == n], premises=[n == 0])\n"))
    assert code == 1, stdout + stderr
    line = next(x for x in stderr.splitlines() if x.startswith("typo "))
    assert "no field 'premises'; the field is `assumptions=`" in line, stderr
    assert "Traceback" not in stderr


TRUE_THEOREM = ("from proofs.registry import word_law, words\n"
                "@word_law('add_commutes', 'ADD', widths=(8,))\n"
                "def add_commutes(bits, op):\n"
                "    a, b = words(bits, 'a b')\n"
                "    return [op('ADD', a, b) == op('ADD', b, a)]\n")


@pytest.mark.parametrize("terminal, extra, shown", [
    (True, [], True), (False, [], False), (True, ["--no-progress"], False),
    (False, ["--progress"], True), (True, ["--quiet"], False)])
def test_prove_shows_progress_on_a_terminal(tmp_path, terminal, extra, shown):
    (tmp_path / "t.py").write_text(TRUE_THEOREM)
    args = ["prove", "--theorems", str(tmp_path / "t.py"), "--report", str(tmp_path / "r.json")]
    code, stdout, stderr = run_with_stderr(args + extra, tmp_path, terminal)
    assert code == 0, stdout + stderr
    assert (f"prove [{'#' * 30}] 1/1" in stderr) is shown, stderr
    assert bool(re.search("\r(?!\n)", stderr)) is shown, stderr   # a redraw, not a pty's CR LF


def test_the_guides_false_theorems_print_as_the_guide_shows(tmp_path):
    from pathlib import Path
    text = (Path(__file__).resolve().parents[1] / "docs" / "guides" / "proving.md").read_text()
    source = re.search(r"```python\n(# my_false_theorems\.py.*?)```", text, re.S).group(1)
    shown = re.search(r"\$ rtwo-vm prove --theorems my_false_theorems\.py\n(.*?)```", text,
                      re.S).group(1)
    code, stdout, stderr = prove(tmp_path, source)
    assert code == 1, stdout + stderr
    described = [x for x in shown.splitlines()[shown.splitlines().index(
        "halves_add_up - w-: counterexample"):] if not x.startswith("prove: ")]
    assert len(described) > 10 and stderr.splitlines() == described, stderr
    assert "prove: FAIL: 3 rows, 2 failing, 0 unknown, 0 timed out" in stdout
    assert re.search(r"\none_more_is_more +\| - +\| - +\| proved \(cvc5: agrees\)", stdout)


def test_the_reports_inputs_are_the_laws_own_operands(run, tmp_path_factory):
    import json
    doc = json.loads(next(tmp_path_factory.getbasetemp().glob("cex*/report.json")).read_text())
    row = next(r for r in doc["results"] if r["theorem"] == "sub_from_zero")
    # the law names its operands x and y (x = 0, y = 1), not the registry's default a b c;
    # the run is prove's default version, the newest with models
    from proofs import versions
    assert row["counterexample"]["inputs"] == {"mnemonic": "SUB", "width": 64,
                                              "version": versions.newest(), "stack": [0, 1]}
    assert row["counterexample"]["differences"] == []


def test_a_counterexample_that_cannot_be_explained_still_shows_its_inputs():
    from proofs.explain import number, render
    lines = render({"inputs": {"mnemonic": "SUB", "stack": [5, 7]},
                    "explained": {"not_explained": "z3 did not reproduce it"}})
    assert lines == ["not explained: z3 did not reproduce it",
                     'inputs (raw): {"mnemonic": "SUB", "stack": [5, 7]}']
    assert (number(255), number(True), number(0)) == ("0xff (255)", "true", "0x0 (0)")
