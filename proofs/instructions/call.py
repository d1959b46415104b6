"""CALL and STATICCALL (spec 6.11, cost rule 5.6.7), caller side.

The caller's part is exact: the call-data range is touched (a failure halts the caller),
then the depth check, then whether the callee can run at all, then the callee's outcome.
The callee's run is the abstract CallOracle of the pre-state; the model clamps its usage to
what the spec allows (compute within the callee's limit min(caller's limit, used + compute),
memory within the memory limit, storage units within theirs), so every oracle value is a
behaviour some callee has, and every callee's behaviour is some oracle value.
"""

from __future__ import annotations

import z3

from proofs.accounting import running, then, touch, umax, umin
from proofs.machine import Bytes
from proofs.words import Width


def depth_limit(w: Width) -> int:
    """The deepest frame a call may start (limits.toml machine.call_depth)."""
    return w.num.call_depth


def models(w: Width) -> dict:
    cv = w.cval
    empty = Bytes(cv(0), lambda j: z3.BitVecVal(0, 8))

    def call(s, static: bool):
        # Which contract runs (the address operand) is the oracle's business.
        (length, offset, compute, _address), s = s.pop(4)
        off, ln = w.widen(offset), w.widen(length)

        def run(t):
            o = t.env.oracle
            failed = t.replace(return_data=empty).push(w.wval(0))
            too_deep = z3.UGT(t.env.depth + cv(1), cv(depth_limit(w)))
            ran = z3.And(z3.Not(too_deep), o.runnable)
            out = [
                running(failed, "call depth exceeded", too_deep),
                running(failed, "callee cannot run", z3.And(z3.Not(too_deep),
                                                            z3.Not(o.runnable))),
            ]
            # From 1.1 (6.11, 2.4): STATICCALL's callee, and any callee of a read-only
            # frame, is read-only: it and its callees write no storage or transient slot
            # and emit no event (such a write faults), so it leaves them as they were.
            ro = t.env.read_only
            if static:
                cases = [(True, z3.BoolVal(True))]
            elif ro is None:
                cases = [(False, z3.BoolVal(True))]
            else:
                cases = [(False, z3.Not(ro)), (True, ro)]
            for read_only, when in cases:
                out += outcomes(t, o, compute, ran if z3.is_true(when) else z3.And(ran, when),
                                read_only)
            return out
        return then(touch(s, off, ln), run)

    def outcomes(t, o, compute, ran, read_only: bool):
        # 5.2.1: fixed from compute used after the base cost and the call-data touch.
        limit = umin(t.compute_limit, t.compute + w.widen(compute))
        # Clamp totals, not increments: min(used + x, limit) rather than
        # used + min(x, limit - used) (equal, but the latter is hard to bit-blast).
        after = t.replace(
            compute=umin(t.compute + o.compute, limit),
            pages_peak=umax(t.pages_peak, umin(t.pages_live + o.pages, t.memory_limit)),
            storage_units=umin(t.storage_units + o.storage_units, t.storage_limit),
            reads=t.reads + o.reads,
            writes=t.writes if read_only else t.writes + o.writes,
            new_slots=t.new_slots if read_only else t.new_slots + o.new_slots,
            random_counter=t.random_counter + o.randoms)
        if read_only:
            ok = after
        else:
            ok = after.replace(storage=o.storage_after, events=after.events + o.events)
            if t.transient is not None:
                ok = ok.replace(transient=o.transient_after,
                                transient_alive=o.transient_alive_after)
        ok = ok.replace(return_data=o.output).push(w.wval(1))
        reverted = after.replace(return_data=o.output).push(w.wval(0))
        errored = after.replace(return_data=empty).push(w.wval(0))
        who = "read-only callee" if read_only and t.env.read_only is not None else "callee"
        return [
            running(ok, f"{who} succeeded", z3.And(ran, o.succeeded)),
            running(reverted, f"{who} reverted",
                    z3.And(ran, z3.Not(o.succeeded), o.reverted)),
            running(errored, f"{who} failed",
                    z3.And(ran, z3.Not(o.succeeded), z3.Not(o.reverted))),
        ]

    def CALL(s, imm):
        return call(s, False)

    def STATICCALL(s, imm):
        return call(s, True)

    return {"CALL": CALL, "STATICCALL": STATICCALL}
