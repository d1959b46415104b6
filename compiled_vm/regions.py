"""Regions to compile: one segment, or a loop made of segments (a simple cycle).

A region is a path of segments [s0, s1, ..., sk] of one program where each next segment is a
static successor of the one before it (the fall-through of an instruction that continues, the
target of JUMP, either side of JUMPI). A loop region's last segment leads back to s0. Loops
whose path changes the stack height are not compiled as loops (their locals would not line up
from one iteration to the next); their segments are compiled one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_vm.program import Program, Segment

MAX_LOOP_SEGMENTS = 8


@dataclass(frozen=True)
class Region:
    segments: tuple[Segment, ...]
    loop: bool
    need: int      # stack items that must be present on entry, over the whole path
    peak: int      # highest stack growth over the path, relative to entry
    net: int       # stack height change over the path


def successors(segment: Segment) -> tuple[int, ...]:
    """Static successors of a segment (offsets), in a fixed order."""
    last, _ = segment.steps[-1]
    flow = last.instruction.flow
    if flow == "next":
        return (segment.end,)
    if flow == "jump":
        return (last.immediate,)
    if flow == "branch":
        return (last.immediate,) if last.immediate == segment.end else (last.immediate, segment.end)
    return ()  # halt, call_sub, return_sub: not followed


def stack_shape(segments: tuple[Segment, ...]) -> tuple[int, int, int]:
    height = need = peak = 0
    for segment in segments:
        for decoded, _ in segment.steps:
            ins = decoded.instruction
            need = max(need, ins.inputs - height)
            height += ins.outputs - ins.inputs
            peak = max(peak, height)
    return need, peak, height


def segment_at(program: Program, pc: int) -> Segment:
    """The segment starting at ``pc`` (a head, or a static successor found in the program)."""
    segment = program.segments[pc]
    assert segment is not None, f"no segment starts at {pc}"
    return segment


def find_loop(program: Program, head: int) -> tuple[Segment, ...] | None:
    """The shortest simple cycle of static edges from head back to head (breadth first, in
    successor order, at most MAX_LOOP_SEGMENTS segments), or None."""
    segments = program.segments
    frontier: list[tuple[int, ...]] = [(head,)]
    for _ in range(MAX_LOOP_SEGMENTS):
        grown: list[tuple[int, ...]] = []
        for path in frontier:
            for nxt in successors(segment_at(program, path[-1])):
                if nxt == head:
                    return tuple(segment_at(program, pc) for pc in path)
                if nxt not in path and segments[nxt] is not None:
                    grown.append(path + (nxt,))
        frontier = grown
        if not frontier:
            return None
    return None


def region_at(program: Program, head: int) -> Region:
    """The loop through head when there is one whose stack height returns, else head's segment."""
    loop = find_loop(program, head)
    if loop is not None:
        need, peak, net = stack_shape(loop)
        if net == 0:
            return Region(loop, True, need, peak, 0)
    single = (segment_at(program, head),)
    need, peak, net = stack_shape(single)
    return Region(single, False, need, peak, net)
