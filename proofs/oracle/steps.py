"""The model's steps, in the form of the reference's native trace (reference_vm/trace.py).

Before each instruction the executor shows ``Recorder.observe`` the state; the recorder keeps
the terms and, once the path's model is known, gives each step as the native trace gives it:
depth, pc, opName, computeUsed (before the instruction), memSize in bytes and the stack bottom
to top. Only what both executions define before an instruction is compared; the trace's
``op``, ``cost`` and ``immediate`` are read from the table by both and left out.
"""

from __future__ import annotations

from proofs.symbolic.solve import value
from proofs.symbolic.world import Code

KEYS = ("depth", "pc", "opName", "computeUsed", "memSize", "stack")


class Recorder:
    def __init__(self) -> None:
        self.seen: list = []

    def observe(self, code: Code, pc: int, state) -> None:
        mnemonic = code.at[pc][0]
        self.seen.append((pc, mnemonic, state.env.depth, state.compute,
                          state.memory.size(state.w), state.height, state.stack))

    def steps(self, model) -> list[dict]:
        out = []
        for pc, mnemonic, depth, compute, size, height, stack in self.seen:
            n = value(model, height)
            out.append({"depth": value(model, depth), "pc": pc, "opName": mnemonic,
                        "computeUsed": value(model, compute), "memSize": value(model, size),
                        "stack": [hex(value(model, t)) for t in reversed(stack[:n])]})
        return out


def view(line: dict) -> dict:
    """A native trace line of the reference reduced to KEYS."""
    return {k: line[k] for k in KEYS}


def first_difference(model_steps: list[dict], reference_steps: list[dict]) -> str | None:
    """The first step where the two executions part, in one line, or None when every step of
    both agrees (the results then differ only in what follows the last step)."""
    for index, (m, r) in enumerate(zip(model_steps, reference_steps)):
        r = view(r)
        if m != r:
            fields = [k for k in KEYS if m[k] != r[k]]
            shown = "; ".join(f"{k}: model {m[k]!r}, reference {r[k]!r}" for k in fields)
            return f"step {index} (pc {r['pc']} {r['opName']}, depth {r['depth']}): {shown}"
    if len(model_steps) != len(reference_steps):
        shorter = "model" if len(model_steps) < len(reference_steps) else "reference"
        return (f"step {min(len(model_steps), len(reference_steps))}: the {shorter} ran no more "
                f"instructions ({len(model_steps)} model steps, {len(reference_steps)} reference)")
    return None
