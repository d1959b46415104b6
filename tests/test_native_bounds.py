"""The native tier's bounds and failure containment: regions past a bound stay on the compiled
tier, the process's native code cache evicts and uninstalls, LLVM refusing a module or the JIT
failing changes no result, the fuzzer's malformed and maximal programs crash nothing, and the
reference and compiled_vm never load the native tier."""

from __future__ import annotations

import ast
import gc
import subprocess
import sys
import weakref
from pathlib import Path

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

import native_vm  # noqa: E402
import spec  # noqa: E402
from native_vm import jit, plan as plan_mod  # noqa: E402
from native_vm.cache import REGION_BYTES, NativeCache, region_bytes  # noqa: E402
from native_vm.lower import Lowering  # noqa: E402
from native_vm.region import NativeRegion  # noqa: E402
from conftest import BASE_VERSION  # noqa: E402
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute  # noqa: E402
from reference_vm.program import load_program  # noqa: E402
from reference_vm.rules import rules  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
ENTRY = 0x100
V = BASE_VERSION
RULES = rules(V)


def loop_code(k: int) -> bytes:
    """A counted loop over n (call data), distinct for each k."""
    return assemble(f"push 0\ncalldataload\ntop:\n push {k}\n pop\n push 1\n sub\n dup1\n jumpi top\nstop", V)


def run(code: bytes, engine_execute, n: int = 20, limits: Limits | None = None):
    state = WorldState({ENTRY: Contract(code)})
    return engine_execute(state, Message(ENTRY, 1, n.to_bytes(8, "little")), None, None, limits,
                          version=V)


def eager(**kwargs) -> native_vm.Engine:
    return native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1,
                            per_handler=0, **kwargs)


def natives(engine) -> list[NativeRegion]:
    return [fn for p in engine.cache.profiles() for fn in p.fns if isinstance(fn, NativeRegion)]


