"""The theorem registry and the theorems every opcode gets.

A Theorem is (name, opcode, widths, builder); builder(bits) returns a Query: a claim to be
proved valid under assumptions, and the symbolic pre-state so that a counterexample can be
read back as concrete inputs and replayed. Per opcode, at 64 bits:

- stack_effect: a continuing step changes the height by outputs - inputs and leaves every
  item below its inputs (and the return stack) as it was; a stack row's pushed items are
  exactly those its signature names (DUP, SWAP, every PUSH), SELF's and CALLER's the frame's
  address and caller (spec_rules.pushed_values);
- cost: the compute and storage charged equal the row's cost plus its cost rule, with the
  rule's rounded quantities characterised (spec_rules.py); a halt charges no more;
- halts_exactly: the outcome of every branch is the one spec 5.2.3/5.6 prescribes for the
  pre-state, as an independent decision list;
- charges_before_effect: a step ending in an error changes no memory byte, storage slot,
  event, output, return data or random counter (only meters already charged stay charged);
- meters: counters never decrease and never pass their limits;
- deterministic: the branches partition the pre-states, and the post-state is a function of
  the inputs the row's determinism class allows (another pre-state agreeing on them gives the
  same result).

laws.py, validate.py, policy.py and lifecycle.py declare their theorems to the same registry
(proofs/registry.py), as a user's file of theorems does.
"""

from __future__ import annotations

import dataclasses

import z3

from proofs import spec_rules
from proofs.execute import immediate, step
from proofs.machine import (
    RUNNING, SUCCESS, REVERTED, fresh_env, fresh_state, same_state, well_formed,
)
from proofs.registry import Query, Theorem, builtin, declare_versions
from proofs.words import Width, ceil_div, width


def setup(mnemonic: str, w: Width, model=None, prefix: str = ""):
    """(word, instruction, pre-state, immediate, branches of the model's step). The theorems
    of a row are built one after the other from the same step: the last one is kept (with
    the model it was built from, so that an override is never confused with another)."""
    key = (mnemonic, w, prefix)
    if _LAST and _LAST[0] == key and _LAST[1] is model:
        return _LAST[2]
    ins = w.spec.by_mnemonic[mnemonic]
    pre = fresh_state(w, prefix)
    imm = immediate(w, ins)
    built = (w, ins, pre, imm, step(pre, mnemonic, imm, model))
    _LAST[:] = [key, model, built]
    return built


_LAST: list = []   # [key, model, what setup built]: the step shared by a row's theorems


def _conj(parts) -> z3.BoolRef:
    parts = list(parts)
    return z3.And(parts) if parts else z3.BoolVal(True)


def _claims(claims) -> list:
    """The claims as a list: empty stays empty (a row with no claim is an error, never a
    proof: vacuity.py)."""
    return list(claims)


