"""Per-instruction vectors generated from the instruction table, for every one of its rows:
stack underflow, stack overflow at the stack depth boundary, compute at limit-1/limit/limit+1
of a program that ends with the instruction, the base cost alone not fitting, and the
instruction forbidden by name.

The rows and costs are each version's (across_versions): a case the same in two versions is
one definition valid in both, written for the version that added its instruction; a compute
boundary that moves with a version's costs (SHA256's in 1.1) is a case of each version."""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import (
    OPEN, OTHER, Boundary, across_versions, case, fill_stack, home, push_all,
)
from conformance.corpus.vector import Case, run_reference, input_of

CALLEE = "push 1\nstop\n"

# Operands (bottom to top) that make the instruction succeed cheaply but exercise its cost rule.
OPERANDS = {
    "CALL": [OTHER, 1000, 0, 0], "STATICCALL": [OTHER, 1000, 0, 0], "MCOPY": [0, 0, 8], "CALLDATACOPY": [0, 0, 8], "DATACOPY": [0, 0, 8],
    "RETURNDATACOPY": [0, 0, 8], "SHA256": [0, 0, 8], "RETURN": [0, 8], "REVERT": [0, 8],
    **{f"LOG{n}": [0, 8] + [1] * n for n in range(5)},
}
SPECIAL = {
    "STOP": "stop\n", "TRAP": "trap\n", "NOP": "nop\nstop\n",
    "JUMP": "jump end\nend:\nstop\n", "JUMPI": "push 1\njumpi end\nend:\nstop\n",
    "CALLSUB": "callsub end\nend:\nstop\n", "RETSUB": "callsub s\nstop\ns:\nretsub\n",
}


def _op(ins) -> str:
    if ins.immediate_kind == "jump_target":
        return f"{ins.mnemonic.lower()} end\n"
    if ins.immediate_size:
        return f"{ins.mnemonic.lower()} 1\n"
    return f"{ins.mnemonic.lower()}\n"


def _tail(ins) -> str:
    """What follows the instruction: a STOP (costs 0), and the label jumps need."""
    if ins.flow == "halt":
        return ""
    return "end:\nstop\n" if ins.immediate_kind == "jump_target" else "stop\n"


def happy_program(ins) -> tuple[str, str]:
    """(setup, whole program): the program runs the instruction last among charged ones."""
    if ins.mnemonic in SPECIAL:
        return "", SPECIAL[ins.mnemonic]
    setup = push_all(OPERANDS.get(ins.mnemonic, [1] * ins.inputs))
    return setup, setup + _op(ins) + _tail(ins)


def _base(ins, id_suffix: str, description: str, code: str, **kw) -> Case:
    return case(f"{ins.type}/{ins.mnemonic}/{id_suffix}", description, code,
                opcodes=(ins.mnemonic,), contracts={OTHER: CALLEE} if ins.cost_rule == "call" else {},
                policy=kw.pop("policy", OPEN), since=home(ins.mnemonic), **kw)


def _compute_used(c: Case, version: str) -> int:
    return run_reference(input_of(c), version).usage.compute


def cases():
    return across_versions(_cases)


def _cases(version: str):
    """The generic cases of every row of ``version``, measured under its rules."""
    table = spec.load(version)
    stack_depth = table.limits["machine"]["stack_depth"]
    for ins in table.instructions:
        m = ins.mnemonic
        setup, program = happy_program(ins)
        if ins.inputs:
            short = push_all([1] * (ins.inputs - 1)) + _op(ins) + _tail(ins)
            yield _base(ins, "stack_underflow", f"{m} with {ins.inputs - 1} of its {ins.inputs} inputs.", short,
                        categories=("fault",))
        if ins.outputs > ins.inputs:
            growth = ins.outputs - ins.inputs
            for at, delta in (("limit-1", -1), ("limit", 0), ("limit+1", 1)):
                height = stack_depth - growth + delta
                yield _base(ins, f"stack_depth_{at}", f"{m} on a stack of {height} items (depth {stack_depth}).",
                            fill_stack(height) + _op(ins) + _tail(ins), categories=("boundary",),
                            boundary=Boundary("stack_depth", at))
        happy = _base(ins, "happy", f"{m} on operands that succeed; the last charged instruction.", program,
                      categories=("semantics",))
        yield happy
        needed = _compute_used(happy, version)
        for at, limit in (("limit-1", needed + 1), ("limit", needed), ("limit+1", needed - 1)):
            if limit < 0:
                continue
            yield _base(ins, f"compute_{at}", f"{m} program needing {needed} compute under a limit of {limit}.",
                        program, limits={"compute": limit}, categories=("boundary",),
                        boundary=Boundary("compute", at))
        if ins.cost_rule is not None and ins.cost:
            before = _compute_used(_base(ins, "setup", "setup", setup + "stop\n"), version)
            if before + ins.cost < needed:
                yield _base(ins, "base_cost_short", f"{m}'s base cost does not fit (its cost rule never runs).",
                            program, limits={"compute": before + ins.cost - 1}, categories=("limits",))
                yield _base(ins, "dynamic_cost_short", f"{m}'s base cost fits, its {ins.cost_rule} charge does not.",
                            program, limits={"compute": before + ins.cost}, categories=("limits",))
        yield _base(ins, "forbidden_by_name", f"{m} named in forbidden_operations.", program,
                    policy={**OPEN, "forbidden_operations": [m]}, categories=("violation",))
