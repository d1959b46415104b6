"""Export proof queries as standard SMT-LIB 2 and re-check them with a second solver.

Each query is exported *before* z3 checks it (z3's ``to_smt2``), with ``(set-logic ALL)``
and ``(set-info :status unsat)`` — the status a proof expects. The model uses only standard
SMT-LIB operators (QF_ABV plus uninterpreted functions: no z3-only rotate, no lambda, no
quantifier), so cvc5 (or bitwuzla, when installed) parses the same text. A second solver
answering sat where z3 proved unsat, or the reverse, is a disagreement and fails the suite.
"""

from __future__ import annotations

import z3

SOLVERS = ("z3", "cvc5", "bitwuzla")


def export(assumptions: list, claim) -> str:
    solver = z3.Solver()
    solver.add(*assumptions)
    solver.add(z3.Not(claim))
    text = solver.to_smt2()
    text = text.replace("(set-info :status unknown)", "(set-info :status unsat)", 1)
    return "(set-logic ALL)\n" + text


def available(name: str) -> bool:
    try:
        __import__(name)
    except ImportError:
        return False
    return True


def check_cvc5(text: str, timeout_ms: int) -> str:
    import cvc5

    solver = cvc5.Solver()
    solver.setOption("tlimit-per", str(timeout_ms))
    parser = cvc5.InputParser(solver)
    text = text.replace("(set-info :status unsat)", "(set-info :status unknown)", 1)
    parser.setStringInput(cvc5.InputLanguage.SMT_LIB_2_6, text, "query")
    symbols = parser.getSymbolManager()
    answer = "unknown"
    while True:
        command = parser.nextCommand()
        if command.isNull():
            break
        out = command.invoke(solver, symbols).strip()
        if out.startswith("(error"):
            raise RuntimeError(f"cvc5: {out}")   # an export problem must not pass silently
        if out.split(" ")[0] in ("sat", "unsat", "unknown"):
            answer = out.split(" ")[0]
    return answer


def check_bitwuzla(text: str, timeout_ms: int) -> str:
    import bitwuzla  # optional: pip install bitwuzla

    tm = bitwuzla.TermManager()
    options = bitwuzla.Options()
    options.set(bitwuzla.Option.TIME_LIMIT_PER, timeout_ms)
    parser = bitwuzla.Parser(tm, options)
    parser.parse(text, True, False)
    return str(parser.bitwuzla().check_sat()).lower()


def check_second(solver: str, text: str, timeout_ms: int) -> str:
    # cvc5 turns an answer contradicting :status into an error; the caller compares.
    text = text.replace("(set-info :status unsat)", "(set-info :status unknown)", 1)
    if solver == "cvc5":
        return check_cvc5(text, timeout_ms)
    if solver == "bitwuzla":
        return check_bitwuzla(text, timeout_ms)
    raise ValueError(f"unknown second solver {solver!r}")
