"""Verdicts of properties over an exploration, deterministic as ``prove``'s.

Per property: ``vacuous`` when its pre-conditions contradict each other (with the setup's
constraints); ``counterexample`` when some path's condition with the pre-conditions and a
negated claim has a model — made consistent with SHA-256, replayed on the reference, which
must give the path's end, and the claim evaluated false in it; ``stopped`` when a safety net
(the wall clock, z3's memory) stopped the run: no verdict; ``unknown`` when a query's budget
ran out (the query is named); ``bounded`` when every explored path satisfies the claims but
something the pre-conditions allow was not explored (named): a path a bound cut, call data
longer than ``max_calldata`` where a path or the property reads past it (``reads.py``), a
call to an address without code given (assumed to have none); ``proved`` when every path
was explored and satisfies every claim, and nothing was left out. A counterexample whose
replay does not give the path's end is a ``disagreement`` between the models and the
interpreter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from proofs.symbolic import bounds, reads
from proofs.symbolic import witness as witnesses
from proofs.symbolic.budget import TermTooLarge, simplify
from proofs.symbolic.executor import Cut
from proofs.symbolic.properties import Call, Property, PropertyError, as_claims, render
from proofs.symbolic.solve import SAT, UNSAT, Solver, value
from proofs.symbolic.world import W

ORDER = ("error", "disagreement", "counterexample", "vacuous", "stopped", "unknown", "bounded",
         "proved")


@dataclass
class Verdict:
    name: str
    verdict: str
    note: str = ""
    detail: str = ""
    bounds: list = field(default_factory=list)
    undecided: list = field(default_factory=list)
    path: int | None = None               # the counterexample's path
    replay: witnesses.Replay | None = None   # the counterexample's replay
    claim: str = ""
    evaluated: list = field(default_factory=list)   # (text, value) of the claim's parts

    @property
    def lift(self) -> list[str]:
        """What would lift this verdict's bounds (bounds.lift), or its budget or safety net."""
        return verdict_lift(self.verdict, self.bounds, self.detail)

    def to_json(self) -> dict:
        out: dict[str, Any] = {"property": self.name, "verdict": self.verdict, "note": self.note,
               "detail": self.detail, "bounds": self.bounds, "undecided": self.undecided,
               "lift": self.lift}
        if self.replay is not None:
            out["counterexample"] = {
                "path": self.path, "claim": self.claim,
                "evaluated": [{"term": t, "value": v} for t, v in self.evaluated],
                "input": self.replay.witness.to_json() if self.replay.witness else None,
                "result": self.replay.actual, "replay": self.replay.status,
                "differences": self.replay.differences}
        return out


def _user(call, what: str, name: str):
    try:
        return call()
    except PropertyError:
        raise
    except Exception as err:  # noqa: BLE001 - the user's code: one line, named
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        raise PropertyError(f"property {name}: {what} raised {text.splitlines()[0][:200]}") from None


def check(exploration, prop: Property, solver: Solver | None = None) -> Verdict:
    solver = solver or exploration.solver
    v = Verdict(prop.name, "proved", prop.note)
    try:
        start = Call(exploration)
        premises = as_claims(_user(lambda: prop.assume(start), "its pre-condition", prop.name),
                             "a pre-condition") if prop.assume else []
    except PropertyError as err:
        return Verdict(prop.name, "error", prop.note, str(err))
    base = list(exploration.inputs.constraints)
    status, _ = solver.check(base + premises, f"{prop.name}: pre-conditions", integers=True)
    if status == UNSAT:
        v.verdict, v.detail = "vacuous", "the pre-conditions contradict each other"
        return v
    if status != SAT:
        v.undecided.append(f"{prop.name}: pre-conditions: {status}")
    past = reads_past(exploration, solver, premises, f"{prop.name}: pre-conditions")
    every = _claims(exploration, prop)
    prefer = witnesses.preferred(exploration)
    solver.prefetch([(tuple(end.conds) + tuple(premises) + (z3.Not(claim),), True, prefer)
                     for end, call, claims in every if call is not None for claim in claims])
    for end, call, claims in every:
        if call is None:
            return Verdict(prop.name, "error", prop.note, claims)
        for claim in claims:
            name = f"{prop.name} on path {end.index}"
            past = past or reads_past(exploration, solver, [claim], name)
            status, model = solver.consistent_model(
                tuple(end.conds) + tuple(premises) + (z3.Not(claim),), end.apps, name,
                integers=True, prefer=prefer)
            if status == UNSAT:
                continue
            if status != SAT:
                v.undecided.append(f"{name}: {status}")
                continue
            replay = witnesses.replay_model(exploration, end, model, start.keys + call.keys)
            names = {**start.names, **call.names}
            v.path, v.replay, v.claim = end.index, replay, render(claim, names)
            v.evaluated = evaluate(model, claim, names)
            if replay.status != "agrees":
                v.verdict = "disagreement"
                v.detail = "the reference does not give the path's end on the witness"
            else:
                v.verdict = "counterexample"
                v.detail = f"path {end.index} ({end.outcome}) violates the claim"
            return _finish(exploration, solver, v, premises, past)
    return _finish(exploration, solver, v, premises, past)


