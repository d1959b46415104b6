"""Equivalence of two contracts: the same result on every input within the bounds.

Both contracts are explored at the same address over the same symbolic inputs (the same
caller, call data, storage of every contract, time and seed: the same z3 constants). For
every pair of paths, one of each, the query "both path conditions hold and some compared
field differs" is solved; a model is a distinguishing input, made consistent with SHA-256 and
run on the reference for both contracts, which must differ in a compared field. No pair with
a model (and no bound hit, no query undecided) proves the two equivalent. What either
exploration left out is named and makes the verdict ``bounded``: a path a bound cut, call
data longer than ``max_calldata`` where a path reads past it, a call to an address without
code given (assumed to have none). A safety net that stopped the run makes it ``stopped``.

``across(setup, version)`` compares one contract with itself under two spec versions: the
same containers (those of ``setup.version``, as deployed), the same symbolic inputs, bounds
and budgets, explored under ``setup.version``'s models and validation and under
``version``'s; the witness is replayed on the reference under each version. A container of
the first version run under a later one keeps its instruction set and pays the later
version's costs and follows its frame rules (spec 1.7, 3.2.1): so, from 1.0 to 1.1, a
contract differs at most where SHA256's repricing shows (usage, fee, call records, and a
status where a compute limit is reached under one version and not the other).

Fields (``--compare``): status, error, error_pc, output, storage (the post-state of every
contract, i.e. the state changes), events, calls, usage, fee. By default all of them: the
whole canonical result.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import z3

from proofs.symbolic import witness as witnesses
from proofs.symbolic.budget import TermTooLarge, simplify
from proofs.symbolic.executor import explore
from proofs.symbolic.outcome import USAGE
from proofs.symbolic.solve import SAT, UNSAT, Solver

FIELDS = ("status", "error", "error_pc", "output", "storage", "events", "calls", "usage", "fee")
RESULT_FIELDS = {"storage": "state_changes"}
RECORD = ("callee", "compute", "memory_pages", "storage_reads", "storage_writes",
          "storage_new_slots", "storage_units")


@dataclass
class Equivalence:
    verdict: str          # equivalent | bounded | different | unknown | stopped | disagreement
    fields: tuple
    pairs: int = 0
    queries: int = 0
    bounds: list = field(default_factory=list)
    undecided: list = field(default_factory=list)
    paths: tuple = (0, 0)
    witness: object = None
    results: tuple = ()                 # the reference's results for A and B on the witness
    differing: list = field(default_factory=list)
    pair: tuple = ()
    disagreements: list = field(default_factory=list)
    explorations: tuple = ()
    stopped: str | None = None          # the safety net that stopped the run
    versions: tuple = ()                # the spec versions of A and B


def _bytes_differ(a, b, j):
    return z3.Or(a.length != b.length, z3.And(z3.ULT(j, a.length), a.read(j) != b.read(j)))


def difference(a, b, fields, fresh) -> z3.BoolRef:
    """Some compared field of ends ``a`` and ``b`` differs (free variables from ``fresh``)."""
    diffs = []
    if "status" in fields and a.status != b.status:
        return z3.BoolVal(True)
    if "error" in fields and a.error != b.error:
        return z3.BoolVal(True)
    if "error_pc" in fields and a.error_pc != b.error_pc:
        return z3.BoolVal(True)
    if "output" in fields:
        diffs.append(_bytes_differ(a.output, b.output, fresh("output_index", a.output.length)))
    if "storage" in fields:
        for address in sorted(a.post):
            k = fresh("slot", a.pre[address])
            diffs.append(a.post[address][k] != b.post[address][k])
    if "events" in fields:
        if len(a.events) != len(b.events):
            return z3.BoolVal(True)
        for e, f in zip(a.events, b.events):
            if len(e.topics) != len(f.topics):
                return z3.BoolVal(True)
            diffs += [e.address != f.address] + [x != y for x, y in zip(e.topics, f.topics)]
            diffs.append(_bytes_differ(e.data, f.data, fresh("event_index", e.data.length)))
    if "calls" in fields:
        if len(a.records) != len(b.records):
            return z3.BoolVal(True)
        for r, s in zip(a.records, b.records):
            if (r.depth, r.caller, r.status, r.error, r.error_pc) != \
                    (s.depth, s.caller, s.status, s.error, s.error_pc):
                return z3.BoolVal(True)
            diffs += [getattr(r, n) != getattr(s, n) for n in RECORD]
    if "usage" in fields:
        diffs += [a.usage[n] != b.usage[n] for n in USAGE]
    if "fee" in fields:
        diffs.append(a.fee != b.fee)
    if not diffs:
        return z3.BoolVal(False)
    try:
        return simplify(z3.Or(diffs))
    except TermTooLarge:
        return z3.Or(diffs)


def compare(setup_a, setup_b, fields=FIELDS, solver: Solver | None = None) -> Equivalence:
    solver = solver or Solver(setup_a.rlimit)
    xa, xb = explore(setup_a, solver), explore(setup_b, solver)
    out = Equivalence("equivalent", tuple(fields), paths=(len(xa.ends), len(xb.ends)),
                      explorations=(xa, xb), versions=(setup_a.version, setup_b.version))
    labels = ("A", "B") if setup_a.version == setup_b.version else out.versions
    out.bounds = sorted({f"{label}: {b}" for label, x in zip(labels, (xa, xb))
                         for b in x.bounds_hit + x.not_explored
                         if not b.startswith("stopped:")})   # a safety net: out.stopped
    counter = [0]

    def fresh(name, like):
        counter[0] += 1
        return z3.Const(f"{name}__{counter[0]}", like.sort().domain() if z3.is_array(like)
                        else like.sort())

    for a in xa.ends:
        for b in xb.ends:
            if solver.stopped:
                break
            out.pairs += 1
            differ = difference(a, b, fields, fresh)
            if z3.is_false(differ):
                continue
            name = f"paths A{a.index} and B{b.index}"
            status, model = solver.consistent_model(
                tuple(a.conds) + tuple(b.conds) + (differ,), a.apps + b.apps, name,
                prefer=witnesses.preferred(xa))
            out.queries += 1
            if status == UNSAT:
                continue
            if status != SAT:
                out.undecided.append(f"{name}: {status}")
                continue
            ra = witnesses.replay_model(xa, a, model, b.keys)
            rb = witnesses.replay_model(xb, b, model, a.keys)
            actual_b = rb.actual
            assert ra.actual is not None and actual_b is not None  # replay_model always runs it
            out.witness, out.pair = ra.witness, (a.index, b.index)
            out.results = (ra.actual, actual_b)
            names = [RESULT_FIELDS.get(f, f) for f in fields]
            out.differing = [n for n in names if ra.actual[n] != actual_b[n]]
            for label, r in (("A", ra), ("B", rb)):
                if r.status != "agrees":
                    out.disagreements += [f"{label}: {d}" for d in r.differences]
            if out.disagreements or not out.differing:
                out.verdict = "disagreement"
            else:
                out.verdict = "different"
            return out
    if solver.stopped:
        out.verdict = "stopped"
        out.stopped = solver.stopped
    elif out.undecided:
        out.verdict = "unknown"
    elif out.bounds:
        out.verdict = "bounded"
    return out


def across(setup, version: str, fields=FIELDS, solver: Solver | None = None) -> Equivalence:
    """The contracts of ``setup`` under ``setup.version`` (A) and under ``version`` (B): the
    same result on every input within the bounds, or a distinguishing input replayed on the
    reference under both versions."""
    return compare(setup, dataclasses.replace(setup, version=version), fields, solver)
