"""The re-check catches a prover that lies, on the generic rows (profile ``generic``).

The prover is z3's script; the re-checkers are cvc5's integer blasting as a script, then
cvc5's bit-blasting for what that leaves undecided (proofs/budgets.toml). The planted bug
is in the prover: every check of the z3 script answers unsat, so a false claim comes back
"proved". Each re-checker, real cvc5, must find it satisfiable and the row must disagree.
"""

from __future__ import annotations

import pytest
import z3

from proofs import claims, solvers, verdicts
from proofs.registry import Query, Theorem
from proofs.runner import COUNTEREXAMPLE, DISAGREES, Options
from conftest import BASE_VERSION as V

INT_SCRIPT = "cvc5 (solve-bv-as-int=sum, incremental script, logic ALL)"
BIT_SCRIPT = "cvc5 (incremental script)"


def _row():
    """A generic-profile row (its name is one of the generic theorems) with a true claim and
    a false one: x < 3 does not give x < 2."""
    x = z3.BitVec("x", 64)
    query = Query([z3.Implies(z3.ULT(x, 3), z3.ULT(x, 4)),
                   z3.Implies(z3.ULT(x, 3), z3.ULT(x, 2))], [z3.ULE(x, 100)])
    th = Theorem("meters", "ADD", (64,), lambda bits, model=None: query)
    verdicts.use(Options(version=V))
    assert solvers.load().profile(th.name, th.profile, th.opcode).name == "generic"
    (status, extra, _), = claims.check_rows([(th, query)], 64)
    return status, extra


def _lying(undecided: tuple[str, ...] = ()):
    """check_script with z3's script answering unsat to every claim (its first check, the
    premises', stays true), and the configurations named in ``undecided`` answering unknown."""
    real = solvers.check_script

    def check_script(config, text, wall_seconds):
        answers = real(config, text, wall_seconds)
        if config.name == "z3-script":
            return answers[:1] + [solvers.Answer(solvers.UNSAT, a.resources) for a in answers[1:]]
        if config.name in undecided:
            return [solvers.Answer(solvers.UNKNOWN, a.resources) for a in answers]
        return answers
    return check_script


def test_an_honest_prover_refutes_the_false_claim():
    status, extra = _row()
    assert status == COUNTEREXAMPLE
    assert extra["counterexample"]["model"] == "[x = 2]"    # the one x < 3 that is not < 2
    assert (extra["second_status"], extra["rechecked_by"]) == ("agrees", {INT_SCRIPT: 2})


@pytest.mark.parametrize("undecided, rechecker", [
    ((), INT_SCRIPT),                      # integer blasting finds x = 2
    (("cvc5-int-script",), BIT_SCRIPT),    # what it leaves undecided goes to bit-blasting
])
def test_a_lying_prover_is_caught_by_the_recheck(monkeypatch, undecided, rechecker):
    monkeypatch.setattr(solvers, "check_script", _lying(undecided))
    status, extra = _row()
    assert status == DISAGREES
    assert extra["second_status"] == DISAGREES
    assert extra["rechecked_by"] == {rechecker: 2}
