"""Export proof queries as standard SMT-LIB 2 and re-check them with a second solver.

Each query is exported *before* z3 checks it (z3's ``to_smt2``), with the smallest standard
logic that holds it (``QF_BV``, else ``QF_AUFBV``, else ``ALL``: z3's own probes decide, see
``logic``) and ``(set-info :status unsat)`` — the status a proof expects. The model uses only standard
SMT-LIB operators (QF_ABV plus uninterpreted functions: no z3-only rotate, no lambda, no
quantifier), so cvc5 (or bitwuzla, when installed) parses the same text. A second solver
answering sat where z3 proved unsat, or the reverse, is a disagreement and fails the suite.
The solvers themselves, with their deterministic budgets, are in solvers.py.

Every text is *standard* SMT-LIB 2.6 (``standard``, applied to everything z3 prints here):
z3 prints a one-argument ``z3.Or([x])`` / ``z3.And([x])`` as ``(or x)`` / ``(and x)`` and an
empty one as the bare symbol ``or`` / ``and``, which z3 and cvc5 read but the standard
(``or`` and ``and`` are left-associative: two arguments at least) and Bitwuzla's strict
reader refuse; each is written as what it means: ``x``, ``false`` or ``true``.
"""

from __future__ import annotations

import bisect
import re

import z3

from proofs import solvers

SOLVERS = solvers.SOLVERS


def fresh_solver(terms: list) -> z3.Solver:
    """A solver holding ``terms`` translated into a z3 context of its own, for printing.

    z3 names the subterms that assertions share by term ids, which in the main context
    depend on every term the process built before; a fresh context numbers the translated
    terms in the order of a walk of their structure, so the printed text depends on the
    terms alone, whatever ran before in the process (tests pin it, byte for byte)."""
    ctx = z3.Context()
    solver = z3.Solver(ctx=ctx)
    for term in terms:
        solver.add(term.translate(ctx))
    return solver


def logic(solver: z3.Solver) -> str:
    """The smallest of QF_BV, QF_AUFBV and ALL that holds every assertion of ``solver``, as
    z3's probes ``is-qfbv`` and ``is-qfaufbv`` judge it. A logic tells the second solver which
    theories it needs: cvc5 bit-blasts a QF_BV script without setting up arrays,
    uninterpreted functions or arithmetic (the same answers, less work)."""
    goal = z3.Goal(ctx=solver.ctx)
    goal.add(*solver.assertions())
    for name, probe in (("QF_BV", "is-qfbv"), ("QF_AUFBV", "is-qfaufbv")):
        if z3.Probe(probe, solver.ctx)(goal):
            return name
    return "ALL"


def printed(solver: z3.Solver) -> str:
    """``solver``'s assertions as z3 prints them, made standard (``standard``)."""
    return standard(solver.to_smt2())


def export(assumptions: list, claim) -> str:
    solver = fresh_solver([*assumptions, z3.Not(claim)])
    text = printed(solver)
    text = text.replace("(set-info :status unknown)", "(set-info :status unsat)", 1)
    return f"(set-logic {logic(solver)})\n" + text


def query(terms: list, status: str = "unknown") -> str:
    """One text asking whether ``terms`` can hold together, with the expected ``status``
    (sat, unsat or unknown: a search whose answer nothing expects)."""
    solver = fresh_solver(terms)
    text = printed(solver).replace("(set-info :status unknown)",
                                   f"(set-info :status {status})", 1)
    return f"(set-logic {logic(solver)})\n" + text


def script(assumptions: list, claims: list, premises: bool = True) -> str:
    """One SMT-LIB 2 script for a row's claims: the declarations, the assumptions and a
    ``(check-sat)`` of the premises alone, then per claim ``(push 1) (assert (not claim))
    (check-sat) (pop 1)``. Its answers (premises first, then the claims in order) depend on
    this text alone; an incremental solver re-uses its work on the shared assumptions
    between the claims. (z3 names the subterms that assertions share, so a claim's assertion
    here may read differently from its own ``export``, with the same meaning.) Without
    ``premises`` (the premises already decided), the claims' checks alone."""
    text = _script(assumptions, claims)
    return text if premises else without_premises(text)


PREMISES_CHECK = "\n(check-sat)\n(push 1)\n"


def without_premises(text: str) -> str:
    """A ``script`` text without its premises' check: the same claims' checks alone."""
    if PREMISES_CHECK not in text:      # no claims: the premises' check is the last line
        return text.removesuffix("(check-sat)\n")
    return text.replace(PREMISES_CHECK, "\n(push 1)\n", 1)


def _script(assumptions: list, claims: list) -> str:
    return checks_script(assumptions, [z3.Not(claim) for claim in claims])


