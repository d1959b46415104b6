"""Export proof queries as standard SMT-LIB 2 and re-check them with a second solver.

Each query is exported *before* z3 checks it (z3's ``to_smt2``), with ``(set-logic ALL)``
and ``(set-info :status unsat)`` — the status a proof expects. The model uses only standard
SMT-LIB operators (QF_ABV plus uninterpreted functions: no z3-only rotate, no lambda, no
quantifier), so cvc5 (or bitwuzla, when installed) parses the same text. A second solver
answering sat where z3 proved unsat, or the reverse, is a disagreement and fails the suite.
The solvers themselves, with their deterministic budgets, are in solvers.py.
"""

from __future__ import annotations

import z3

from proofs import solvers

SOLVERS = solvers.SOLVERS


def export(assumptions: list, claim) -> str:
    solver = z3.Solver()
    solver.add(*assumptions)
    solver.add(z3.Not(claim))
    text = solver.to_smt2()
    text = text.replace("(set-info :status unknown)", "(set-info :status unsat)", 1)
    return "(set-logic ALL)\n" + text


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
