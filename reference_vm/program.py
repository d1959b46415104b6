"""Prepare validated code for execution: bind handlers and cut the code into segments.

A segment is a run of instructions that execution always enters at its first instruction and
leaves only after its last: it starts at offset 0, at every jump target and after every
CALLSUB, and ends after any instruction that transfers control, halts, has a cost rule or
reads the compute meter. Only a segment's last instruction can therefore fail at run time
other than through its stack or base-cost checks, and only it can observe the meter; so when
a segment's stack needs and total base cost fit, execute.py may check and charge them once for
the whole segment with a result identical to checking every instruction in turn.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from reference_vm.decode import Decoded
from reference_vm.errors import InternalInvariantError
from reference_vm.instructions import table
from reference_vm.machine import Handler
from reference_vm.validate import ValidCode, validate
from reference_vm.words import Word

# COMPUTELEFT has no cost rule but must see the meter exactly as a per-instruction charge would.
METER_READERS = frozenset({"COMPUTELEFT"})


@dataclass(frozen=True, slots=True)
class Segment:
    start: int
    end: int                 # offset after the last instruction: where a fall-through goes
    last_pc: int
    cost: int                # sum of the base costs
    need: int                # stack items that must be present on entry
    peak: int                # highest stack growth over the segment, relative to entry
    body: tuple[tuple[Handler, int], ...]     # all but the last instruction
    last: tuple[Handler, int]
    steps: tuple[tuple[Decoded, Handler], ...]  # every instruction, for exact stepping


@dataclass(frozen=True)
class Program:
    code: ValidCode
    data: bytes
    segments: tuple[Segment | None, ...]   # indexed by offset; None inside a segment


def _ends_segment(d: Decoded) -> bool:
    ins = d.instruction
    return ins.flow != "next" or ins.cost_rule is not None or ins.mnemonic in METER_READERS


def _segment(run: list[Decoded], handlers: dict[int, Handler]) -> Segment:
    height = need = peak = 0
    cost = 0
    bound = []
    for d in run:
        ins = d.instruction
        need = max(need, ins.inputs - height)
        height += ins.outputs - ins.inputs
        peak = max(peak, height)
        cost += ins.cost
        bound.append((handlers[ins.opcode], d.immediate))
    return Segment(start=run[0].offset, end=run[-1].end, last_pc=run[-1].offset,
                   cost=cost, need=need, peak=peak,
                   body=tuple(bound[:-1]), last=bound[-1],
                   steps=tuple(zip(run, [h for h, _ in bound])))


def prepare(code: ValidCode, word: Word) -> Program:
    handlers = table(word)
    starts = {0}
    for d in code.instructions:
        if d.instruction.immediate_kind == "jump_target":
            starts.add(d.immediate)
        if d.instruction.flow == "call_sub":
            starts.add(d.end)
    segments: list[Segment | None] = [None] * len(code.code)
    run: list[Decoded] = []
    for d in code.instructions:
        if run and d.offset in starts:
            segments[run[0].offset] = _segment(run, handlers)
            run = []
        run.append(d)
        if _ends_segment(d):
            segments[run[0].offset] = _segment(run, handlers)
            run = []
    if run:  # validation guarantees the last instruction ends a segment
        raise InternalInvariantError("code ends inside a segment")
    return Program(code=code, data=code.data, segments=tuple(segments))


@functools.lru_cache(maxsize=4096)
def load_program(blob: bytes, word: Word) -> Program:
    """Validate and prepare a container, cached by its bytes and word: the result depends only
    on its arguments, and a process serving many requests meets the same code again (the
    policy is bound separately, from refusals computed once per policy: policy.refusals)."""
    return prepare(validate(blob), word)
