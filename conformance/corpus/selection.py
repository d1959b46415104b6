"""Choosing vectors: ``--filter`` expressions and known-failure lists.

A filter is a comma-separated list of terms that must all match; several ``--filter``
options select the union. A term is ``key=glob`` with key one of id, group, opcode, outcome,
call_outcome, section, category, source, boundary, or a bare glob matched against the id::

    --filter 'arithmetic/*'  --filter 'opcode=DIV*,outcome=success'  --filter boundary=compute

Known-failure lists (conformance/known_failures/*.toml, schema
spec/schemas/known-failures.schema.json) are versioned data: each entry names vector ids (a
glob) and gives the reason, and the list names the implementation it applies to by its
hello name and a *fingerprint* the list's author sets: a glob matched against the adapter
command line, the implementation version, or "name version". A list applies only when both
match, so an adapter that merely calls itself by another implementation's name does not
inherit that implementation's list. Listed vectors still run: one that fails is an expected failure, reported with its
reason; one that passes is reported as now passing and fails the run until it is removed
from the list (strict, like pytest's ``xfail(strict=True)``). A list names the spec version it
is for (``spec_version``) and applies to the runs of that version only: a vector that fails
under 1.0 says nothing about the vector of the same id under 1.1.
"""

from __future__ import annotations

import fnmatch
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from spec.files import FileRefused, read_bounded

KEYS = ("id", "group", "opcode", "outcome", "call_outcome", "section", "category", "source", "boundary")


class SelectionError(ValueError):
    """A filter or known-failure list that cannot be used."""


def _values(vector: Mapping[str, Any], key: str) -> list[str]:
    tags = vector["tags"]
    if key == "id":
        return [vector["id"]]
    if key == "group":
        return [vector["id"].split("/", 1)[0]]
    if key == "opcode":
        return list(tags["opcodes"])
    if key == "outcome":
        return [tags["outcome"]]
    if key == "call_outcome":
        return list(tags["call_outcomes"])
    if key == "section":
        return list(tags["sections"])
    if key == "category":
        return list(tags["categories"])
    if key == "source":
        return [tags["source"]]
    boundary = tags["boundary"]
    return [] if boundary is None else [boundary["limit"], f"{boundary['limit']}:{boundary['at']}"]


def compile_filter(expression: str):
    terms = []
    for term in (t.strip() for t in expression.split(",")):
        if not term:
            raise SelectionError(f"empty term in filter {expression!r}")
        key, eq, pattern = term.partition("=")
        if not eq:
            key, pattern = "id", term
        if key not in KEYS:
            raise SelectionError(f"unknown filter key {key!r} (use one of {', '.join(KEYS)})")
        terms.append((key, pattern))

    def matches(vector: Mapping[str, Any]) -> bool:
        return all(any(fnmatch.fnmatchcase(v, pattern) for v in _values(vector, key)) for key, pattern in terms)
    return matches


def select(vectors: Iterable[Mapping[str, Any]], filters: Iterable[str]) -> list[Mapping[str, Any]]:
    """The vectors any filter selects (all without filters); SelectionError when filters
    select nothing: an empty selection is a usage error in every command."""
    filters = list(filters)
    compiled = [compile_filter(f) for f in filters]
    if not compiled:
        return list(vectors)
    chosen = [v for v in vectors if any(m(v) for m in compiled)]
    if not chosen:
        raise SelectionError("the filters select no vector: " + " | ".join(repr(f) for f in filters))
    return chosen


@dataclass(frozen=True)
class KnownFailure:
    pattern: str
    reason: str
    implementation: str
    source: str                  # the file it came from
    fingerprint: str = "*"
    spec_version: str = ""       # the version whose runs the list is for

    def describe(self) -> str:
        return f"{self.reason} ({Path(self.source).name})"

    def applies(self, implementation: str, vector_id: str, fingerprints: Iterable[str] = ("",)) -> bool:
        return (fnmatch.fnmatchcase(implementation, self.implementation)
                and any(fnmatch.fnmatchcase(f, self.fingerprint) for f in fingerprints)
                and fnmatch.fnmatchcase(vector_id, self.pattern))


MAX_KNOWN_FAILURES = 4 << 20   # bytes of one --known-failures file


def load_known_failures(paths: Iterable[Path], version: str) -> list[KnownFailure]:
    """The entries of the lists in ``paths`` that are for spec ``version`` (every list is
    checked, whatever its version)."""
    from conformance.corpus.schema import schema_problems, version_problem

    out = []
    for path in paths:
        try:   # a regular file, at most MAX_KNOWN_FAILURES bytes (spec.files: no FIFO, no device)
            doc = tomllib.loads(read_bounded(path, MAX_KNOWN_FAILURES, "known-failures file").decode("utf-8"))
        except FileRefused as err:
            raise SelectionError(str(err)) from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
            raise SelectionError(f"{path}: {err}") from None
        problems = schema_problems("known-failures", doc) or [
            p for p in [version_problem(doc["spec_version"], "spec_version")] if p]
        if problems:
            raise SelectionError(f"{path}: " + "; ".join(problems))
        if doc["spec_version"] != version:
            continue
        for entry in doc.get("known_failure", []):
            out.append(KnownFailure(entry["id"], entry["reason"], doc["implementation"], str(path),
                                    doc["fingerprint"], doc["spec_version"]))
    return out


def fingerprints(command: str, name: str, version: str) -> tuple[str, ...]:
    """What a list's fingerprint is matched against: the command, the version, "name version"."""
    return (command, version, f"{name} {version}")


def known_failure(known: Iterable[KnownFailure], implementation: str, vector_id: str,
                  prints: Iterable[str] = ("",)) -> KnownFailure | None:
    """The first entry listing this vector for this implementation, if any."""
    prints = tuple(prints)
    for k in known:
        if k.applies(implementation, vector_id, prints):
            return k
    return None
