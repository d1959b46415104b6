"""The proof tasks of a user's theorems file (``rtwo-vm prove --theorems FILE``): each task's
claims are built in a confined child (spec/confined.py) and proved in ``prove`` itself.

A user's theorem is built by the file's own code, which runs again in the task's process
(registry.load_file): that process is a confined child — its own session under a subreaper,
resource limits, no file-system change at all, every process it started killed when it
ends — with a wall-clock deadline (``--file-seconds``, default TASK_SECONDS): a task that
outlives it is a ``timeout`` row that says so, one that ends without its report (a crash,
``os._exit``, a signal) an ``error`` row, never a hang of ``prove``.

The child only BUILDS: it reports, for each of its rows, the SMT-LIB 2 text of every claim
(the text ``--export-smt2`` writes) as JSON (never a pickle, which would run code in
``prove``), or the one-line error its build raised. It never solves, and no status of its
is read: ``prove`` checks each row is the task's own (theorem, opcode, width), reads the
texts (usertexts.py: a plain satisfiability problem of the expected shape, parsed by z3
here, else an ``error`` row) and proves the parsed claims exactly as a built-in row's
(claims.check_rows: its own solvers, deterministic budgets, re-checks, premises and
vacuity checks). A file that patches z3 in its child, or forges its report, cannot make a
false theorem proved.
"""

from __future__ import annotations

import time
from typing import Callable, Iterator

from proofs import smtlib, usertexts
from proofs.verdicts import TIMEOUT
from spec import confined

LOAD_SECONDS = 300.0        # the child that loads the file and reports its declarations
TASK_SECONDS = 1800.0       # each task's child


def limits(seconds: float | None, memory: int | None, default: float) -> confined.Limits:
    base = confined.Limits()
    return confined.Limits(seconds=seconds or default, memory=memory or base.memory)


def texts(theorems: list, task: tuple, build: Callable) -> dict:
    """In the task's child: each row's claims' texts (or the error its build raised)."""
    kind, key, bits = task
    rows = []
    for index in (key if kind == "group" else (key,)):
        th = theorems[index]
        row: dict = {"theorem": th.name, "opcode": th.opcode, "width": bits or "-"}
        try:
            query = build(th, bits)
            row["texts"] = [smtlib.export(query.assumptions, c) for c in query.claims]
            # a word law's op() calls and words(), read back only to explain a counterexample
            row["calls"] = [[m, [a if type(a) is int else a.sexpr() for a in args], pushed.sexpr()]
                            for m, args, pushed in query.calls[:usertexts.MAX_CALLS]]
            row["named"] = [str(v) for v in query.named]
            row["pre"] = query.pre is not None      # a state law: replayed from a pre-state
        except Exception as err:  # noqa: BLE001 - the user's code: its error row, one line
            row["error"] = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        rows.append(row)
    return {"rows": rows}


def run(tasks: list[tuple], build_texts: Callable[[tuple], dict],
        decide: Callable[[int, int, list, list, tuple], list], error_rows: Callable,
        expected: Callable[[tuple], list], bounds: confined.Limits, jobs: int,
        forked: Callable[[list], Iterator[list]]) -> Iterator[list[dict]]:
    """The rows of each task: its texts built by ``jobs`` confined children at a time, then
    read (usertexts) and decided by ``decide(index, bits, assumptions, claims, shown)``
    (shown: usertexts.explanation, only to explain a counterexample) in processes of
    ``prove``'s own: ``forked([(task, solve), ...])`` yields each ``solve()``'s rows.
    ``expected(task)`` is (theorem, opcode, width) of each row the task must report. Every
    child's report is collected before anything is solved, so that solving never makes a
    child late."""
    begin = time.perf_counter()
    outcomes = []

    def produce(task: tuple) -> Callable[[], dict]:
        return lambda: build_texts(task)
    for task, outcome in confined.run_many([(t, produce(t)) for t in tasks], bounds, jobs):
        outcomes.append((task, outcome, time.perf_counter() - begin))
    work = []
    for task, outcome, elapsed in outcomes:
        if isinstance(outcome, confined.ChildLate):
            rows = error_rows(task, elapsed, f"the task's process {outcome}")
            yield [{**r, "status": TIMEOUT} for r in rows]
        elif isinstance(outcome, confined.ChildFailed):
            yield error_rows(task, elapsed, f"the task's process ended ({outcome}) before it "
                                            "reported its claims")
        elif "error" in outcome:
            yield error_rows(task, elapsed, f"the task's process: {str(outcome['error'])[:300]}")
        elif problem := _problem(outcome.get("rows"), expected(task)):
            yield error_rows(task, elapsed, f"the task's report is malformed ({problem})")
        else:
            work.append((task, _solve(task, outcome["rows"], elapsed, decide, error_rows)))
    yield from forked(work)


def _solve(task: tuple, reported: list, elapsed: float, decide: Callable,
           error_rows: Callable) -> Callable[[], list]:
    """The task's rows from its child's (checked) rows of texts, when called."""
    def solve() -> list:
        kind, key, bits = task
        out = []
        for index, row in zip(key if kind == "group" else (key,), reported):
            one = ("theorem", index, bits)
            if "error" in row:
                out += error_rows(one, elapsed, f"the task's process: {row['error']}")
                continue
            try:
                assumptions, claims = usertexts.read(row["texts"])
            except usertexts.Refused as err:
                out += error_rows(one, elapsed, f"the task's claims are refused ({err})")
                continue
            out += decide(index, bits, assumptions, claims,
                          usertexts.explanation(row, assumptions, claims))
        return out
    return solve


def _problem(rows, expected: list) -> str | None:
    """Why ``rows`` are not the task's rows of texts (None: they are)."""
    if not isinstance(rows, list) or len(rows) != len(expected):
        return "not one row per theorem and width"
    for row, (name, opcode, width) in zip(rows, expected):
        if not isinstance(row, dict) or (row.get("theorem"), row.get("opcode"),
                                         row.get("width")) != (name, opcode, width):
            return "a row of another theorem"
        if "error" in row:
            if not isinstance(row["error"], str):
                return "error not text"
        elif not isinstance(row.get("texts"), list) or not all(
                isinstance(t, str) for t in row["texts"]):
            return "texts not a list of texts"
    return None
