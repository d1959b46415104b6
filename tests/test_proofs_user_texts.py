"""``rtwo-vm prove --theorems FILE``: the file's child only builds; ``prove`` decides.

Each task's confined child reports the SMT-LIB text of every claim; ``prove`` parses it with
z3 itself (proofs/usertexts.py), refuses any text that is not a plain satisfiability problem
of the export's shape, and proves the claims with its own solvers. So, with real files run
as a user runs them (a real ``rtwo-vm`` process):

- a file that patches z3 (and the suite's solver calls) in its child so that every check
  answers unsat cannot make a false theorem proved: it is a counterexample, and a true
  theorem beside it is still proved;
- a child that forges its report (rows with status "proved", written on the report's pipe)
  gives error rows, never proved;
- a child that reports a text outside the accepted shape (push/pop, set-option,
  define-fun-rec, two checks) gives an error row naming what is refused.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import z3

from proofs import smtlib, usertexts

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
HEADER = "import json, os, z3\nfrom proofs.registry import word_law, words\n"
TRUE_LAW = ("@word_law('sub_undoes_add', 'SUB', widths=(8,))\n"
            "def sub_undoes_add(bits, op):\n"
            "    a, b = words(bits, 'a b')\n"
            "    return [op('SUB', op('ADD', a, b), b) == a]\n")
# false: a + b == a fails for every b != 0
FALSE_LAW = ("@word_law('add_keeps_a', 'ADD', widths=(8,))\n"
             "def add_keeps_a(bits, op):\n"
             "    a, b = words(bits, 'a b')\n"
             "    {body}\n"
             "    return [op('ADD', a, b) == a]\n")
# Every z3 check in the file's process answers unsat, and so does every solver call of the
# suite (proofs.solvers) there: before prove decided itself, this proved the false law.
PATCH_Z3 = ("from proofs import solvers\n"
            "z3.Solver.check = lambda self, *a, **k: z3.unsat\n"
            "solvers.check = lambda config, text, wall: solvers.Answer(solvers.UNSAT, 1)\n"
            "solvers.check_script = lambda config, text, wall: [\n"
            "    solvers.Answer(solvers.UNSAT, 1) for _ in range(text.count('(check-sat)'))]\n")


def forge(rows: list) -> str:
    """A builder's body that writes ``rows`` as its task's report (fd 3) and ends."""
    return (f"os.write(3, json.dumps({{'rows': {rows!r}}}).encode()); os._exit(0)")


def prove(text: str) -> dict:
    Path("mine.theorems").write_text(text)
    done = subprocess.run([*CLI, "prove", "--theorems", "mine.theorems", "--report", "r.json",
                           "--quiet", "--solver", "z3"],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 1, done.stderr
    return {r["theorem"]: r for r in json.loads(Path("r.json").read_text())["results"]}


def test_a_file_that_patches_z3_in_its_child_cannot_prove_a_false_theorem():
    rows = prove(HEADER + PATCH_Z3 + TRUE_LAW + FALSE_LAW.format(body="pass"))
    assert rows["add_keeps_a"]["status"] == "counterexample"
    assert rows["sub_undoes_add"]["status"] == "proved"
    # the counterexample is prove's own model, replayed as the law's ADD: a + b == a fails
    # exactly when b != 0 (mod 256)
    cex = rows["add_keeps_a"]["counterexample"]
    assert cex["inputs"]["mnemonic"] == "ADD" and cex["inputs"]["width"] == 8
    a, b = cex["inputs"]["stack"]
    assert b % 256 != 0 and cex["differences"] == []


def test_a_forged_proved_row_is_an_error_never_proved():
    forged = forge([{"theorem": "add_keeps_a", "opcode": "ADD", "width": 8,
                     "status": "proved", "seconds": 0.0, "claims": 1}])
    rows = prove(HEADER + TRUE_LAW + FALSE_LAW.format(body=forged))
    assert rows["add_keeps_a"]["status"] == "error"
    assert rows["sub_undoes_add"]["status"] == "proved"


@pytest.mark.parametrize("text, refused", [
    ("(declare-const x Bool)\n(push 1)\n(assert (not x))\n(check-sat)\n", "'push'"),
    ("(set-option :rlimit 1)\n(declare-const x Bool)\n(assert (not x))\n(check-sat)\n",
     "'set-option'"),
    ("(define-fun-rec f ((x Bool)) Bool (f x))\n(assert (not (f true)))\n(check-sat)\n",
     "'define-fun-rec'"),
    ("(declare-const x Bool)\n(assert (not x))\n(check-sat)\n(check-sat)\n",
     "not exactly one (check-sat), last"),
])
def test_a_reported_text_outside_the_accepted_shape_is_an_error_row(text, refused):
    forged = forge([{"theorem": "add_keeps_a", "opcode": "ADD", "width": 8, "texts": [text]}])
    rows = prove(HEADER + FALSE_LAW.format(body=forged))
    row = rows["add_keeps_a"]
    assert row["status"] == "error"
    assert "the task's claims are refused (claim 0: " in row["error"] and refused in row["error"]


# -- the reader alone (no process) ------------------------------------------------------------

def test_the_export_text_of_a_claim_reads_back_to_its_assumptions_and_claim():
    x, y = z3.BitVecs("x y", 8)
    premises = [z3.ULT(x, 10)]
    texts = [smtlib.export(premises, x + y == y + x), smtlib.export(premises, z3.ULT(x, 11))]
    assumptions, claims = usertexts.read(texts)
    assert len(assumptions) == 1 and assumptions[0].eq(premises[0])
    assert [c.eq(d) for c, d in zip(claims, [x + y == y + x, z3.ULT(x, 11)])] == [True, True]


def test_claims_of_other_assumptions_or_text_outside_the_commands_are_refused():
    x = z3.BitVec("x", 8)
    texts = [smtlib.export([z3.ULT(x, 10)], x == x), smtlib.export([z3.ULT(x, 9)], x == x)]
    with pytest.raises(usertexts.Refused, match="claim 1: other assumptions"):
        usertexts.read(texts)
    with pytest.raises(usertexts.Refused, match="text outside the commands"):
        usertexts.read(["(declare-const x Bool) x (assert (not x))\n(check-sat)\n"])
    with pytest.raises(usertexts.Refused, match="last assertion is not the negation"):
        usertexts.read(["(declare-const x Bool)\n(assert x)\n(check-sat)\n"])


def test_a_text_too_large_to_solve_is_refused():
    with pytest.raises(usertexts.Refused, match="wider than 65536 bits"):
        usertexts.read(["(declare-const x (_ BitVec 70000))\n(assert (not (= x x)))\n(check-sat)\n"])
