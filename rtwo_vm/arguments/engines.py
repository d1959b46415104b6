"""``--engine reference|compiled|native``: the engine an execution runs on, shared by the
commands that run contracts (``rtwo-vm run``, ``rtwo-vm scenario run``). Every engine has the
reference interpreter's signature (spec version included), so one driver runs them all."""

from __future__ import annotations

from typing import Any, Callable

from rtwo_vm.arguments.inputs import CliError

ENGINES = ("reference", "compiled", "native")


def add_engine(parser) -> None:
    parser.add_argument("--engine", choices=ENGINES, default="reference",
                        help="the reference interpreter (default), the compiled engine (compiled_vm) "
                             "or the native tier (native_vm; needs the native extra: llvmlite)")


def check_engine(name: str) -> None:
    """Refuse an engine this installation cannot run, before anything is read or run."""
    if name == "native":        # an optional extra: without it, refuse in one line
        import native_vm
        if native_vm.missing():
            raise CliError(native_vm.missing())


def engine_of(name: str) -> Callable[..., Any]:
    """The ``execute`` of the engine named ``name`` (check_engine first)."""
    check_engine(name)
    if name == "compiled":
        from compiled_vm import execute as compiled
        return compiled
    if name == "native":
        import native_vm
        return native_vm.execute
    from reference_vm import execute
    return execute
