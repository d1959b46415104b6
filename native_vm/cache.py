"""The native code of a process: compiled regions by (code digest, spec version, word width,
head), bounded.

Machine code is a resource of the process, not of one engine, so there is one cache for every
engine of the process (``CACHE``); a region is a pure function of its code, version, width and head, so
engines can share it. The cache is bounded both in regions (``MAX_REGIONS``) and in estimated
bytes (``MAX_BYTES``: each region is charged ``REGION_BYTES`` for its JIT library — sections
are allocated in whole pages — plus ``IR_BYTES`` per LLVM instruction it was lowered to; a
region is at most plan.MAX_IR instructions, so at most about 0.6 MiB). When either bound is
passed, the least recently used regions leave: each is uninstalled from the profiles that run
it (their slot goes back to the compiled tier's function, which is watched again and may come
back up), and its code is freed by LLVM once no frame still runs it.

Regions also leave by age: each region's code is held by one LLJIT (its *generation*, jit.py),
and an LLJIT keeps a record of every library it ever had until it goes itself. When a region
of a newer generation comes in, the regions of every generation but the two newest leave the
cache (``retired`` counts them), so that cached code holds at most two LLJITs, whatever
stays hot: a region that is still hot comes back up, into the current LLJIT.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from native_vm.region import NativeRegion

MAX_REGIONS = 256
MAX_BYTES = 64 << 20
REGION_BYTES = 16 << 10
IR_BYTES = 48


def region_bytes(region: NativeRegion) -> int:
    """The estimated bytes a cached region holds."""
    return REGION_BYTES + IR_BYTES * region.size


class NativeCache:
    def __init__(self, max_regions: int = MAX_REGIONS, max_bytes: int = MAX_BYTES):
        self.max_regions = max_regions
        self.max_bytes = max_bytes
        self.bytes = 0
        self.evictions = 0
        self.retired = 0
        self.generation = 0       # the newest generation of a region put here
        self.entries: OrderedDict[tuple, NativeRegion] = OrderedDict()
        self._lock = threading.RLock()

    def fits(self, size: int) -> bool:
        """Whether a region lowered to ``size`` LLVM instructions fits the cache at all."""
        return self.max_regions > 0 and REGION_BYTES + IR_BYTES * size <= self.max_bytes

    def get(self, key: tuple) -> NativeRegion | None:
        with self._lock:
            region = self.entries.get(key)
            if region is not None:
                self.entries.move_to_end(key)
            return region

    def put(self, key: tuple, region: NativeRegion) -> None:
        with self._lock:
            old = self.entries.pop(key, None)
            if old is not None:
                self._drop(old)
            if region.generation > self.generation:
                self.generation = region.generation
                self._retire(region.generation - 1)
            self.entries[key] = region
            self.bytes += region_bytes(region)
            while self.entries and (len(self.entries) > self.max_regions or self.bytes > self.max_bytes):
                _, evicted = self.entries.popitem(last=False)
                self._drop(evicted)
                self.evictions += 1

    def _retire(self, oldest: int) -> None:
        """Every region of a generation older than ``oldest`` leaves."""
        for key in [k for k, r in self.entries.items() if r.generation < oldest]:
            self._drop(self.entries.pop(key))
            self.retired += 1

    def _drop(self, region: NativeRegion) -> None:
        self.bytes -= region_bytes(region)
        uninstall(region)

    def clear(self) -> None:
        with self._lock:
            for region in self.entries.values():
                uninstall(region)
            self.entries.clear()
            self.bytes = 0


def uninstall(region: NativeRegion) -> None:
    """Take the region out of every profile running it: the slot gets the compiled tier's
    function back, watched again (or, when the region went native without one, its count
    starts again, so that it reaches the threshold anew)."""
    for reference, head in region.installs:
        profile = reference()
        if profile is not None and profile.fns[head] is region:
            lower = profile.lower.pop(head, None)
            profile.fns[head] = lower
            if lower is not None:
                profile.work[head] = 0
            else:
                profile.counts[head] = 0
    region.installs.clear()


CACHE = NativeCache()
