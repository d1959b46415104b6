"""Transition models, one module per instruction type of the spec table (mirroring
reference_vm/instructions). Each module's ``models(w)`` returns mnemonic -> model; a model
receives the state after the stack checks and the base cost (execute.py) and the immediate,
and returns the Branches of the operation phase. ``models(bits)`` joins the modules and
checks coverage against the table: an opcode without a model fails here, and so the suite.
"""

from __future__ import annotations

import functools

import spec
from typing import Callable

from proofs.instructions import (
    arithmetic, bitwise, call, comparison, context, control, environment, event, hash,
    memory, stack, storage, transient,
)
from proofs.words import width

Model = Callable[..., list]

MODULES = {
    "control": control, "stack": stack, "arithmetic": arithmetic, "comparison": comparison,
    "bitwise": bitwise, "memory": memory, "storage": storage, "environment": environment,
    "hash": hash, "event": event, "call": call, "context": context,
    "transient": transient,
}


class CoverageError(Exception):
    """The models and the spec table disagree on which opcodes exist."""


def coverage_problems(table: dict[str, Model], version: str) -> list[str]:
    rows = spec.load(version).by_mnemonic
    problems = [f"{m}: no model" for m in rows if m not in table]
    problems += [f"{m}: model of an opcode the table lacks" for m in table if m not in rows]
    return sorted(problems)


@functools.cache
def models(bits: int, version: str) -> dict[str, Model]:
    """mnemonic -> model of every instruction of spec ``version`` at ``bits``: a module may
    model instructions the version lacks (those of a later version), which are left out."""
    w = width(bits, version)
    rows = w.spec.by_mnemonic
    table: dict[str, Model] = {}
    for type_name, module in MODULES.items():
        for mnemonic, model in module.models(w).items():
            if mnemonic not in rows:
                continue                      # an instruction of another version
            if rows[mnemonic].type != type_name:
                raise CoverageError(f"{mnemonic} modelled as {type_name}")
            table[mnemonic] = model
    problems = coverage_problems(table, version)
    if problems:
        raise CoverageError("; ".join(problems))
    return table
