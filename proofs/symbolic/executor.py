"""The path explorer: one call, every feasible path, through the opcode models.

A path is a State of the models (``proofs.machine``) whose pc and stack height are constants
and whose values are terms over the symbolic inputs, with its path condition. Each step is
``proofs.execute.step`` on the instruction at the pc: the model's branches are its possible
outcomes. A branch whose condition simplifies to false is dropped; when exactly one is left
it is taken without a query (the branches of every model partition the well-formed states:
the ``deterministic`` theorem); otherwise each is kept when the solver finds the path
condition with it satisfiable — or cannot decide (``unknown``: kept, so no path is lost, and
flagged). Exploration is depth first in the models' branch order: deterministic.

Bounds, each named when hit (``bounds.py``): the loop bound K (a pc at which a path forked
more than K times in one frame stops being followed: ``--loop-bound``), the path ends of
every frame, callees' included (``--max-paths``: one past it stops the exploration), the
instructions executed in all (``--max-steps``), the z3 work units of the exploration
(``--max-work``: simplification and queries), and the rewriting steps of one simplification
(a path whose terms need more is cut). What the run does not explore is named too: call
data longer than ``--max-calldata`` where a path reads past it (``reads.py``), and calls to
addresses without code given (assumed to have none). The safety nets (wall clock, z3's
memory) stop the exploration and mark the run ``stopped``. CALL is ``calls.py``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace

import z3

from proofs import execute
from proofs.machine import RUNNING, SUCCESS, Branch, Memory, State, base_memory
from proofs.instructions.hash import digest_of
from proofs.symbolic import budget, outcome, reads
from proofs.symbolic.budget import Stopped, TermTooLarge, active, simplify
from proofs.symbolic.calls import Calls
from proofs.symbolic.solve import SAT, UNSAT, Solver, is_abstract
from proofs.symbolic.world import (
    W, Code, Refusal, Setup, admit, entry_state, make_inputs, zero_window,
)

ZERO = z3.BitVecVal(0, W.counter_bits)
STATE_FIELDS = dataclasses.fields(State)
FLATTEN_AFTER = 48               # memory writes before memory is made one array again
WRITES_MEMORY = frozenset({"MSTORE", "MSTORE8", "MCOPY", "CALLDATACOPY", "DATACOPY",
                           "RETURNDATACOPY", "SHA256"})
CALLS = frozenset({"CALL", "STATICCALL"})
METERS = ("compute", "pages_live", "pages_peak", "storage_units", "reads", "writes",
          "new_slots", "random_counter", "transient_alive")   # transient_alive: from 1.1


class ModelError(Exception):
    """The models produced a state the explorer cannot continue (a symbolic pc)."""


class StopExploration(Exception):
    """A bound of the whole exploration was reached (its name is the message)."""


@dataclass(frozen=True)
class Path:
    state: State
    conds: tuple                  # path condition conjuncts (the setup's constraints first)
    world: dict                   # address -> storage (the running frame's is in state)
    records: tuple = ()           # outcome.Record, in the order calls started
    keys: tuple = ()              # (address, key term) of every SLOAD and SSTORE
    written: tuple = ()           # (address, key term) of every SSTORE
    apps: tuple = ()              # SHA-256 / random-stream applications
    visits: tuple = ()            # (pc, forks) of this frame
    steps: int = 0
    flags: tuple = ()
    pcs: tuple = ()               # offsets of this frame's instructions, in order
    choices: tuple = ()           # (address, pc, branch label) of every fork, in path order
    memory_writes: int = 0        # writes since this frame's memory was last an array
    # From 1.1: address -> transient slots of the contracts not running (the running
    # frame's are in state); empty at the start of the execution (every slot zero).
    transient: dict = field(default_factory=dict)

    def with_conds(self, new) -> "Path":
        return replace(self, conds=self.conds + tuple(new))


@dataclass(frozen=True)
class FrameEnd:
    status: str                   # success, reverted or an outcome code
    state: State
    path: Path


@dataclass(frozen=True)
class Cut:
    bound: str
    conds: tuple


@dataclass
class Exploration:
    setup: Setup
    inputs: object
    ends: list = field(default_factory=list)
    cuts: list = field(default_factory=list)
    solver: Solver | None = None
    codes: dict = field(default_factory=dict)
    refuted: int = 0              # paths dropped: infeasible once SHA-256 takes its values
    unexplored: list = field(default_factory=list)   # Cut: inputs and callees not explored
    steps: int = 0                # instructions executed, every path and frame
    frame_ends: int = 0           # path ends of every frame, callees' included
    invariant: dict = field(default_factory=dict)    # term id -> same past the bound (verdicts)
    invariant_terms: list = field(default_factory=list)

    @property
    def bounds_hit(self) -> list[str]:
        return sorted({c.bound for c in self.cuts})

    @property
    def not_explored(self) -> list[str]:
        """What the run did not explore (call data past the bound, callees not given)."""
        return sorted({c.bound for c in self.unexplored})

    @property
    def stopped(self) -> str | None:
        """The safety net that stopped the run, if one did."""
        return self.solver.stopped if self.solver is not None else None


def const(term) -> int | None:
    t = simplify(term)
    return t.as_long() if z3.is_bv_value(t) else None


def conjuncts(cond) -> list:
    c = simplify(cond)
    if z3.is_true(c):
        return []
    if z3.is_and(c):
        return [a for a in c.children() if not z3.is_true(a)]
    return [c]


def new_conjuncts(path: Path, cond) -> list | None:
    """The conjuncts of ``cond`` not already in the path condition; None when false."""
    have = {c.get_id() for c in path.conds}
    out = []
    for c in conjuncts(cond):
        if z3.is_false(c):
            return None
        if c.get_id() not in have:
            out.append(c)
            have.add(c.get_id())
    return out


class Explorer:
    def __init__(self, setup: Setup, solver: Solver | None = None):
        self.setup = setup
        self.solver = solver or Solver(setup.rlimit)
        self.solver.configure(setup)
        self.inputs = make_inputs(setup)
        self.w = setup.w
        self.codes = {a: admit(a, blob, setup.policy, setup.version)
                      for a, blob in sorted(setup.codes.items())}
        self.result = Exploration(setup, self.inputs, solver=self.solver, codes=self.codes)
        self.calls = Calls(self)

    # -- the entry frame -------------------------------------------------------------------
    def run(self) -> Exploration:
        code = self.codes[self.setup.entry]
        if isinstance(code, Refusal):
            self._refused(code)
            return self.result
        run = self.solver.run
        run.begin(f"exploration of {self.setup.entry:#x}")
        try:
            with active(run):
                state = entry_state(self.setup, self.inputs, code)
                path = Path(state, tuple(self.inputs.constraints), dict(self.inputs.storage))
                for end in self.frame(code, path):
                    self._finish(end)
        except StopExploration as stop:
            self.result.cuts.append(Cut(str(stop), ()))
        except Stopped as stop:
            self.result.cuts.append(Cut(f"stopped: {stop}", ()))
        run.begin("witnesses and verdicts")
        return self.result

    def _refused(self, refusal: Refusal) -> None:
        empty = outcome.Bytes(ZERO, lambda j: z3.BitVecVal(0, 8))
        self.result.ends.append(outcome.End(
            0, refusal.status, refusal.error, None, empty, (), dict(self.inputs.storage),
            dict(self.inputs.storage), (), {n: ZERO for n in outcome.USAGE}, (),
            tuple(self.inputs.constraints), (), (), prices=self.w.num.fee))

    def _finish(self, end: FrameEnd) -> None:
        s, p = end.state, end.path
        if p.apps:
            # Kept so far because the hash (or random word) it depends on was free: a path no
            # input follows once they take their true values is dropped, and counted.
            status, _ = self.solver.consistent_model(p.conds, p.apps, "a path through SHA-256")
            if status == UNSAT:
                self.result.refuted += 1
                return
        ok = end.status == SUCCESS
        status, error = (end.status, None) if end.status in (SUCCESS, "reverted") else (
            self.w.spec.errors[end.status].kind, end.status)
        post = dict(p.world)
        post[self.setup.entry] = s.storage
        empty = outcome.Bytes(ZERO, lambda j: z3.BitVecVal(0, 8))
        self.result.ends.append(outcome.End(
            len(self.result.ends), status, error, None if error is None else const(s.pc),
            s.output if s.output is not None and status in (SUCCESS, "reverted") else empty,
            s.events if ok else (), dict(self.inputs.storage),
            post if ok else dict(self.inputs.storage), p.written,
            {"compute": s.compute, "memory_pages": s.pages_peak, "storage_reads": s.reads,
             "storage_writes": s.writes, "storage_new_slots": s.new_slots,
             "storage_units": s.storage_units},
            p.records, p.conds, p.keys, p.apps, p.flags, p.pcs, p.choices,
            prices=self.w.num.fee))

    # -- one frame ---------------------------------------------------------------------------
    def frame(self, code: Code, path: Path):
        """Every end of the frame of ``code`` starting at ``path`` (a generator: depth first)."""
        work = [path]
        while work:
            p = work.pop()
            pc = const(p.state.pc)
            if pc is None or pc not in code.at:
                raise ModelError(f"pc {p.state.pc} is no instruction of {code.address:#x}")
            self._count_step()
            if self.setup.observe is not None:
                self.setup.observe(code, pc, p.state)
            try:
                ends, successors = self._step(code, p, pc)
            except TermTooLarge:
                self.result.cuts.append(Cut(f"simplify steps {budget.SIMPLIFY_STEPS} at pc {pc} "
                                            f"of {code.address:#x}", p.conds))
                continue
            for end in ends:
                self._count_end()
                yield end
            work.extend(reversed(successors))

    def _count_step(self) -> None:
        """One more instruction: the exploration's bounds and the safety nets."""
        x = self.result
        x.steps += 1
        if x.steps > self.setup.max_steps:
            raise StopExploration(f"max-steps {self.setup.max_steps}")
        if not self.solver.run.check():
            raise StopExploration(self.solver.run.bound)

    def _count_end(self) -> None:
        self.result.frame_ends += 1
        if self.result.frame_ends > self.setup.max_paths:
            raise StopExploration(f"max-paths {self.setup.max_paths}")

    def _step(self, code: Code, p: Path, pc: int) -> tuple[list, list]:
        """The instruction at ``pc`` on path ``p``: the frame ends it reaches and the paths
        that go on."""
        mnemonic, imm = code.at[pc]
        ins = self.w.spec.by_mnemonic[mnemonic]
        outputs = ins.outputs
        p = replace(p, steps=p.steps + 1, pcs=p.pcs + (pc,))
        if mnemonic in CALLS:
            candidates = self.calls.step(code, p, static=mnemonic == "STATICCALL")
            kept = self.feasible(candidates, one_step=False)
            self._absent_callees(p, kept)
        else:
            if mnemonic in reads.READS:
                self._reads(code, p, pc, mnemonic)
            p = self._note(code, p, mnemonic)
            s = self._prepared(p.state, mnemonic)
            imm_term = z3.BitVecVal(imm, 8 * ins.immediate_size) if ins.immediate_size else None
            branches = execute.step(s, mnemonic, imm_term)
            kept = self.feasible([(b, p) for b in branches], one_step=True)
            kept = [(b, self._abstract(q, s, mnemonic, b)) for b, q in kept]
            if mnemonic in WRITES_MEMORY:
                kept = [self._written(b, q, mnemonic) for b, q in kept]
        forked = len(kept) > 1
        if forked:
            visits = dict(p.visits)
            visits[pc] = visits.get(pc, 0) + 1
            over = visits[pc] > self.setup.loop_bound
        ends, successors = [], []
        for b, q in kept:
            if forked:
                q = replace(q, visits=tuple(sorted(visits.items())),
                            choices=q.choices + ((code.address, pc, b.label),))
            if b.status != RUNNING:
                ends.append(FrameEnd(b.status, b.state, q))
            elif forked and over:
                self.result.cuts.append(Cut(
                    f"loop bound {self.setup.loop_bound} at pc {pc} of {code.address:#x}",
                    q.conds))
            else:
                successors.append(replace(q, state=normalise(b.state, p.state, outputs)))
        return ends, successors

    @staticmethod
    def _written(b, q: Path, mnemonic: str):
        """After a memory write: memory made one array again every FLATTEN_AFTER writes,
        and after every MCOPY (its bytes are read from memory itself: left as closures,
        each copy would read the memory before it twice, and n copies 2^n times)."""
        writes = q.memory_writes + (FLATTEN_AFTER if mnemonic == "MCOPY" else 1)
        if writes >= FLATTEN_AFTER:
            return _flattened(b), replace(q, memory_writes=0)
        return b, replace(q, memory_writes=writes)

    def _reads(self, code: Code, p: Path, pc: int, mnemonic: str) -> None:
        """A read of the input call data: can an input of exactly max_calldata bytes reach
        it and read past them (reads.py)? Then longer call data is not covered."""
        s, x = p.state, self.result
        if not self.setup.calldata_bounded or s.env.call_data is not self.inputs.call_data \
                or any(c.bound.startswith("max-calldata") for c in x.unexplored):
            return
        bound = self.setup.max_calldata
        cond = reads.past(s, mnemonic, bound)
        if cond is None or z3.is_false(simplify(cond)):
            return
        at_bound = self.inputs.call_data_length == W.cval(bound)
        status, _ = self.solver.check(p.conds + (at_bound, cond),
                                      f"call data past {bound} bytes at pc {pc}")
        if status != UNSAT:
            x.unexplored.append(Cut(reads.describe(mnemonic, pc, code.address, bound), ()))

    def _absent_callees(self, p: Path, kept: list) -> None:
        """A CALL that reaches an address without code given: the run assumes it has none
        (as ``rtwo-vm run`` does), and says so."""
        for _, q in kept:
            if len(q.records) <= len(p.records):
                continue
            record = q.records[len(p.records)]
            if record is None or record.error != "CONTRACT_NOT_FOUND":
                continue
            callee = const(record.callee)
            given = ", ".join(f"{a:#x}" for a in sorted(self.setup.codes))
            where = (f"{callee:#x}" if callee is not None else
                     f"at a symbolic address other than {given}")
            self.result.unexplored.append(Cut(
                f"callee {where} not given (assumed to have no code)", q.conds))

    def feasible(self, candidates, one_step: bool) -> list:
        """The candidates (branch, path) whose conditions can hold, each path extended with
        its branch's new conjuncts. ``one_step``: the branches of one model step from one
        path, which partition its states (a lone survivor needs no query)."""
        live = []
        if one_step:
            candidates = merged(candidates)
        for b, p in candidates:
            new = new_conjuncts(p, b.cond)
            if new is not None:
                live.append((b, p, new))
        if one_step and len(live) == 1:
            b, p, _ = live[0]
            return [(b, p)]
        out: list = []
        for n, (b, p, new) in enumerate(live):
            last_standing = one_step and n == len(live) - 1 and not out
            if not new or last_standing:
                out.append((b, p.with_conds(new) if not last_standing else p))
                continue
            status, _ = self.solver.check(p.conds + tuple(new),
                                          f"feasibility at pc {const(p.state.pc)}")
            if status == UNSAT:
                continue
            q = p.with_conds(new)
            if status != SAT:
                q = replace(q, flags=q.flags + (f"branch {b.label!r} at pc {const(p.state.pc)} "
                                                f"kept: feasibility {status}",))
            out.append((b, q))
        return out

    # -- what the models need around a step ---------------------------------------------------
    def _note(self, code: Code, p: Path, mnemonic: str) -> Path:
        """Record the storage keys the witness must give values to."""
        s = p.state
        height = const(s.height) or 0
        if mnemonic == "SLOAD" and height >= 1:
            return replace(p, keys=p.keys + ((code.address, simplify(s.stack[0])),))
        if mnemonic == "SSTORE" and height >= 2:
            key = (code.address, simplify(s.stack[1]))
            return replace(p, keys=p.keys + (key,), written=p.written + (key,))
        return p

    def _prepared(self, s, mnemonic: str):
        """SHA256 needs memory as an array (its function symbol takes one): memory written
        since the frame began is turned into the array of the same bytes."""
        if mnemonic == "SHA256" and s.memory.hash_key is None:
            i = z3.BitVec("sha_index", W.counter_bits)
            array = z3.Lambda([i], s.memory.read(i))
            return s.replace(memory=base_memory(s.w, s.memory.pages, array))
        return s

    def _abstract(self, p: Path, s, mnemonic: str, b) -> Path:
        """The SHA-256 / random application the step introduced, for witness repair."""
        if b.status != RUNNING:
            return p
        if mnemonic == "RANDOM":
            app = simplify(b.state.stack[0])
        elif mnemonic == "SHA256" and (const(s.height) or 0) >= 3:
            ln, sr = W.widen(s.stack[0]), W.widen(s.stack[1])
            try:
                app = digest_of(s.w, s.memory, sr, ln)
            except NotImplementedError:
                return p
        else:
            return p
        # Both forms: the term as built (in memory, output) and as simplified (in the path
        # condition, whose conjuncts are simplified).
        found = [a for a in (app, simplify(app)) if is_abstract(a)]
        new = tuple(a for n, a in enumerate(found) if all(
            b.get_id() != a.get_id() for b in p.apps + tuple(found[:n])))
        return replace(p, apps=p.apps + new) if new else p


