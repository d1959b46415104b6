"""CALL on a symbolic path: the callee explored, its end turned into the model's oracle.

The CALL model (proofs/instructions/call.py) is exact on the caller's side and takes what
the callee does as a ``CallOracle``. Here, as ``proofs.concrete.call_oracle`` does on
concrete states: a first step with an idle oracle (a callee that succeeds using nothing)
gives the branches before the callee runs — halts on the call-data range, the depth rule's
refusal — and the caller's state when it does run. The callee's code then runs symbolically
in a fresh frame (compute limit min(caller's limit, used + compute), call data the caller's
memory range, the execution's meters, the world's storage with the caller's own as it is
now). Every end of the callee gives an oracle of terms (its outcome, what it used, its
output, its events, the caller's storage as the callee left it) and the CALL model is
stepped again with it: one caller path per callee path. A callee that does not succeed
leaves the world as it found it (spec 6.11).

The callee address may be symbolic: the path forks on it being each deployed address, plus
one branch for every other address (no contract there: the callee cannot run). An address
without code, or with code that fails validation or the policy binding, cannot run, and its
call record carries the refusal's code as the interpreter's does.

From 1.1 STATICCALL runs the same way with a read-only callee frame (6.11: so is every callee
of a read-only frame; a write there halts it with READ_ONLY_WRITE, the models' rule), and
transient storage (2.3.3) is carried across frames as storage is: the path holds every other
contract's transient slots (``Path.transient``), a callee frame starts with its contract's
and the execution's count of slots alive, and a callee that does not succeed leaves them as
it found them. They start empty with every execution (world.entry_extras).
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import z3

from proofs import execute
from proofs.accounting import umin
from proofs.concrete import concrete_bytes, no_call, word
from proofs.machine import RUNNING, SUCCESS, Branch, CallOracle, memory_range
from proofs.symbolic.budget import simplify
from proofs.symbolic.outcome import Record
from proofs.symbolic.world import W, Code, Refusal, empty_transient, frame_state, not_found

GAINED = ("compute", "storage_units", "reads", "writes", "new_slots", "random_counter")
OUTCOME_LABEL = {SUCCESS: "callee succeeded", "reverted": "callee reverted"}


def with_oracle(state, oracle: CallOracle):
    return state.replace(env=dataclasses.replace(state.env, oracle=oracle))


def _mnemonic(static: bool) -> str:
    return "STATICCALL" if static else "CALL"


def _prefix(label: str) -> str:
    """The call-data range's case of a CALL branch label ('memory grows; callee failed')."""
    return label.rpartition(";")[0]


