"""Cost rules of spec chapter 5 as branching transitions.

Each function takes a state and returns Branches: one per way the rule can end. A failing
charge leaves its meter unchanged and halts (5.2.2, 5.3.2, 5.4); earlier charges stay. The
*order* of the steps is the spec's: for memory growth the limit check comes before the page
charge, and the new pages are appended only after both.
"""

from __future__ import annotations

from typing import Callable

import z3

from proofs.machine import RUNNING, Branch, Memory, State
from proofs.words import Width, ceil_div

Step = Callable[[State], list[Branch]]


def running(state: State, label: str = "", cond=True) -> Branch:
    return Branch(label, RUNNING, z3.BoolVal(cond) if isinstance(cond, bool) else cond, state)


def halt(state: State, status: str, cond, label: str = "") -> Branch:
    return Branch(label or status, status, cond, state)


def _join(a: str, b: str) -> str:
    return "; ".join(x for x in (a, b) if x)


def then(branches: list[Branch], step: Step) -> list[Branch]:
    """Continue every running branch with ``step``; halted branches are final."""
    out = []
    for b in branches:
        if b.status != RUNNING:
            out.append(b)
            continue
        for c in step(b.state):
            out.append(Branch(_join(b.label, c.label), c.status, z3.And(b.cond, c.cond),
                              c.state))
    return out


def split(state: State, cases: dict[str, object]) -> list[Branch]:
    """One running branch per labelled case, all with the same state: coverage points such
    as 'divisor zero' that branches.py must hit. The cases must partition the state space
    (a theorem checks every model's branches do)."""
    return [running(state, label, cond) for label, cond in cases.items()]


def unless_empty(state: State, length, body: Step) -> list[Branch]:
    """A rule that does nothing for length 0 (5.6.2) and runs ``body`` otherwise."""
    empty = length == 0
    return [running(state, "empty range", empty)] + [
        Branch(b.label, b.status, z3.And(z3.Not(empty), b.cond), b.state) for b in body(state)]


def charge(state: State, units, where: str) -> list[Branch]:
    """5.2.2: charge compute units or halt with COMPUTE_LIMIT_EXCEEDED charging nothing."""
    if isinstance(units, int):
        if units == 0:
            return [running(state)]  # a charge of 0 never fails
        units = state.w.cval(units)
    after = state.compute + units
    fails = z3.UGT(after, state.compute_limit)
    return [halt(state, "COMPUTE_LIMIT_EXCEEDED", fails, f"compute limit ({where})"),
            running(state.replace(compute=after), "", z3.Not(fails))]


def grow_to(state: State, end) -> list[Branch]:
    """5.3.2: grow memory to cover [0, end)."""
    w, memory = state.w, state.memory
    fits = z3.ULE(end, memory.size(w))
    new = ceil_div(end, w.num.page_size) - memory.pages
    over = z3.UGT(state.pages_live + new, state.memory_limit)
    out = [running(state, "memory covers range", fits),
           halt(state, "MEMORY_LIMIT_EXCEEDED", z3.And(z3.Not(fits), over), "memory limit")]

    def append_pages(s: State) -> list[Branch]:
        live = s.pages_live + new
        # Past its old size memory already reads 0 (machine.base_memory): new bytes are zero.
        grown = Memory(s.memory.pages + new, s.memory.read, s.memory.hash_key)
        return [running(s.replace(memory=grown, pages_live=live,
                                  pages_peak=z3.If(z3.UGT(live, s.pages_peak), live,
                                                   s.pages_peak)), "memory grows")]

    growing = charge(state, new * w.num.page_cost, "page cost")
    growing = then(growing, append_pages)
    guard = z3.And(z3.Not(fits), z3.Not(over))
    out += [Branch(b.label, b.status, z3.And(guard, b.cond), b.state) for b in growing]
    return out


def touch(state: State, offset, length) -> list[Branch]:
    """5.3.3: a range of zero length touches nothing, wherever it starts."""
    empty = length == 0
    out = [running(state, "empty range", empty)]
    for b in grow_to(state, offset + length):
        out.append(Branch(b.label, b.status, z3.And(z3.Not(empty), b.cond), b.state))
    return out


def copy_cost(w: Width, length):
    return ceil_div(length, w.num.copy_word_size) * w.num.copy_word_cost


def hash_cost(w: Width, length):
    return ceil_div(length, w.num.hash_block_size) * w.num.hash_block_cost


def charge_storage(state: State, units) -> list[Branch]:
    """5.4: charge storage units or halt with STORAGE_LIMIT_EXCEEDED charging nothing."""
    if isinstance(units, int):
        units = state.w.cval(units)
    after = state.storage_units + units
    fails = z3.UGT(after, state.storage_limit)
    return [halt(state, "STORAGE_LIMIT_EXCEEDED", fails, "storage limit"),
            running(state.replace(storage_units=after), "", z3.Not(fails))]


def umax(a, b):
    return z3.If(z3.UGT(a, b), a, b)


def umin(a, b):
    return z3.If(z3.ULT(a, b), a, b)


def unless_read_only(state: State, step: Step) -> list[Branch]:
    """A write (SSTORE, TSTORE, LOGn) in a read-only frame halts with READ_ONLY_WRITE after
    the stack checks and the base cost, before the cost rule (from 1.1, spec 6.11 and 2.4);
    ``step`` otherwise. A version without read-only frames has no such branch."""
    read_only = state.env.read_only
    if read_only is None:
        return step(state)
    out = [halt(state, "READ_ONLY_WRITE", read_only, "read-only frame")]
    for b in step(state):
        out.append(Branch(b.label, b.status, z3.And(z3.Not(read_only), b.cond), b.state))
    return out
