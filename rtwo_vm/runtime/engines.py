"""The engines behind the execution modes of the Virtual Machine Registry (chapter 10.7).

Each mode of ``sandbox.toml`` enumerations.execution_mode names an engine with the reference
interpreter's signature, spec version included: ``reference_interpreter`` is
``reference_vm.execute``, ``compiled_engine`` ``compiled_vm.engine`` and ``native_engine``
``native_vm.engine`` (each engine's process-wide instance, so that what one call compiles
serves the next). An engine runs a version when it can be imported and takes the version it
runs as a parameter (an engine written before versions were data runs none: it would run
every contract under the version it was written for); every version of the spec then.

The self-check a VM must pass to become active is computed, never stated: the handler table
the engines share (the reference interpreter's; the faster engines run its handlers for
every instruction they do not compile) has a handler of the right type for every
instruction of the version, and the engine's result for a probe program that loops long
enough to be compiled is the reference interpreter's, digest for digest.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any, Callable

import spec
from reference_vm.rules import rules as rules_of

# Mode -> (module, attribute): the engine's ``execute`` (a process-wide engine's method).
ENGINES: dict[str, tuple[str, str]] = {
    "reference_interpreter": ("reference_vm.execute", "execute"),
    "compiled_engine": ("compiled_vm.engine", "DEFAULT"),
    "native_engine": ("native_vm.engine", "DEFAULT"),
}
# A probe that loops 300 times (long enough for the faster engines to compile its loop),
# run under a compute limit in case an engine loops on: a result to compare, whatever it is.
PROBE = "push 300\nloop:\npush 1\nsub\ndup1\njumpi loop\nstop"
PROBE_COMPUTE = 100_000


@functools.cache
def engine(mode: str) -> tuple[Callable[..., Any] | None, str]:
    """The ``execute`` of ``mode``'s engine, or None and why it has none."""
    if mode not in ENGINES:
        return None, f"no engine for execution mode {mode!r}"
    module_name, attribute = ENGINES[mode]
    try:
        found = getattr(importlib.import_module(module_name), attribute)
    except Exception as err:  # noqa: BLE001 - an engine that fails to import runs nothing
        return None, f"{module_name} cannot be imported ({type(err).__name__}: {err})"[:300]
    execute = found if callable(found) and not hasattr(found, "execute") else found.execute
    try:
        takes_version = "version" in inspect.signature(execute).parameters
    except (TypeError, ValueError):
        takes_version = False
    if not takes_version:
        return None, f"{module_name} takes no spec version (it runs no version as data yet)"
    return execute, f"{module_name}"


def versions(mode: str) -> tuple[str, ...]:
    """The spec versions ``mode``'s engine runs (none when it has no engine)."""
    return spec.names() if engine(mode)[0] is not None else ()


def executor(mode: str) -> Callable[..., Any]:
    """The engine of ``mode``; raises LookupError (one line) when it has none."""
    execute, why = engine(mode)
    if execute is None:
        raise LookupError(why)
    return execute


def handler_coverage(version: str) -> tuple[bool, str]:
    """Whether the shared handler table has a handler of its type for every instruction of
    ``version`` (a handler of an instruction only a later version has is never reached:
    validation refuses its opcode; one that no version has is a defect)."""
    from reference_vm.instructions import MODULES
    from rtwo_vm.runtime.catalog import runtime_spec
    try:
        rules = rules_of(version)
    except ValueError as err:
        return False, str(err)
    table = rules.spec
    handled: dict[str, str] = {}
    for type_name, module in MODULES.items():
        try:
            for mnemonic in module.handlers(rules):
                handled[mnemonic] = type_name
        except Exception as err:  # noqa: BLE001 - a broken module is a failed check
            return False, f"handlers of type {type_name} fail to build: {err}"
    missing = [i.mnemonic for i in table.instructions if i.mnemonic not in handled]
    wrong = [i.mnemonic for i in table.instructions
             if i.mnemonic in handled and handled[i.mnemonic] != i.type]
    extra = sorted(set(handled) - set(runtime_spec().by_mnemonic))
    ok = not (missing or wrong or extra)
    evidence = (f"{len(table.instructions) - len(missing)}/{len(table.instructions)} instructions "
                f"of spec {table.version} have a handler of their type")
    for label, names in (("missing", missing), ("wrong type", wrong), ("not in table", extra)):
        if names:
            evidence += f"; {label}: {', '.join(names[:8])}"
    return ok, evidence


def self_check(execution_mode: str, version: str) -> tuple[bool, str]:
    """Whether the engine of ``execution_mode`` implements spec ``version`` (module docstring)."""
    execute, why = engine(execution_mode)
    if execute is None:
        return False, why
    ok, evidence = handler_coverage(version)
    if not ok or execution_mode == "reference_interpreter":
        return ok, evidence
    from reference_vm import Contract, Limits, Message, WorldState, assemble
    from reference_vm import execute as reference
    try:
        state = WorldState({0x100: Contract(assemble(PROBE, version), {})})
        limits = Limits(compute=PROBE_COMPUTE)
        expected = reference(state, Message(0x100, 1), limits=limits, version=version)
        got = execute(state, Message(0x100, 1), limits=limits, version=version)
    except Exception as err:  # noqa: BLE001 - an engine that raises fails its check
        return False, f"{evidence}; the probe raised {type(err).__name__}: {err}"[:300]
    if got.digest() != expected.digest():
        return False, f"{evidence}; the probe's result differs from the reference interpreter's"
    return True, f"{evidence}; the probe's result equals the reference interpreter's"
