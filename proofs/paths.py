"""The agreement inputs replayed through every path that runs a frame's instructions.

replay.run_interpreter runs one instruction through ``Execution.step``, the interpreter's
defining per-instruction path, and agreement.py compares that with the model. The same
inputs also run here through the two other ways an execution runs instructions:

- ``fast``: ``Execution.run_segment``, the path of every untraced execution (the segment's
  stack need, peak and base cost checked and charged once, its handlers back to back; when
  a check fails, ``step``);
- ``compiled``: the function compiled_vm.codegen generates for the segment as a block region
  (compiled_vm.regions.stack_shape gives its need and peak), called as compiled_vm.engine
  calls it: ``fn(frame, stack, meter, limit)`` returns the next offset, or ``~pc`` to hand
  the segment at pc to ``run_segment`` (an aggregate check failed). A region codegen cannot
  compile stays interpreted in the engine, so here too (``run_segment``).

Each input runs as the instruction alone and as short straight programs whose segment
(built by reference_vm.program._segment, the interpreter's own) has another need, peak and
base cost than the instruction: ``PUSH1 POP`` before it (and after it when it does not end
its segment) and ``POP PUSH8 top`` before it (the same top pushed back). Each program runs
at the input's own state and at the edges of its aggregates, computed here from the spec
table (not from the segment): the stack height at which its peak fits exactly and one item
more, the compute limit that covers its base cost exactly and one unit less, and a stack
one item short of its need. On every one, ``fast`` and ``compiled`` must observe exactly
what ``step`` observes (replay.Observed: outcome, next offset, whole stack and memory,
storage, meters, events, output, return data, random counter; and the frame's pc when it
fails, which is the error's pc).

This is the only module of proofs/ that imports compiled_vm.
"""

from __future__ import annotations

import dataclasses
from types import CodeType

from compiled_vm.codegen import generate
from compiled_vm.regions import Region, stack_shape
from reference_vm.decode import Decoded
from reference_vm.instructions import table
from reference_vm.program import _ends_segment, _segment
from reference_vm.rules import rules

from proofs.replay import complete, run_interpreter

FILLER = 0xA5           # PUSH1's immediate in the programs (any non-zero byte)
PATHS = ("fast", "compiled")


class PathError(Exception):
    """A compiled region answered something the engine would not accept."""


def shape(items: list[tuple[str, int]], version: str) -> tuple[int, int, int]:
    """(need, peak, base cost) of a straight instruction list, from the spec table."""
    height = need = peak = cost = 0
    rows = rules(version).spec.by_mnemonic
    for mnemonic, _ in items:
        ins = rows[mnemonic]
        need = max(need, ins.inputs - height)
        height += ins.outputs - ins.inputs
        peak = max(peak, height)
        cost += ins.cost
    return need, peak, cost


def variants(x: dict) -> list[tuple[str, list[tuple[str, int]], dict]]:
    """(name, program, inputs) of every replay of a completed inputs ``x``."""
    rule = rules(x["version"])
    ins = rule.spec.by_mnemonic[x["mnemonic"]]
    depth = rule.stack_depth
    me = (x["mnemonic"], x["immediate"])
    stack = list(x["stack"])
    top = stack[-1] if stack else 0
    out = [("the instruction", [me], x)]
    ends = _ends_segment(Decoded(x["pc"], ins, x["immediate"]))
    around = [("PUSH1", FILLER), ("POP", 0), me] + ([] if ends else [("PUSH1", FILLER),
                                                                        ("POP", 0)])
    name = "PUSH1 POP " + ("before" if ends else "around")
    need, peak, cost = shape(around, x["version"])
    out.append((name, around, x))
    for height in (depth - peak, depth - peak + 1):
        if height >= len(stack):
            out.append((f"{name}, stack height {height}", around, {**x, "height": height}))
    for limit in (x["compute_used"] + cost, x["compute_used"] + cost - 1):
        out.append((f"{name}, compute limit {limit}", around, {**x, "compute_limit": limit}))
    swapped = [("POP", 0), ("PUSH8", top), me]
    out.append(("POP PUSH8 before", swapped, x))
    short = shape(swapped, x["version"])[0] - 1
    fewer = {k: v for k, v in x.items() if k != "callee_address"}
    fewer.update(stack=stack[len(stack) - short:] if short else [], height=short)
    out.append((f"POP PUSH8 before, {short} stack items", swapped, fewer))
    return out


