"""``rtwo-vm vectors fill``: gather cases from the three sources, run each through the
reference interpreter, validate every vector, and render the corpus.

Filling is deterministic: cases come in a fixed order, the random source is seeded, the SMT
source reads its committed cache, and vectors are rendered as canonical JSON sorted by id,
so two fills give byte-identical files.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

from conformance.constants import SMT_CACHE
from conformance import random_source, smt_source
from conformance.definitions import all_cases
from conformance.vector import SOURCES, Case, fill_case, vector_line

# Generated (SMT and random) vectors larger than this are left out: z3 happily picks 64 KiB
# event data, which would dominate the corpus while the hand-written vectors already cover
# large ranges. Hand-written vectors are never dropped.
MAX_GENERATED_BYTES = 16 * 1024


@dataclass
class Filled:
    vectors: list[dict[str, Any]]
    seconds: float
    manifest_extra: dict[str, Any]
    notes: list[str] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return len(self.vectors) / self.seconds if self.seconds else float("inf")


def smt_inputs(refresh: bool = False) -> tuple[dict[str, list[dict]] | None, list[str]]:
    """The cached branch inputs (computing the cache first when asked or when it is missing
    and proofs.branches is importable), with notes for the user."""
    notes = []
    if refresh or not SMT_CACHE.exists():
        if smt_source.branches_available():
            started = time.perf_counter()
            smt_source.refresh_cache()
            notes.append(f"SMT branch inputs refreshed from proofs.branches in {time.perf_counter() - started:.1f} s")
        elif refresh:
            notes.append("proofs.branches is not available: SMT cache not refreshed")
    inputs = smt_source.load_cache()
    if inputs is None:
        notes.append("no SMT branch inputs (proofs.branches unavailable and no cache): SMT source skipped")
    return inputs, notes


def cases(sources: Iterable[str] = SOURCES, smt: dict[str, list[dict]] | None = None) -> Iterator[Case]:
    sources = tuple(sources)
    if "definition" in sources:
        yield from all_cases()
    if "smt" in sources and smt:
        yield from smt_source.cases(smt)
    if "random" in sources:
        yield from random_source.cases()


def fill(sources: Iterable[str] = SOURCES, *, validate: bool = True, refresh_smt: bool = False) -> Filled:
    """Fill every case; raise ValueError on a duplicate id or an invalid vector."""
    smt, notes = smt_inputs(refresh_smt) if "smt" in tuple(sources) else (None, [])
    started = time.perf_counter()
    vectors, seen, dropped = [], set(), 0
    for case in cases(sources, smt):
        if case.id in seen:
            raise ValueError(f"duplicate vector id {case.id}")
        seen.add(case.id)
        vector = fill_case(case)
        if case.source != "definition" and len(vector_line(vector)) > MAX_GENERATED_BYTES:
            dropped += 1
            continue
        vectors.append(vector)
    if dropped:
        notes.append(f"{dropped} generated vectors left out: larger than {MAX_GENERATED_BYTES // 1024} KiB")
    if validate:
        from conformance.schema import corpus_problems
        problems = corpus_problems(vectors)
        if problems:
            raise ValueError("invalid vectors:\n" + "\n".join(problems[:20]))
    seconds = time.perf_counter() - started
    extra = {"random_seed": random_source.SEED, "smt_inputs": None}
    if smt:
        extra["smt_inputs"] = {"path": SMT_CACHE.name,
                               "sha256": hashlib.sha256(SMT_CACHE.read_bytes()).hexdigest(),
                               "branches": sum(len(v) for v in smt.values())}
    return Filled(vectors, seconds, extra, notes)
