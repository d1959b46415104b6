"""Which checks check each clause of the spec, and which links are due for review.

The clauses are spec/clauses.py's; the links are declared next to the checks
(conformance/links for vectors, scenarios and the self-test, proofs/links.py for theorems and
agreement checks). A clause no check links to is *explained* when spec/coverage/untestable.toml
lists it with a kind and a reason (``informative``: it requires nothing an implementation
does; ``tests``: a requirement on the tools or the runtime, which no vector, theorem or
self-test observes, checked by the project's tests it names; ``untestable``: no finite check
can observe it), and *unexplained* otherwise.

Each link is confirmed with the digest of its clause's text (spec/coverage/confirmed.toml,
written by ``rtwo-vm spec coverage --confirm``). When a clause's text changes, every link to
it is listed for review until confirmed again; so is a link never confirmed, and a confirmed
link that is gone. A version is a value passed in: nothing of one version's coverage is
another's.
"""

from __future__ import annotations

import json
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import spec
from spec import clauses as spec_clauses
from spec.clauses import Clause, Link
from spec.files import read_bounded

KINDS = ("vector", "scenario", "theorem", "agreement", "selftest")
EXPLAINED = ("informative", "tests", "untestable")
MAX_DATA = 4 << 20        # bytes of either data file


def data_path(name: str) -> Path:
    """spec/coverage/<name> of the spec package in use."""
    return Path(str(resources.files("spec").joinpath("coverage", name)))


@dataclass(frozen=True)
class Reason:
    kind: str                         # one of EXPLAINED
    reason: str
    tests: tuple[str, ...] = ()       # for kind "tests": the test files (and functions) that check it


@dataclass
class ClauseCoverage:
    clause: Clause
    links: list[Link]
    reason: Reason | None
    review: list[tuple[str, str]] = field(default_factory=list)   # (link key, why)

    @property
    def status(self) -> str:
        return "checked" if self.links else ("explained" if self.reason else "unexplained")

    def by_kind(self) -> dict[str, list[Link]]:
        out: dict[str, list[Link]] = {}
        for link in self.links:
            out.setdefault(link.kind, []).append(link)
        return out

    def count(self, kind: str) -> int:
        """The distinct checks of ``kind`` that link to the clause."""
        return len({c for link in self.links if link.kind == kind for c in link.checks})


@dataclass
class Report:
    version: str
    clauses: list[ClauseCoverage]
    problems: list[str] = field(default_factory=list)
    obsolete: list[tuple[str, str]] = field(default_factory=list)   # (clause, key) confirmed, no longer linked
    unavailable: list[str] = field(default_factory=list)           # kinds that could not be gathered

    def of_status(self, status: str) -> list[ClauseCoverage]:
        return [c for c in self.clauses if c.status == status]

    @property
    def review(self) -> list[tuple[str, str, str]]:
        return [(c.clause.id, key, why) for c in self.clauses for key, why in c.review]

    @property
    def ok(self) -> bool:
        return not (self.problems or self.obsolete or self.review or self.of_status("unexplained"))

    def summary(self) -> dict[str, Any]:
        explained: dict[str, int] = {k: 0 for k in EXPLAINED}
        for c in self.of_status("explained"):
            assert c.reason is not None
            explained[c.reason.kind] += 1
        return {"version": self.version, "clauses": len(self.clauses),
                "checked": len(self.of_status("checked")), "explained": explained,
                "unexplained": len(self.of_status("unexplained")), "review": len(self.review),
                "obsolete": len(self.obsolete), "problems": len(self.problems),
                "checked_by": {k: sum(1 for c in self.clauses if c.count(k)) for k in KINDS}}

    def to_json(self, checks: int = 20) -> dict[str, Any]:
        """Everything, each link's checks cut to ``checks`` names (with their number)."""
        return {**self.summary(), "problems": self.problems, "unavailable": self.unavailable,
                "for_review": [{"clause": c, "link": k, "why": w} for c, k, w in self.review],
                "obsolete": [{"clause": c, "link": k} for c, k in self.obsolete],
                "per_clause": [{
                    "id": c.clause.id, "section": c.clause.section, "digest": c.clause.digest,
                    "status": c.status, "text": c.clause.summary,
                    "reason": None if c.reason is None else {"kind": c.reason.kind, "reason": c.reason.reason,
                                                             "tests": list(c.reason.tests)},
                    "counts": {k: c.count(k) for k in KINDS},
                    "links": [{"kind": link.kind, "key": link.key, "count": len(link.checks),
                               "checks": list(link.checks[:checks])} for link in c.links]}
                    for c in self.clauses]}


# -- the data files --------------------------------------------------------------------------

