"""Laws about what a frame hands on: RETURN's and REVERT's output bytes (spec 6.1), and
CALL's outcome flag, return data and storage for every outcome, with the depth rule, and
its charge for the callee (6.11, 5.2.1).

Each is stated from the spec's text over every branch of one step (halting branches
included, unlike laws.state_law), against the pre-state: the output is memory[offset,
offset + length) as the pre-state's memory reads it (bytes past its size read 0, as grown
memory does); the call's outcome is decided from the callee oracle's inputs and the depth
limit of limits.toml, never from the model's branch labels.
"""

from __future__ import annotations

import z3

from proofs.execute import step
from proofs.machine import REVERTED, RUNNING, SUCCESS, fresh_state, well_formed
from proofs.registry import Query, Theorem, declare_versions
from proofs.words import width


def law(version: str, name: str, opcode: str, make, note: str = "",
         profile: str | None = None) -> Theorem:
    """A law ``make(w, pre, branches)`` over every branch of one ``opcode`` step at 64 bits
    under spec ``version``."""
    def build(bits, model=None):
        w = width(bits, version)
        pre = fresh_state(w)
        claims = make(w, pre, step(pre, opcode, None, model))
        return Query(claims, [well_formed(pre)], pre, opcode)
    return Theorem(name, opcode, (64,), build, note, profile)


def _output(status: str):
    def make(w, pre, branches):
        length, offset = w.widen(pre.stack[0]), w.widen(pre.stack[1])
        j = w.counter("j")
        claims = []
        for b in branches:
            if b.status != status:
                continue
            out = b.state.output
            claims.append(z3.Implies(b.cond, z3.And(
                out.length == length,
                z3.Implies(z3.ULT(j, length), out.read(j) == pre.memory.read(offset + j)))))
        return claims or [z3.BoolVal(False)]     # no such branch at all: refuted
    return make


def _call(w, pre, branches, static: bool = False):
    """After the call-data touch, with depth d and the callee oracle o: d + 1 > call_depth,
    or o cannot run: ok 0 and empty return data; otherwise success: ok 1, return data the
    callee's output and the storage as the callee left it (its re-entrant writes to the
    caller's contract included); reverted: ok 0 and its output; any error: ok 0 and empty.
    Storage is unchanged whenever ok is 0. From 1.1 the same of transient storage (6.13: a
    failed callee's transient writes are undone); and a read-only callee (STATICCALL's, or
    any callee of a read-only frame, 2.4) leaves storage, transient storage, the storage
    write counters and the events as they were whatever its outcome."""
    o = pre.env.oracle
    read_only = z3.BoolVal(True) if static else pre.env.read_only   # None under 1.0

    def unless_read_only(kept, written):
        return written if read_only is None else z3.If(read_only, kept, written)
    cv = w.cval
    too_deep = z3.UGT(pre.env.depth + cv(1), cv(w.num.call_depth))
    ran = z3.And(z3.Not(too_deep), o.runnable)
    j = w.counter("j")

    def gives(t, ok: int, data) -> z3.BoolRef:
        rd = t.return_data
        same = (rd.length == 0 if data is None else z3.And(
            rd.length == data.length, z3.Implies(z3.ULT(j, rd.length), rd.read(j) == data.read(j))))
        # Storage: the callee's writes (re-entrant ones to this contract included) stay on
        # success, and are undone otherwise.
        kept = t.storage == pre.storage
        storage = unless_read_only(kept, t.storage == o.storage_after) if ok else kept
        parts = [t.stack[0] == w.wval(ok), same, storage]
        if pre.transient is not None:
            kept_t = z3.And(t.transient == pre.transient,
                            t.transient_alive == pre.transient_alive)
            parts.append(unless_read_only(kept_t, z3.And(
                t.transient == o.transient_after,
                t.transient_alive == o.transient_alive_after)) if ok else kept_t)
        if read_only is not None:
            parts.append(z3.Implies(read_only, z3.And(
                t.writes == pre.writes, t.new_slots == pre.new_slots,
                z3.BoolVal(len(t.events) == len(pre.events)))))
        return z3.And(parts)

    claims = []
    for b in branches:
        if b.status != RUNNING:
            continue
        t = b.state
        claims.append(z3.Implies(b.cond, z3.And(
            z3.Implies(z3.Not(ran), gives(t, 0, None)),
            z3.Implies(z3.And(ran, o.succeeded), gives(t, 1, o.output)),
            z3.Implies(z3.And(ran, z3.Not(o.succeeded), o.reverted), gives(t, 0, o.output)),
            z3.Implies(z3.And(ran, z3.Not(o.succeeded), z3.Not(o.reverted)),
                       gives(t, 0, None)))))
    return claims


def _static_call(w, pre, branches):
    return _call(w, pre, branches, static=True)


def _call_charge_of(opcode: str):
    def make(w, pre, branches):
        return _call_charge(w, pre, branches, opcode)
    return make


def _call_charge(w, pre, branches, opcode: str = "CALL"):
    """5.2.1 and 6.11 step 5: from the compute used when the call starts (after the base
    cost and the call-data range's pages), the callee's usage stays charged, up to its limit
    min(caller's limit, used + compute); a callee that never runs costs nothing more."""
    o, cv = pre.env.oracle, w.cval
    ran = z3.And(z3.Not(z3.UGT(pre.env.depth + cv(1), cv(w.num.call_depth))), o.runnable)
    compute = w.widen(pre.stack[2])
    claims = []
    for b in branches:
        if b.status != RUNNING:
            continue
        t = b.state
        start = (pre.compute + cv(w.spec.by_mnemonic[opcode].cost)
                 + (t.memory.pages - pre.memory.pages) * cv(w.num.page_cost))
        limit = z3.If(z3.ULT(pre.compute_limit, start + compute), pre.compute_limit,
                      start + compute)
        used = start + o.compute
        claims.append(z3.Implies(b.cond, t.compute == z3.If(
            ran, z3.If(z3.ULT(used, limit), used, limit), start)))
    return claims


def theorems(version: str) -> list[Theorem]:
    """The frame laws of spec ``version``."""
    def _law(*args) -> Theorem:
        return law(version, *args)
    return [
        _law("return_output_bytes", "RETURN", _output(SUCCESS),
             "output = memory[offset, offset + length), every byte"),
        _law("revert_output_bytes", "REVERT", _output(REVERTED),
             "output = memory[offset, offset + length), every byte"),
        _law("call_outcome_and_return_data", "CALL", _call,
             "every outcome: depth rule, callee cannot run, success, revert, error"),
        _law("call_charges_callee_usage", "CALL", _call_charge,
             "used + the callee's usage, capped by the callee's limit", "call-arithmetic"),
    ] + ([
        _law("staticcall_outcome_and_return_data", "STATICCALL", _static_call,
             "every outcome as CALL's; the read-only callee writes nothing"),
        _law("staticcall_charges_callee_usage", "STATICCALL", _call_charge_of("STATICCALL"),
             "used + the callee's usage, capped by the callee's limit", "call-arithmetic"),
    ] if "STATICCALL" in width(None, version).spec.by_mnemonic else [])


declare_versions(theorems)