def _claims(exploration, prop: Property) -> list:
    """(end, Call, the claims not trivially true) of every path, in path order, built before
    any is solved (so a batch of them can be solved ahead); up to the first path whose
    claims raise: (end, None, the error), which the walk reports when it reaches it."""
    out: list = []
    for end in exploration.ends:
        try:
            call = Call(exploration, end)
            claims = as_claims(_user(lambda c=call: prop.claims(c), "its claims", prop.name),
                               f"property {prop.name}")
        except PropertyError as err:
            out.append((end, None, str(err)))
            return out
        out.append((end, call, [c for c in claims if not _trivial(c)]))
    return out


def _trivial(claim) -> bool:
    try:
        return z3.is_true(simplify(claim))
    except TermTooLarge:
        return False


def reads_past(exploration, solver: Solver, terms, name: str) -> bool:
    """Whether one of ``terms`` (a property's claims or pre-conditions) reads the call data
    past ``max_calldata`` bytes: its value on some call data longer than the bound differs
    from its value on that call data cut to the bound (reads.py). Asked of each lowest
    Boolean subterm above the length (the guards of the bytes read, a comparison of the
    size; ``reads.atoms``), each once per exploration; of the whole term when the length is
    read under a binder. Undecided counts as yes."""
    setup, inputs = exploration.setup, exploration.inputs
    if not setup.calldata_bounded:
        return False
    length = inputs.call_data_length
    for term in terms:
        found = reads.atoms(term, length)
        for atom in [term] if found is None else found:
            known = exploration.invariant.get(atom.get_id())
            if known is None:
                known = _invariant(exploration, solver, atom, name)
                exploration.invariant[atom.get_id()] = known
                exploration.invariant_terms.append(atom)     # keeps its id its own
            if not known:
                return True
    return False


def _invariant(exploration, solver: Solver, atom, name: str) -> bool:
    """Whether ``atom`` has the same value on every call data longer than the bound as on
    the call data cut to the bound."""
    length = exploration.inputs.call_data_length
    longer = z3.Const(f"{length}__longer", length.sort())
    bound = W.cval(exploration.setup.max_calldata)
    differs = z3.substitute(atom, (length, longer)) != z3.substitute(atom, (length, bound))
    call_data_size = exploration.setup.w.num.call_data_size
    status, _ = solver.check([z3.UGT(longer, bound), z3.ULE(longer, W.cval(call_data_size)),
                              differs], f"{name}: reads the call data past the bound",
                             integers=True)
    return status == UNSAT


def _excludes_longer_call_data(exploration, solver: Solver, premises, name: str) -> bool:
    """Whether the pre-conditions (with the setup's constraints but the length bound) allow
    no call data longer than ``max_calldata``: then the run explored every input they allow."""
    if not premises:
        return False
    inputs = exploration.inputs
    others = [c for c in inputs.constraints
              if inputs.length_bound is None or not c.eq(inputs.length_bound)]
    length = inputs.call_data_length
    status, _ = solver.check(others + list(premises) + [
        z3.UGT(length, W.cval(exploration.setup.max_calldata)),
        z3.ULE(length, W.cval(exploration.setup.w.num.call_data_size))],
        f"{name}: call data past the bound",
        integers=True)
    return status == UNSAT