def checks_script(assumptions: list, terms: list) -> str:
    """The assumptions and a ``(check-sat)`` of them alone, then per term ``(push 1)
    (assert term) (check-sat) (pop 1)``: whether each term can hold with the assumptions
    (``script`` asserts the claims' negations; vacuity.py the claims' antecedents)."""
    solver = fresh_solver([*assumptions, *terms])
    blocks = solvers.toplevel(printed(solver))
    declarations = [b for b in blocks if b.startswith("(declare-")]
    asserts = [b for b in blocks if b.startswith("(assert")]
    if len(asserts) != len(assumptions) + len(terms):
        raise ValueError("script: z3 exported another number of assertions than it was given")
    out = [f"(set-logic {logic(solver)})", *declarations, *asserts[:len(assumptions)],
           "(check-sat)"]
    for block in asserts[len(assumptions):]:
        out += ["(push 1)", block, "(check-sat)", "(pop 1)"]
    return "\n".join(out) + "\n"


def satisfiable(assumptions: list, term) -> str:
    """One text asking whether ``term`` can hold with the assumptions (status sat)."""
    return query([*assumptions, term], "sat")


def available(name: str) -> bool:
    return solvers.available(name)


def check_second(solver: str, text: str, timeout_ms: int) -> str:
    """``text`` checked by ``solver``'s default configuration of proofs/budgets.toml, with
    ``timeout_ms`` as the wall-clock safety net: sat, unsat, unknown or timeout."""
    if solver not in ("cvc5", "bitwuzla", "z3"):
        raise ValueError(f"unknown second solver {solver!r}")
    return solvers.check(solvers.load().configs[solver], text, timeout_ms / 1000).status


def check_cvc5(text: str, timeout_ms: int) -> str:
    return check_second("cvc5", text, timeout_ms)


# ``standard``: a list headed by ``or`` / ``and``, its children, and what a child may hold
# that is not structure (a quoted symbol, a string literal, a comment).
_HEAD = re.compile(r"\((or|and)(?=[\s()])")
_BARE = re.compile(r"\s(or|and)(?=[\s)])")
_OPAQUE = re.compile(r'\|[^|]*\||"(?:[^"]|"")*"|;[^\n]*')
_ATOM = re.compile(r'\|[^|]*\||"(?:[^"]|"")*"|[^\s()|";]+')
_STRUCTURE = re.compile(r'[()|";]')
_SPACE = re.compile(r"\s*")


def standard(text: str) -> str:
    """``text`` with every ``(or x)`` / ``(and x)`` written ``x``, every ``(or)`` and bare
    ``or`` term ``false``, every ``(and)`` and bare ``and`` term ``true`` (see the module
    docstring); nothing inside a quoted symbol, a string or a comment is touched. One pass
    over the heads of ``or`` and ``and`` lists: each is cut when its first child (skipped
    whole) is followed by its closing parenthesis."""
    opaque = [m.span() for m in _OPAQUE.finditer(text)]
    starts = [a for a, _ in opaque]
    cuts: list[tuple[int, int, str]] = []
    for head in _HEAD.finditer(text):
        if _inside(head.start(), opaque, starts):
            continue
        first = _child(text, head.end())
        if first is None:                       # (or) / (and)
            close = _after_space(text, head.end()) + 1
            cuts.append((head.start(), close, _EMPTY[head.group(1)]))
            continue
        after = _after_space(text, first[1])
        if text.startswith(")", after):         # one child: the list is its child
            cuts += [(head.start(), first[0], ""), (first[1], after + 1, "")]
    if any(w in text for w in (" or", "\nor", " and", "\nand")):
        for bare in _BARE.finditer(text):
            if not _inside(bare.start(1), opaque, starts):
                cuts.append((*bare.span(1), _EMPTY[bare.group(1)]))
    if not cuts:
        return text
    out, last = [], 0
    for start, end, put in sorted(cuts):
        out += [text[last:start], put]
        last = end
    return "".join(out) + text[last:]


_EMPTY = {"or": "false", "and": "true"}


def _after_space(text: str, position: int) -> int:
    space = _SPACE.match(text, position)
    assert space is not None        # \s* matches everywhere
    return space.end()


def _inside(position: int, spans: list[tuple[int, int]], starts: list[int]) -> bool:
    k = bisect.bisect_right(starts, position) - 1
    return k >= 0 and spans[k][0] <= position < spans[k][1]


def _child(text: str, position: int) -> tuple[int, int] | None:
    """The span of the s-expression at or after ``position``; None at a closing one."""
    position = _after_space(text, position)
    if position >= len(text) or text[position] == ")":
        return None
    if text[position] != "(":
        atom = _ATOM.match(text, position)
        if atom is None:
            raise ValueError(f"standard: no s-expression at {position}")
        return atom.span()
    depth, at = 0, position
    while (found := _STRUCTURE.search(text, at)) is not None:
        i, ch = found.start(), found.group()
        at = i + 1
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return position, at
        else:                                   # a quoted symbol, a string or a comment
            skipped = _OPAQUE.match(text, i)
            if skipped is None:
                raise ValueError(f"standard: unclosed {ch!r} at {i}")
            at = skipped.end()
    raise ValueError("standard: unbalanced parentheses")