def test_a_segment_past_the_instruction_bound_stays_on_the_compiled_tier():
    big = "\n".join(["push 1", "push 2", "add", "pop"] * (plan_mod.MAX_INSTRUCTIONS // 4 + 1))
    code = assemble(big + "\nstop", V)
    program = load_program(code, RULES)
    assert plan_mod.plan_for(program, 0, RULES, min_block=1) is None
    fits = assemble("\n".join(["push 1", "pop"] * (plan_mod.MAX_INSTRUCTIONS // 2 - 1)) + "\nstop", V)
    assert plan_mod.plan_for(load_program(fits, RULES), 0, RULES, min_block=1) is not None
    engine = eager()
    for _ in range(2):
        assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
    (profile,) = [p for p in engine.cache.profiles() if p.program.code.code == program.code.code]
    assert profile.fns[0] is not None and not isinstance(profile.fns[0], NativeRegion)


def test_a_region_past_the_ir_bound_is_refused_and_stays_on_the_compiled_tier(monkeypatch):
    monkeypatch.setattr("native_vm.engine.MAX_IR", 20)
    engine = eager(cache=NativeCache())
    code = loop_code(1)
    for limits in (None, Limits(compute=100)):
        assert run(code, engine.execute, limits=limits).canonical_json() == \
            run(code, execute, limits=limits).canonical_json()
    assert engine.native_refused >= 1 and natives(engine) == []
    assert engine.native_compiled == 0 and engine.compile_failures == 0


def test_the_native_cache_evicts_the_least_recent_regions_and_uninstalls_them():
    cache = NativeCache(max_regions=2)
    engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, cache=cache)
    codes = [loop_code(k) for k in range(5)]
    first = None
    for code in codes:
        assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
        if first is None:
            (first,) = natives(engine)
            first = weakref.ref(first)
    assert len(cache.entries) == 2 and cache.evictions == 3 and engine.native_compiled == 5
    assert len(natives(engine)) == 2          # only the cached regions are installed anywhere
    gc.collect()
    assert first() is None                    # the evicted code is gone (its JIT library freed)
    # The first loop starts counting again: it reaches the compiled tier, watched, and goes
    # native again once it has run native_work units there.
    engine.native_work = 10**9
    for _ in range(2):
        assert run(codes[0], engine.execute).canonical_json() == run(codes[0], execute).canonical_json()
    assert engine.native_compiled == 5
    (profile,) = [p for p in engine.cache.profiles() if p.program.code.code == load_program(codes[0], RULES).code.code]
    assert any(fn is not None and not isinstance(fn, NativeRegion) for fn in profile.fns)
    engine.native_work = 1
    for _ in range(2):
        assert run(codes[0], engine.execute).canonical_json() == run(codes[0], execute).canonical_json()
    assert engine.native_compiled == 6 and cache.evictions == 4


def test_the_native_cache_is_bounded_in_estimated_bytes():
    cache = NativeCache(max_bytes=3 * REGION_BYTES)
    engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, cache=cache)
    for k in range(6):
        code = loop_code(10 + k)
        assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
        assert cache.bytes == sum(map(region_bytes, cache.entries.values())) <= cache.max_bytes
    assert 0 < len(cache.entries) < 3 and cache.evictions
    # A region larger than the whole cache is not compiled into it (it would leave at once).
    tiny = NativeCache(max_bytes=1)
    engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, cache=tiny)
    code = loop_code(30)
    assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
    assert not tiny.entries and natives(engine) == [] and engine.native_refused


def test_llvm_refusing_a_module_or_the_jit_failing_changes_no_result(monkeypatch):
    # A function without its return: the IR does not parse; LLVM says so, nothing crashes.
    leave = Lowering.leave
    monkeypatch.setattr(Lowering, "leave", lambda self, exit, used=None: (
        leave(self, exit, used), self.b.block.instructions.pop()))
    engine = eager(cache=NativeCache())
    code = loop_code(20)
    assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
    assert engine.native_failures >= 1 and natives(engine) == []
    monkeypatch.setattr(Lowering, "leave", leave)

    def broken(module):
        raise RuntimeError("planted JIT failure")

    monkeypatch.setattr(jit, "compile_module", broken)
    engine = eager(cache=NativeCache())
    assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
    assert engine.native_failures >= 1 and natives(engine) == []


@pytest.mark.slow
@pytest.mark.parametrize("version", [v.version for v in spec.versions()])
def test_the_fuzzers_malformed_and_maximal_programs_crash_nothing(version):
    """300 fuzz requests of the version's campaign, every malformation of the fuzzer, stacks
    and return stacks at their limits, and 64 KiB codes (one segment, loops at the native
    instruction bound, a loop at the stack limit, offsets at 2^64 - 1, 64 KiB of jumps), each
    run twice on an eager native engine in a child process and compared with the reference."""
    done = subprocess.run([sys.executable, str(ROOT / "tests" / "native_probe.py"), "27", "300", version],
                          capture_output=True, text=True, cwd=ROOT, timeout=900)
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr[-2000:])
    fields = done.stdout.split()
    requests, agreed = int(fields[1]), int(fields[3])
    assert requests > 300 and agreed == 2 * requests and "failures 0" in done.stdout


def test_engine_arguments_are_checked():
    for bad in ({"native_work": -1}, {"min_block": 0}, {"per_handler": -1}, {"threshold": 0}):
        with pytest.raises(ValueError):
            native_vm.Engine(**bad)


def test_the_reference_and_the_compiled_engine_never_load_the_native_tier():
    for package in ("reference_vm", "compiled_vm", "spec"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                assert not any(n.split(".")[0] in ("native_vm", "llvmlite") for n in names), path
    probe = ("import sys, reference_vm, compiled_vm, conformance.adapter, rtwo_vm.cli; "
             "from compiled_vm import execute; "
             "print('native_vm' in sys.modules, 'llvmlite' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.stdout.strip() == "False False", done.stderr


def test_the_engine_runs_every_request_stage_the_reference_runs():
    """Engine.execute mirrors reference_vm.execute's stages before and after the frames run:
    a stage added to the reference and not here fails this test."""
    import inspect
    import textwrap

    def calls(fn):
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        names = {n.func.id if isinstance(n.func, ast.Name) else n.func.attr
                 for n in ast.walk(tree) if isinstance(n, ast.Call)}
        fields = {k.arg for n in ast.walk(tree) if isinstance(n, ast.Call)
                  and getattr(n.func, "id", None) == "ExecutionResult" for k in n.keywords}
        return names, fields

    reference = sys.modules["reference_vm.execute"]
    engine = sys.modules["native_vm.engine"]
    driver = sys.modules["compiled_vm.driver"]
    # The native engine's request path is the driver's, the compiled engine's: only the
    # execution (its profiled loop), the profile and compile are its own.
    assert engine.Engine.execute is driver.TieredEngine.execute
    assert engine.Engine.execution_class is engine.NativeExecution
    assert engine.NativeExecution._run is driver.TieredExecution._run
    ref_names, ref_fields = calls(reference.execute)
    ours, our_fields = calls(driver.TieredEngine.execute)
    assert "admit" in ref_names and "admit" in ours
    assert ref_names - {"Execution", "finish", "hasattr"} <= ours
    assert "execution_class" in ours and ref_fields == our_fields


def test_llvm_is_loaded_only_when_a_region_first_goes_native():
    probe = ("import sys, native_vm; from reference_vm import *; "
             f"state = WorldState({{1: Contract(assemble('push 1\\npush 2\\nadd\\nstop', {V!r}))}}); "
             f"assert native_vm.execute(state, Message(1, 1), version={V!r}).ok; "
             "print('llvmlite' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.stdout.strip() == "False", done.stderr


def test_new_lljit_instances_replace_old_ones_and_old_ones_go_with_their_code():
    """Every 2 libraries a new LLJIT (LIBRARIES_PER_JIT lowered for the test), a cache of 2
    regions: code is compiled, evicted and freed across several LLJITs, in a child process
    that must also exit cleanly."""
    probe = """
import gc, sys
sys.path.insert(0, 'tests')
from native_vm import jit, Engine
from native_vm.cache import NativeCache
from test_native_bounds import loop_code, run
from reference_vm import execute
jit.LIBRARIES_PER_JIT = 2
engine = Engine(threshold=1, cold_segments=0, native_work=0, cache=NativeCache(max_regions=2))
for k in range(12):
    code = loop_code(k % 5)
    assert run(code, engine.execute).canonical_json() == run(code, execute).canonical_json()
    gc.collect()
print(engine.native_compiled, engine.native_failures)
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    compiled, failures = map(int, done.stdout.split())
    assert compiled == 12 and failures == 0