def _toml(path: Path, what: str) -> dict[str, Any]:
    try:
        return tomllib.loads(read_bounded(path, MAX_DATA, what).decode("utf-8"))
    except UnicodeDecodeError as err:
        raise ValueError(f"{path}: not UTF-8 text ({err.reason})") from None
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"{path}: not TOML ({err})") from None


def load_reasons(path: Path | None = None, version: str | None = None) -> dict[str, Reason]:
    """Clause id -> why no check links to it (spec/coverage/untestable.toml: groups of clauses
    with one kind, reason and, for kind tests, the tests; a group naming ``versions`` is for
    those only, and left out for another ``version``). ValueError for a malformed file."""
    path = path or data_path("untestable.toml")
    doc = _toml(path, "list of unchecked clauses")
    out: dict[str, Reason] = {}
    seen: dict[str, list[str]] = {}
    groups = doc.get("group", [])
    if set(doc) - {"group"} or not isinstance(groups, list):
        raise ValueError(f"{path}: holds only [[group]] tables")
    for n, group in enumerate(groups, 1):
        where = f"{path}: group {n}"
        if not isinstance(group, dict) or set(group) - {"kind", "reason", "tests", "clauses", "versions"}:
            raise ValueError(f"{where}: members are kind, reason, tests, versions and clauses")
        only = group.get("versions", list(spec.names()))
        if not isinstance(only, list) or not only or not all(v in spec.names() for v in only):
            raise ValueError(f"{where}: versions is a list of spec versions")
        kind, reason, tests, listed = (group.get("kind"), group.get("reason"), group.get("tests", []),
                                       group.get("clauses"))
        if kind not in EXPLAINED:
            raise ValueError(f"{where}: kind must be one of {', '.join(EXPLAINED)}")
        if not isinstance(reason, str) or not reason.strip() or len(reason) > 1000:
            raise ValueError(f"{where}: a reason is one non-empty string (at most 1000 characters)")
        if not isinstance(tests, list) or not all(isinstance(t, str) and t.startswith("tests/") for t in tests):
            raise ValueError(f"{where}: tests are paths under tests/")
        if (kind == "tests") != bool(tests):
            raise ValueError(f"{where}: a group of kind tests names its tests, and only it")
        if not isinstance(listed, list) or not listed:
            raise ValueError(f"{where}: clauses is a non-empty list of clause ids")
        for clause_id in listed:
            if not isinstance(clause_id, str) or not spec_clauses.CLAUSE_ID.fullmatch(clause_id):
                raise ValueError(f"{where}: {str(clause_id)[:60]!r} is not a clause id")
            if clause_id in seen and set(seen[clause_id]) & set(only):
                raise ValueError(f"{where}: clause {clause_id} is listed twice")
            seen[clause_id] = seen.get(clause_id, []) + list(only)
            if version is None or version in only:
                out[clause_id] = Reason(kind, " ".join(reason.split()), tuple(tests))
    return out


Store = dict[str, dict[str, tuple[str, tuple[str, ...]]]]    # version -> clause -> (digest, link keys)


def load_store(path: Path | None = None) -> Store:
    """The confirmed links (spec/coverage/confirmed.toml); ValueError for a malformed file."""
    path = path or data_path("confirmed.toml")
    return _store(_toml(path, "store of confirmed links"), str(path))


def load_store_text(text: str) -> Store:
    """The confirmed links written in ``text`` (render_store's form)."""
    try:
        return _store(tomllib.loads(text), "store")
    except tomllib.TOMLDecodeError as err:
        raise ValueError(f"store: not TOML ({err})") from None


def _store(doc: dict[str, Any], path: str) -> Store:
    out: Store = {}
    for version, entries in doc.items():
        if version not in spec.names() or not isinstance(entries, dict):
            raise ValueError(f"{path}: [{str(version)[:20]}] names no spec version")
        table: dict[str, tuple[str, tuple[str, ...]]] = {}
        for clause_id, entry in entries.items():
            where = f"{path}: {version} {str(clause_id)[:60]}"
            if not spec_clauses.CLAUSE_ID.fullmatch(clause_id) or not isinstance(entry, dict) \
                    or set(entry) != {"digest", "links"}:
                raise ValueError(f"{where}: an entry is a clause id = {{digest, links}}")
            digest, keys = entry["digest"], entry["links"]
            if not isinstance(digest, str) or len(digest) != spec_clauses.DIGEST_DIGITS \
                    or not all(ch in "0123456789abcdef" for ch in digest):
                raise ValueError(f"{where}: the digest is {spec_clauses.DIGEST_DIGITS} hexadecimal digits")
            if not isinstance(keys, list) or not all(isinstance(k, str) and ":" in k for k in keys):
                raise ValueError(f"{where}: links is a list of kind:key strings")
            table[clause_id] = (digest, tuple(keys))
        out[version] = table
    return out


