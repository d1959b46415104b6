"""The native tier's memory over many compiles: resident set size against compiled regions.

Issue 33 found the native tier growing by about 83 KiB per compiled region whatever its cache
held. This compiles COUNT distinct regions through the real engine (an eager native engine:
each code's regions go native on their first run) and the process's native cache (256
regions), and prints the process's resident set (VmRSS, /proc/self/status) and the bytes
malloc has in use (glibc's mallinfo2) every STEP compiles, then the growth from the end of
the first WARMUP compiles as a share of the resident set then. The other caches of the
process (reference_vm's prepared programs, compiled_vm's profiles) are held to 1 MiB each:
they are bounded on their own (64 MiB each by default) and their filling is not the native
tier's.

Usage: python benchmarks/native_memory_benchmark.py [COUNT [WARMUP [STEP]]] [--json]
(defaults 10000 1000 500). With --json, one JSON object on the last line: the samples and
the growth. tests/test_native_memory.py runs it as a child process with smaller numbers.
"""

from __future__ import annotations

import ctypes
import gc
import json
import sys
import time

import native_vm
import spec
from reference_vm import Contract, Message, WorldState, assemble
from reference_vm.program import load_program

ENTRY = 0x100
OTHER_CACHES = 1 << 20
VERSION = spec.latest()       # the codes are containers of, and run under, the newest version


def code(k: int) -> bytes:
    """A code of three regions (two blocks around a loop), distinct for each k."""
    return assemble(f"push 0\ncalldataload\ntop:\n push {k}\n push {k % 251 + 2}\n mul\n"
                    f" push 0\n mstore\n push 1\n sub\n dup1\n jumpi top\nstop", VERSION)


def rss_kib() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS in /proc/self/status")


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
                 "uordblks", "fordblks", "keepcost")]


def malloc_kib() -> int | None:
    """Bytes malloc has handed out and not had back (KiB), or None without glibc's mallinfo2."""
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallinfo2 = libc.mallinfo2
    except (OSError, AttributeError):
        return None
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return int(info.uordblks + info.hblkhd) // 1024


def measure(count: int, warmup: int, step: int) -> dict:
    engine = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1,
                              per_handler=0)
    engine.cache.max_bytes = OTHER_CACHES
    load_program.max_bytes = OTHER_CACHES
    samples = []
    k = 0
    start = time.perf_counter()
    next_sample = warmup
    while engine.native_compiled < count:
        state = WorldState({ENTRY: Contract(code(k))})
        result = engine.execute(state, Message(ENTRY, 1, (3).to_bytes(8, "little")), version=VERSION)
        if not result.ok:
            raise RuntimeError(f"code {k}: {result.status} {result.error}")
        k += 1
        if engine.native_compiled >= next_sample:
            gc.collect()
            samples.append({"compiles": engine.native_compiled, "rss_kib": rss_kib(),
                            "malloc_kib": malloc_kib(),
                            "cached": len(native_vm.engine.CACHE.entries),
                            "seconds": round(time.perf_counter() - start, 1)})
            next_sample += step
    first, last = samples[0], samples[-1]
    peak = max(s["rss_kib"] for s in samples)
    return {"samples": samples, "failures": engine.native_failures,
            "growth_kib": peak - first["rss_kib"],
            "growth_share": (peak - first["rss_kib"]) / first["rss_kib"],
            "per_compile_bytes": 1024 * (last["rss_kib"] - first["rss_kib"])
            / max(1, last["compiles"] - first["compiles"])}


def main(argv: list[str]) -> int:
    as_json = "--json" in argv
    numbers = [int(a) for a in argv if a != "--json"]
    count, warmup, step = (numbers + [10_000, 1_000, 500][len(numbers):])[:3]
    report = measure(count, warmup, step)
    if as_json:
        print(json.dumps(report))
        return 0
    print(f"{'compiles':>9} {'RSS MiB':>8} {'malloc MiB':>10} {'cached':>6} {'seconds':>8}")
    for s in report["samples"]:
        malloc = "-" if s["malloc_kib"] is None else f"{s['malloc_kib'] / 1024:.1f}"
        print(f"{s['compiles']:>9} {s['rss_kib'] / 1024:>8.1f} {malloc:>10} {s['cached']:>6}"
              f" {s['seconds']:>8}")
    print(f"after {warmup} compiles: peak growth {report['growth_kib'] / 1024:.1f} MiB"
          f" ({100 * report['growth_share']:.1f} % of the RSS then),"
          f" {report['per_compile_bytes']:.0f} bytes per compile first to last;"
          f" {report['failures']} failures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
