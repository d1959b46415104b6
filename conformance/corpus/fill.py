"""``rtwo-vm vectors fill``: gather cases from the sources, run each through the
reference interpreter under every version it is valid for, validate every vector, and render
one corpus per version.

Filling is deterministic: cases come in a fixed order, the random source is seeded, the SMT
source reads its committed cache, the symbolic source reads its committed witnesses
(conformance/symbolic_inputs.json), and vectors are rendered as canonical JSON sorted by id,
so two fills give byte-identical files.

A case valid in two consecutive versions that are both filled gives two vectors of one input;
when they differ, some diff item of the newer version must explain it
(conformance.corpus.explain), or the fill fails naming the vector and the fields.
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
from conformance.corpus import explain, fuzz_source, random_source, smt_source, symbolic_source
from conformance.corpus.coverage import boundary_limits
from conformance.corpus.definitions import all_cases
from conformance.corpus.expect import ExpectationFailed, definition_problems
from conformance.corpus.vector import (
    BOUNDARY_POINTS, DEFAULTS, SOURCES, VERSIONS, Boundary, Case, fill_case, input_of, vector_line,
    version_order,
)
from reference_vm import Limits
from reference_vm.assembler import AssemblyError

POLICY_KEYS = (*DEFAULTS.policy["fields"], "allowed_operations", "forbidden_operations")
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


def _version_problems(case: Case) -> list[str]:
    out = []
    for field_name in ("since", "until", "container"):
        value = getattr(case, field_name)
        if value is not None and value not in VERSIONS:
            out.append(_unknown(f"version in {field_name}", value, VERSIONS))
    if out:
        return out
    if case.until is not None and version_order(case.until) < version_order(case.since):
        out.append(f"until {case.until} is before since {case.since}")
    if case.container is not None and version_order(case.container) > version_order(case.since):
        out.append(f"container version {case.container} is after since {case.since}: a version runs "
                   "no newer container")
    return out


def case_problems(case: Case, versions: Iterable[str] = ()) -> list[str]:
    """What is wrong with a definition before it is run: versions and names the spec does not
    know (in each of ``versions`` it is filled for), and fields of the wrong kind. (The filled
    vector is checked against the schema afterwards.)"""
    out = []
    if not isinstance(case.id, str) or not case.id:
        return ["the case has no id"]
    out += _version_problems(case)
    if not isinstance(case.code, (str, bytes)):
        out.append(f"code must be assembly text or container bytes, not {type(case.code).__name__}")
    if isinstance(case.opcodes, str):
        out.append(f"opcodes must be a tuple of mnemonics, not the string {case.opcodes!r}")
    else:
        for m in case.opcodes:
            unknown = [v for v in versions if m not in spec.load(v).by_mnemonic]
            if unknown:
                out.append(_unknown("opcode", m, spec.load(unknown[-1]).by_mnemonic) + " in opcodes"
                           + (f" (spec {', '.join(unknown)})" if unknown != list(versions) else ""))
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
            unknown = [v for v in versions if case.boundary.limit not in boundary_limits(v)]
            if unknown:
                out.append(_unknown("boundary limit", case.boundary.limit, boundary_limits(unknown[-1]))
                           + (f" (spec {', '.join(unknown)})" if unknown != list(versions) else ""))
            if case.boundary.at not in BOUNDARY_POINTS:
                out.append(_unknown("boundary point", case.boundary.at, BOUNDARY_POINTS))
    if case.expect is not None and not _version_problems(case):
        out += definition_problems(case.expect, [v for v in VERSIONS if case.valid_in(v)])
    return out


def fill_checked(case: Case, versions: Iterable[str]) -> dict[str, dict[str, Any]]:
    """fill_case for each of ``versions`` the case is valid in (version -> vector), with every
    problem of the definition reported as ``id: problem``; ExpectationFailed (every version's
    problems) when the results are not what its author expects."""
    versions = [v for v in versions if case.valid_in(v)] if not _version_problems(case) else []
    problems = case_problems(case, versions)
    if problems:
        raise DefinitionError(f"{case.id}: " + "; ".join(problems))
    try:
        vector_input = input_of(case)
    except AssemblyError as err:
        raise DefinitionError(f"{case.id}: assembly ({case.container_version}): {err}") from None
    filled: dict[str, dict[str, Any]] = {}
    failed: list[str] = []
    for version in versions:
        try:
            filled[version] = fill_case(case, version, vector_input)
        except ExpectationFailed as err:
            failed += err.lines
    if failed:
        raise ExpectationFailed(failed)
    return filled


@dataclass
class Filled:
    """One version's filled corpus."""

    version: str
    vectors: list[dict[str, Any]]
    manifest_extra: dict[str, Any]
    notes: list[str] = field(default_factory=list)


