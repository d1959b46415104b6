"""Premises sliced to a claim's symbols, so that a claim stated alike in two versions is
solved from the same text (and its verdict taken from the verdict cache, proofs/cache.py).

A version that adds state components (1.1: transient storage, the slots alive, read-only
frames) adds premises about them to every well-formed pre-state (machine.well_formed): the
texts of every query change, although most claims never mention those components. The
assumptions are split into their conjuncts, and a query is first solved with only the
conjuncts whose every symbol occurs in its claims (``sliced``).

A claim can also mention them beside what it says of the older components (1.1's meters
bound the slots alive too): ``split`` cuts a claim into the part about the components the
oldest modelled version has and the part about those a newer one added (``added``: the
symbols of the version's fresh pre-state the oldest one's lacks), so that the first part
reads as the older version's whole claim. Exact: ``Implies(A, And(X, Y))`` holds iff
``Implies(A, X)`` and ``Implies(A, Y)`` hold, and a counterexample to a part is one to the
claim. Under the oldest version nothing is added and no claim is cut.

The vacuity checks ask whether an antecedent ``A`` can hold with the premises: a
satisfiability question, where dropping premises is not sound in general. It is exact when
the dropped premises are those about the added components, ``A`` mentions none of them, and
every model of the other premises extends to them with every added component zero or false
(``zeroed``: the premises with that witness substituted, which the caller checks follow from
the others, one query per premise set): then premises ∧ ``A`` is satisfiable iff the other
premises ∧ ``A`` is, and the latter reads as under 1.0.

Slicing is sound for proofs only: dropping a premise weakens the assumptions, so ``sliced ∧ ¬claim``
unsat implies ``premises ∧ ¬claim`` unsat. Any other answer of a sliced query (sat: perhaps
spurious; unknown) is not used: the claim is solved again with every premise, as without
slicing (claims.py). Whether the premises can hold, and the vacuity checks of
antecedents (satisfiability questions), always use every premise.
"""

from __future__ import annotations

import dataclasses
import functools
import re

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


_DECLARED = re.compile(r"^\(declare-(?:fun|const) (\|[^|]*\||[^\s()]+)", re.M)


def symbols(term, memo: dict) -> frozenset:
    """The names of the uninterpreted constants and functions ``term`` mentions: the
    declarations z3 prints for it (its printer walks the term in C, far faster than a walk
    from Python). ``memo`` keeps each term asked for alive, so its id is never reused."""
    key = term.get_id()
    if key not in memo:
        formula = term if z3.is_bool(term) else term == term
        text = z3.Z3_benchmark_to_smtlib_string(term.ctx.ref(), "", "", "unknown", "", 0,
                                                (z3.Ast * 0)(), formula.as_ast())
        memo[key] = (term, frozenset(_DECLARED.findall(text)))
    return memo[key][1]


def sliced(assumptions: list, claims: list) -> list:
    """The conjuncts of ``assumptions`` whose every symbol occurs in ``claims``."""
    memo: dict = {}
    wanted: set = set()
    for c in claims:
        wanted |= symbols(c, memo)
    return [p for p in conjuncts(assumptions) if symbols(p, memo) <= wanted]


def _walk(obj, out: set, memo: dict, seen: set) -> None:
    if id(obj) in seen:
        return
    seen.add(id(obj))
    if isinstance(obj, z3.ExprRef):
        out |= symbols(obj, memo)
    elif dataclasses.is_dataclass(obj):
        for f in dataclasses.fields(obj):
            _walk(getattr(obj, f.name), out, memo, seen)
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            _walk(x, out, memo, seen)
    elif isinstance(obj, dict):
        for x in obj.values():
            _walk(x, out, memo, seen)


@functools.cache
def _state_symbols(version: str) -> frozenset:
    from proofs.machine import fresh_state
    from proofs.words import width
    out: set = set()
    _walk(fresh_state(width(64, version)), out, {}, set())
    return frozenset(out)


@functools.cache
def added(version: str) -> frozenset:
    """The names of the symbols of ``version``'s fresh pre-state (its environment and call
    oracle included) that the oldest modelled version's lacks (1.1: transient, ...)."""
    from proofs import versions
    return _state_symbols(version) - _state_symbols(versions.MODELLED[0])


def _is_added(names: frozenset, new: frozenset) -> bool:
    """Whether a symbol of ``names`` is an added one, or one of another state's copy of it
    (a twin state's ``other_read_only``)."""
    return any(n in new or any(n.endswith("_" + a) for a in new) for n in names)


def split(claim, new: frozenset, memo: dict) -> tuple:
    """(the part of ``claim`` about the older components, the part about the ``new`` ones),
    either None when empty; their conjunction is equivalent to ``claim``."""
    if not new or not _is_added(symbols(claim, memo), new):
        return claim, None
    if z3.is_and(claim):
        parts = [split(c, new, memo) for c in claim.children()]
        return _conj([o for o, _ in parts]), _conj([n for _, n in parts])
    if z3.is_implies(claim) and not _is_added(symbols(claim.arg(0), memo), new):
        old, added_part = split(claim.arg(1), new, memo)
        return (None if old is None else z3.Implies(claim.arg(0), old),
                None if added_part is None else z3.Implies(claim.arg(0), added_part))
    return None, claim


def _conj(parts: list):
    parts = [p for p in parts if p is not None]
    return None if not parts else parts[0] if len(parts) == 1 else z3.And(parts)


def _zero(sort):
    if z3.is_bv_sort(sort):
        return z3.BitVecVal(0, sort.size(), sort.ctx)
    if sort.kind() == z3.Z3_BOOL_SORT:
        return z3.BoolVal(False, sort.ctx)
    if sort.kind() == z3.Z3_ARRAY_SORT:
        inner = _zero(sort.range())
        return None if inner is None else z3.K(sort.domain(), inner)
    return None


def _constants(term, names_of: frozenset, out: dict) -> None:
    seen: set = set()
    todo = [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            if _is_added(frozenset([t.decl().name()]), names_of):
                out[t.get_id()] = t
        elif z3.is_app(t):
            todo += t.children()


def zeroed(assumptions: list, new: frozenset, memo: dict) -> tuple[list, list] | None:
    """(the premise conjuncts about the older components only, the others with every added
    component zero or false), or None when a premise is about an added component of a sort
    without a zero (then no slicing)."""
    old: list = []
    added_parts: list = []
    for p in conjuncts(assumptions):
        (added_parts if _is_added(symbols(p, memo), new) else old).append(p)
    found: dict = {}
    for p in added_parts:
        _constants(p, new, found)
    pairs = []
    for const in found.values():
        zero = _zero(const.sort())
        if zero is None:
            return None
        pairs.append((const, zero))
    return old, [z3.substitute(p, *pairs) if pairs else p for p in added_parts]


def mentions_added(term, new: frozenset, memo: dict) -> bool:
    return bool(new) and _is_added(symbols(term, memo), new)