def render_store(store: Store) -> str:
    lines = ["# The links of checks to clauses, each confirmed with the digest of its clause's text",
             "# (spec/clauses.py). Written by `rtwo-vm spec coverage --confirm`; never by hand.", ""]
    for version in sorted(store, key=spec.names().index):
        lines.append(f'["{version}"]')
        for clause_id, (digest, keys) in store[version].items():
            quoted = ", ".join(json.dumps(k, ensure_ascii=False) for k in sorted(keys))
            lines.append(f'"{clause_id}" = {{ digest = "{digest}", links = [{quoted}] }}')
        lines.append("")
    return "\n".join(lines)


# -- coverage ----------------------------------------------------------------------------------

def gather(version: str) -> tuple[list[Link], list[str]]:
    """Every link of ``version``, and the kinds that could not be gathered (with why)."""
    links: list[Link] = []
    missing: list[str] = []
    sources = (("vector", "conformance.links", "vector_links"), ("scenario", "conformance.links", "scenario_links"),
               ("selftest", "conformance.links", "selftest_links"), ("theorem", "proofs.links", "theorem_links"),
               ("agreement", "proofs.links", "agreement_links"))
    import importlib
    for kind, module, function in sources:
        try:
            links += getattr(importlib.import_module(module), function)(version)
        except ImportError as err:
            missing.append(f"{kind}: {module} cannot be imported ({err})")
        except (OSError, ValueError) as err:     # a corpus that cannot be read, a version without models
            missing.append(f"{kind}: {str(err).splitlines()[0][:200]}")
    return links, missing


def key_of(link: Link) -> str:
    return f"{link.kind}:{link.key}"


def coverage(version: str, links: list[Link] | None = None, store: Store | None = None,
             reasons: dict[str, Reason] | None = None) -> Report:
    """The coverage of every clause of ``version`` (links, store and reasons: the project's
    unless given)."""
    unavailable: list[str] = []
    if links is None:
        links, unavailable = gather(version)
    if store is None:
        store = load_store() if data_path("confirmed.toml").exists() else {}
    reasons = load_reasons(version=version) if reasons is None else reasons
    known = spec_clauses.by_id(version)
    everywhere = {c for v in spec.names() for c in spec_clauses.by_id(v)}
    report = Report(version, [], list(spec_clauses.problems(version)), unavailable=unavailable)
    for link in links:
        for clause_id in link.clauses:
            if clause_id not in everywhere:
                report.problems.append(f"{link.kind} {link.key!r} names clause {clause_id}, which no version has")
    for clause_id in reasons:
        if clause_id not in everywhere:
            report.problems.append(f"untestable.toml lists clause {clause_id}, which no version has")
    by_clause: dict[str, list[Link]] = {}
    for link in links:
        for clause_id in dict.fromkeys(link.clauses):
            if clause_id in known:
                by_clause.setdefault(clause_id, []).append(link)
    confirmed = store.get(version, {})
    for clause in spec_clauses.clauses(version):
        reason = reasons.get(clause.id)
        entry = ClauseCoverage(clause, by_clause.get(clause.id, []), reason)
        if entry.links and reason is not None:
            report.problems.append(f"clause {clause.id} is listed as {reason.kind} in untestable.toml "
                                   f"but checked by {key_of(entry.links[0])}")
        current = [key_of(link) for link in entry.links] + ([f"explained:{reason.kind}"] if reason else [])
        stored = confirmed.get(clause.id)
        if stored is None:
            entry.review = [(k, "never confirmed") for k in current]
        elif stored[0] != clause.digest:
            entry.review = [(k, f"text changed (digest {stored[0]} -> {clause.digest})") for k in current]
        else:
            entry.review = [(k, "never confirmed") for k in current if k not in stored[1]]
            report.obsolete += [(clause.id, k) for k in stored[1] if k not in current]
        report.clauses.append(entry)
    report.obsolete += [(clause_id, "(the clause)") for clause_id in confirmed if clause_id not in known]
    try:
        from conformance.links.selftest import unlinked
    except ImportError:          # no conformance package: its kinds are already listed as not gathered
        return report
    report.problems += [f"self-test check names no clause: {name}" for name in unlinked()]
    return report


def confirmed_store(reports: list[Report], store: Store) -> Store:
    """``store`` with the versions of ``reports`` replaced by what they link now."""
    out = {v: dict(entries) for v, entries in store.items()}
    for report in reports:
        table = {}
        for entry in report.clauses:
            keys = [key_of(link) for link in entry.links]
            if entry.reason is not None:
                keys.append(f"explained:{entry.reason.kind}")
            if keys:
                table[entry.clause.id] = (entry.clause.digest, tuple(dict.fromkeys(keys)))
        out[report.version] = table
    return out