@dataclass
class Fill:
    """A fill of several versions: each version's corpus, and what applies to all."""

    corpora: dict[str, Filled]
    seconds: float
    notes: list[str] = field(default_factory=list)
    explained: dict[str, list[str]] = field(default_factory=dict)   # vector id -> the items explaining it

    @property
    def count(self) -> int:
        return sum(len(f.vectors) for f in self.corpora.values())

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else float("inf")


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


def cases(sources: Iterable[str] = SOURCES, smt: dict[str, list[dict]] | None = None,
          symbolic: dict[str, Any] | None = None) -> Iterator[Case]:
    """Every case of the sources, of every version."""
    sources = tuple(sources)
    if "definition" in sources:
        yield from all_cases()
    if "smt" in sources and smt:
        yield from smt_source.cases(smt)
    if "random" in sources:
        yield from random_source.cases()
    if "fuzz" in sources:
        yield from fuzz_source.cases()
    if "symbolic" in sources and symbolic:
        yield from symbolic_source.cases(symbolic)


class UnexplainedDifference(ValueError):
    """A vector whose result differs between two versions with no diff item to explain it."""


def _checked_versions(versions: Iterable[str]) -> tuple[str, ...]:
    for version in versions:
        spec.version(version)          # VersionError (one line) for an unknown one
    return tuple(v for v in VERSIONS if v in set(versions))


def fill(sources: Iterable[str] = SOURCES, *, versions: Iterable[str] = VERSIONS, validate: bool = True,
         refresh_smt: bool = False, refresh_symbolic: bool = False) -> Fill:
    """Fill every case for each of ``versions`` it is valid in; raise ValueError on a duplicate
    id within a version, a definition that cannot be filled (DefinitionError, naming the case),
    an invalid vector, a definition whose author expectations fail (ExpectationFailed, after
    every case ran: one line per problem of every such definition), or a difference between two
    filled consecutive versions that no diff item explains (UnexplainedDifference)."""
    sources, versions = tuple(sources), _checked_versions(versions)
    smt, notes = smt_inputs(refresh_smt) if "smt" in sources else (None, [])
    symbolic = None
    if "symbolic" in sources:
        symbolic, more = symbolic_source.inputs(refresh_symbolic)
        notes += more
    started = time.perf_counter()
    vectors: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
    seen: dict[str, set[str]] = {v: set() for v in versions}
    dropped: dict[str, list[str]] = {v: [] for v in versions}
    unexplained: list[str] = []
    explained: dict[str, list[str]] = {}
    failed: list[str] = []
    for case in cases(sources, smt, symbolic):
        try:
            filled = fill_checked(case, versions)
        except ExpectationFailed as err:
            failed += err.lines
            continue
        previous: dict[str, Any] | None = None
        for version, vector in filled.items():
            if case.id in seen[version]:
                raise DefinitionError(f"{case.id}: duplicate vector id in spec {version} "
                                      "(two definitions valid in it use it)")
            seen[version].add(case.id)
            if previous is not None and _consecutive(previous["_meta"]["spec_version"], version, versions):
                why = explain.unexplained(previous, vector)
                if why:
                    unexplained.append(why)
                elif vector["expected"] != previous["expected"]:
                    explained[f"{version}:{case.id}"] = explain.explaining(previous, vector)
            previous = vector
            size = len(vector_line(vector)) if case.source != "definition" else 0
            if size > MAX_GENERATED_BYTES:
                dropped[version].append(f"{case.id} ({size:,} bytes)")
                continue
            vectors[version].append(vector)
    if failed:
        raise ExpectationFailed(failed)
    if unexplained:
        raise UnexplainedDifference(f"{len(unexplained)} vectors differ between versions with no diff "
                                    f"item to explain it; first: {unexplained[0]}")
    corpora = {}
    for version in versions:
        version_notes = []
        if dropped[version]:
            version_notes.append(
                f"{len(dropped[version])} generated vectors of spec {version} left out, each larger than the "
                f"{MAX_GENERATED_BYTES // 1024} KiB a generated vector may take (solver-chosen "
                f"inputs such as 64 KiB of event data; hand-written vectors cover those "
                f"ranges): {', '.join(dropped[version])}")
        if validate:
            from conformance.corpus.schema import corpus_problems
            problems = corpus_problems(vectors[version])
            if problems:
                raise ValueError(f"{len(problems)} problems in the filled vectors of spec {version}; "
                                 f"first: {problems[0]}")
        extra: dict[str, Any] = {"random_seed": random_source.SEED, "smt_inputs": None}
        if smt:
            extra["smt_inputs"] = {"path": SMT_CACHE.name,
                                   "sha256": hashlib.sha256(SMT_CACHE.read_bytes()).hexdigest(),
                                   "branches": sum(len(v) for v in smt.values())}
        corpora[version] = Filled(version, vectors[version], extra, version_notes)
    return Fill(corpora, time.perf_counter() - started, notes, explained)


def _consecutive(old: str, new: str, versions: tuple[str, ...]) -> bool:
    """Whether ``new`` directly follows ``old`` among the filled versions."""
    return versions.index(new) == versions.index(old) + 1
