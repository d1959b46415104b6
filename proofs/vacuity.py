"""Vacuity of a row's claims beyond its premises.

A claim ``Implies(A, B)`` holds trivially when ``A`` cannot hold together with the
premises: such a claim proves nothing, and a row holding one is ``vacuous`` (a failure),
exactly as a row whose premises are unsatisfiable. So for every proved claim of that form,
``premises ∧ A`` is checked satisfiable: the distinct antecedents of a task (in the order
they first appear) as one incremental script (smtlib.checks_script without its premises'
check: the assumptions, then each antecedent between push and pop), by z3 under the budget
of ``z3-antecedents`` (else the profile's z3 script configuration) — resource limits only,
so the answer depends on the text alone. An
antecedent left undecided within the budget leaves its row unproved (unknown, or timeout
at the wall-clock safety net), never proved.

A row with no claim at all is an error (``EMPTY``): it would be proved by nothing.
"""

from __future__ import annotations

import z3

from proofs import smtlib, solvers

EMPTY = "no claim: a theorem must state at least one claim"


def antecedent(claim) -> z3.BoolRef | None:
    """``A`` of a claim ``Implies(A, B)``; None for a claim of any other form."""
    return claim.arg(0) if z3.is_implies(claim) else None


def config(budgets) -> solvers.Config:
    """The z3 configuration that checks antecedents: ``z3-antecedents`` when the budgets name
    it (these checks are satisfiable ones, which z3's default phase caching finds fast and the
    provers' options may not), else the first z3 script configuration of the budgets, else
    plain z3 (one text per check)."""
    named = budgets.configs.get("z3-antecedents")
    if named is not None and named.solver == "z3":
        return named
    for c in budgets.configs.values():
        if c.solver == "z3" and c.script:
            return c
    return budgets.configs["z3"]


def check(assumptions: list, claims: list, ks: list[int], budgets, wall: float) \
        -> tuple[dict[int, str], int, str]:
    """({k: sat | unsat | unknown | timeout} for each claim k of ``ks`` that is an
    implication, the work units spent, the deciding configuration's label)."""
    terms: list = []
    index: dict[int, int] = {}      # the antecedent's z3 id -> its position in ``terms``
    of_claim: dict[int, int] = {}
    for k in ks:
        a = antecedent(claims[k])
        if a is None:
            continue
        key = a.get_id()
        if key not in index:
            index[key] = len(terms)
            terms.append(a)
        of_claim[k] = index[key]
    if not terms:
        return {}, 0, "-"
    cfg = config(budgets)
    if cfg.script:
        # The premises are decided already (claims.py): no check of their own here.
        text = smtlib.without_premises(smtlib.checks_script(assumptions, terms))
        answers = solvers.check_script(cfg, text, wall)
    else:
        answers = [solvers.check(cfg, smtlib.satisfiable(assumptions, t), wall) for t in terms]
    spent = sum(a.resources or 0 for a in answers)
    return ({k: answers[j].status for k, j in of_claim.items()}, spent, cfg.label)


def verdict(statuses: dict[int, str]) -> tuple[str, list[int]]:
    """(sat | unsat | unknown | timeout | none, the claims whose antecedent is not sat)."""
    if not statuses:
        return "none", []
    bad = sorted(k for k, s in statuses.items() if s != solvers.SAT)
    if not bad:
        return solvers.SAT, []
    worst = {statuses[k] for k in bad}
    for status in (solvers.UNSAT, solvers.TIMEOUT, solvers.UNKNOWN):
        if status in worst:
            return status, [k for k in bad if statuses[k] == status]
    return solvers.UNKNOWN, bad
