"""Premises sliced to a claim's symbols, so that a claim stated alike in two versions is
solved from the same text (and its verdict taken from the verdict cache, proofs/cache.py).

A version that adds state components (1.1: transient storage, the slots alive, read-only
frames) adds premises about them to every well-formed pre-state (machine.well_formed): the
texts of every query change, although most claims never mention those components. The
assumptions are split into their conjuncts, and a query is first solved with only the
conjuncts whose every symbol occurs in its claims (``sliced``).

Sound for proofs only: dropping a premise weakens the assumptions, so ``sliced ∧ ¬claim``
unsat implies ``premises ∧ ¬claim`` unsat. Any other answer of a sliced query (sat: perhaps
spurious; unknown) is not used: the claim is solved again with every premise, as without
slicing (claims.py). Whether the premises can hold, and the vacuity checks of
antecedents (satisfiability questions), always use every premise.
"""

from __future__ import annotations

import z3


def conjuncts(terms: list) -> list:
    """``terms`` with every top-level conjunction split into its parts, in order."""
    out: list = []
    todo = list(reversed(terms))
    while todo:
        t = todo.pop()
        if z3.is_and(t):
            todo += reversed(t.children())
        elif not z3.is_true(t):
            out.append(t)
    return out


def symbols(term, memo: dict) -> frozenset:
    """The names of the uninterpreted constants and functions ``term`` mentions."""
    key = term.get_id()
    if key in memo:
        return memo[key]
    found: set = set()
    seen: set = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t):
            if t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                found.add(t.decl().name())
            todo += t.children()
        elif z3.is_quantifier(t):
            todo.append(t.body())
    memo[key] = frozenset(found)
    return memo[key]


def sliced(assumptions: list, claims: list) -> list:
    """The conjuncts of ``assumptions`` whose every symbol occurs in ``claims``."""
    memo: dict = {}
    wanted: set = set()
    for c in claims:
        wanted |= symbols(c, memo)
    return [p for p in conjuncts(assumptions) if symbols(p, memo) <= wanted]
