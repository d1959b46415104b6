"""Instruction handlers, one module per instruction type of the spec table.

Each module's ``handlers(rules)`` returns mnemonic -> handler for its type, built for one
version at one word width (``reference_vm.rules``). A handler runs the operation phase only:
the interpreter has already checked the stack and charged the table's base cost (execute.py),
so a handler charges just its cost rule, performs the operation and returns the next offset if
it transfers control. ``table(rules)`` joins the modules and checks that they cover the
version's table exactly: a module may define handlers for instructions a version does not have
(MULHU under 1.0); those are left out, so nothing of a newer version runs under an older one.
"""

from __future__ import annotations

import functools

from reference_vm.errors import InternalInvariantError
from reference_vm.instructions import (
    arithmetic, bitwise, call, comparison, context, control, environment, event, hash,
    memory, stack, storage, transient,
)
from reference_vm.machine import Handler
from reference_vm.rules import Rules

MODULES = {
    "control": control, "stack": stack, "arithmetic": arithmetic, "comparison": comparison,
    "bitwise": bitwise, "memory": memory, "storage": storage, "environment": environment,
    "hash": hash, "event": event, "call": call, "context": context, "transient": transient,
}


@functools.cache
def handlers_by_mnemonic(rules: Rules) -> dict[str, Handler]:
    """mnemonic -> handler for every instruction of the rules' version."""
    rows = rules.spec.by_mnemonic
    by_mnemonic: dict[str, Handler] = {}
    for type_name, module in MODULES.items():
        for mnemonic, handler in module.handlers(rules).items():
            ins = rows.get(mnemonic)
            if ins is None:
                continue                       # an instruction of another version
            if ins.type != type_name or mnemonic in by_mnemonic:
                raise InternalInvariantError(f"handler {mnemonic} does not match the table")
            by_mnemonic[mnemonic] = handler
    missing = set(rows) - set(by_mnemonic)
    if missing:
        raise InternalInvariantError(f"no handler for {sorted(missing)} in version {rules.version}")
    return by_mnemonic


@functools.cache
def table(rules: Rules) -> dict[int, Handler]:
    """opcode -> handler for every instruction of the rules' version, at its word width."""
    by_mnemonic = handlers_by_mnemonic(rules)
    return {ins.opcode: by_mnemonic[ins.mnemonic] for ins in rules.spec.instructions}
