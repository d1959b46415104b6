"""A model of a violated invariant as a concrete sequence of calls, replayed on the reference.

The model of a sequence's path condition with a negated claim fixes every call's caller,
call data, block time and seed, and the initial storage at every slot the sequence reads or
writes, the slots pinned and the slots the claim reads (every other slot is zero in the
replay, as in the reference's world state). The sequence is then run on
``reference_vm.execute`` call by call, the state carried (a call's state changes applied when
it succeeded, nothing otherwise), and each call's result is compared with its path's end
evaluated in the model (a difference is a disagreement of the models and the interpreter).
Finally the invariant is evaluated on the replayed states themselves: it must hold on the
replayed initial state (with its pre-conditions) and fail after the last call. Only then is
the sequence a violation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from proofs.symbolic import outcome
from proofs.symbolic.invariants import STATES
from proofs.symbolic.solve import SAT, UNSAT, value
from proofs.symbolic.witness import differences
from proofs.symbolic.world import W
from reference_vm import Context, Contract, Message, WorldState, execute


@dataclass
class Call:
    target: int
    caller: int
    call_data: bytes
    block_time: int
    seed: bytes
    result: dict                  # the reference's canonical result
    expected: dict                # the path's end in the model

    def to_json(self) -> dict:
        return {"to": hex(self.target), "caller": hex(self.caller),
                "call_data": "0x" + self.call_data.hex(), "block_time": hex(self.block_time),
                "seed": "0x" + self.seed.hex(), "status": self.result["status"],
                "error": self.result["error"], "state_changes": self.result["state_changes"]}


@dataclass
class Sequence:
    status: str                   # violated | disagreement | unconfirmed
    detail: str
    initial: dict                 # address -> {key: value}: every slot assumed, zeros included
    calls: list = field(default_factory=list)
    final: dict = field(default_factory=dict)     # address -> non-zero slots after the last call
    claim: str = ""
    mnemonics: list = field(default_factory=list)  # the instructions the calls ran

    def to_json(self) -> dict:
        return {"replay": self.status, "detail": self.detail,
                "initial_storage": _hex_storage(self.initial),
                "calls": [c.to_json() for c in self.calls],
                "final_storage": _hex_storage(self.final), "claim": self.claim}


def _hex_storage(storage: dict) -> dict:
    return {hex(a): {hex(k): hex(v) for k, v in sorted(s.items())}
            for a, s in sorted(storage.items())}


def _selects(term) -> list:
    """The indices of every storage read in ``term`` (no binder inside)."""
    out, seen, todo = [], set(), [term]
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not z3.is_app(t):
            continue
        seen.add(t.get_id())
        if z3.is_select(t) and t.arg(1).sort() == z3.BitVecSort(W.bits):
            out.append(t.arg(1))
        todo.extend(t.children())
    return out


def _array(storage: dict):
    a = z3.K(z3.BitVecSort(W.bits), W.wval(0))
    for k, v in sorted(storage.items()):
        a = z3.Store(a, W.wval(k), W.wval(v))
    return a


def concrete_reals(states: dict, counted: dict, successes: int) -> dict:
    """The invariants' placeholders on concrete storage: ``states`` maps now / before /
    initial to address -> {key: value}; ``counted``: address -> the keys the totals count."""
    out: dict = {"successes": z3.IntVal(successes)}
    for a, keys in counted.items():
        for state in STATES:
            storage = states[state].get(a, {})
            out[f"{state}_{a:#x}"] = _array(storage)
            out[f"total_{state}_{a:#x}"] = z3.IntVal(sum(storage.get(k, 0) for k in set(keys)))
    return out


def _holds(checker, inv, reals: dict, part: str = "claims") -> bool | None:
    """Whether every claim (or pre-condition) holds on concrete storage (free variables:
    for each value); None when a query is undecided."""
    terms, _ = inv.build(reals, part)
    for t in terms:
        status, _ = checker.solver.check([z3.Not(t)], f"{inv.name}: on the replayed states",
                                         integers=True)
        if status == SAT:
            return False
        if status != UNSAT:
            return None
    return True


def replay(checker, node, model, inv, claim, text: str) -> Sequence:
    setup, start = checker.setup, checker.start
    keys: dict = {a: set(pinned) for a, pinned in setup.storage.items()}
    for step in node.steps:
        for a, k in step.end.keys:
            keys.setdefault(a, set()).add(value(model, k))
    for a, ks in node.counted.items():
        keys.setdefault(a, set()).update(value(model, k) for k in ks)
    for k in _selects(claim):
        for a in start.storage:
            keys.setdefault(a, set()).add(value(model, k))
    initial = {a: {k: value(model, start.storage[a][W.wval(k)]) for k in sorted(ks)}
               for a, ks in sorted(keys.items()) if a in start.storage}
    world = WorldState({a: Contract(blob, {k: v for k, v in initial.get(a, {}).items() if v})
                        for a, blob in sorted(setup.codes.items())})
    before = world
    calls = []
    for n, step in enumerate(node.steps, 1):
        x = step.inputs
        length = value(model, x.call_data_length)
        data = bytes(value(model, x.call_data.read(z3.BitVecVal(j, x.call_data_length.size())))
                     for j in range(length))
        seed = value(model, x.seed).to_bytes(setup.w.num.seed_size, "little")
        call = Call(step.target, value(model, x.caller), data, value(model, x.block_time), seed,
                    {}, outcome.concretise(step.end, model))
        result = execute(world, Message(step.target, call.caller, data),
                         Context(call.block_time, seed), setup.policy, setup.limits,
                         version=setup.version)
        call.result = result.to_json()
        calls.append(call)
        found = differences(call.expected, call.result)
        if found:
            return Sequence("disagreement", f"call {n}: the reference does not give the path's "
                            f"end on the witness: {found[0]}", initial, calls)
        before = world
        if result.ok:
            world = world.with_changes(result.state_changes)
    final = {a: dict(world.storage_of(a)) for a in sorted(setup.codes)}
    ran = sorted({checker.codes[s.target].at[pc][0] for s in node.steps for pc in s.end.pcs
                  if pc in checker.codes[s.target].at})
    states = {"now": final, "before": {a: dict(before.storage_of(a)) for a in setup.codes},
              "initial": initial}
    counted = {a: [value(model, k) for k in ks] for a, ks in node.counted.items()}
    seq = Sequence("unconfirmed", "", initial, calls,
                   {a: {k: v for k, v in s.items() if v} for a, s in final.items()},
                   " ".join(text.replace("rtwo_view_", "").split())[:300], ran)
    at_start = concrete_reals({"now": initial, "before": initial, "initial": initial},
                              counted, 0)
    start_ok = _holds(checker, inv, at_start, "assume"), _holds(checker, inv, at_start)
    if start_ok != (True, True):
        seq.detail = ("the replayed initial state does not satisfy the invariant and its "
                      "pre-conditions (a slot the model gave a value is zero there)")
        return seq
    end_ok = _holds(checker, inv, concrete_reals(states, counted, len(node.steps)))
    if end_ok is False:
        seq.status = "violated"
        seq.detail = (f"the reference gives every call's path end, and the invariant fails on "
                      f"the state it leaves after call {len(node.steps)}")
    else:
        seq.detail = "the invariant holds on the replayed state" if end_ok else \
            "the replayed state could not be decided"
    return seq
