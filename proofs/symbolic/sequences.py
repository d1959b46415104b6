"""Invariants over sequences of calls: every sequence of up to K top-level calls explored.

From the initial state (the setup's contracts, their storage symbolic or concrete as for one
call), every call of every sequence is explored by the one-call explorer (executor.py) with
its own symbolic caller, call data, time and seed (variables named ``step<d>_...``), to each
contract given, on the storage the sequence so far left: the storage after call d is the
storage before it with the call's state changes when it succeeded, unchanged otherwise
(transient storage starts empty in every top-level call: the explorer's frames start so).
A call that does not succeed leaves the state as it found it, so a sequence continued after
it is a shorter sequence, explored anyway: only successful ends are carried on.

Sequences are explored breadth first (all of length 1, then 2, ...), so the first violation
found is a shortest one. After every successful end each invariant (invariants.py) is
checked: the path condition of the whole sequence, the invariant's pre-conditions and the
invariant itself on the initial state, and the negated claim. Satisfiable: a model, made
consistent with SHA-256, is turned into a concrete sequence and replayed on the reference
interpreter (seqwitness.py); only a replay on which the invariant fails is a violation.

Verdicts per invariant, never from the wall clock: ``holds`` (to depth K: every path of every
sequence explored, no bound hit, every query decided), ``violated`` (a replayed sequence),
``vacuous`` (no initial state satisfies the invariant and its pre-conditions), ``bounded``
(a bound named: a step's explorer bounds, ``max-states``), ``unknown`` (a query undecided,
named), ``stopped`` (a safety net), ``disagreement`` (the reference does not give a step's
end on the witness: the models and the interpreter differ).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import z3

from proofs.symbolic import bounds, seqwitness
from proofs.symbolic.bounds import DEFAULT_MAX_STATES, MAX_DEPTH
from proofs.symbolic.budget import TermTooLarge, simplify
from proofs.symbolic.executor import Explorer
from proofs.symbolic.invariants import STATES, Invariant
from proofs.symbolic.solve import SAT, UNSAT, Solver
from proofs.symbolic.world import W, Code, Setup, admit

ORDER = ("error", "disagreement", "violated", "vacuous", "stopped", "unknown", "bounded",
         "holds")


@dataclass(frozen=True)
class Step:
    target: int
    setup: Setup
    inputs: object                # world.Inputs of this call
    end: object                   # outcome.End of its path


@dataclass(frozen=True)
class Node:
    """A state reached by a sequence of successful calls."""

    steps: tuple                  # Step per call
    storage: dict                 # address -> storage array now
    before: dict                  # address -> storage array before the last call
    conds: tuple                  # the path condition of the whole sequence
    apps: tuple                   # SHA-256 / random applications of every step
    counted: dict                 # address -> key terms the totals count
    proved: dict                  # invariant name -> its claims shown at the states before


@dataclass
class Verdict:
    name: str
    verdict: str = "holds"
    note: str = ""
    detail: str = ""
    bounds: list = field(default_factory=list)
    undecided: list = field(default_factory=list)
    witness: seqwitness.Sequence | None = None
    premises: list = field(default_factory=list)

    def to_json(self) -> dict:
        from proofs.symbolic.verdicts import verdict_lift
        return {"invariant": self.name, "verdict": self.verdict, "note": self.note,
                "detail": self.detail, "bounds": self.bounds, "undecided": self.undecided,
                "lift": verdict_lift(self.verdict, self.bounds, self.detail),
                "counterexample": None if self.witness is None else self.witness.to_json()}


@dataclass
class Result:
    setup: Setup
    depth: int
    verdicts: list
    states: list = field(default_factory=list)        # successful ends checked, per depth
    paths: list = field(default_factory=list)         # path ends explored, per depth
    explorations: int = 0
    solver: Solver | None = None


class StepExplorer(Explorer):
    """The explorer of one call of a sequence: its storage is the sequence's so far, its
    path condition starts with the sequence's."""

    def __init__(self, setup: Setup, solver: Solver, node: Node):
        super().__init__(setup, solver)
        self.inputs = replace(self.inputs, storage=dict(node.storage),
                              constraints=tuple(node.conds) + tuple(self.inputs.constraints))
        self.result.inputs = self.inputs