class Calls:
    def __init__(self, explorer):
        self.x = explorer

    def targets(self, address) -> list:
        """(condition, address) for each contract the operand may name; None: any other."""
        a = simplify(address)
        if z3.is_bv_value(a):
            return [(z3.BoolVal(True), a.as_long())]
        known = sorted(self.x.setup.codes)
        out = [(a == W.wval(k), k) for k in known]
        out.append((z3.And([a != W.wval(k) for k in known]) if known else z3.BoolVal(True), None))
        return out

    def step(self, code: Code, p, static: bool = False) -> list:
        """Candidates (branch, path) of the CALL (``static``: STATICCALL) at ``p``:
        feasibility is the caller's."""
        s = p.state
        zero = W.cval(0)
        empty = concrete_bytes(W, b"")
        idle = CallOracle(z3.BoolVal(True), z3.BoolVal(True), z3.BoolVal(False), zero, zero,
                          zero, zero, zero, zero, zero, s.storage, empty,
                          transient_after=s.transient, transient_alive_after=s.transient_alive)
        out = []
        address = s.stack[3]
        depth = self._depth(s) + 1
        refused: set = set()     # (touch branch, target) whose refusal is a candidate
        for b in execute.step(with_oracle(s, idle), _mnemonic(static)):
            if b.status != RUNNING:
                out.append((b, p))               # a halt before the callee (range, base cost)
            elif b.label.endswith("call depth exceeded"):
                rec = self._refused(code, depth, address, "fault", "CALL_DEPTH_EXCEEDED")
                out.append((b, replace(p, records=p.records + (rec,))))
            elif b.label.endswith("callee succeeded"):
                for cond, target in self.targets(address):
                    out += self._run(code, p, b, cond, target, depth, address, static, refused)
        return out

    def _depth(self, s) -> int:
        return simplify(s.env.depth).as_long()

    def _refused(self, code: Code, depth: int, address, status: str, error: str) -> Record:
        zero = W.cval(0)
        return Record(depth, code.address, simplify(address), status, error, None,
                      zero, zero, zero, zero, zero, zero)

    def _run(self, code: Code, p, after_branch, cond, target, depth, address,
             static: bool, refused: set) -> list:
        s = p.state
        callee = self.x.codes.get(target) if target is not None else None
        if not isinstance(callee, Code):
            # One candidate per target: from 1.1 the model has a "callee succeeded" branch
            # for a writable and for a read-only callee, and a callee that cannot run is
            # neither (without this, each gave the same refused path: found by the second
            # oracle, proofs/oracle, as two ends of a vector's one path).
            key = (_prefix(after_branch.label), target)
            if key in refused:
                return []
            refused.add(key)
            refusal = callee if isinstance(callee, Refusal) else not_found(s.w.version)
            real = execute.step(with_oracle(s, no_call(W, s.storage, s.transient,
                                                       s.transient_alive)), _mnemonic(static))
            want = _prefix(after_branch.label) + "; callee cannot run"
            rec = self._refused(code, depth, address, refusal.status, refusal.error)
            return [(Branch(b.label, b.status, z3.And(b.cond, cond), b.state),
                     replace(p, records=p.records + (rec,)))
                    for b in real if b.label.endswith("callee cannot run") and
                    _prefix(b.label) == _prefix(want)]
        guard = Branch(after_branch.label, RUNNING, z3.And(after_branch.cond, cond),
                       after_branch.state)
        out = []
        for _, q in self.x.feasible([(guard, p)], one_step=False):
            out += self._explore_callee(code, q, after_branch, callee, depth, address, static)
        return out

    def _explore_callee(self, code: Code, p, after_branch, callee: Code, depth, address,
                        static: bool) -> list:
        s, after = p.state, after_branch.state
        length, offset = W.widen(s.stack[0]), W.widen(s.stack[1])
        limit = simplify(umin(after.compute_limit, after.compute + W.widen(s.stack[2])))
        world = dict(p.world)
        world[code.address] = after.storage
        transient = dict(p.transient)
        extras: dict = {}
        if after.transient is not None:
            # 2.3.3: the callee's contract's transient slots as this execution left them
            # (a re-entered caller's are its own as they are now); the count is shared.
            transient[code.address] = after.transient
            extras.update(transient=transient.get(callee.address, empty_transient()),
                          transient_alive=after.transient_alive)
        if s.env.read_only is not None:
            # 6.11: STATICCALL's callee is read-only, and so is every callee of a
            # read-only frame (the frame's read_only is a constant on every path here).
            extras["read_only"] = z3.BoolVal(static or z3.is_true(simplify(s.env.read_only)))
        frame = frame_state(
            w=s.w, code=callee, caller=word(W, code.address),
            call_data=memory_range(after.memory, offset, length),
            storage=world[callee.address], compute=simplify(after.compute),
            compute_limit=limit, pages_live=after.pages_live, pages_peak=after.pages_peak,
            memory_limit=after.memory_limit, storage_units=after.storage_units,
            storage_limit=after.storage_limit, reads=after.reads, writes=after.writes,
            new_slots=after.new_slots, random_counter=after.random_counter,
            block_time=s.env.block_time, seed=s.env.seed, depth=depth, **extras)
        index = len(p.records)
        start = replace(p, state=frame, world=world, records=p.records + (None,), visits=(),
                        pcs=(), transient=transient)
        out = []
        for end in self.x.frame(callee, start):
            t, q = end.state, end.path
            ok = end.status == SUCCESS
            after_world, after_transient = dict(q.world), dict(q.transient)
            if ok:
                after_world[callee.address] = t.storage
                if t.transient is not None:
                    after_transient[callee.address] = t.transient
            else:
                # A callee that does not succeed leaves storage and transient slots as it
                # found them (6.11, 2.3.3).
                after_world, after_transient = dict(p.world), dict(p.transient)
            more: dict = {}
            if s.transient is not None:
                more = {"transient_after": after_transient[code.address] if ok else s.transient,
                        "transient_alive_after": simplify(t.transient_alive) if ok
                        else s.transient_alive}
            gained = {n: simplify(getattr(t, n) - getattr(after, n)) for n in GAINED}
            pages = simplify(z3.If(z3.UGT(t.pages_peak, after.pages_live),
                                      t.pages_peak - after.pages_live, W.cval(0)))
            output = t.output if t.output is not None and end.status in OUTCOME_LABEL \
                else concrete_bytes(W, b"")
            oracle = CallOracle(
                runnable=z3.BoolVal(True), succeeded=z3.BoolVal(ok),
                reverted=z3.BoolVal(end.status == "reverted"), compute=gained["compute"],
                pages=pages, storage_units=gained["storage_units"], reads=gained["reads"],
                writes=gained["writes"], new_slots=gained["new_slots"],
                randoms=gained["random_counter"],
                storage_after=after_world[code.address] if ok else s.storage,
                output=output, events=t.events if ok else (), **more)
            want = OUTCOME_LABEL.get(end.status, "callee failed")
            error = None if end.status in OUTCOME_LABEL else end.status
            rec = Record(depth, code.address, simplify(address),
                         s.w.spec.errors[error].kind if error else end.status, error,
                         simplify(t.pc).as_long() if error else None, gained["compute"],
                         t.memory.pages, gained["reads"], gained["writes"], gained["new_slots"],
                         gained["storage_units"])
            records = q.records[:index] + (rec,) + q.records[index + 1:]
            caller_path = replace(q, state=s, world=after_world, records=records,
                                  visits=p.visits, pcs=p.pcs, transient=after_transient)
            for b in execute.step(with_oracle(s, oracle), _mnemonic(static)):
                if b.label.endswith(want) and _prefix(b.label) == _prefix(after_branch.label):
                    out.append((b, caller_path))
        return out
