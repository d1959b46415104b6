"""LLVM through llvmlite: verify, optimise and JIT-compile a lowered region.

An ORC LLJIT instance for the host's CPU, made on first use. Each region is its own JIT
library, kept alive by its resource tracker: when the last reference to the tracker goes (the
region left the native cache and no frame is running it), LLVM frees its code. A library's
name cannot be reused and ORC keeps a small record of every name, so after
``LIBRARIES_PER_JIT`` libraries the next region starts a new LLJIT; each tracker holds its
LLJIT, which goes when its last tracker has gone. Each module is parsed and optimised in an LLVM
context of its own, freed with it (the process's global context would keep every constant
ever compiled). Everything here runs under one lock (llvmlite's objects are not meant to be
shared between threads while they change). A module that does not verify raises RuntimeError
before it reaches the optimiser or the code generator, and the engine keeps the region on the
compiled tier: no error of the native tier ends an execution.
"""

from __future__ import annotations

import itertools
import threading

import llvmlite.binding as llvm
from llvmlite import ir

SPEED_LEVEL = 2           # the optimisation pipeline: LLVM's default -O2
SYMBOL = "region"
LIBRARIES_PER_JIT = 1024

_lock = threading.Lock()
_state: dict[str, object] = {}
_names = itertools.count()


def _target():
    if not _state:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        target = llvm.Target.from_triple(llvm.get_process_triple())
        try:
            cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
        except RuntimeError:       # features unknown: LLVM's generic CPU of the triple
            cpu, features = "", ""
        _state["machine"] = target.create_target_machine(cpu=cpu, features=features, opt=SPEED_LEVEL,
                                                         codemodel="jitdefault")
    machine = _state["machine"]
    if "jit" not in _state or _state["libraries"] >= LIBRARIES_PER_JIT:
        _state["jit"] = llvm.create_lljit_compiler(machine)
        _state["libraries"] = 0
    _state["libraries"] += 1
    return machine, _state["jit"]


def compile_module(module: ir.Module):
    """(resource tracker, address of the ``region`` function) for a lowered module. Raises
    RuntimeError when LLVM refuses it."""
    with _lock:
        machine, jit = _target()
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        parsed = llvm.parse_assembly(str(module), context=llvm.create_context())
        parsed.verify()
        builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(SPEED_LEVEL))
        builder.getModulePassManager().run(parsed, builder)
        parsed.verify()
        tracker = (llvm.JITLibraryBuilder().add_ir(str(parsed)).export_symbol(SYMBOL)
                   .link(jit, f"rtwo{next(_names)}"))
        # The LLJIT outlives its trackers: a tracker is disposed (in its __del__) before its
        # attributes, this reference among them, are released.
        tracker.rtwo_jit = jit
        address = tracker[SYMBOL]
        if not address:
            raise RuntimeError("the JIT found no code for the region")
        return tracker, address