def segment_of(x: dict, program: list[tuple[str, int]], handler=None):
    """The program as one segment starting at the input's pc, built by program._segment
    with the table's handlers (``handler`` in place of the instruction's)."""
    rule = rules(x["version"], x["width"])
    rows = rule.spec.by_mnemonic
    handlers = dict(table(rule))
    if handler is not None:
        handlers[rows[x["mnemonic"]].opcode] = handler
    run, offset = [], x["pc"]
    for mnemonic, imm in program:
        ins = rows[mnemonic]
        run.append(Decoded(offset, ins, imm & ((1 << 8 * ins.immediate_size) - 1)))
        offset += ins.size
    return _segment(run, handlers)


_CODE: dict[str, CodeType] = {}     # generated source -> its code object
MAX_CODES = 4096


def compiled(segment, bits: int, version: str):
    """codegen's function for ``segment`` as a block region, or None when codegen cannot
    compile it (the engine then keeps interpreting it)."""
    need, peak, net = stack_shape((segment,))
    try:
        source, namespace = generate(Region((segment,), False, need, peak, net),
                                     rules(version, bits))
        code = _CODE.get(source)
        if code is None:
            if len(_CODE) >= MAX_CODES:
                _CODE.clear()
            code = _CODE[source] = compile(source, f"<rtwo-compiled {segment.start}>", "exec")
    except Exception:  # noqa: BLE001 - as compiled_vm.engine.Engine.compile
        return None
    namespace = dict(namespace)
    exec(code, namespace)  # noqa: S102 - source generated by compiled_vm from a segment
    return namespace["region"]


def runner(path: str, segment, bits: int, version: str, failed_at: list):
    """``run(execution, frame)`` for replay.run_interpreter: the segment through ``path``,
    returning the next offset; the frame's pc is appended to ``failed_at`` when it raises."""
    def interpreted(execution, frame, through):
        target = through(frame, segment)
        return segment.end if target is None else target

    if path == "step":
        def run(execution, frame):
            return interpreted(execution, frame, execution.step)
    elif path == "fast":
        def run(execution, frame):
            return interpreted(execution, frame, execution.run_segment)
    else:
        fn = compiled(segment, bits, version)

        def run(execution, frame):
            if fn is None:
                return interpreted(execution, frame, execution.run_segment)
            result = fn(frame, frame.stack, execution.meter, frame.compute_limit)
            if result >= 0:
                return result
            if ~result != segment.start:
                raise PathError(f"compiled block handed back offset {~result}")
            return interpreted(execution, frame, execution.run_segment)

    def observed(execution, frame):
        try:
            return run(execution, frame)
        except BaseException:
            failed_at.append(frame.pc)
            raise
    return observed


def observe(x: dict, program, path: str, handler=None, probe_keys=()):
    """(Observed, the frame's pc when it failed or None) of ``program`` run through
    ``path`` from the state of ``x``."""
    segment = segment_of(x, program, handler)
    failed_at: list = []
    got = run_interpreter(x, handler, probe_keys,
                          run=runner(path, segment, x["width"], x["version"], failed_at))
    return got, (failed_at[0] if failed_at else None)


def differences(inputs: dict, handler=None, probe_keys=()) -> list[str]:
    """Where ``fast`` or ``compiled`` observe otherwise than ``step`` on any replay of
    ``inputs`` (empty when every path agrees on every program)."""
    x = complete(inputs)
    diffs = []
    for name, program, y in variants(x):
        y = complete(y)
        expected, expected_pc = observe(y, program, "step", handler, probe_keys)
        for path in PATHS:
            got, got_pc = observe(y, program, path, handler, probe_keys)
            found = [(f.name, getattr(expected, f.name), getattr(got, f.name))
                     for f in dataclasses.fields(expected)
                     if getattr(expected, f.name) != getattr(got, f.name)]
            if expected_pc != got_pc:
                found.append(("pc when failing", expected_pc, got_pc))
            for field, mine, theirs in found[:3]:
                diffs.append(f"{path} path, {name}: {field}: step {_short(mine)} "
                             f"{path} {_short(theirs)}")
    return diffs


def _short(v) -> str:
    if isinstance(v, (bytes, list)) and len(v) > 24:
        v = f"{type(v).__name__} of {len(v)}, ...{v[-8:]!r}"
    text = repr(v) if not isinstance(v, str) else v
    return text if len(text) < 160 else text[:150] + "..."
