"""Which clauses of the spec (spec/clauses.py) the conformance checks check, declared by group.

A vector rule (``V``) selects vectors of a version's corpus by their id and tags and names the
clauses each of them checks: ``V("6.1-trap", outcome="TRAP_EXECUTED")`` claims that every
vector ending in TRAP_EXECUTED checks clause 6.1-trap. The rules are in ``vectors.py``
(written out) and generated per version (every instruction's vectors check the clauses that
define it, and those of its cost rule); scenario rules (``S``) in ``scenarios.py`` select
scenario vectors; selftest rules in ``selftest.py`` select the checks of ``rtwo-vm conformance
selftest`` by the start of their names. A rule that selects nothing in a version is no link in
it. rtwo_vm/clauses.py gathers the links of every kind and records their clause digests.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, fields
from typing import Any, Iterable, Mapping, Sequence

from spec.clauses import Link, ids

_CONDITIONS = ("id", "opcode", "opcodes", "outcome", "status", "call_outcome", "boundary", "category",
               "source")


@dataclass(frozen=True)
class VectorRule:
    """Vectors that meet every condition given check ``clauses``. ``id``, ``outcome``,
    ``status``, ``call_outcome`` (any of the vector's), ``boundary`` (``limit:at``) and
    ``category`` (any) are globs; ``opcode`` is one of the vector's opcodes, ``opcodes`` a
    tuple of which the vector must hold one."""

    clauses: tuple[str, ...]
    id: str | None = None
    opcode: str | None = None
    opcodes: tuple[str, ...] | None = None
    outcome: str | None = None
    status: str | None = None
    call_outcome: str | None = None
    boundary: str | None = None
    category: str | None = None
    source: str | None = None
    name: str | None = None           # the key of a generated rule (its selector is long)

    @property
    def key(self) -> str:
        if self.name:
            return self.name
        return " ".join(f"{f}={_text(getattr(self, f))}" for f in _CONDITIONS if getattr(self, f) is not None)

    def matches(self, vector: Mapping[str, Any]) -> bool:
        tags = vector.get("tags", {})
        if self.id is not None and not fnmatch.fnmatchcase(vector["id"], self.id):
            return False
        if self.opcode is not None and self.opcode not in tags.get("opcodes", ()):
            return False
        if self.opcodes is not None and not set(self.opcodes) & set(tags.get("opcodes", ())):
            return False
        if self.outcome is not None and not fnmatch.fnmatchcase(str(tags.get("outcome")), self.outcome):
            return False
        if self.status is not None:
            status = vector.get("expected", {}).get("result", {}).get("status")
            if not fnmatch.fnmatchcase(str(status), self.status):
                return False
        if self.call_outcome is not None and not any(
                fnmatch.fnmatchcase(c, self.call_outcome) for c in tags.get("call_outcomes", ())):
            return False
        if self.boundary is not None:
            bound = tags.get("boundary")
            if not bound or not fnmatch.fnmatchcase(f"{bound['limit']}:{bound['at']}", self.boundary):
                return False
        if self.category is not None and not any(
                fnmatch.fnmatchcase(c, self.category) for c in tags.get("categories", ())):
            return False
        return self.source is None or tags.get("source") == self.source


def _text(value: Any) -> str:
    return ",".join(value) if isinstance(value, tuple) else str(value)


def V(clauses: str, **conditions: Any) -> VectorRule:
    """A vector rule: ``clauses`` space-separated ids, the conditions as keywords."""
    unknown = set(conditions) - {f.name for f in fields(VectorRule)}
    if unknown:
        raise TypeError(f"a vector rule has no condition {sorted(unknown)}")
    return VectorRule(ids(clauses), **conditions)


@dataclass(frozen=True)
class ScenarioRule:
    """Scenario vectors whose id matches the glob ``id`` (and, when given, one of whose steps
    ends with an outcome matching ``outcome``) check ``clauses``."""

    clauses: tuple[str, ...]
    id: str = "scenario/*"
    outcome: str | None = None

    @property
    def key(self) -> str:
        return f"id={self.id}" + (f" outcome={self.outcome}" if self.outcome else "")

    def matches(self, vector: Mapping[str, Any]) -> bool:
        if not fnmatch.fnmatchcase(vector["id"], self.id):
            return False
        outcomes = vector.get("tags", {}).get("outcomes", ())
        return self.outcome is None or any(fnmatch.fnmatchcase(o, self.outcome) for o in outcomes)


def S(clauses: str, id: str = "scenario/*", outcome: str | None = None) -> ScenarioRule:
    return ScenarioRule(ids(clauses), id, outcome)


def _links(kind: str, rules: Iterable[Any], items: Sequence[Mapping[str, Any]]) -> list[Link]:
    # Candidates first (by opcode, by id group), so that a rule is matched against the vectors
    # it can select rather than against the whole corpus.
    by_opcode: dict[str, list[int]] = {}
    by_group: dict[str, list[int]] = {}
    for n, v in enumerate(items):
        for mnemonic in set(v.get("tags", {}).get("opcodes", ())):
            by_opcode.setdefault(mnemonic, []).append(n)
        by_group.setdefault(v["id"].split("/", 1)[0], []).append(n)
    everything = range(len(items))
    out = []
    for rule in rules:
        candidates: Iterable[int] = everything
        if getattr(rule, "opcode", None):
            candidates = by_opcode.get(rule.opcode, [])
        elif getattr(rule, "opcodes", None):
            candidates = sorted({n for m in rule.opcodes for n in by_opcode.get(m, [])})
        elif rule.id and not any(ch in rule.id.split("/", 1)[0] for ch in "*?["):
            candidates = by_group.get(rule.id.split("/", 1)[0], [])
        chosen = tuple(items[n]["id"] for n in candidates if rule.matches(items[n]))
        if chosen:
            out.append(Link(kind, rule.key, rule.clauses, chosen))
    return out


def vector_links(version: str, vectors: Sequence[Mapping[str, Any]] | None = None) -> list[Link]:
    """The links of the vectors of ``version``'s corpus (the committed one by default; ValueError
    when there is none)."""
    from conformance.links.vectors import rules
    if vectors is None:
        from conformance.constants import corpus_dir
        from conformance.corpus import store
        folder = corpus_dir(version)
        if not (folder / "manifest.json").is_file():
            raise ValueError(f"no corpus of spec {version} is committed ({folder})")
        vectors = store.load(folder)
    return _links("vector", rules(version), vectors)


def scenario_links(version: str, scenarios: Sequence[Mapping[str, Any]] | None = None) -> list[Link]:
    """The links of the scenario vectors of ``version``'s corpus (the committed ones by default)."""
    from conformance.links.scenarios import RULES
    if scenarios is None:
        from conformance.constants import corpus_dir
        from conformance.scenario import store
        folder = store.folder(corpus_dir(version))
        scenarios = store.load(folder, version) if (folder / "manifest.json").is_file() else []
    return _links("scenario", RULES, scenarios)


def selftest_links(version: str) -> list[Link]:
    """The links of the checks ``rtwo-vm conformance selftest`` runs for ``version``."""
    from conformance.links.selftest import links
    return links(version)