def _finish(exploration, solver: Solver, v: Verdict, premises, past: bool = False) -> Verdict:
    left_out = list(exploration.cuts) + list(exploration.unexplored)
    bound = exploration.setup.max_calldata
    if past:
        left_out.append(Cut(
            f"max-calldata {bound} (the property reads the call data's length or byte {bound} "
            "or later; longer call data is not explored)", ()))
    calldata_named = False
    for cut in left_out:
        if cut.bound in v.bounds or cut.bound.startswith("stopped:"):   # a safety net
            continue
        if cut.bound.startswith("max-calldata"):
            if calldata_named or _excludes_longer_call_data(exploration, solver, premises, v.name):
                continue
            calldata_named = True
        elif cut.conds:
            status, _ = solver.check(list(cut.conds) + list(premises),
                                     f"{v.name}: a path cut by {cut.bound}", integers=True)
            if status == UNSAT:
                continue
        v.bounds.append(cut.bound)
    stopped = exploration.stopped or solver.stopped
    if stopped and v.verdict in ("proved", "unknown", "bounded"):
        v.verdict, v.detail = "stopped", stopped
    elif v.verdict == "proved":
        if v.undecided:
            v.verdict = "unknown"
            v.detail = ("a solver budget ran out: " + "; ".join(v.undecided[:3])
                        + f"; to lift: {bounds.RLIMIT_LIFT}")
        elif v.bounds:
            v.verdict = "bounded"
            v.detail = ("holds on every explored path; not shown beyond: " + "; ".join(v.bounds)
                        + "; to lift: " + "; ".join(bounds.lifts(v.bounds)))
        else:
            v.detail = f"holds on all {len(exploration.ends)} paths"
    return v


def verdict_lift(verdict: str, bound_texts: list, detail: str) -> list[str]:
    """The lifts of a verdict: its bounds' when bounded; the per-query budget when unknown;
    the safety net's when stopped; none otherwise."""
    if verdict == "bounded":
        return bounds.lifts(bound_texts)
    if verdict == "unknown":
        return [bounds.RLIMIT_LIFT]
    if verdict == "stopped":
        return [bounds.lift("stopped: " + detail)]
    return []


def evaluate(model: z3.ModelRef, claim, names: dict) -> list:
    """(text, value) in the counterexample: the claim's sides (an implication's, a
    comparison's operands), then every named quantity the claim reads."""
    out = []
    parts = list(claim.children()) if z3.is_implies(claim) or z3.is_not(claim) else []
    for p in parts + [claim]:
        if z3.is_app(p) and p.num_args() == 2 and not z3.is_implies(p) and \
                p.decl().kind() in (z3.Z3_OP_EQ, z3.Z3_OP_LE, z3.Z3_OP_LT, z3.Z3_OP_GE,
                                    z3.Z3_OP_GT, z3.Z3_OP_ULEQ, z3.Z3_OP_ULT, z3.Z3_OP_UGEQ,
                                    z3.Z3_OP_UGT):
            out += [(render(q, names), _show(model, q)) for q in p.children()]
    seen, todo, named = set(), [claim], []
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        if t.get_id() in names:
            named.append(t)
        else:
            todo.extend(reversed(t.children()))
    out += [(names[t.get_id()], _show(model, t)) for t in named]
    unique, done = [], set()
    for text, v in out:
        if text not in done:
            done.add(text)
            unique.append((text, v))
    return unique


def _show(model, term) -> str:
    try:
        v = value(model, term)
    except Exception:  # noqa: BLE001 - a part without a single value (an array)
        return "-"
    return ("true" if v else "false") if z3.is_bool(term) else f"{v:#x} ({v})"


def worst(verdicts: list[Verdict]) -> str:
    return min((v.verdict for v in verdicts), key=ORDER.index) if verdicts else "proved"


def exit_code(verdicts: list[Verdict], disagreements: int = 0) -> int:
    """0 all proved; 1 a counterexample or vacuous; 4 only bounded, unknown or stopped (a
    safety net); 3 could not run (a property raised, or the models and the reference
    disagree)."""
    kinds = {v.verdict for v in verdicts}
    if disagreements or kinds & {"error", "disagreement"}:
        return 3
    if kinds & {"counterexample", "vacuous"}:
        return 1
    if kinds & {"stopped", "unknown", "bounded"}:
        return 4
    return 0
