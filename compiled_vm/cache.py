"""Per-code profiles: how often each segment ran and what has been compiled for it.

A profile is keyed by the code section and the rules (spec version and word width), so every
execution in the process
that runs the same code shares the counts and the compiled functions. The cache is bounded in
bytes since code comes from outside: each entry is charged an estimate computed from what it
holds (``Profile.size``: its prepared program, reference_vm.program.program_bytes, its count and
function slots, and for each compiled region ``REGION_BYTES`` plus ``SOURCE_CHAR_BYTES`` per
character of generated source, measured once with tracemalloc at 5.6 bytes per character on the
loop benchmark's regions; a code seen once and not profiled is charged its key), and when the
total would pass ``MAX_BYTES`` (64 MiB by default) every table is emptied and refilled from the
codes met next.
"""

from __future__ import annotations

from typing import Callable, cast

from compiled_vm.codegen import generate, inlined
from compiled_vm.regions import region_at
from reference_vm.program import Program, program_bytes
from reference_vm.rules import Rules

MAX_BYTES = 64 << 20
PROFILE_BYTES = 512       # the Profile, its dict of sources, its entry in a table
SLOT_BYTES = 16           # per offset of the code: a count and a function slot
REGION_BYTES = 2048       # per compiled region: the function, its code object, its namespace
SOURCE_CHAR_BYTES = 8     # per character of a region's generated source (kept, and compiled)
COLD_BYTES = 128          # a code seen once: its key and entry
MIN_INLINED = 3      # a single segment is compiled only when it inlines this many instructions

RegionFn = Callable[..., int]


class Profile:
    __slots__ = ("program", "counts", "fns", "compiled", "sources", "size")

    def __init__(self, program: Program):
        self.program = program
        size = len(program.segments)
        self.counts = [0] * size
        self.fns: list[RegionFn | None] = [None] * size
        self.compiled = 0
        self.sources: dict[int, str] = {}   # head offset -> generated source (for inspection)
        # The estimated bytes it holds (its key, the code, is the program's own code section).
        self.size = PROFILE_BYTES + program_bytes(program, 0) + SLOT_BYTES * size

    def compile_at(self, head: int, rules: Rules) -> None:
        """Compile the region at head (a loop through it, else its segment)."""
        region = region_at(self.program, head)
        if not region.loop and sum(map(inlined, (d for d, _ in region.segments[0].steps))) < MIN_INLINED:
            return   # too little to gain over the interpreter's segment: stays interpreted
        source, namespace = generate(region, rules)
        code = compile(source, f"<rtwo-compiled {head}>", "exec")
        exec(code, namespace)  # noqa: S102 - source generated here from validated code
        self.fns[head] = cast(RegionFn, namespace["region"])   # generate's source defines it
        self.sources[head] = source
        self.compiled += 1
        self.size += REGION_BYTES + SOURCE_CHAR_BYTES * len(source)


class ProfileCache:
    """code section (bytes, hashed as a dict key) -> its Profile, one table per rules (version
    and word width: a program's handlers are built for its rules).

    The first execution of a code gets no profile (COLD) unless one of its frames runs long;
    the second gets one. Entries go in through ``put`` and grow through ``grew``, which keep
    ``bytes`` (the estimated total); when it would pass ``max_bytes`` every table is emptied.
    Lookups are plain dict lookups on ``table(rules)``.
    """

    def __init__(self, max_bytes: int = MAX_BYTES):
        self.max_bytes = max_bytes
        self.bytes = 0
        self.tables: dict[Rules, dict[bytes, Profile | object]] = {}

    def table(self, rules: Rules) -> dict[bytes, Profile | object]:
        table = self.tables.get(rules)
        if table is None:
            table = self.tables[rules] = {}
        return table

    @staticmethod
    def entry_bytes(code: bytes, value: object) -> int:
        return value.size if isinstance(value, Profile) else COLD_BYTES + len(code)

    def put(self, table: dict[bytes, Profile | object], code: bytes, value: object) -> None:
        """``table[code] = value``, within the bound."""
        old = table.get(code)
        if old is not None:
            self.bytes -= self.entry_bytes(code, old)
        size = self.entry_bytes(code, value)
        if self.bytes + size > self.max_bytes:
            self.clear()
        table[code] = value
        self.bytes += size

    def grew(self, profile: Profile, added: int) -> None:
        """``profile`` (in a table or just dropped from one) now holds ``added`` more bytes."""
        if any(t.get(profile.program.code.code) is profile for t in self.tables.values()):
            self.bytes += added
            if self.bytes > self.max_bytes:
                self.clear()

    def profiles(self) -> list[Profile]:
        return [p for t in self.tables.values() for p in t.values() if isinstance(p, Profile)]

    def clear(self) -> None:
        for table in self.tables.values():      # emptied in place: callers may hold a table
            table.clear()
        self.bytes = 0


COLD = object()   # seen once, not profiled
