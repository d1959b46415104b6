"""Instruction handlers, one module per instruction type of the spec table.

Each module's ``handlers(word)`` returns mnemonic -> handler for its type. A handler runs the
operation phase only: the interpreter has already checked the stack and charged the table's
base cost (execute.py), so a handler charges just its cost rule, performs the operation and
returns the next offset if it transfers control. ``table(word)`` joins the modules and checks
that they cover the spec table exactly.
"""

from __future__ import annotations

import functools

import spec
from reference_vm.errors import InternalInvariantError
from reference_vm.instructions import (
    arithmetic, bitwise, call, comparison, context, control, environment, event, hash,
    memory, stack, storage,
)
from reference_vm.machine import Handler
from reference_vm.words import Word

MODULES = {
    "control": control, "stack": stack, "arithmetic": arithmetic, "comparison": comparison,
    "bitwise": bitwise, "memory": memory, "storage": storage, "environment": environment,
    "hash": hash, "event": event, "call": call, "context": context,
}


@functools.cache
def table(word: Word) -> dict[int, Handler]:
    """opcode -> handler for every instruction of the spec table, at the given word width."""
    spec_table = spec.load()
    by_mnemonic: dict[str, Handler] = {}
    for type_name, module in MODULES.items():
        for mnemonic, handler in module.handlers(word).items():
            ins = spec_table.by_mnemonic.get(mnemonic)
            if ins is None or ins.type != type_name or mnemonic in by_mnemonic:
                raise InternalInvariantError(f"handler {mnemonic} does not match the table")
            by_mnemonic[mnemonic] = handler
    missing = set(spec_table.by_mnemonic) - set(by_mnemonic)
    if missing:
        raise InternalInvariantError(f"no handler for {sorted(missing)}")
    return {ins.opcode: by_mnemonic[ins.mnemonic] for ins in spec_table.instructions}
