"""The budget of one symbolic run: deterministic work units per phase, bounded
simplification, and the two safety nets (the wall clock and z3's memory).

Work is counted in z3's own units: the ``rlimit count`` of the context, which every
simplification and every solver check advances by the work it did — the same count on every
run of the same command, whatever the load. A run has phases (each exploration, then the
witnesses and verdicts after it); each may spend ``max_work`` units. The explorer stops when
its phase has spent them (a bound, named in the verdicts); a query gets what is left as its
limit (at most the per-query ``rlimit``), and a query with nothing left is ``unknown``.

One simplification may take at most ``SIMPLIFY_STEPS`` rewriting steps (z3's ``max_steps``,
deterministic): a term that needs more raises ``TermTooLarge`` (the explorer cuts the path,
named). The count of units is only read between operations, so a phase can overrun its
budget by one operation: by one query's ``rlimit`` or one simplification's steps at most.

The safety nets are not deterministic and never give a verdict: the wall clock (``deadline``
seconds from the first exploration) and z3's memory (``z3_memory`` megabytes of everything
z3 holds in the process: each solver check gets it as its ``max_memory``, each
simplification too, and the explorer compares z3's allocation with it before every
instruction). A run that one of them stops is ``stopped``, and says which. (z3's global
``memory_max_size`` is not used: exceeded where z3 does not catch it, it aborts the
process.)
"""

from __future__ import annotations

import time
from contextlib import contextmanager

import z3

from proofs.symbolic.bounds import (
    DEFAULT_DEADLINE, DEFAULT_MAX_WORK, DEFAULT_Z3_MEMORY, SIMPLIFY_STEPS,
)

class TermTooLarge(Exception):
    """A term needed more than SIMPLIFY_STEPS rewriting steps to simplify."""


class Stopped(Exception):
    """A safety net stopped the run (the reason is the budget's ``stopped``)."""


_PARAMS: dict = {}


def _params(ctx, memory: int | None) -> z3.ParamsRef:
    """The simplifier's parameters, made once per context and memory cap (z3.simplify
    builds them again at every call: most of its cost on small terms)."""
    key = (id(ctx), SIMPLIFY_STEPS, memory)
    params = _PARAMS.get(key)
    if params is None:
        params = z3.ParamsRef(ctx)
        params.set("max_steps", SIMPLIFY_STEPS)
        if memory is not None:
            params.set("max_memory", memory)
        _PARAMS[key] = params
    return params


def simplify(term):
    """``z3.simplify`` within SIMPLIFY_STEPS rewriting steps (TermTooLarge beyond) and,
    while a run explores, within its memory cap (Stopped beyond). A numeral is its own
    simplification (most terms, when the inputs are values)."""
    run = _Active.run
    ctx = term.ctx
    if z3.Z3_get_ast_kind(ctx.ref(), term.as_ast()) == z3.Z3_NUMERAL_AST:
        return term
    try:
        params = _params(ctx, None if run is None else run.z3_memory)
        return z3.z3._to_expr_ref(z3.Z3_simplify_ex(ctx.ref(), term.as_ast(), params.params), ctx)
    except z3.Z3Exception as err:
        if "max. steps" in str(err):
            raise TermTooLarge(f"a term needs more than {SIMPLIFY_STEPS} rewriting steps "
                               "to simplify") from None
        if run is not None and "memory" in str(err):
            run.stop(run.memory_reason())
            raise Stopped(run.stopped) from None
        raise


class _Active:
    """The run whose memory cap applies to simplifications (set while it explores)."""
    run: "RunBudget | None" = None


@contextmanager
def active(run: "RunBudget"):
    previous, _Active.run = _Active.run, run
    try:
        yield
    finally:
        _Active.run = previous


class RunBudget:
    def __init__(self, max_work: int = DEFAULT_MAX_WORK, deadline: float = DEFAULT_DEADLINE,
                 z3_memory: int = DEFAULT_Z3_MEMORY):
        self.max_work, self.deadline, self.z3_memory = max_work, deadline, z3_memory
        self._probe = z3.Solver()          # never checked: its statistics read the count
        self.start = self.counter()
        self.phase_start = self.start
        self.phase = "exploration"
        self.deadline_at: float | None = None
        self.stopped: str | None = None    # the safety net that stopped the run
        self.charged = 0                   # units of queries solved apart, this phase
        self.charged_total = 0             # and over the run

    def configure(self, max_work: int, deadline: float, z3_memory: int) -> None:
        self.max_work, self.z3_memory = max_work, z3_memory
        if self.deadline_at is None:
            self.deadline = deadline

    # -- work units (deterministic) ----------------------------------------------------------
    def sample(self) -> tuple[int, float]:
        """(z3's work units so far, the megabytes it holds now), from one statistics read."""
        stats = self._probe.statistics()
        keys = stats.keys()
        return (int(stats.get_key_value("rlimit count")) if "rlimit count" in keys else 0,
                float(stats.get_key_value("memory")) if "memory" in keys else 0.0)

    def counter(self) -> int:
        return self.sample()[0]

    def begin(self, phase: str) -> None:
        self.phase, self.phase_start, self.charged = phase, self.counter(), 0

    def charge(self, units: int) -> None:
        """Work of a query solved apart (in a fresh context, ``apart.py``): counted by the
        driver, in path order, as the context's own count counts a query solved in it."""
        self.charged += units
        self.charged_total += units

    def spent(self) -> int:
        """Work units of the whole run so far."""
        return self.counter() - self.start + self.charged_total

    def left(self) -> int:
        return self.max_work - (self.counter() - self.phase_start) - self.charged

    @property
    def bound(self) -> str:
        return f"max-work {self.max_work}"

    # -- the safety nets ---------------------------------------------------------------------
    def start_clock(self) -> None:
        if self.deadline_at is None:
            self.deadline_at = time.monotonic() + self.deadline

    def seconds_left(self) -> float:
        self.start_clock()
        assert self.deadline_at is not None
        return self.deadline_at - time.monotonic()

    def stop(self, reason: str) -> None:
        if self.stopped is None:
            self.stopped = reason

    def deadline_reason(self) -> str:
        return (f"the wall clock reached the {self.deadline:g} s deadline (a safety net, "
                "not a verdict)")

    def memory_reason(self) -> str:
        return (f"z3 reached its memory cap of {self.z3_memory} MB (a safety net, not a "
                "verdict)")

    def memory(self) -> float:
        """Megabytes z3 holds now (in the whole process)."""
        return self.sample()[1]

    def check(self) -> bool:
        """Before an instruction: False when the phase's work units are spent; Stopped when
        the deadline has passed or z3 holds more than its cap (or the run was stopped)."""
        count, memory = self.sample()
        if self.stopped is None and self.seconds_left() <= 0:
            self.stop(self.deadline_reason())
        if self.stopped is None and memory > self.z3_memory:
            self.stop(self.memory_reason())
        if self.stopped is not None:
            raise Stopped(self.stopped)
        return count - self.phase_start + self.charged < self.max_work
