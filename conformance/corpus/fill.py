"""``rtwo-vm vectors fill``: gather cases from the sources, run each through the
reference interpreter, validate every vector, and render the corpus.

Filling is deterministic: cases come in a fixed order, the random source is seeded, the SMT
source reads its committed cache, the symbolic source reads its committed witnesses
(conformance/symbolic_inputs.json), and vectors are rendered as canonical JSON sorted by id,
so two fills give byte-identical files.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import spec
from conformance.constants import SMT_CACHE
from conformance.corpus import fuzz_source, random_source, smt_source, symbolic_source
from conformance.corpus.coverage import BOUNDARY_LIMITS
from conformance.corpus.definitions import all_cases
from conformance.corpus.vector import BOUNDARY_POINTS, SOURCES, Boundary, Case, fill_case, vector_line
from reference_vm import Limits
from reference_vm.assembler import AssemblyError

TABLE = spec.load()
POLICY_KEYS = (*TABLE.policy["fields"], "allowed_operations", "forbidden_operations")
SECTION = re.compile(r"[0-9]+(\.[0-9]+)*")

# Generated (SMT and random) vectors larger than this are left out: z3 happily picks 64 KiB
# event data, which would dominate the corpus while the hand-written vectors already cover
# large ranges. Hand-written vectors are never dropped.
MAX_GENERATED_BYTES = 16 * 1024


class DefinitionError(ValueError):
    """A definition (Case) that cannot be filled; the message starts with its vector id."""


def _unknown(kind: str, name: Any, known) -> str:
    close = difflib.get_close_matches(str(name), [str(k) for k in known], n=1)
    return f"unknown {kind} {name!r}" + (f" (did you mean {close[0]!r}?)" if close else "")


def case_problems(case: Case) -> list[str]:
    """What is wrong with a definition before it is run: names the spec does not know, and
    fields of the wrong kind. (The filled vector is checked against the schema afterwards.)"""
    out = []
    if not isinstance(case.id, str) or not case.id:
        return ["the case has no id"]
    if not isinstance(case.code, (str, bytes)):
        out.append(f"code must be assembly text or container bytes, not {type(case.code).__name__}")
    if isinstance(case.opcodes, str):
        out.append(f"opcodes must be a tuple of mnemonics, not the string {case.opcodes!r}")
    else:
        out += [_unknown("opcode", m, TABLE.by_mnemonic) + " in opcodes"
                for m in case.opcodes if m not in TABLE.by_mnemonic]
    out += [f"section {s!r} is not a section number" for s in case.sections
            if not isinstance(s, str) or not SECTION.fullmatch(s)]
    out += [_unknown("policy field", k, POLICY_KEYS) for k in case.policy if k not in POLICY_KEYS]
    out += [_unknown("limit", k, Limits.DIMENSIONS) for k in case.limits if k not in Limits.DIMENSIONS]
    if case.source not in SOURCES:
        out.append(_unknown("source", case.source, SOURCES))
    if case.boundary is not None:
        if not isinstance(case.boundary, Boundary):
            out.append("boundary must be a Boundary")
        else:
            if case.boundary.limit not in BOUNDARY_LIMITS:
                out.append(_unknown("boundary limit", case.boundary.limit, BOUNDARY_LIMITS))
            if case.boundary.at not in BOUNDARY_POINTS:
                out.append(_unknown("boundary point", case.boundary.at, BOUNDARY_POINTS))
    return out


def fill_checked(case: Case) -> dict[str, Any]:
    """fill_case, with every problem of the definition reported as ``id: problem``."""
    problems = case_problems(case)
    if problems:
        raise DefinitionError(f"{case.id}: " + "; ".join(problems))
    try:
        return fill_case(case)
    except AssemblyError as err:
        raise DefinitionError(f"{case.id}: assembly: {err}") from None


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
    if "fuzz" in sources:
        yield from fuzz_source.cases()


def _symbolic_vectors(entries: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    if entries:
        yield from symbolic_source.vectors(entries)


def fill(sources: Iterable[str] = SOURCES, *, validate: bool = True, refresh_smt: bool = False,
         refresh_symbolic: bool = False) -> Filled:
    """Fill every case; raise ValueError on a duplicate id, a definition that cannot be filled
    (DefinitionError, naming the case) or an invalid vector."""
    sources = tuple(sources)
    smt, notes = smt_inputs(refresh_smt) if "smt" in sources else (None, [])
    symbolic = None
    if "symbolic" in sources:
        symbolic, more = symbolic_source.inputs(refresh_symbolic)
        notes += more
    started = time.perf_counter()
    vectors, seen, dropped = [], set(), []
    for case in cases(sources, smt):
        if case.id in seen:
            raise DefinitionError(f"{case.id}: duplicate vector id (two definitions use it)")
        seen.add(case.id)
        vector = fill_checked(case)
        size = len(vector_line(vector)) if case.source != "definition" else 0
        if size > MAX_GENERATED_BYTES:
            dropped.append(f"{case.id} ({size:,} bytes)")
            continue
        vectors.append(vector)
    for vector in _symbolic_vectors(symbolic):
        if vector["id"] in seen:
            raise DefinitionError(f"{vector['id']}: duplicate vector id (two symbolic paths use it)")
        seen.add(vector["id"])
        size = len(vector_line(vector))
        if size > MAX_GENERATED_BYTES:
            dropped.append(f"{vector['id']} ({size:,} bytes)")
            continue
        vectors.append(vector)
    if dropped:
        notes.append(f"{len(dropped)} generated vectors left out, each larger than the "
                     f"{MAX_GENERATED_BYTES // 1024} KiB a generated vector may take (solver-chosen "
                     f"inputs such as 64 KiB of event data; hand-written vectors cover those "
                     f"ranges): {', '.join(dropped)}")
    if validate:
        from conformance.corpus.schema import corpus_problems
        problems = corpus_problems(vectors)
        if problems:
            raise ValueError(f"{len(problems)} problems in the filled vectors; first: {problems[0]}")
    seconds = time.perf_counter() - started
    extra: dict[str, Any] = {"random_seed": random_source.SEED, "smt_inputs": None}
    if smt:
        extra["smt_inputs"] = {"path": SMT_CACHE.name,
                               "sha256": hashlib.sha256(SMT_CACHE.read_bytes()).hexdigest(),
                               "branches": sum(len(v) for v in smt.values())}
    return Filled(vectors, seconds, extra, notes)
