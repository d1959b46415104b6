"""One instruction, in the steps of spec 5.2.3: stack underflow, stack overflow, base cost,
then the operation (its cost rule and effect), then the next offset. The stack checks the
row's counts rule out (no underflow without inputs, no overflow without net growth) have no
branch.

``step`` returns the Branches of the whole instruction. On a halting branch the operand stack
is the pre-instruction stack: an instruction never fails half-way through its stack effect
(spec 2.5), and the frame's stack is discarded anyway.
"""

from __future__ import annotations

import z3
from z3 import z3core

from proofs.accounting import charge, halt, then
from proofs.instructions import Model, models
from proofs.machine import RUNNING, Branch, State

# Flows after which the operation itself sets the next offset.
SETS_PC = frozenset({"jump", "branch", "call_sub", "return_sub"})


def immediate(w, ins, name: str = "imm"):
    """A symbolic immediate of the row's size, or None."""
    return z3.BitVec(name, 8 * ins.immediate_size) if ins.immediate_size else None


def step(state: State, mnemonic: str, imm=None, model: Model | None = None) -> list[Branch]:
    w = state.w
    ins = w.spec.by_mnemonic[mnemonic]
    model = models(w.bits, w.version)[mnemonic] if model is None else model
    cv = w.cval
    underflow = z3.ULT(state.height, cv(ins.inputs))
    # Evaluated only when the stack holds the inputs, so the subtraction cannot wrap.
    overflow = z3.And(z3.Not(underflow),
                      z3.UGT(state.height - cv(ins.inputs) + cv(ins.outputs), cv(w.num.stack_depth)))
    checked = z3.And(z3.Not(underflow), z3.Not(overflow))
    # A row that pops nothing cannot underflow, one that pushes no more than it pops
    # cannot overflow (a well-formed height is at most the depth): no branch for those, so
    # that no theorem states a claim about a case that cannot happen (vacuity.py).
    out = ([halt(state, "STACK_UNDERFLOW", underflow, "stack underflow")] if ins.inputs else [])
    if ins.outputs > ins.inputs:
        out.append(halt(state, "STACK_OVERFLOW", overflow, "stack overflow"))
    body = then(charge(state, ins.cost, "base cost"), lambda s: model(s, imm))
    next_pc = state.pc + cv(ins.size)
    for b in body:
        s = b.state
        if b.status == RUNNING and ins.flow not in SETS_PC:
            s = s.replace(pc=next_pc)
        elif b.status != RUNNING:
            s = s.replace(stack=state.stack, height=state.height, rstack=state.rstack,
                          rheight=state.rheight, pc=state.pc)
        out.append(Branch(b.label or "ok", b.status, conjunction(checked, b.cond), s))
    return out


def conjunction(a: z3.BoolRef, b: z3.BoolRef) -> z3.BoolRef:
    """z3.And(a, b) of two Boolean terms, made through z3's C API: the same term, without
    z3.And's coercion of each argument (most of its cost when models run on concrete
    states, step after step)."""
    ctx = a.ctx
    if not (z3.is_bool(a) and z3.is_bool(b)) or b.ctx is not ctx:
        return z3.And(a, b)
    return z3.BoolRef(z3core.Z3_mk_and(ctx.ref(), 2, (z3.Ast * 2)(a.as_ast(), b.as_ast())), ctx)
