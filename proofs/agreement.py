"""Agreement of the z3 model with the reference interpreter, instruction by instruction.

``compare(inputs)`` runs one instruction on both from the same concrete state and lists every
observable difference: outcome, next offset, stack, return stack, memory (size everywhere,
bytes at probed indices), storage, meters, events, output, return data, random counter. On a
halt only what survives the frame is compared (outcome, meters, storage, memory size, and the
output of success or revert).

Every input is also replayed through the interpreter's fast path (``run_segment``) and
compiled_vm's generated code, alone and in short programs (paths.py): each must observe
exactly what ``step`` observes.

Three sources of inputs: branches.py (z3 solves every branch of the model), hypothesis at
64 bits, and exhaustive.py (every operand pair at 8 bits).
"""

from __future__ import annotations

import z3

from proofs import execute, paths
from proofs.concrete import (
    ModelError, World, call_oracle, concrete_state, memory_probes, observe, sample, taken,
    with_oracle, world_of,
)
from proofs.replay import CALLS, complete, run_interpreter

RUNNING = "running"


def model_outcome(x: dict, model=None, world: World | None = None, pre=None):
    """The model's branch taken from the concrete state of ``x`` (a completed inputs), or
    from ``pre`` when given (that state, already built); a CALL's callee runs through the
    model over ``world`` (made from ``x`` when not given)."""
    pre = concrete_state(x) if pre is None else pre
    if x["mnemonic"] in CALLS:
        world = world_of(x, pre) if world is None else world
        world.model_table = None if model is None else {x["mnemonic"]: model}
        pre = with_oracle(pre, call_oracle(pre, world, model, x["mnemonic"] == "STATICCALL"))
    size = pre.w.spec.by_mnemonic[x["mnemonic"]].immediate_size
    imm = z3.BitVecVal(x["immediate"], 8 * size) if size else None
    return taken(execute.step(pre, x["mnemonic"], imm, model))


def compare(inputs: dict, handler=None, model=None) -> list[str]:
    """Differences between interpreter and model on ``inputs`` (empty when they agree)."""
    x = complete(inputs)
    keys = tuple(v for v in x["stack"][-4:])
    got = run_interpreter(x, handler, keys)
    # Every byte the interpreter holds non-zero is probed on the model too.
    written = nonzero(got.memory)
    try:
        pre = concrete_state(x)
        world = world_of(x, pre)
        expected = observe(x, model_outcome(x, model, world, pre), keys, written, world=world)
    except ModelError as err:
        return [f"model: {err}"] + paths.differences(x, handler, keys)
    diffs = []

    def check(name, mine, theirs):
        if mine != theirs:
            diffs.append(f"{name}: model {_short(mine)} interpreter {_short(theirs)}")

    check("outcome", expected.status, got.status)
    check("meters", expected.meters, got.meters)
    check("storage", expected.storage, got.storage)
    check("memory size", len(expected.memory), len(got.memory))
    check("callee storage", expected.callee_storage, got.callee_storage)
    check("transient", expected.transient, got.transient)
    check("transient alive", expected.transient_alive, got.transient_alive)
    check("callee transient", expected.callee_transient, got.callee_transient)
    if world is not None and x["mnemonic"] in CALLS and expected.status == got.status:
        check("call records", world.records, got.calls)
    if expected.status in ("success", "reverted") and expected.status == got.status:
        assert got.output is not None      # a halt gives its output
        check("output", expected.output, sample(got.output))
    if expected.status == RUNNING and got.status == RUNNING:
        check("next pc", expected.pc, got.pc)
        check("stack height", expected.height, got.height)
        top = min(len(expected.stack), len(got.stack))
        check("stack top", expected.stack[len(expected.stack) - top:],
              got.stack[len(got.stack) - top:])
        check("return stack height", len(expected.return_stack), len(got.return_stack))
        known = [(m, i) for m, i in zip(expected.return_stack, got.return_stack) if m is not None]
        check("return stack top", [m for m, _ in known], [i for _, i in known])
        mismatch = [i for i in _probe_set(x, len(got.memory), written)
                    if expected.memory[i] != got.memory[i]]
        if mismatch:
            i = mismatch[0]
            diffs.append(f"memory[{i}]: model {expected.memory[i]} interpreter {got.memory[i]}"
                         f" ({len(mismatch)} bytes differ)")
        check("events", expected.events, [(a, t, sample(d)) for a, t, d in got.events])
        check("return data", expected.return_data, sample(got.return_data))
        check("random counter", expected.random_counter, got.random_counter)
    return diffs + paths.differences(x, handler, keys)


def nonzero(data: bytes) -> list[int]:
    """The indices of the non-zero bytes (memory is mostly zeros: only the span between the
    first and the last non-zero byte is looked at byte by byte)."""
    end = len(data.rstrip(b"\0"))
    start = end - len(data[:end].lstrip(b"\0"))
    return [i for i in range(start, end) if data[i]]


def _probe_set(x: dict, size: int, written: list[int]) -> list[int]:
    probes = set(memory_probes(x, size))
    probes.update(written)
    return sorted(probes)


def _short(v) -> str:
    text = repr(v)
    return text if len(text) < 160 else text[:150] + "..."