def root(setup: Setup) -> Node:
    """The initial state: each contract's storage a free array with its pinned slots (or,
    with concrete storage, zero but the pinned slots)."""
    storage, conds, counted = {}, [], {}
    for address in sorted(setup.codes):
        pinned = setup.storage.get(address, {})
        if setup.concrete_storage:
            array = z3.K(z3.BitVecSort(W.bits), W.wval(0))
            for k in sorted(pinned):
                array = z3.Store(array, W.wval(k), W.wval(pinned[k]))
        else:
            array = z3.Array(f"initial_storage_{address:#x}", z3.BitVecSort(W.bits),
                             z3.BitVecSort(W.bits))
            conds += [array[W.wval(k)] == W.wval(v) for k, v in sorted(pinned.items())]
        storage[address] = array
        counted[address] = tuple(W.wval(k) for k in sorted(pinned))
    return Node((), storage, storage, tuple(conds), (), counted, {})


def _distinct(keys: list) -> list:
    """The keys, each term once."""
    out, seen = [], set()
    for k in keys:
        if k.get_id() not in seen:
            seen.add(k.get_id())
            out.append(k)
    return out


def total(array, keys) -> z3.ArithRef:
    """The sum of the slots at ``keys`` (each distinct key once), as an integer."""
    terms = []
    for i, k in enumerate(keys):
        fresh = z3.And([k != keys[j] for j in range(i)]) if i else z3.BoolVal(True)
        terms.append(z3.If(fresh, z3.BV2Int(array[k]), z3.IntVal(0)))
    return z3.Sum(terms) if terms else z3.IntVal(0)


def reals(node: Node, start: Node, at_start: bool = False) -> dict:
    """Slot key -> real term of the invariants' placeholders at ``node`` (``at_start``: the
    initial state, before any call). Each state's total is summed over the keys counted at
    ``node`` (the pinned ones and every key a call of its sequence wrote)."""
    arrays = {"now": start.storage if at_start else node.storage,
              "before": start.storage if at_start else node.before, "initial": start.storage}
    out: dict = {"successes": z3.IntVal(0 if at_start else len(node.steps))}
    for a, keys in node.counted.items():
        for state in STATES:
            out[f"{state}_{a:#x}"] = arrays[state][a]
            out[f"total_{state}_{a:#x}"] = total(arrays[state][a], keys)
    return out


def _quantified(claims: list, free: list) -> list:
    return [z3.ForAll(free, c) for c in claims] if free else claims


