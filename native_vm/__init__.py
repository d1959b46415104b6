"""A native tier for the RTWO VM: hot loops and long blocks compiled to machine code by LLVM.

``native_vm.execute`` has the signature of ``reference_vm.execute`` and returns the same result
for every request. It is compiled_vm's tiered engine with one more tier (engine.py): a region
that keeps running on the compiled tier is lowered to LLVM IR with llvmlite's IR builder
(lower.py), optimised and JIT-compiled (jit.py), and run with the stack in machine words, one
check and charge per segment or one per counted loop, memory accessed in place; everything
else leaves the machine code at an exact instruction boundary for the reference's handlers
(region.py). The reference never imports this package, and compiled_vm does not either.

It needs the optional ``native`` extra (``pip install 'rtwo-vm[native]'``: llvmlite).
``missing()`` says why the tier cannot run here (None when it can); importing ``execute``,
``Engine`` or ``DEFAULT`` without llvmlite raises ImportError with that reason.
"""

from __future__ import annotations

import importlib.util
import sys

__all__ = ["DEFAULT", "Engine", "NATIVE_WORK", "execute", "missing"]

EXTRA = "pip install 'rtwo-vm[native]'"


def missing() -> str | None:
    """Why the native tier cannot run in this process, in one line (None when it can)."""
    if importlib.util.find_spec("llvmlite") is None:
        return f"the native engine needs llvmlite: {EXTRA} (or pip install '.[native]' in a checkout)"
    if sys.byteorder != "little":
        return "the native engine loads words in place, which needs a little-endian host"
    return None


def __getattr__(name: str):
    if name in ("DEFAULT", "Engine", "NATIVE_WORK", "execute"):
        reason = missing()
        if reason is not None:
            raise ImportError(reason)
        from native_vm import engine
        return getattr(engine, name)
    raise AttributeError(f"module 'native_vm' has no attribute {name!r}")