def _flattened(b):
    """The branch with its memory as one array (a lambda over the read function): each write
    wraps the read function in another closure, and reading through hundreds of them would
    exhaust Python's stack. The same bytes at every index."""
    if b.status != RUNNING:
        return b
    memory = b.state.memory
    i = z3.BitVec("memory_index", W.counter_bits)
    array = z3.Lambda([i], memory.read(i))
    return Branch(b.label, b.status, b.cond,
                  b.state.replace(memory=base_memory(b.state.w, memory.pages, array)))


def merged(candidates) -> list:
    """Branches of one step that end in the very same state (a model's coverage points, as
    ADD's 'exact' and 'wraps') as one branch: the path does not fork on them."""
    groups: dict = {}
    for b, p in candidates:
        # execute.step gives each branch a state of its own (its next pc set), holding the
        # very same component objects when the model's cases share one state
        key = (b.status, id(p)) + tuple(id(getattr(b.state, f.name)) for f in STATE_FIELDS)
        groups.setdefault(key, []).append((b, p))
    out = []
    for same in groups.values():
        b, p = same[0]
        if len(same) > 1:
            b = Branch(" | ".join(x.label for x, _ in same), b.status,
                       z3.Or([x.cond for x, _ in same]), b.state)
        out.append((b, p))
    return out


