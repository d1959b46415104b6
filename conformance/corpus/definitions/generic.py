"""Per-instruction vectors generated from the instruction table, for every one of its rows:
stack underflow, stack overflow at the stack depth boundary, compute at limit-1/limit/limit+1
of a program that ends with the instruction, the base cost alone not fitting, and the
instruction forbidden by name.

The rows and costs are each version's (across_versions): a case the same in two versions is
one definition valid in both, written for the version that added its instruction; a compute
boundary that moves with a version's costs (SHA256's in 1.1) is a case of each version.

Each states what its author expects (5.2.3): the stack checks' codes; the compute boundary
passing at and below the program's need and COMPUTE_LIMIT_EXCEEDED one below it, with usage
never above the limit; a base cost that does not fit charging nothing of the instruction, a
cost rule that does not fit keeping the base cost; the listing's code for an instruction
forbidden by name (nothing run, 5.5)."""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import (
    EXCEEDED, OPEN, OTHER, Boundary, Expect, across_versions, case, fill_stack, home, limit_side, push_all, refused,
)
from conformance.corpus.vector import Case, run_reference, input_of

CALLEE = "push 1\nstop\n"
LISTED = spec.load(spec.names()[0]).policy["forbidden_by_listing"]["error"]

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


# How the happy program of an instruction ends when everything fits: it halts by the instruction
# itself (REVERT reverts, TRAP traps) or by the STOP after it.
HAPPY = {"REVERT": "reverted", "TRAP": "TRAP_EXECUTED"}


def _short(ins, limit: int, exact: bool = False) -> Expect:
    """A program whose compute does not fit ``limit`` (used up to it exactly when ``exact``):
    COMPUTE_LIMIT_EXCEEDED, usage never above the limit (5.1). For a call the caller is not
    what runs short: the call charges nothing of its own for an empty call-data range (5.6.7),
    the callee's limit is the caller's, and the callee's PUSH1 does not fit; its record has the
    code and the caller goes on to STOP (6.11)."""
    used = {"compute": limit}
    if ins.cost_rule == "call":
        return Expect(outcome="success", calls=(EXCEEDED["compute"],), usage=used if exact else {}, at_most=used)
    return Expect(outcome=EXCEEDED["compute"], usage=used if exact else {}, at_most=used)


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
                        categories=("fault",), expect=Expect(outcome="STACK_UNDERFLOW"))
        if ins.outputs > ins.inputs:
            growth = ins.outputs - ins.inputs
            for at, delta in (("limit-1", -1), ("limit", 0), ("limit+1", 1)):
                height = stack_depth - growth + delta
                yield _base(ins, f"stack_depth_{at}", f"{m} on a stack of {height} items (depth {stack_depth}).",
                            fill_stack(height) + _op(ins) + _tail(ins), categories=("boundary",),
                            boundary=Boundary("stack_depth", at),
                            expect=Expect(outcome=limit_side(at, HAPPY.get(m, "success"), "STACK_OVERFLOW")))
        happy = _base(ins, "happy", f"{m} on operands that succeed; the last charged instruction.", program,
                      categories=("semantics",), expect=Expect(outcome=HAPPY.get(m, "success")))
        yield happy
        needed = _compute_used(happy, version)
        for at, limit in (("limit-1", needed + 1), ("limit", needed), ("limit+1", needed - 1)):
            if limit < 0:
                continue
            yield _base(ins, f"compute_{at}", f"{m} program needing {needed} compute under a limit of {limit}.",
                        program, limits={"compute": limit}, categories=("boundary",),
                        boundary=Boundary("compute", at),
                        expect=limit_side(at, Expect(outcome=HAPPY.get(m, "success"), usage={"compute": needed}),
                                          _short(ins, limit)))
        if ins.cost_rule is not None and ins.cost:
            before = _compute_used(_base(ins, "setup", "setup", setup + "stop\n"), version)
            if before + ins.cost < needed:
                yield _base(ins, "base_cost_short", f"{m}'s base cost does not fit (its cost rule never runs).",
                            program, limits={"compute": before + ins.cost - 1}, categories=("limits",),
                            expect=Expect(outcome=EXCEEDED["compute"], usage={"compute": before}))
                yield _base(ins, "dynamic_cost_short", f"{m}'s base cost fits, its {ins.cost_rule} charge does not.",
                            program, limits={"compute": before + ins.cost}, categories=("limits",),
                            expect=_short(ins, before + ins.cost, exact=True))
        yield _base(ins, "forbidden_by_name", f"{m} named in forbidden_operations.", program,
                    policy={**OPEN, "forbidden_operations": [m]}, categories=("violation",),
                    expect=refused(LISTED))