def stack_effect(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    cv = w.cval
    control = ins.mnemonic in ("CALLSUB", "RETSUB")
    claims = []
    for b in branches:
        if b.status != RUNNING:
            continue
        t = b.state
        parts = [t.height == pre.height - cv(ins.inputs) + cv(ins.outputs)]
        for j in range(len(pre.stack) - ins.inputs):
            if ins.outputs + j < len(t.stack):
                parts.append(t.stack[ins.outputs + j] == pre.stack[ins.inputs + j])
        if not control:
            parts += [t.rheight == pre.rheight] + [x == y for x, y in zip(t.rstack, pre.rstack)]
        parts += [t.stack[k] == v for k, v in spec_rules.pushed_values(pre, mnemonic, imm)]
        claims.append(z3.Implies(b.cond, _conj(parts)))
    if not claims:
        # A row that never continues (STOP, RETURN, REVERT, TRAP): its halts leave the
        # operand stack as it was (spec 2.5: no instruction fails half-way).
        claims = [z3.Implies(b.cond, _conj([b.state.height == pre.height] + [
            x == y for x, y in zip(b.state.stack, pre.stack)])) for b in branches]
    return Query(_claims(claims), [well_formed(pre)], pre, mnemonic, imm)


def cost(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    cv = w.cval
    touches, end = spec_rules.touched_end(pre, mnemonic)
    quantity = spec_rules.rule_quantity(pre, mnemonic)
    claims: list[z3.BoolRef] = []
    # one growth claim per memory: id(memory) -> (the conditions of the branches sharing it, the claim)
    memory_claims: dict[int, tuple[list[z3.BoolRef], z3.BoolRef]] = {}
    for b in branches:
        t = b.state
        charged = t.compute - pre.compute
        if b.label in ("stack underflow", "stack overflow", "compute limit (base cost)"):
            claims.append(z3.Implies(b.cond, z3.And(charged == 0, t.storage_units == pre.storage_units)))
            continue
        if b.status == "READ_ONLY_WRITE":
            # 6.11: after the base cost, before the cost rule: nothing more is charged.
            claims.append(z3.Implies(b.cond, z3.And(
                charged == cv(ins.cost), t.storage_units == pre.storage_units,
                t.memory.pages == pre.memory.pages)))
            continue
        new_pages = t.memory.pages - pre.memory.pages
        parts = [z3.UGE(charged, cv(ins.cost))]
        if b.status == RUNNING or b.status in (SUCCESS, REVERTED):
            # Branches sharing one memory (CALL's callee outcomes) share one growth claim.
            grown = z3.If(z3.And(touches, z3.UGT(end, pre.memory.size(w))),
                          spec_rules.least_cover(t.memory.pages, end, w.num.page_size), new_pages == 0)
            memory_claims.setdefault(id(t.memory), ([], grown))[0].append(b.cond)
            rule_units = charged - cv(ins.cost) - new_pages * w.num.page_cost
            if mnemonic == "SSTORE":
                fresh = spec_rules.new_slot(pre, mnemonic)
                parts += [rule_units == z3.If(fresh, cv(w.num.new_slot_cost), cv(0)),
                          t.storage_units - pre.storage_units == z3.If(
                              fresh, cv(w.num.write_units + w.num.new_slot_units),
                              cv(w.num.write_units))]
            elif mnemonic == "TSTORE":
                fresh = spec_rules.new_transient_slot(pre, mnemonic)
                parts += [rule_units == z3.If(fresh, cv(w.num.transient()[1]), cv(0)),
                          t.storage_units == pre.storage_units]
            elif mnemonic == "SLOAD":
                parts += [rule_units == 0,
                          t.storage_units - pre.storage_units == cv(w.num.read_units)]
            elif mnemonic in ("CALL", "STATICCALL"):
                # What the callee uses is charged too, within the caller's limit (5.2.1);
                # laws.py bounds it by the callee's own limit.
                parts += [z3.ULE(t.compute, pre.compute_limit)]
            elif quantity is not None:
                length, unit, unit_cost = quantity
                count = ceil_div(length, unit)
                parts += [rule_units == count * unit_cost,
                          spec_rules.least_units(count, length, unit)]
            else:
                parts += [rule_units == 0, t.storage_units == pre.storage_units]
        claims.append(z3.Implies(b.cond, _conj(parts)))
    claims += [z3.Implies(z3.Or(conds), grown) for conds, grown in memory_claims.values()]
    return Query(_claims(claims), [well_formed(pre)], pre, mnemonic, imm)


def halts_exactly(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    expected = spec_rules.expected_outcome(pre, mnemonic)
    claims = [z3.Implies(b.cond, expected == spec_rules.code(b.status, w.spec)) for b in branches]
    return Query(_claims(claims), [well_formed(pre)], pre, mnemonic, imm)


def charges_before_effect(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    i = w.counter("probe_index")
    claims = []
    for b in branches:
        if b.status in (RUNNING, SUCCESS, REVERTED):
            continue
        t = b.state
        parts = [t.memory.read(i) == pre.memory.read(i), t.storage == pre.storage,
                 z3.BoolVal(len(t.events) == len(pre.events) and t.output is None),
                 t.return_data.length == pre.return_data.length,
                 t.random_counter == pre.random_counter, t.reads == pre.reads,
                 t.writes == pre.writes, t.new_slots == pre.new_slots,
                 t.height == pre.height, t.pc == pre.pc]
        if pre.transient is not None:
            parts += [t.transient == pre.transient, t.transient_alive == pre.transient_alive]
        claims.append(z3.Implies(b.cond, _conj(parts)))
    if not claims:
        # A row without an error branch (STOP): every pre-state takes a branch that is not
        # an error, so there is nothing it could charge before failing.
        claims = [z3.Or([b.cond for b in branches] + [z3.BoolVal(False)])]
    return Query(_claims(claims), [well_formed(pre)], pre, mnemonic, imm)


def meters(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    ule = z3.ULE
    claims = []
    for b in branches:
        t = b.state
        extra = []
        if pre.transient_alive is not None:
            extra.append(ule(t.transient_alive, w.cval(w.num.transient()[0])))
        claims.append(z3.Implies(b.cond, z3.And(
            *extra, ule(pre.compute, t.compute), ule(t.compute, pre.compute_limit),
            t.compute_limit == pre.compute_limit, t.memory_limit == pre.memory_limit,
            t.storage_limit == pre.storage_limit,
            ule(pre.memory.pages, t.memory.pages), ule(pre.pages_live, t.pages_live),
            ule(t.pages_live, pre.memory_limit), ule(pre.pages_peak, t.pages_peak),
            ule(t.pages_live, t.pages_peak),
            ule(pre.storage_units, t.storage_units), ule(t.storage_units, pre.storage_limit),
            ule(pre.reads, t.reads), ule(pre.writes, t.writes),
            ule(pre.new_slots, t.new_slots), ule(pre.random_counter, t.random_counter))))
    return Query(_claims(claims), [well_formed(pre)], pre, mnemonic, imm)


# Which parts of the pre-state each determinism class may read (spec 4.3). Every class reads
# the frame's stack, memory, code (pc, immediate), return stack, data section and meters.
CONTEXT_FIELDS = ("caller", "address", "call_data", "read_only")
GATED_FIELDS = CONTEXT_FIELDS + ("block_time", "seed", "depth", "oracle")


def deterministic(mnemonic: str, w: Width, model=None) -> Query:
    w, ins, pre, imm, branches = setup(mnemonic, w, model)
    other = fresh_state(w, "other_")
    env = fresh_env(w, "other_")
    keep = {"pure": (), "context": CONTEXT_FIELDS, "gated": GATED_FIELDS}[ins.determinism]
    env = dataclasses.replace(env, data=pre.env.data,
                              **{f: getattr(pre.env, f) for f in keep})
    twin = pre.replace(env=env)
    skip: tuple = ()
    if ins.determinism == "pure":
        # A pure row may not depend on the context at all: the twin's environment is fresh.
        twin = twin.replace(random_counter=other.random_counter, return_data=other.return_data,
                            storage=other.storage, transient=other.transient,
                            transient_alive=other.transient_alive)
        skip = ("storage", "return_data", "random_counter", "transient")  # carried through
    elif ins.determinism == "context":
        twin = twin.replace(random_counter=other.random_counter, storage=other.storage)
        skip = ("storage", "random_counter")
    twins = step(twin, mnemonic, imm, model)
    i, j = w.counter("probe_index"), w.counter("probe_byte")
    conds = [b.cond for b in branches]
    # Exhaustive, and each branch excludes the later ones: the branches partition.
    partition = [z3.Or(conds)] + [z3.Not(z3.And(a, z3.Or(conds[k + 1:])))
                                  for k, a in enumerate(conds[:-1])]
    same = [z3.And(a.cond == b.cond, z3.Implies(a.cond, same_state(a.state, b.state, i, j, skip)))
            for a, b in zip(branches, twins)]
    ok = [z3.BoolVal(len(branches) == len(twins))]
    return Query(partition + same + ok, [well_formed(pre), well_formed(twin)], pre,
                 mnemonic, imm)


GENERIC = {"stack_effect": stack_effect, "cost": cost, "halts_exactly": halts_exactly,
           "charges_before_effect": charges_before_effect, "meters": meters,
           "deterministic": deterministic}


# Instructions whose semantics depend on the word width beyond the word itself: a PUSH's
# immediate is wider than an 8-bit word and is then reduced modulo 2^W (6.2); their stack
# effect is also stated at 8 bits.
def reduced(ins) -> bool:
    return ins.type == "stack" and bool(ins.immediate_size)


def opcode_theorems(version: str, bits: tuple[int, ...] = (64,)) -> list[Theorem]:
    """The six generic theorems of every instruction of spec ``version``."""
    out = []
    for ins in width(None, version).spec.instructions:
        for name, builder in GENERIC.items():
            widths = (8,) + bits if name == "stack_effect" and reduced(ins) else bits
            out.append(Theorem(name, ins.mnemonic, widths,
                               lambda b, model=None, m=ins.mnemonic, f=builder, v=version:
                               f(m, width(b, v), model)))
    return out


declare_versions(opcode_theorems)


def registry(version: str) -> list[Theorem]:
    """Every built-in theorem of the suite for spec ``version``, in a fixed order
    (proofs.registry.builtin)."""
    return builtin(version)


__all__ = ["Query", "Theorem", "GENERIC", "opcode_theorems", "registry"]
