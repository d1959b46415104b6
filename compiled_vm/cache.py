"""Per-code profiles: how often each segment ran and what has been compiled for it.

A profile is keyed by the SHA-256 of the code section and the word width, so every execution
in the process that runs the same code shares the counts and the compiled functions. Both
maps are bounded (least recently used profiles are dropped) since code comes from outside.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from typing import Callable

from compiled_vm.codegen import generate
from compiled_vm.regions import region_at
from reference_vm.program import Program

MAX_PROFILES = 1024

RegionFn = Callable[..., int]


class Profile:
    __slots__ = ("program", "counts", "fns", "compiled", "sources")

    def __init__(self, program: Program):
        self.program = program
        size = len(program.segments)
        self.counts = [0] * size
        self.fns: list[RegionFn | None] = [None] * size
        self.compiled = 0
        self.sources: dict[int, str] = {}   # head offset -> generated source (for inspection)

    def compile_at(self, head: int, word) -> None:
        """Compile the region at head (a loop through it, else its segment)."""
        region = region_at(self.program, head)
        source, namespace = generate(region, word)
        code = compile(source, f"<rtwo-compiled {head}>", "exec")
        exec(code, namespace)  # noqa: S102 - source generated here from validated code
        self.fns[head] = namespace["region"]  # type: ignore[assignment]
        self.sources[head] = source
        self.compiled += 1


class ProfileCache:
    def __init__(self, limit: int = MAX_PROFILES):
        self.limit = limit
        self.by_hash: OrderedDict[tuple[bytes, int], Profile] = OrderedDict()
        self.by_id: dict[int, tuple[Program, Profile]] = {}

    def profile(self, program: Program, bits: int) -> Profile:
        hit = self.by_id.get(id(program))
        if hit is not None and hit[0] is program:
            return hit[1]
        key = (hashlib.sha256(program.code.code).digest(), bits)
        profile = self.by_hash.get(key)
        if profile is None:
            profile = Profile(program)
            self.by_hash[key] = profile
            if len(self.by_hash) > self.limit:
                self.by_hash.popitem(last=False)
        else:
            self.by_hash.move_to_end(key)
        if len(self.by_id) >= self.limit:
            self.by_id.clear()
        self.by_id[id(program)] = (program, profile)
        return profile

    def clear(self) -> None:
        self.by_hash.clear()
        self.by_id.clear()