def normalise(s, before, fresh: int):
    """Constant pc and heights, the stack and return stack cut to their heights (with the
    window below), and what the step made simplified: the top ``fresh`` stack items (the
    ones it pushed; the rest are the previous state's, simplified already), the return
    stack, and each meter it changed (an unchanged one is the very same term)."""
    pc = simplify(s.pc)
    height, rheight = const(s.height), const(s.rheight)
    if not z3.is_bv_value(pc) or height is None or rheight is None:
        raise ModelError("a symbolic pc or stack height")
    fresh = min(fresh, height)
    stack = tuple(simplify(v) for v in s.stack[:fresh]) + tuple(s.stack[fresh:height])
    if len(stack) < height:
        raise ModelError("the stack lost items below the window")
    rstack = _rstack(s.rstack, before.rstack, rheight)
    meters = {n: simplify(getattr(s, n)) for n in METERS
              if getattr(s, n) is not getattr(before, n)}
    pages = s.memory.pages
    memory = s.memory if pages is before.memory.pages else Memory(
        simplify(pages), s.memory.read, s.memory.hash_key)
    return s.replace(pc=pc, height=z3.BitVecVal(height, W.counter_bits),
                     stack=stack + zero_window(), rheight=z3.BitVecVal(rheight, W.counter_bits),
                     rstack=rstack, memory=memory, **meters)


def _rstack(items: tuple, before: tuple, rheight: int) -> tuple:
    """The return stack cut to its height, with the window of two zeros below, its new items
    simplified: ``before`` (the previous state's, normalised) is simplified already, and a
    step pushes onto it or pops from it, so only the items above its old top are new (a
    deep return stack is not simplified again at every step)."""
    if items is before:
        return items
    grown = len(items) - len(before)
    if before and 0 <= grown < len(items) and items[grown] is before[0]:
        new, rest = tuple(simplify(v) for v in items[:grown]), items[grown:]
    elif before and grown < 0 and items and items[0] is before[-grown]:
        new, rest = (), items
    else:
        new, rest = tuple(simplify(v) for v in items), ()
    return (new + rest)[:rheight] + (ZERO, ZERO)


def explore(setup: Setup, solver: Solver | None = None) -> Exploration:
    """Every feasible path of one call of ``setup.entry`` (within the bounds)."""
    return Explorer(setup, solver).run()