class Checker:
    def __init__(self, setup: Setup, invariants: list[Invariant], depth: int,
                 max_states: int = DEFAULT_MAX_STATES, solver: Solver | None = None):
        if not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be 1..{MAX_DEPTH}")
        if max_states < 1:
            raise ValueError("max_states must be at least 1")
        self.setup, self.invariants, self.depth, self.max_states = (
            setup, invariants, depth, max_states)
        self.solver = solver or Solver(setup.rlimit)
        self.solver.configure(setup)
        self.start = root(setup)
        self.codes = {a: admit(a, setup.codes[a], setup.policy, setup.version)
                      for a in sorted(setup.codes)}
        self.targets = [a for a, code in self.codes.items() if isinstance(code, Code)]
        self.result = Result(setup, depth, [Verdict(i.name, note=i.note) for i in invariants],
                             solver=self.solver)
        self.checked = 0

    def run(self) -> Result:
        self.solver.run.begin("the invariants on the initial state")
        for inv, v in zip(self.invariants, self.result.verdicts):
            self._premises(inv, v)
        level: list | None = [self.start]
        for d in range(1, self.depth + 1):
            if level is None or not self._open():
                break
            level = self._level(level, d)
        for v in self.result.verdicts:
            self._finish(v)
        return self.result

    def _open(self) -> bool:
        return any(v.verdict == "holds" for v in self.result.verdicts)

    def _premises(self, inv: Invariant, v: Verdict) -> None:
        """The invariant's pre-conditions and the invariant itself on the initial state."""
        r = reals(self.start, self.start, at_start=True)
        assume, _ = inv.build(r, "assume")
        claims, free = inv.build(r)
        v.premises = list(assume) + _quantified(claims, free)
        status, _ = self.solver.check(list(self.start.conds) + v.premises,
                                      f"{inv.name}: on the initial state", integers=True)
        if status == UNSAT:
            v.verdict = "vacuous"
            v.detail = ("no initial state satisfies the invariant and its pre-conditions (with "
                        "the pinned slots)")
        elif status != SAT:
            v.undecided.append(f"{inv.name}: on the initial state: {status}")

    def _level(self, level: list, d: int) -> list | None:
        """Every successful end of every call from every state of ``level``: the states of
        depth ``d``, each checked. The states one exploration reaches are made first, their
        checks' first queries solved ahead as one batch (``Solver.prefetch``), then checked
        in order."""
        nxt: list = []
        paths = 0
        for node in level:
            for target in self.targets:
                x = self._explore(node, target, d)
                paths += len(x.ends)
                children, over = [], False
                for end in x.ends:
                    if end.status != "success":
                        continue
                    self.checked += 1
                    if self.checked > self.max_states:
                        over = True
                        break
                    children.append((self.checked, self._child(node, x, end, target)))
                self.solver.prefetch([q for _, child in children for q in self._queries(child)])
                for number, child in children:
                    self._check(child, d, number)
                    nxt.append(child)
                    if not self._open():
                        break
                if over:
                    self._bound(f"max-states {self.max_states}")
                    self.result.paths.append(paths)
                    return None
                if not self._open() or self.solver.stopped:
                    self.result.paths.append(paths)
                    return None
        self.result.paths.append(paths)
        self.result.states.append(len(nxt))
        return nxt

    def _queries(self, node: Node) -> list:
        """The first query of every claim ``_check`` will solve on ``node``, as it asks them
        (for the invariants that hold so far)."""
        r = reals(node, self.start)
        lengths = _lengths(node)
        out = []
        for inv, v in zip(self.invariants, self.result.verdicts):
            if v.verdict != "holds":
                continue
            claims, _ = inv.build(r)
            lemmas = node.proved.get(inv.name, ())
            out += [(tuple(node.conds) + tuple(v.premises) + lemmas + (z3.Not(claim),), True,
                     lengths) for claim in claims if not _trivial(claim)]
        return out

    def _explore(self, node: Node, target: int, d: int):
        setup = replace(self.setup, entry=target, prefix=f"step{d}_", storage={},
                        concrete_storage=True)
        self.result.explorations += 1
        x = StepExplorer(setup, self.solver, node).run()
        # a branch kept because its feasibility was undecided is explored (over-approximated):
        # no verdict depends on it
        for cut in list(x.cuts) + list(x.unexplored):
            self._bound(cut.bound, stopped=cut.bound.startswith("stopped:"))
        return x

    def _child(self, node: Node, x, end, target: int) -> Node:
        counted = {a: keys + tuple(_distinct([k for b, k in end.written
                                              if b == a and k.get_id() not in
                                              {c.get_id() for c in keys}]))
                   for a, keys in node.counted.items()}
        step = Step(target, x.setup, x.inputs, end)
        return Node(node.steps + (step,), dict(end.post), dict(node.storage), tuple(end.conds),
                    node.apps + tuple(end.apps), counted, dict(node.proved))

    def _check(self, node: Node, d: int, number: int) -> None:
        r = reals(node, self.start)
        lengths = _lengths(node)
        for inv, v in zip(self.invariants, self.result.verdicts):
            if v.verdict != "holds":
                continue
            self.solver.run.begin(f"{inv.name} after call {d}")
            claims, free = inv.build(r)
            # the invariant holds at every state before this one (each was shown for every
            # input of its sequence): true premises, which help the solver bound the values
            lemmas = node.proved.get(inv.name, ())
            shown = True
            for text, claim in zip(inv.claims, claims):
                if _trivial(claim):
                    continue
                name = f"{inv.name} after call {d} (state {number})"
                status, model = self.solver.consistent_model(
                    tuple(node.conds) + tuple(v.premises) + lemmas + (z3.Not(claim),),
                    node.apps, name,
                    integers=True, prefer=lengths)
                if status == UNSAT:
                    continue
                shown = False
                if status != SAT:
                    v.undecided.append(f"{name}: {status}")
                    continue
                w = seqwitness.replay(self, node, model, inv, claim, text)
                if w.status == "violated":
                    v.verdict, v.witness = "violated", w
                    v.detail = f"a sequence of {len(node.steps)} call(s) breaks it (replayed)"
                    return
                if w.status == "disagreement":
                    v.verdict, v.witness, v.detail = "disagreement", w, w.detail
                    return
                v.undecided.append(f"{name}: a model whose replay does not confirm it "
                                   f"({w.detail})")
            if shown:
                node.proved[inv.name] = lemmas + tuple(_quantified(claims, free))

    def _bound(self, bound: str, stopped: bool = False) -> None:
        for v in self.result.verdicts:
            if not stopped and bound not in v.bounds:
                v.bounds.append(bound)

    def _finish(self, v: Verdict) -> None:
        stopped = self.solver.stopped
        if v.verdict != "holds":
            return
        if stopped:
            v.verdict, v.detail = "stopped", stopped
        elif v.undecided:
            v.verdict = "unknown"
            v.detail = ("a solver budget ran out: " + "; ".join(v.undecided[:3])
                        + f"; to lift: {bounds.RLIMIT_LIFT}")
        elif v.bounds:
            v.verdict = "bounded"
            v.detail = (f"holds on every state checked (sequences of up to {self.depth} call(s)); not "
                        "shown beyond: " + "; ".join(v.bounds) + "; to lift: "
                        + "; ".join(bounds.lifts(v.bounds)))
        else:
            v.detail = (f"after every call of every sequence of up to {self.depth} call(s): "
                        f"{sum(self.result.states)} states, {sum(self.result.paths)} paths")


