"""A user theorem's claims read back from its child's SMT-LIB text, in ``prove`` itself.

The confined child that runs a theorems file (usertasks.py) only builds each row's claims
and reports, per claim, the text ``--export-smt2`` writes for it (smtlib.export: the
declarations, the assumptions, the claim's negation, one ``(check-sat)``). Nothing of it is
trusted: ``read`` accepts only a plain satisfiability problem of that shape —

- at most MAX_CLAIMS texts a row, each at most MAX_TEXT characters, with nothing but
  top-level commands, whitespace and comments, each command one s-expression nested at most
  claimtext.MAX_DEPTH deep, at most claimtext.MAX_NODES distinct subterms, no bit-vector
  wider than MAX_BITS;
- the commands ``set-logic``, ``set-info :status``, ``declare-fun``, ``declare-const`` and
  ``assert``, then exactly one ``(check-sat)``, last. Anything else (``push``, ``pop``,
  ``set-option``, ``define-fun``, ``declare-sort``, ``reset``, a second check ...) is refused
  by its name;
- parsed by z3 here with no declaration of ours: the last assertion must be a negation (the
  claim's), the others are the row's assumptions, the same in every claim of the row.

The parent then proves the claims it parsed exactly as a built-in row's (claims.check_rows:
texts printed again from its own terms, its own solvers, budgets, re-checks and vacuity
checks): no status, model or answer of the child's is ever used.
"""

from __future__ import annotations

import re

import z3

from proofs import solvers
from proofs.symbolic.claimtext import MAX_DEPTH, MAX_NODES, single_expression

MAX_TEXT = 4 << 20          # characters of one claim's text
MAX_CLAIMS = 10_000         # claims of one row
MAX_BITS = 1 << 16          # bits of a bit-vector sort of a claim
COMMANDS = ("set-logic", "set-info", "declare-fun", "declare-const", "assert", "check-sat")
_GAP = re.compile(r"(?:\s+|;[^\n]*(?:\n|\Z))*")
_HEAD = re.compile(r"\(\s*([^\s()|;\"]+)")


class Refused(ValueError):
    """A claim's text that is not a plain satisfiability problem of the expected shape."""


def read(texts) -> tuple[list, list]:
    """(assumptions, claims) of a row from its claims' texts; Refused (one line) otherwise."""
    if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
        raise Refused("the claims' texts are not a list of texts")
    if len(texts) > MAX_CLAIMS:
        raise Refused(f"more than {MAX_CLAIMS} claims")
    assumptions: list | None = None
    claims = []
    for k, text in enumerate(texts):
        premises, claim = _one(text, f"claim {k}")
        if assumptions is None:
            assumptions = premises
        elif len(premises) != len(assumptions) or not all(
                a.eq(b) for a, b in zip(premises, assumptions)):
            raise Refused(f"claim {k}: other assumptions than claim 0's")
        claims.append(claim)
    return assumptions or [], claims


def _one(text: str, what: str) -> tuple[list, z3.BoolRef]:
    if len(text) > MAX_TEXT or "\0" in text:
        raise Refused(f"{what}: more than {MAX_TEXT} characters, or a NUL")
    blocks = solvers.toplevel(text)
    pos = 0
    for block in blocks:
        at = text.find(block, pos)
        if at < 0 or not _GAP.fullmatch(text, pos, at):
            raise Refused(f"{what}: text outside the commands")
        pos = at + len(block)
    if not _GAP.fullmatch(text, pos):
        raise Refused(f"{what}: text outside the commands")
    heads: list[str] = []
    for block in blocks:
        if not single_expression(block):
            raise Refused(f"{what}: a command that is not one s-expression nested at most "
                          f"{MAX_DEPTH} deep")
        head = _HEAD.match(block)
        name = head.group(1) if head else block[:20]
        if name not in COMMANDS:
            raise Refused(f"{what}: the command {name[:40]!r} is outside a plain satisfiability "
                          f"problem ({', '.join(COMMANDS)})")
        if name == "set-info" and not re.fullmatch(r"\(\s*set-info\s+:status\s+[a-z]+\s*\)", block):
            raise Refused(f"{what}: set-info other than :status")
        if name == "set-logic" and heads:
            raise Refused(f"{what}: set-logic not first")
        heads.append(name)
    if heads.count("check-sat") != 1 or heads[-1] != "check-sat" or \
            re.fullmatch(r"\(\s*check-sat\s*\)", blocks[-1]) is None:
        raise Refused(f"{what}: not exactly one (check-sat), last")
    try:
        parsed = list(z3.parse_smt2_string(text))
    except z3.Z3Exception as err:
        raise Refused(f"{what}: not parsed ({' '.join(str(err).split())[:160]})") from None
    if len(parsed) != heads.count("assert") or not parsed or not z3.is_not(parsed[-1]):
        raise Refused(f"{what}: its last assertion is not the negation of a claim")
    _bounded(parsed, what)
    return parsed[:-1], parsed[-1].arg(0)


