"""One instruction's models under two spec versions, compared (``prove --diff``).

Both models run on one pre-state: the variables the versions share (stack, memory, storage,
meters, limits, environment, immediate) are the same SMT constants, and the newer version's
own components (transient storage, the read-only flag) are free. The premises are both
versions' well-formedness (machine.well_formed). Every pair of branches, one per version,
whose conditions hold together must give the same outcome and, on the same outcome, the same
value of every component both versions have; and the newer model must leave its own new
state as it found it (an instruction of the old version that writes the new state changes).

``differences`` gives one term per component: satisfiable exactly when the component can
differ. Their disjunction unsatisfiable is the proof that the instruction is unchanged; each
one decided on its own is the characterisation of a change (which components differ, which
are proved equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import z3

from proofs.execute import immediate, step
from proofs.machine import Branch, State, fresh_state, same_bytes, well_formed
from proofs.words import width

BITS = 64            # the spec's word width: the versions are compared at it
# Components of a post-state both versions have, in report order, each an equality of two
# post-states at the free indices i (memory) and j (byte strings).
METERS = ("compute", "compute_limit", "pages_live", "pages_peak", "memory_limit",
          "storage_units", "storage_limit", "reads", "writes", "new_slots", "random_counter")


def _stack(a: State, b: State, i, j):
    if len(a.stack) != len(b.stack):
        return z3.BoolVal(False)
    return z3.And(a.height == b.height, *[x == y for x, y in zip(a.stack, b.stack)])


def _return_stack(a: State, b: State, i, j):
    return z3.And(a.rheight == b.rheight, *[x == y for x, y in zip(a.rstack, b.rstack)])


def _memory(a: State, b: State, i, j):
    return z3.And(a.memory.pages == b.memory.pages, a.memory.read(i) == b.memory.read(i))


def _events(a: State, b: State, i, j):
    if len(a.events) != len(b.events):
        return z3.BoolVal(False)
    parts = []
    for e, f in zip(a.events, b.events):
        if len(e.topics) != len(f.topics):
            return z3.BoolVal(False)
        parts += [e.address == f.address, same_bytes(e.data, f.data, j)]
        parts += [x == y for x, y in zip(e.topics, f.topics)]
    return z3.And(parts) if parts else z3.BoolVal(True)


def _meter(name: str):
    return lambda a, b, i, j: getattr(a, name) == getattr(b, name)


Equal = Callable[[State, State, object, object], z3.BoolRef]
COMMON: dict[str, Equal] = {
    "stack": _stack, "pc": lambda a, b, i, j: a.pc == b.pc, "return stack": _return_stack,
    **{name: _meter(name) for name in METERS},
    "memory": _memory, "storage": lambda a, b, i, j: a.storage == b.storage,
    "output": lambda a, b, i, j: same_bytes(a.output, b.output, j),
    "return data": lambda a, b, i, j: same_bytes(a.return_data, b.return_data, j),
    "events": _events,
}
# The newer version's own state, compared with its pre-state (an old instruction keeps it);
# between two versions that both have it, compared between the two post-states.
NEW: dict[str, Callable[[State, State], z3.BoolRef]] = {
    "transient storage": lambda post, pre: z3.And(post.transient == pre.transient,
                                                  post.transient_alive == pre.transient_alive),
}
OUTCOME = "outcome"
COMPONENTS = (OUTCOME, *COMMON, *NEW)


@dataclass(frozen=True)
class Pair:
    """One instruction under two versions, on one pre-state."""

    mnemonic: str
    old: State                 # the pre-state as the old version has it
    new: State                 # the same pre-state, with the new version's own components
    imm: object
    old_branches: list[Branch]
    new_branches: list[Branch]
    premises: list             # both versions' well-formedness
    i: z3.BitVecRef
    j: z3.BitVecRef


def pair(mnemonic: str, old: str, new: str, model_old=None, model_new=None) -> Pair:
    """The branches of ``mnemonic`` under ``old`` and ``new`` on one symbolic pre-state
    (``model_old`` / ``model_new`` replace a version's model: planted bugs in tests)."""
    w_old, w_new = width(BITS, old), width(BITS, new)
    ins_old, ins_new = w_old.spec.by_mnemonic[mnemonic], w_new.spec.by_mnemonic[mnemonic]
    if ins_old.immediate_size != ins_new.immediate_size:
        raise ValueError(f"{mnemonic}: the immediate's size differs between {old} and {new}")
    s_old, s_new = fresh_state(w_old), fresh_state(w_new)
    imm = immediate(w_new, ins_new)
    i, j = w_new.counter("diff_i"), w_new.counter("diff_j")
    return Pair(mnemonic, s_old, s_new, imm, step(s_old, mnemonic, imm, model_old),
                step(s_new, mnemonic, imm, model_new), [well_formed(s_old), well_formed(s_new)],
                i, j)


def differences(p: Pair) -> dict[str, z3.BoolRef]:
    """component -> a term satisfiable (with the premises) exactly when it can differ."""
    out: dict[str, list] = {name: [] for name in COMPONENTS}
    for bo in p.old_branches:
        for bn in p.new_branches:
            both = z3.And(bo.cond, bn.cond)
            if bo.status != bn.status:
                out[OUTCOME].append(both)
                continue
            for name, equal in COMMON.items():
                out[name].append(z3.And(both, z3.Not(equal(bo.state, bn.state, p.i, p.j))))
            if p.old.transient is not None:      # both versions have it: compared like the rest
                out["transient storage"].append(z3.And(both, z3.Not(NEW["transient storage"](
                    bn.state, bo.state))))
    if p.new.transient is not None and p.old.transient is None:
        for bn in p.new_branches:
            for name, kept in NEW.items():
                out[name].append(z3.And(bn.cond, z3.Not(kept(bn.state, p.new))))
    return {name: z3.Or(terms) if terms else z3.BoolVal(False)
            for name, terms in out.items() if terms or name in (OUTCOME, *COMMON)}


def witness_shows(model, p: Pair, diffs: dict[str, z3.BoolRef]) -> list[str]:
    """The components that differ on the pre-state ``model`` assigns."""
    conj = z3.And(*p.premises)
    if not z3.is_true(model.eval(conj, model_completion=True)):
        return []
    return [name for name, term in diffs.items()
            if z3.is_true(model.eval(term, model_completion=True))]
