"""The native tier's memory is bounded by its cache (issue 33): compiling region after region
through the real engine, the process's resident set stays flat once the cache is full, and
cached code holds at most two LLJITs however long a region stays hot.

Each measurement runs in a child process of its own, so that what this test process did
before (other tests' caches, its allocator's history) does not count."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

ROOT = Path(__file__).resolve().parent.parent
BENCHMARK = ROOT / "benchmarks" / "native_memory_benchmark.py"

# The issue's bound: the resident set within 10 % over 10,000 compiles after the warm-up. The
# test measures fewer compiles, with the bound cut in proportion.
ISSUE_SHARE, ISSUE_COMPILES = 0.10, 10_000
WARMUP, COUNT = 800, 2_000


def test_the_resident_set_stays_flat_over_compiles_once_the_cache_is_full():
    """800 compiles fill the 256-region cache and rotate the LLJIT three times; the next
    1,200 compiles of distinct regions (real lowering, LLVM and JIT linking; each code's run
    checked) may grow the child's resident set by at most 1.2 % of what it was then (10 % per
    10,000 compiles). Before the fix every compile kept about 75 KiB: about 90 MiB here."""
    done = subprocess.run([sys.executable, str(BENCHMARK), str(COUNT), str(WARMUP), "100", "--json"],
                          capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    samples = report["samples"]
    assert report["failures"] == 0
    assert samples[0]["compiles"] >= WARMUP and samples[-1]["compiles"] >= COUNT
    assert all(s["cached"] == 256 for s in samples)          # the cache is full throughout
    measured = samples[-1]["compiles"] - samples[0]["compiles"]
    allowed = samples[0]["rss_kib"] * ISSUE_SHARE * measured / ISSUE_COMPILES
    assert report["growth_kib"] <= allowed, (report["growth_kib"], allowed, samples)


PINNED = """
import gc, json, sys
sys.path.insert(0, 'benchmarks')
import native_vm
from llvmlite.binding.orcjit import LLJIT
from native_memory_benchmark import VERSION, code
from native_vm import jit
from native_vm.cache import NativeCache
from reference_vm import Contract, Message, WorldState, execute
jit.LIBRARIES_PER_JIT = 4
cache = NativeCache()
engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1,
                          per_handler=0, cache=cache)
hot = WorldState({0x100: Contract(code(10**6))})
message = Message(0x100, 1, (3).to_bytes(8, "little"))
want = execute(hot, message, version=VERSION).canonical_json()
alive = []
for k in range(40):
    assert engine.execute(hot, message, version=VERSION).canonical_json() == want   # stays hot
    state = WorldState({0x100: Contract(code(k))})
    assert (engine.execute(state, message, version=VERSION).canonical_json()
            == execute(state, message, version=VERSION).canonical_json())
    gc.collect()
    alive.append(sum(1 for o in gc.get_objects() if isinstance(o, LLJIT)))
print(json.dumps({"alive": alive, "compiled": engine.native_compiled,
                  "retired": getattr(cache, "retired", 0),
                  "failures": engine.native_failures, "cached": len(cache.entries)}))
"""


def test_a_hot_region_does_not_keep_old_lljits_alive():
    """Four libraries per LLJIT, a cache large enough for everything, and one code run
    between every two new ones: its regions stay the most recently used, yet they leave the
    cache when their LLJIT is two generations old and come back up into the current one, so
    at most two LLJITs are ever alive (the current one and the one before). Without the
    rule, every LLJIT that compiled a region still cached stays alive: 30 of them here."""
    done = subprocess.run([sys.executable, "-c", PINNED], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["failures"] == 0
    assert max(report["alive"]) <= 2, report["alive"]
    # 3 regions for each of the 41 codes, and the hot code's again each time they retired.
    assert report["retired"] > 0 and report["compiled"] > 3 * 41
