"""Queries solved apart: each a pure function of its SMT-LIB text, wherever it is solved.

A query of the witnesses-and-verdicts phase of ``rtwo-vm symbolic`` is printed as SMT-LIB
(``prepare``: z3's benchmark printer, its shared subterms let-bound; the terms to keep small
as ``(minimize ...)``) and solved in a fresh z3 context (``solve``): its answer and the work
units it spent depend on the text and the per-query ``rlimit`` alone, not on what the
process built before, so the driver, a local worker process or a Ray worker on another node
give the same ``Answer``. A satisfiable answer carries the values of the query's bit-vector
and Boolean constants (``pins``, text); the driver then solves the query again with them
pinned (``pinned``), in a fresh context too, for the model it evaluates its terms in: the
same model whichever process solved the query first. Which queries are solved elsewhere is
``spread.py``; the phase's budget is counted by the driver in path order (``solve.Solver``).

The wall clock (``wall_ms``) and z3's memory cap (``memory``) are safety nets: a query one
of them stops is ``timeout`` or ``memory``, never a verdict.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

SAT, UNSAT, UNKNOWN, TIMEOUT, MEMORY = "sat", "unsat", "unknown", "timeout", "memory"
# A pin as ``_pins`` prints it: a symbol (plain or |quoted|) and a bit-vector or Boolean
# value. Anything else (from a worker or a state line) is not spliced into a script.
_SYMBOL = re.compile(r"[A-Za-z_~!@$%^&*+=<>.?/\-][A-Za-z0-9_~!@$%^&*+=<>.?/\-]{0,200}\Z|\|[^|\\]{1,200}\|\Z")
_VALUE = re.compile(r"#x[0-9a-f]{1,2048}\Z|#b[01]{1,8192}\Z|true\Z|false\Z")


class Unfaithful(Exception):
    """A satisfiable answer whose constants, pinned, leave its own query unsatisfiable: the
    process that solved it did not answer this query (a worker that lies, or a fault)."""


@dataclass(frozen=True)
class Query:
    text: str                      # declarations and assertions, without (check-sat)
    minimize: tuple = ()           # terms (text) made as small as possible, in order

    @property
    def digest(self) -> str:
        h = hashlib.sha256(self.text.encode())
        for term in self.minimize:
            h.update(b"\0minimize " + term.encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Answer:
    status: str                    # sat, unsat, unknown, timeout or memory
    spent: int                     # z3 work units (the fresh context's rlimit count)
    pins: tuple = ()               # (constant, value) as SMT-LIB text, when sat
    reason: str = ""               # z3's reason for an undecided answer


def answer_json(answer: Answer) -> dict:
    return {"status": answer.status, "spent": answer.spent,
            "pins": [list(p) for p in answer.pins], "reason": answer.reason}


def answer_of(doc) -> Answer | None:
    """An Answer read back from a state file (None when it is not one): only the answers
    that depend on the text alone (sat, unsat, unknown) are ever kept."""
    try:
        pins = tuple((c, v) for c, v in doc["pins"])
        ok = (doc["status"] in (SAT, UNSAT, UNKNOWN) and type(doc["spent"]) is int
              and doc["spent"] >= 0 and isinstance(doc["reason"], str)
              and all(isinstance(c, str) and isinstance(v, str) for c, v in pins))
    except (KeyError, TypeError, ValueError):
        return None
    return Answer(doc["status"], doc["spent"], pins, doc["reason"]) if ok else None


def kept(answer: Answer) -> bool:
    """Whether an answer is a function of its query's text and rlimit alone (never one a
    safety net gave)."""
    return answer.status in (SAT, UNSAT, UNKNOWN)


@dataclass(frozen=True)
class Limits:
    rlimit: int                    # per query (each of the optimisation and the plain check)
    wall_ms: int                   # safety net per query
    memory: int                    # megabytes, safety net


def prepare(conds, prefer=()) -> Query:
    """The query of ``conds`` (main-context terms), minimising ``prefer`` when given. The
    terms are copied into a fresh context and printed there: z3's printer names and
    let-binds subterms by their ids and reference counts, which in the main context depend
    on everything the process holds; in the copy they depend on the terms alone."""
    import z3
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    s.add(*[c.translate(ctx) for c in conds])
    text = s.to_smt2()
    cut = text.rfind("(check-sat)")
    if cut >= 0:
        text = text[:cut]
    return Query(text, tuple(t.translate(ctx).sexpr() for t in prefer))


def _fresh(limits: Limits, optimize: bool):
    import z3
    ctx = z3.Context()
    s = z3.Optimize(ctx=ctx) if optimize else z3.Solver(ctx=ctx)
    s.set("rlimit", limits.rlimit)
    s.set("timeout", limits.wall_ms)
    if not optimize:                  # z3's optimiser takes no memory cap
        s.set("max_memory", limits.memory)
    return s


def _spent(s) -> int:
    stats = s.statistics()
    return int(stats.get_key_value("rlimit count")) if "rlimit count" in stats.keys() else 0


def _undecided(s, spent: int, rlimit: int) -> tuple[str, str]:
    reason = s.reason_unknown()
    if "memory" in reason:
        return MEMORY, reason
    if spent >= rlimit or "resource" in reason:
        return UNKNOWN, reason
    if "timeout" in reason or "canceled" in reason:
        return TIMEOUT, reason
    return UNKNOWN, reason


def _pins(model) -> tuple:
    import z3
    out = []
    for d in sorted(model.decls(), key=lambda d: d.name()):
        if d.arity() == 0 and (z3.is_bv_sort(d.range()) or z3.is_bool(d())):
            out.append((d().sexpr(), model[d].sexpr()))
    return tuple(out)


def solve(query: Query, limits: Limits) -> Answer:
    """The answer to ``query`` from a fresh context: with terms to minimise, z3's optimiser
    first (within ``limits.rlimit``), and the plain check when it leaves the query undecided
    (not when a safety net stopped it); ``spent`` is the work of both."""
    spent = 0
    stages = [True, False] if query.minimize else [False]
    for optimize in stages:
        s = _fresh(limits, optimize)
        s.from_string(query.text + "".join(f"(minimize {t})" for t in query.minimize
                                            if optimize))
        answer = str(s.check())
        used = _spent(s)
        spent += used
        if answer == SAT:
            return Answer(SAT, spent, _pins(s.model()))
        if answer == UNSAT:
            return Answer(UNSAT, spent)
        status, reason = _undecided(s, used, limits.rlimit)
        if status in (TIMEOUT, MEMORY) or not optimize:
            return Answer(status, spent, reason=reason)
    raise AssertionError("the plain check answers")


def solve_item(item: tuple) -> Answer:
    """``solve`` of a ``(query, limits)`` pair: the task a worker runs."""
    query, limits = item
    return solve(query, limits)


def pinned(query: Query, answer: Answer, limits: Limits):
    """(status, work units, model in the main context) of ``query`` with the constants of a
    satisfiable ``answer`` pinned: a fresh context again, so the model is the same whichever
    process gave the answer."""
    import z3
    if not all(_SYMBOL.match(c) and _VALUE.match(v) for c, v in answer.pins):
        raise Unfaithful("a satisfiable answer's values are not constants and values")
    s = _fresh(limits, optimize=False)
    s.from_string(query.text + "".join(f"(assert (= {c} {v}))" for c, v in answer.pins))
    status = str(s.check())
    used = _spent(s)
    if status == SAT:
        return SAT, used, s.model().translate(z3.main_ctx())
    if status == UNSAT:            # the pins came from a model of this very text
        raise Unfaithful("a satisfiable answer's own values make its query unsatisfiable "
                         "(the worker that solved it did not answer it)")
    return _undecided(s, used, limits.rlimit)[0], used, None
