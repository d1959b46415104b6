"""The proof tasks of a user's theorems file (``rtwo-vm prove --theorems FILE``), each run in
a confined child (spec/confined.py).

A user's theorem is built by the file's own code, which runs again in the task's process
(registry.load_file): that process is a confined child — its own session under a subreaper,
resource limits, no file-system change outside ``--export-smt2 DIR`` (where the texts go),
every process it started killed when it ends — with a wall-clock deadline
(``--file-seconds``, default TASK_SECONDS): a task that outlives it is a ``timeout`` row
that says so, one that ends without its rows (a crash, ``os._exit``, a signal) an ``error``
row, never a hang of ``prove``. Its rows come back as JSON (never a pickle, which would run
code in ``prove`` itself), bounded, and are checked before they are used: each row must be
the task's own (theorem, opcode, width), with a known status and fields of the types the
report reads; anything else is an ``error`` row.
"""

from __future__ import annotations

import json
import time
from typing import Callable, Iterator

from proofs.verdicts import COUNTEREXAMPLE, ERROR, PROVED, TIMEOUT, UNKNOWN, VACUOUS
from spec import confined

LOAD_SECONDS = 300.0        # the child that loads the file and reports its declarations
TASK_SECONDS = 1800.0       # each task's child
EXPORT_FILE_SIZE = 1 << 30  # bytes of one exported SMT-LIB text (with --export-smt2)
STATUSES = (PROVED, COUNTEREXAMPLE, UNKNOWN, TIMEOUT, VACUOUS, ERROR)
_TEXT = {"error", "second_status", "premises", "second_solver", "note"}
_COUNTS = {"proved_by", "rechecked_by"}


def limits(seconds: float | None, memory: int | None, default: float,
           export_dir: str | None = None) -> confined.Limits:
    base = confined.Limits()
    return confined.Limits(seconds=seconds or default, memory=memory or base.memory,
                           writable=(export_dir,) if export_dir else (),
                           file_size=EXPORT_FILE_SIZE if export_dir else 0)


def run(tasks: list[tuple], run_task: Callable[[tuple], list], error_rows: Callable,
        expected: Callable[[tuple], list], bounds: confined.Limits,
        jobs: int) -> Iterator[list[dict]]:
    """The rows of each task, ``jobs`` confined children at a time, as they finish.
    ``expected(task)`` is (theorem, opcode, width) of each row the task must report."""
    def produce(task: tuple) -> Callable[[], dict]:
        # default=str: as the report is written (proofs/report.py)
        return lambda: {"rows": json.loads(json.dumps(run_task(task), default=str))}
    begin = time.perf_counter()
    for task, outcome in confined.run_many([(t, produce(t)) for t in tasks], bounds, jobs):
        elapsed = time.perf_counter() - begin
        if isinstance(outcome, confined.ChildLate):
            rows = error_rows(task, elapsed, f"the task's process {outcome}")
            yield [{**r, "status": TIMEOUT} for r in rows]
        elif isinstance(outcome, confined.ChildFailed):
            yield error_rows(task, elapsed, f"the task's process ended ({outcome}) before it "
                                            "reported its rows")
        elif "error" in outcome:
            yield error_rows(task, elapsed, f"the task's process: {str(outcome['error'])[:300]}")
        else:
            problem = _problem(outcome.get("rows"), expected(task))
            yield (error_rows(task, elapsed, f"the task's report is malformed ({problem})")
                   if problem else outcome["rows"])


def _problem(rows, expected: list) -> str | None:
    """Why ``rows`` are not the task's rows as the report reads them (None: they are)."""
    if not isinstance(rows, list) or len(rows) != len(expected):
        return "not one row per theorem and width"
    for row, (name, opcode, width) in zip(rows, expected):
        if not isinstance(row, dict) or (row.get("theorem"), row.get("opcode"),
                                         row.get("width")) != (name, opcode, width):
            return "a row of another theorem"
        if row.get("status") not in STATUSES:
            return "an unknown status"
        if not isinstance(row.get("seconds"), (int, float)) or isinstance(row["seconds"], bool):
            return "seconds not a number"
        if not isinstance(row.get("claims", 0), int):
            return "claims not a count"
        for key in _TEXT & set(row):
            if not isinstance(row[key], str):
                return f"{key} not text"
        for key in _COUNTS & set(row):
            if not (isinstance(row[key], dict) and all(isinstance(v, int) and not isinstance(
                    v, bool) for v in row[key].values())):
                return f"{key} not counts"
        for key in ("vacuous_claims", "undecided_claims", "findings"):
            if key in row and not isinstance(row[key], list):
                return f"{key} not a list"
        cex = row.get("counterexample")
        if cex is not None and not isinstance(cex, dict):
            return "counterexample not an object"
        if isinstance(cex, dict) and "explained" in cex:
            from proofs.explain import render
            try:
                render(cex)
            except Exception:  # noqa: BLE001 - the report reads it: it must read
                return "an unreadable counterexample"
    return None