def _bounded(terms: list, what: str) -> None:
    """At most MAX_NODES distinct subterms, and no bit-vector wider than MAX_BITS."""
    todo, seen = list(terms), set[int]()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if len(seen) > MAX_NODES:
            raise Refused(f"{what}: more than {MAX_NODES} subterms")
        sorts = [t.sort()] if z3.is_expr(t) else []
        while sorts:
            sort = sorts.pop()
            if sort.kind() == z3.Z3_BV_SORT and sort.size() > MAX_BITS:
                raise Refused(f"{what}: a bit-vector wider than {MAX_BITS} bits")
            if sort.kind() == z3.Z3_ARRAY_SORT:
                sorts += [sort.domain(), sort.range()]
        if z3.is_app(t):
            todo.extend(t.children())
            decl = t.decl()
            sorts = [decl.domain(i) for i in range(decl.arity())]
            if any(d.kind() == z3.Z3_BV_SORT and d.size() > MAX_BITS for d in sorts):
                raise Refused(f"{what}: a bit-vector wider than {MAX_BITS} bits")
        elif z3.is_quantifier(t):
            todo.append(t.body())


MAX_CALLS = 1000            # op() calls of one word law, read back for its explanation


def explanation(row: dict, assumptions: list, claims: list) -> tuple[tuple, tuple, bool]:
    """(calls, named, whether it is a state law) of a row, to explain a counterexample
    (never for its status): each ``op(mnemonic, *operands)`` call of a word law as
    (mnemonic, operand terms, pushed term) and the variables the law made with words(),
    read from the child's texts over the constants of the row's parsed claims only; none
    when the row reports none or they do not read (the counterexample is then shown
    unreplayed). A state law's counterexample is read at a pre-state of the parent's own
    (machine.fresh_state)."""
    decls: dict = {}
    todo, seen = [*assumptions, *claims], set[int]()
    while todo:
        t = todo.pop()
        if t.get_id() in seen or len(seen) > MAX_NODES:
            continue
        seen.add(t.get_id())
        if z3.is_app(t):
            if t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
                decls[t.decl().name()] = t.decl()
            todo.extend(t.children())
    try:
        named = tuple(decls[n]() for n in row.get("named", ()) if isinstance(n, str)
                      and n in decls and decls[n].arity() == 0)
        items = row.get("calls", ())
        if not isinstance(items, list) or len(items) > MAX_CALLS:
            return (), named, False
        calls = []
        for item in items:
            mnemonic, args, pushed = item
            if not (isinstance(mnemonic, str) and isinstance(args, list)):
                return (), named, False
            calls.append((mnemonic, tuple(a if type(a) is int else _term(a, decls)
                                          for a in args), _term(pushed, decls)))
        return tuple(calls), named, row.get("pre") is True
    except (Refused, z3.Z3Exception, TypeError, ValueError):
        return (), (), False


def _term(text, decls: dict):
    if not isinstance(text, str) or not single_expression(text):
        raise Refused("not one term")
    parsed = z3.parse_smt2_string(f"(assert (= {text}\n {text}\n))", decls=decls)
    if len(parsed) != 1 or not z3.is_eq(parsed[0]):
        raise Refused("not one term")
    return parsed[0].arg(0)