def _trivial(claim) -> bool:
    try:
        return z3.is_true(simplify(claim))
    except TermTooLarge:
        return False


def _lengths(node: Node) -> tuple:
    """The call data lengths of the node's calls that a witness keeps small."""
    return tuple(s.inputs.call_data_length for s in node.steps
                 if not z3.is_bv_value(s.inputs.call_data_length))


def check(setup: Setup, invariants: list[Invariant], depth: int,
          max_states: int = DEFAULT_MAX_STATES, solver: Solver | None = None) -> Result:
    """Every invariant after every call of every sequence of up to ``depth`` calls
    (executor.ModelError when the models cannot continue a path)."""
    return Checker(setup, invariants, depth, max_states, solver).run()


def worst(verdicts: list[Verdict]) -> str:
    return min((v.verdict for v in verdicts), key=ORDER.index) if verdicts else "holds"


def exit_code(verdicts: list[Verdict]) -> int:
    """0 every invariant holds to the depth; 1 violated or vacuous; 4 bounded, unknown or
    stopped; 3 could not run (the models and the reference disagree)."""
    kinds = {v.verdict for v in verdicts}
    if kinds & {"error", "disagreement"}:
        return 3
    if kinds & {"violated", "vacuous"}:
        return 1
    if kinds & {"stopped", "unknown", "bounded"}:
        return 4
    return 0
