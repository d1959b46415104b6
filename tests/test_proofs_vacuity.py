"""Vacuity: a row is proved only when what it claims could fail to hold.

Real solver runs (z3, and cvc5 re-checking where the profile says) on a user's theorem file
declaring each kind of vacuous theorem: contradictory premises, a contradictory antecedent,
an antecedent against a premise, and an empty claim list (an error). Then the built-in
validation and policy theorems with their premise made false: vacuous, never proved (they
used to keep that premise inside the claim).
"""

from __future__ import annotations

import z3

from proofs.report import describe_failure, failures
from proofs.runner import ERROR, PROVED, VACUOUS, Options, run_suite
from conftest import BASE_VERSION as V

THEOREMS = '''
import z3
from proofs.registry import Query, theorem, word_law

@theorem("premises_contradict")
def premises_contradict(bits, model=None):
    x = z3.BitVec("x", 8)
    return Query([x == 7], [x == 0, x == 1])

@theorem("antecedent_contradicts_itself")
def antecedent_contradicts_itself(bits, model=None):
    x = z3.BitVec("x", 8)
    return Query([z3.Implies(z3.ULT(x, 3), z3.ULT(x, 4)),
                  z3.Implies(z3.And(x == 0, x == 1), x == 7)])

@theorem("antecedent_against_a_premise")
def antecedent_against_a_premise(bits, model=None):
    x = z3.BitVec("x", 8)
    return Query([z3.Implies(z3.UGT(x, 200), x == 7)], [z3.ULT(x, 100)])

@theorem("no_claim_at_all")
def no_claim_at_all(bits, model=None):
    x = z3.BitVec("x", 8)
    return Query([], [z3.ULT(x, 100)])

@word_law("law_without_claims", "ADD", (8,))
def law_without_claims(bits, op):
    return []

@theorem("satisfiable_antecedent_proves")
def satisfiable_antecedent_proves(bits, model=None):
    x = z3.BitVec("x", 8)
    return Query([z3.Implies(x == 3, x + 1 == 4), z3.ULE(x, 99)], [z3.ULT(x, 100)])
'''


def _rows(tmp_path, solver="z3"):
    file = tmp_path / "vacuity_theorems.py"
    file.write_text(THEOREMS)
    rows = run_suite(Options(version=V, theorems_file=str(file), solver=solver, jobs=1))
    return {r["theorem"]: r for r in rows}


def test_each_kind_of_vacuity_fails_and_a_real_theorem_proves(tmp_path):
    rows = _rows(tmp_path)
    assert len(rows) == 6
    premises = rows["premises_contradict"]
    assert (premises["status"], premises["premises"]) == (VACUOUS, "unsatisfiable")
    itself = rows["antecedent_contradicts_itself"]
    # the first claim's antecedent can hold; the second's cannot
    assert (itself["status"], itself["vacuous_claims"]) == (VACUOUS, [1])
    assert itself["premises"] == "satisfiable (none)"
    assert itself["antecedents"] == "unsatisfiable"
    against = rows["antecedent_against_a_premise"]
    assert (against["status"], against["premises"], against["vacuous_claims"]) == (
        VACUOUS, "satisfiable", [0])
    for name in ("no_claim_at_all", "law_without_claims"):
        assert rows[name]["status"] == ERROR
        assert "no claim" in rows[name]["error"]
    good = rows["satisfiable_antecedent_proves"]
    assert (good["status"], good["antecedents"]) == (PROVED, "satisfiable (1)")
    failing = {r["theorem"] for r in failures(list(rows.values()))}
    assert failing == set(rows) - {"satisfiable_antecedent_proves"}
    assert "claims 1 are implications whose antecedent cannot hold" in describe_failure(itself)


def test_vacuity_holds_with_the_default_re_checking_too(tmp_path):
    rows = _rows(tmp_path, solver="cvc5")
    assert rows["antecedent_against_a_premise"]["status"] == VACUOUS
    assert rows["satisfiable_antecedent_proves"]["status"] == PROVED


def _one(name):
    return run_suite(Options(version=V, names=(name,), agreement=False, solver="z3", jobs=1))


def test_validation_rules_that_accept_nothing_are_vacuous(monkeypatch):
    from proofs import validate
    real = validate.valid
    # Rules that refuse every code: the claim "validated code lands on boundaries" then
    # holds of nothing; it used to be proved (validity sat inside each claim).
    monkeypatch.setattr(validate, "valid", lambda *a: z3.And(real(*a), z3.BoolVal(False)))
    rows = _one("validated_control_lands_on_boundaries")
    assert [(r["status"], r["premises"]) for r in rows] == [(VACUOUS, "unsatisfiable")]


def test_a_policy_that_refuses_everything_is_vacuous(monkeypatch):
    from proofs import policy
    monkeypatch.setattr(policy.SymbolicPolicy, "refusal",
                        lambda self, ins: z3.BitVecVal(1, 8))
    rows = _one("forbidden_instruction_never_executes")
    assert [(r["status"], r["premises"]) for r in rows] == [(VACUOUS, "unsatisfiable")]
