"""Which regions the native tier compiles, and how each instruction is lowered.

Every instruction of a region is one of three kinds, decided from its row of the spec table:

- ``NATIVE``: computed by the generated machine code: PUSH/DUP/SWAP/POP/NOP, arithmetic,
  comparisons, bitwise operations (from 1.1 also MULHU, MULHS, CLZ, CTZ, POPCNT), the
  frame's reads (CALLER, SELF, CALLDATASIZE,
  CALLDATALOAD, DATASIZE, RETURNDATASIZE, MSIZE, COMPUTELEFT) and the static jumps. None of
  them has a cost rule or is gated, so none can fail once its segment's checks passed.
- ``IN_PLACE``: MLOAD, MSTORE, MLOAD8, MSTORE8, done in place while memory already covers the
  access (their memory_expansion rule then charges nothing); otherwise the native code leaves
  at the instruction and the reference handler runs it (grows memory or fails).
- ``HANDLER``: everything else — storage and transient storage, events, calls and
  STATICCALL, SHA-256, the copies, the gated context reads (TIME, RANDOM), CALLSUB/RETSUB
  and the halts: the native code always leaves at the instruction's exact boundary and the
  shared reference handler, built for the execution's version, runs it.

A row that would change kind with the spec (a cost rule or a gate added to ADD, say) falls to
HANDLER: only rows without a cost rule and not gated are computed natively, and only the
memory_expansion rule is ever done in place.

A region (compiled_vm.regions: a loop of segments or one segment) is compiled natively when
it is a loop, or a single segment of at least ``min_block`` instructions (a crossing into
machine code costs about as much as running that many instructions as generated Python); a
loop must hold at least ``PER_HANDLER`` native instructions per HANDLER instruction, or it
stays on the compiled tier, where a handler is a plain Python call. Bounds (code size and
compile time per region): at most ``MAX_INSTRUCTIONS`` instructions, a stack window
(need + peak) within the stack depth of the execution's version, and at most ``MAX_IR`` LLVM instructions once lowered.
"""

from __future__ import annotations

from dataclasses import dataclass

from compiled_vm.regions import Region, region_at
from reference_vm.instructions.stack import family_of
from reference_vm.program import Program
from reference_vm.rules import Rules

NATIVE, IN_PLACE, HANDLER = "native", "in_place", "handler"

# The operations the lowering computes (lower.py); their costs, stack effects and operands
# come from the spec table.
COMPUTED = frozenset({
    "POP", "NOP", "ADD", "SUB", "MUL", "DIVU", "DIVS", "REMU", "REMS",
    "EQ", "ISZERO", "LTU", "LTS", "GTU", "GTS",
    "AND", "OR", "XOR", "NOT", "SHL", "SHRU", "SHRS", "ROTL", "ROTR",
    "MULHU", "MULHS", "CLZ", "CTZ", "POPCNT",
    "CALLER", "SELF", "CALLDATASIZE", "CALLDATALOAD", "DATASIZE", "RETURNDATASIZE", "MSIZE",
    "COMPUTELEFT", "JUMP", "JUMPI",
})
MEMORY_ACCESS = frozenset({"MLOAD", "MSTORE", "MLOAD8", "MSTORE8"})

MAX_INSTRUCTIONS = 384    # per region: a larger one stays on the compiled tier
MAX_IR = 12_000           # LLVM instructions per lowered region (exits and resumes included)
MIN_BLOCK = 48            # instructions in a single segment worth a crossing into native code
PER_HANDLER = 16          # native instructions a loop needs per instruction that leaves


def kind(decoded) -> str:
    """NATIVE, IN_PLACE or HANDLER for one decoded instruction."""
    ins = decoded.instruction
    if ins.determinism == "gated":
        return HANDLER
    if ins.mnemonic in MEMORY_ACCESS and ins.cost_rule == "memory_expansion":
        return IN_PLACE
    if ins.cost_rule is not None:
        return HANDLER
    if ins.mnemonic in COMPUTED or family_of(ins) is not None:
        return NATIVE
    return HANDLER


@dataclass(frozen=True)
class Plan:
    """A region the native tier compiles: ``counted`` loops run a number of iterations
    bounded by the compute limit with no check inside; other loops and blocks check and
    charge each segment on entry."""

    region: Region
    counted: bool
    head: int
    instructions: int
    rules: Rules         # the version and word width the region's code runs under


def plan_for(program: Program, head: int, rules: Rules, min_block: int = MIN_BLOCK,
             per_handler: int = PER_HANDLER) -> Plan | None:
    """The plan for the region at ``head`` of a program run under ``rules``, or None when it
    stays on the lower tiers."""
    region = region_at(program, head)
    steps = [d for segment in region.segments for d, _ in segment.steps]
    count = len(steps)
    if count > MAX_INSTRUCTIONS or region.need + region.peak > rules.stack_depth:
        return None
    kinds = [kind(d) for d in steps]
    handlers = kinds.count(HANDLER)
    if region.loop:
        if handlers * per_handler > count - handlers:
            return None
        cost = sum(s.cost for s in region.segments)
        counted = handlers == 0 and cost > 0
    else:
        if count < min_block:
            return None
        counted = False
    return Plan(region, counted, head, count, rules)
