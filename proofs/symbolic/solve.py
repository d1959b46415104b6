"""Solver queries of the symbolic executor, under deterministic budgets.

Every query is a conjunction of path conditions (and, for claims, a negated claim) solved by
z3 with a resource limit in z3's own work units (``rlimit``; ``[config.symbolic]`` of
``proofs/budgets.toml``, and never more than the run's phase has left: ``budget.py``), never
a time limit: an undecided query is ``unknown`` and the query is named in the verdict. The
budgets file's ``wall_seconds`` (per query) and the run's deadline are safety nets only; a
query that hits one is ``timeout``, and a query z3's memory cap stops is ``memory``: the run
is then stopped (``budget.stopped``), reported as such, and later queries are not solved.

SHA-256 over symbolic bytes and the random stream of a symbolic seed are uninterpreted
function symbols in the models (proofs/instructions/hash.py, context.py). A model of a query
may give them values SHA-256 does not. ``consistent_model`` repairs that the way the models'
axioms allow: for each application whose arguments the model fixes, the instance of axiom 2
(its value is SHA-256 of those bytes) is added — a true statement, so adding it loses no
input — and the query is solved again, until the model agrees with SHA-256 everywhere (a
witness) or the query becomes unsatisfiable (the path needs a hash no input gives: it is not
feasible after all).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import z3

from proofs import solvers
from proofs.evaluate import constant
from proofs.symbolic import apart
from proofs.instructions.context import random_value
from proofs.symbolic.budget import RunBudget
from proofs.symbolic.integers import as_bitvectors
from proofs.words import Width

SAT, UNSAT, UNKNOWN, TIMEOUT = solvers.SAT, solvers.UNSAT, solvers.UNKNOWN, solvers.TIMEOUT
MEMORY = "memory"
CONFIG = "symbolic"
MAX_ROUNDS = 24           # axiom instances added before a witness search gives up (unknown)


def budget(rlimit: int | None = None, budgets: str | None = None) -> tuple[int, float]:
    """(rlimit per query, wall-clock safety net in seconds) from the budgets file."""
    loaded = solvers.load(budgets)
    config = loaded.configs.get(CONFIG) or loaded.configs["z3"]
    return (rlimit or config.rlimit, loaded.wall_seconds)


@dataclass
class Stats:
    queries: int = 0
    unknown: int = 0
    timeout: int = 0
    rlimit_spent: int = 0
    undecided: list = field(default_factory=list)   # names of the queries left unknown
    work_spent: int = 0             # queries left unknown because the phase's budget ran out


class Solver:
    """Fresh z3 solver per query: an answer depends on the query alone, not on the order in
    which paths were explored.

    With ``spread`` (a ``spread.Spread``), every query after an exploration (witnesses,
    verdicts) is solved apart: printed and solved in a fresh context (``apart.py``), its
    work charged to the phase by the driver in path order, and batches of them may be
    solved ahead elsewhere (``prefetch``): local worker processes or Ray. The report is the
    same wherever they were solved. Without it, every query is solved in the process's
    context (the library's default)."""

    def __init__(self, rlimit: int | None = None, budgets: str | None = None,
                 run: RunBudget | None = None, spread=None):
        self.rlimit, self.wall = budget(rlimit, budgets)
        self.stats = Stats()
        self.run = run or RunBudget()
        self.w: Width | None = None      # the machine of the setup (its random stream)
        self.spread = spread
        self.known: dict = {}            # query digest -> apart.Answer solved ahead
        self.keep = None                 # (digest, Answer) -> None: a --resume state

    def configure(self, setup) -> None:
        """The run's budget and safety nets from a Setup (the first one starts the clock)."""
        self.w = setup.w
        self.run.configure(setup.max_work, setup.deadline, setup.z3_memory)
        self.run.start_clock()

    @property
    def stopped(self) -> str | None:
        return self.run.stopped

    def _limits(self, name: str) -> tuple[int, int] | str:
        """(rlimit, timeout in ms) for the next query, or why it is not solved."""
        if self.run.stopped is not None:
            return self.run.stopped
        left = self.run.left()
        if left <= 0:
            return f"{self.run.bound} spent"
        seconds = min(self.wall, self.run.seconds_left())
        if seconds <= 0:
            self.run.stop(self.run.deadline_reason())
        elif self.run.memory() > self.run.z3_memory:
            self.run.stop(self.run.memory_reason())
        if self.run.stopped is not None:
            return self.run.stopped
        return min(self.rlimit, left), max(1, int(seconds * 1000))

    def _solver(self, rlimit: int, timeout: int, optimize: bool = False):
        s = z3.Optimize() if optimize else z3.Solver()
        s.set("rlimit", rlimit)
        s.set("timeout", timeout)
        if not optimize:               # z3's optimiser takes no memory cap: checked before
            s.set("max_memory", self.run.z3_memory)
        return s

    def _unsolved(self, name: str, why: str) -> tuple[str, None]:
        """A query not solved: the run is stopped or its phase's work budget is spent."""
        if self.run.stopped is not None:
            status = TIMEOUT if why.startswith("the wall clock") else MEMORY
            self.stats.timeout += 1
        else:
            status = f"{UNKNOWN} ({why})"        # the phase's work budget is spent
            self.stats.unknown += 1
            self.stats.work_spent += 1
        if name:
            self.stats.undecided.append(f"{name}: {why}")
        return status, None

    def _solve(self, s, name: str, rlimit: int, record: bool = True) -> str:
        """Check ``s``: sat, unsat, or the undecided status (counted and named when
        ``record``: not for an optimisation tried before the plain query)."""
        answer = str(s.check())
        if answer == UNKNOWN and "memory" in s.reason_unknown():
            self.run.stop(self.run.memory_reason())
            answer = MEMORY
        self.stats.queries += 1
        self.stats.rlimit_spent = self.run.spent()
        if answer in (SAT, UNSAT):
            return answer
        if not record and answer != MEMORY:
            return UNKNOWN
        if answer == MEMORY:
            why, status = self.run.memory_reason(), MEMORY
        elif "timeout" in s.reason_unknown() or self.run.seconds_left() <= 0:
            # the safety net: z3 says "timeout", or "canceled" as for a spent rlimit (then the
            # deadline tells them apart)
            status = TIMEOUT
            if self.run.seconds_left() <= 0:
                self.run.stop(self.run.deadline_reason())
            why = status
        elif rlimit < self.rlimit:
            why = f"{self.run.bound} spent"
            status = f"{UNKNOWN} ({why})"
            self.stats.work_spent += 1
        else:
            status, why = UNKNOWN, UNKNOWN
        return self._undecided(name, status, why)

    def check(self, conds, name: str = "", integers: bool = False,
              prefer=()) -> tuple[str, z3.ModelRef | None]:
        """``integers``: the conditions may hold integer arithmetic (a property's claims),
        solved as bit-vectors that cannot overflow (integers.py). ``prefer``: terms to make
        as small as possible, in order (a witness's call data length: short vectors); when
        that optimisation is undecided the plain query answers."""
        conds = (as_bitvectors(conds) or conds) if integers else list(conds)
        if self._apart():
            return self._check_apart(conds, name, prefer)
        if prefer and not quantified(conds):
            limits = self._limits(name)
            if isinstance(limits, str):
                return self._unsolved(name, limits)
            opt = self._solver(*limits, optimize=True)
            opt.add(*conds)
            for term in prefer:
                opt.minimize(term)
            answer = self._solve(opt, name, limits[0], record=False)
            if answer == SAT:
                return SAT, opt.model()
            if answer == UNSAT:
                return UNSAT, None
        limits = self._limits(name)
        if isinstance(limits, str):
            return self._unsolved(name, limits)
        s = self._solver(*limits)
        s.add(*conds)
        answer = self._solve(s, name, limits[0])
        if answer == SAT:
            return SAT, s.model()
        return answer, None

    # -- queries solved apart (apart.py, spread.py) ------------------------------------------
    def _apart(self) -> bool:
        return self.spread is not None and not self.run.phase.startswith("exploration")

    def _query(self, conds, prefer) -> apart.Query:
        return apart.prepare(conds, prefer if prefer and not quantified(conds) else ())

    def prefetch(self, batch) -> None:
        """Solve ahead, elsewhere, the queries of ``batch`` — ``(conds, integers, prefer)``
        as ``check`` takes them — that the walk after it will ask (the first query of every
        path's witness or claims). Each is printed here in both cases, so the main context
        sees the very same terms built whether or not they are solved ahead."""
        if not self._apart():
            return
        queries = []
        for conds, integers, prefer in batch:
            conds = (as_bitvectors(conds) or conds) if integers else list(conds)
            queries.append(self._query(conds, prefer))
        limits = self._limits("")
        if not self.spread.ahead:
            return
        if isinstance(limits, str):
            return
        todo = {q.digest: q for q in queries if q.digest not in self.known}
        lim = apart.Limits(self.rlimit, limits[1], self.run.z3_memory)
        items = [(q, lim) for q in todo.values()]
        for (q, _), answer in zip(items, self.spread.solve_all(items)):
            self.known[q.digest] = answer
            self._kept(q.digest, answer)

    def _kept(self, digest: str, answer) -> None:
        if self.keep is not None and apart.kept(answer):
            self.keep(digest, answer)

    def _check_apart(self, conds, name: str, prefer) -> tuple[str, object]:
        """``check`` of one query solved apart (or taken from the batch solved ahead), its
        work charged in path order: an answer that needed more than the phase had left is
        ``unknown (max-work N spent)``, decided or not (its per-query ``rlimit`` applies to
        each of its checks, the optimisation and the plain one); one undecided within what
        was left is ``unknown`` (the per-query budget)."""
        limits = self._limits(name)
        if isinstance(limits, str):
            return self._unsolved(name, limits)
        left = self.run.left()
        query = self._query(conds, prefer)
        lim = apart.Limits(self.rlimit, limits[1], self.run.z3_memory)
        answer = self.known.get(query.digest)
        if answer is None:
            answer = apart.solve(query, lim)
            self._kept(query.digest, answer)
        self.stats.queries += 1
        self.run.charge(min(answer.spent, left))
        status = answer.status
        if status in (SAT, UNSAT) and answer.spent <= left:
            model = None
            if status == SAT:
                status, used, model = apart.pinned(query, answer, lim)
                self.run.charge(used)
            self._spent_now()
            if status in (SAT, UNSAT):
                return status, model
            return self._undecided(name, status, "the witness's model: " + status), None
        self._spent_now()
        if status == apart.MEMORY:
            self.run.stop(self.run.memory_reason())
            return self._undecided(name, MEMORY, self.run.memory_reason()), None
        if status == TIMEOUT:
            if self.run.seconds_left() <= 0:
                self.run.stop(self.run.deadline_reason())
            return self._undecided(name, TIMEOUT, TIMEOUT), None
        if answer.spent > left:              # what the phase had left did not suffice
            self.stats.work_spent += 1
            why = f"{self.run.bound} spent"
            return self._undecided(name, f"{UNKNOWN} ({why})", why), None
        return self._undecided(name, UNKNOWN, UNKNOWN), None

    def _spent_now(self) -> None:
        self.stats.rlimit_spent = self.run.spent()

    def _undecided(self, name: str, status: str, why: str) -> str:
        if status.startswith(UNKNOWN):
            self.stats.unknown += 1
        else:
            self.stats.timeout += 1
        if name:
            self.stats.undecided.append(f"{name}: {why}")
        return status

    def consistent_model(self, conds, apps, name: str = "", integers: bool = False,
                         prefer=()) -> tuple[str, object]:
        """A model of ``conds`` in which every SHA-256 and random-stream application in
        ``apps`` (in path order) has its true value, as a ``Consistent`` model; UNSAT when
        none exists; UNKNOWN when the budget or MAX_ROUNDS ran out."""
        extra: list = []
        for _ in range(MAX_ROUNDS):
            status, model = self.check(list(conds) + extra, name, integers, prefer)
            if status != SAT or not apps:
                return status, model
            values: list = []
            instances: list = []
            pins: list = []
            for app in apps:
                true, fixed = true_value(Consistent(model, values), app, self.w)
                agrees = numeral(model, app) == true
                values.append((app, z3.BitVecVal(true, app.sort().size())))
                if not agrees:
                    instances.append(z3.Implies(z3.And(fixed), values[-1][0] == values[-1][1]))
                    pins += fixed
            if not instances:
                return SAT, Consistent(model, values)
            extra += instances
            # First keep the arguments this model chose: with the instances, each
            # application then has its true value in the next model; only if the path
            # needs other arguments, search on.
            status, pinned = self.check(list(conds) + extra + pins, name, integers, prefer)
            if status == SAT:
                return SAT, Consistent(pinned, values)
        if name:
            self.stats.undecided.append(f"{name}: no model consistent with SHA-256 after "
                                        f"{MAX_ROUNDS} rounds")
        return UNKNOWN, None

    def bounds(self, conds, term) -> tuple[int | None, int | None]:
        """The least and greatest value of a bit-vector ``term`` (unsigned) under ``conds``;
        None for a bound the budget did not settle."""
        if quantified(conds):           # z3's optimiser does not take lambdas (memory arrays)
            return None, None
        out: list = []
        for goal in ("minimize", "maximize"):
            limits = self._limits("")
            if isinstance(limits, str):
                out.append(None)
                continue
            opt = self._solver(*limits, optimize=True)
            opt.add(*conds)
            handle = getattr(opt, goal)(term)
            answer = self._solve(opt, "", limits[0], record=False)
            if answer != SAT:
                out.append(None)
                continue
            value = handle.value()
            out.append(value.as_long() if z3.is_bv_value(value) or z3.is_int_value(value) else None)
        return out[0], out[1]


_QUANTIFIERS = z3.Probe("has-quantifiers")


def quantified(conds) -> bool:
    """Whether the conditions hold a binder (a lambda: memory read as an array), which z3's
    optimiser refuses."""
    goal = z3.Goal()
    goal.add(*conds)
    return _QUANTIFIERS(goal) > 0


class Consistent:
    """A model with the true values of the SHA-256 and random-stream applications it was
    made consistent with: evaluation replaces each application by its value first (the
    latest first: it may hold earlier ones in its arguments), so a term whose function
    symbol z3 cannot apply in the model (a digest of memory read through a lambda) still
    evaluates — to what the model, which satisfies the axiom instances, makes it."""

    def __init__(self, model, values):
        self.model, self.values = model, list(values)

    def eval(self, term, model_completion: bool = True):
        for app, v in reversed(self.values):
            term = z3.substitute(term, (app, v))
        return self.model.eval(term, model_completion=model_completion)


def numeral(model, term) -> int | None:
    """The value of ``term`` in ``model`` (true / false as 1 / 0), None when z3 leaves it
    unevaluated."""
    v = model.eval(term, model_completion=True)
    found = constant(v.ctx, v.as_ast())      # a bit-vector numeral or true / false
    if found is not None:
        return found
    return v.as_long() if z3.is_int_value(v) else None


def value(model, term) -> int:
    v = numeral(model, term)
    if v is None:
        raise ValueError(f"no value in the model: {str(term)[:120]}")
    return v


def is_abstract(term) -> bool:
    """An application of the SHA-256 or random-stream function symbol."""
    return z3.is_app(term) and term.decl().kind() == z3.Z3_OP_UNINTERPRETED and \
        term.decl().name().startswith(("sha256_w", "random_word_w"))


def true_value(model, app, w: Width | None) -> tuple[int, list]:
    """(the value axiom 2 gives ``app`` at the arguments ``model`` gives it, the equalities
    fixing those arguments): SHA-256 of the bytes, or the random stream's word."""
    if app.decl().name().startswith("random_word_w"):
        seed, k = value(model, app.arg(0)), value(model, app.arg(1))
        if w is None:
            raise ValueError("a random-stream word needs the solver configured with a setup")
        true = random_value(w, z3.BitVecVal(seed, 8 * w.num.seed_size),
                            z3.BitVecVal(k, w.counter_bits))
        return z3.simplify(true).as_long(), [app.arg(0) == seed, app.arg(1) == k]
    array, size, src, length = (app.arg(i) for i in range(4))
    z, s, n = value(model, size), value(model, src), value(model, length)
    sort = src.sort()
    content, fixed = bytearray(), [size == z, src == s, length == n]
    for j in range(n):
        index = z3.BitVecVal(s + j, sort.size())
        byte = value(model, array[index]) if s + j < z else 0
        content.append(byte)
        if s + j < z:
            fixed.append(array[index] == byte)
    return int.from_bytes(hashlib.sha256(bytes(content)).digest(), "little"), fixed
