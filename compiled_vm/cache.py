"""Per-code profiles: how often each segment ran and what has been compiled for it.

A profile is keyed by the code section and the word width, so every execution in the process
that runs the same code shares the counts and the compiled functions. The cache is bounded
since code comes from outside.
"""

from __future__ import annotations

from typing import Callable

from compiled_vm.codegen import generate, inlined
from compiled_vm.regions import region_at
from reference_vm.program import Program

MAX_PROFILES = 1024
MIN_INLINED = 3      # a single segment is compiled only when it inlines this many instructions

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
        if not region.loop and sum(map(inlined, (d for d, _ in region.segments[0].steps))) < MIN_INLINED:
            return   # too little to gain over the interpreter's segment: stays interpreted
        source, namespace = generate(region, word)
        code = compile(source, f"<rtwo-compiled {head}>", "exec")
        exec(code, namespace)  # noqa: S102 - source generated here from validated code
        self.fns[head] = namespace["region"]  # type: ignore[call-overload]
        self.sources[head] = source
        self.compiled += 1


class ProfileCache:
    """code section (bytes, hashed as a dict key) -> its Profile, one table per word width.

    The first execution of a code gets no profile (COLD) unless one of its frames runs long;
    the second gets one. A table that passes ``limit`` entries is emptied.
    """

    def __init__(self, limit: int = MAX_PROFILES):
        self.limit = limit
        self.tables: dict[int, dict[bytes, Profile | object]] = {}

    def table(self, bits: int) -> dict[bytes, Profile | object]:
        table = self.tables.get(bits)
        if table is None:
            table = self.tables[bits] = {}
        if len(table) >= self.limit:
            table.clear()
        return table

    def profiles(self) -> list[Profile]:
        return [p for t in self.tables.values() for p in t.values() if isinstance(p, Profile)]

    def clear(self) -> None:
        self.tables.clear()


COLD = object()   # seen once, not profiled
