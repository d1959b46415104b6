"""Prepare validated code for execution: bind handlers and cut the code into segments.

A segment is a run of instructions that execution always enters at its first instruction and
leaves only after its last: it starts at offset 0, at every jump target and after every
CALLSUB, and ends after any instruction that transfers control, halts, has a cost rule or
reads the compute meter. Only a segment's last instruction can therefore fail at run time
other than through its stack or base-cost checks, and only it can observe the meter; so when
a segment's stack needs and total base cost fit, execute.py may check and charge them once for
the whole segment with a result identical to checking every instruction in turn.

Prepared programs are cached by their container's bytes and rules (``load_program``: a version
at a word width), bounded
in bytes, not in entries: a long-lived adapter or fuzz worker meets code from outside, and a
64 KiB code of one-byte instructions prepares into about 28 MB. Each entry is charged
:func:`program_bytes`, an estimate computed from what the program holds (its code and data
lengths, its instructions and its segments) with per-item sizes measured once with tracemalloc
(CPython 3.11, 64-bit, codes of 4 KiB: 397 bytes per code byte when every instruction is a
segment, 231 when one segment holds them all, 38 for PUSH8 runs; the estimate is 10 to 13%
above each), and the least recently used entries leave when the total passes
``PROGRAM_CACHE_BYTES`` (64 MiB by default); a program larger than that alone is not cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import NamedTuple

from reference_vm.decode import Decoded
from reference_vm.errors import InternalInvariantError
from reference_vm.instructions import table
from reference_vm.machine import Handler
from reference_vm.validate import ValidCode, validate
from reference_vm.rules import Rules

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


def prepare(code: ValidCode, rules: Rules) -> Program:
    handlers = table(rules)
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


PROGRAM_CACHE_BYTES = 64 << 20
# Bytes an entry holds (measured as above; see the module's docstring).
ENTRY_BYTES = 1024          # the entry, its key tuple, the Program and ValidCode objects
CODE_BYTE_BYTES = 16        # per code byte: the code copy and its slot in ``segments``
INSTRUCTION_BYTES = 240     # per instruction: its Decoded, bound (handler, immediate) pair, step pair
SEGMENT_BYTES = 180         # per segment: the Segment and its tuples


def program_bytes(program: Program, blob_size: int) -> int:
    """The estimated bytes a cached program of a ``blob_size``-byte container holds (its key
    included): a function of the program's shape alone, the same on every run."""
    segments = sum(1 for s in program.segments if s is not None)
    return (ENTRY_BYTES + blob_size + len(program.data) + CODE_BYTE_BYTES * len(program.code.code)
            + INSTRUCTION_BYTES * len(program.code.instructions) + SEGMENT_BYTES * segments)


class CacheInfo(NamedTuple):
    hits: int
    misses: int
    currsize: int        # entries
    bytes: int           # their estimated bytes (program_bytes)
    max_bytes: int


class ProgramCache:
    """``load_program``: a least-recently-used cache bounded in estimated bytes, with the
    ``cache_clear`` and ``cache_info`` of functools' caches."""

    def __init__(self, max_bytes: int = PROGRAM_CACHE_BYTES):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[bytes, Rules], tuple[Program, int]] = OrderedDict()
        self._bytes = self._hits = self._misses = 0
        self._lock = threading.Lock()
        # An attribute of the instance, not of the class: code that empties every cache of
        # reference_vm/ (conformance.fuzz.feedback) finds it on the instance alone.
        self.cache_clear = self._clear

    def __call__(self, blob: bytes, rules: Rules) -> Program:
        """Validate and prepare a container, cached by its bytes and rules: the result depends
        only on its arguments, and a process serving many requests meets the same code again
        (the policy is bound separately, from refusals computed once per policy:
        policy.refusals)."""
        key = (blob, rules)
        entries = self._entries
        entry = entries.get(key)         # the hit path takes no lock: each step is atomic
        if entry is not None:
            try:
                entries.move_to_end(key)
            except KeyError:             # another thread evicted it meanwhile
                pass
            self._hits += 1
            return entry[0]
        self._misses += 1
        program = prepare(validate(blob, rules), rules)
        size = program_bytes(program, len(blob))
        if size > self.max_bytes:
            return program
        with self._lock:
            if key not in self._entries:
                self._entries[key] = (program, size)
                self._bytes += size
                while self._bytes > self.max_bytes:
                    self._bytes -= self._entries.popitem(last=False)[1][1]
        return program

    def _clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = self._hits = self._misses = 0

    def cache_info(self) -> CacheInfo:
        with self._lock:
            return CacheInfo(self._hits, self._misses, len(self._entries), self._bytes, self.max_bytes)


load_program = ProgramCache()
