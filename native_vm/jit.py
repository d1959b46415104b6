"""LLVM through llvmlite: verify and JIT-compile a lowered region, with memory bounded.

The lowered function's locals are first promoted to SSA registers on llvmlite's IR objects
(ssa.py); the module is then parsed and verified in an LLVM context of its own (freed with
it: the process's global context would keep every constant ever compiled) and handed to ORC's
LLJIT, whose code generator runs at ``SPEED_LEVEL``. No llvmlite PassBuilder is made: each
one leaves about 1.4 KiB (its PassInstrumentationCallbacks) allocated for the rest of the
process, and its ModulePassManager is never freed by llvmlite at all (about 70 KiB a module);
see docs/guides/engines.md for the measurements.

Each region is its own JIT library, kept alive by its resource tracker: when the last
reference to the tracker goes (the region left the native cache and no frame is running it),
LLVM frees its code. ORC keeps a record of every library an LLJIT ever had (about 8 KiB each,
its name included, freed only with the LLJIT), so an LLJIT takes ``LIBRARIES_PER_JIT``
libraries, named from a fixed pool, and the next region starts a new one, a new
*generation*; each tracker holds its LLJIT, which goes when its last tracker has gone. The
native cache keeps regions of the two newest generations only (cache.py), so that at most
two LLJITs are held by cached code.

Everything here runs under one lock (llvmlite's objects are not meant to be shared between
threads while they change). A module that does not verify raises RuntimeError before it
reaches the code generator, and the engine keeps the region on the compiled tier: no error of
the native tier ends an execution.
"""

from __future__ import annotations

import threading

import llvmlite.binding as llvm
from llvmlite import ir

from native_vm.ssa import promote

SPEED_LEVEL = 2           # the code generator's optimisation level (-O2)
SYMBOL = "region"
LIBRARIES_PER_JIT = 256

_lock = threading.Lock()
_state: dict[str, object] = {}


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
        _state["generation"] = 0
    machine = _state["machine"]
    if "jit" not in _state or _state["libraries"] >= LIBRARIES_PER_JIT:
        _state["jit"] = llvm.create_lljit_compiler(machine)
        _state["libraries"] = 0
        _state["generation"] += 1
    library = _state["libraries"]
    _state["libraries"] = library + 1
    return machine, _state["jit"], _state["generation"], f"r{library}"


def compile_module(module: ir.Module):
    """(resource tracker, address of the ``region`` function, generation) for a lowered
    module. Raises RuntimeError when LLVM refuses it."""
    with _lock:
        machine, jit, gen, name = _target()
        for fn in module.functions:
            if fn.blocks:
                promote(fn)
        module.triple = machine.triple
        module.data_layout = str(machine.target_data)
        text = str(module)
        context = llvm.create_context()
        try:
            parsed = llvm.parse_assembly(text, context=context)
            try:
                parsed.verify()
            finally:
                parsed.close()
        finally:
            context.close()
        tracker = llvm.JITLibraryBuilder().add_ir(text).export_symbol(SYMBOL).link(jit, name)
        # The LLJIT outlives its trackers: a tracker is disposed (in its __del__) before its
        # attributes, this reference among them, are released.
        tracker.rtwo_jit = jit
        address = tracker[SYMBOL]
        if not address:
            raise RuntimeError("the JIT found no code for the region")
        return tracker, address, gen
