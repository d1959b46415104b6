"""The model's steps, in the form of the reference's native trace (reference_vm/trace.py).

Before each instruction the executor shows ``Recorder.observe`` the state; the recorder keeps
the terms and, once the path's model is known, gives each step as the native trace gives it:
depth, pc, op, opName, immediate (when the instruction has one), stack bottom to top,
computeUsed (before the instruction), cost (the row's base cost) and memSize in bytes. The
traces are compared where the runner compares an implementation's (conformance/run/tracediff).
"""

from __future__ import annotations

from proofs.symbolic.solve import value
from proofs.symbolic.world import Code

class Recorder:
    def __init__(self) -> None:
        self.seen: list = []

    def observe(self, code: Code, pc: int, state) -> None:
        mnemonic, imm = code.at[pc]
        self.seen.append((pc, state.w.spec.by_mnemonic[mnemonic], imm, state.env.depth,
                          state.compute, state.memory.size(state.w), state.height, state.stack))

    def steps(self, model) -> list[dict]:
        out = []
        for pc, ins, imm, depth, compute, size, height, stack in self.seen:
            n = value(model, height)
            step = {"depth": value(model, depth), "pc": pc, "op": ins.opcode, "opName": ins.mnemonic,
                    "stack": [hex(value(model, t)) for t in reversed(stack[:n])],
                    "computeUsed": value(model, compute), "cost": ins.cost,
                    "memSize": value(model, size)}
            if ins.immediate_size:
                step["immediate"] = hex(imm)
            out.append(step)
        return out
