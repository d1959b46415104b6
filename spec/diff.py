"""Every difference between two versions, of the data and of the prose, each with its diff item.

:func:`compare` loads both versions and compares what they are, not what their diffs say: the
rows of every table (instructions by mnemonic, errors by code), every other value by its path,
and every prose section. Each difference is then attributed to the items of the versions in
between whose operations or section files touch it. A difference no item declares, or an
operation that changes nothing, is a *problem*: by construction neither can happen for
versions built by spec/versions.py, so a problem means the builder or a diff is broken, and
``rtwo-vm spec check`` fails on it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any, Mapping

from spec import prose, versioning as versions
from spec.versioning import ROW_KEYS, VersionError


@dataclass(frozen=True)
class Difference:
    where: str                  # "instructions MULHU", "schedule hash.block_cost", "section 6.3"
    change: str                 # added, removed, changed
    before: Any
    after: Any
    items: tuple[str, ...]      # "1.1/N1"
    lines: tuple[str, ...] = ()  # for prose: a unified diff


@dataclass
class Comparison:
    old: str
    new: str
    data: list[Difference] = field(default_factory=list)
    prose: list[Difference] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)   # the items between, in order
    problems: list[str] = field(default_factory=list)


def _between(old: str, new: str) -> tuple[str, ...]:
    """The versions whose diffs lead from ``old`` to ``new`` (``old`` excluded)."""
    chain = versions.lineage(new)
    if old not in chain:
        raise VersionError(f"{new} is not built on {old}: compare a version with one of its bases")
    return chain[chain.index(old) + 1:]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, sub in value.items():
            out.update(_flatten(sub, f"{prefix}.{key}" if prefix else key))
        return out
    return {prefix: value}


def _touches(version: str) -> list[tuple[str, str, str]]:
    """(item id, file, what) for every operation of a version's diff: ``what`` is a row key
    for add/change/remove and a dotted path for set."""
    out = []
    for item in versions.diff_document(version)["item"]:
        for op in versions.operations(item):
            if op["op"] == "set":
                out.append((f"{version}/{item['id']}", op["file"], op["path"]))
            else:
                key = ROW_KEYS.get((op["file"], op["array"]), op.get("key"))
                value = op["row"][key] if op["op"] == "add" else op["match"]
                out.append((f"{version}/{item['id']}", op["file"], f"{op['array']}:{value}"))
    return out


def _data_differences(old: str, new: str, touches: list[tuple[str, str, str]]) -> list[Difference]:
    found = []
    for name in versions.data_files():
        a, b = dict(versions.raw(name, old)), dict(versions.raw(name, new))
        a.pop("spec_version", None)
        b.pop("spec_version", None)
        for array in sorted(k for k in set(a) | set(b) if isinstance(a.get(k, b.get(k)), list)):
            key = ROW_KEYS.get((name, array))
            rows_a, rows_b = a.pop(array, []), b.pop(array, [])
            if key is None:
                if rows_a != rows_b:
                    found.append((name, array, "changed", rows_a, rows_b))
                continue
            by_a = {r[key]: r for r in rows_a}
            by_b = {r[key]: r for r in rows_b}
            for k in sorted(set(by_a) | set(by_b), key=str):
                if k not in by_a:
                    found.append((name, f"{array}:{k}", "added", None, by_b[k]))
                elif k not in by_b:
                    found.append((name, f"{array}:{k}", "removed", by_a[k], None))
                elif by_a[k] != by_b[k]:
                    fields = sorted(f for f in set(by_a[k]) | set(by_b[k]) if by_a[k].get(f) != by_b[k].get(f))
                    found.append((name, f"{array}:{k}", "changed", {f: by_a[k].get(f) for f in fields},
                                  {f: by_b[k].get(f) for f in fields}))
        flat_a, flat_b = _flatten(a), _flatten(b)
        for path in sorted(set(flat_a) | set(flat_b)):
            if flat_a.get(path, _MISSING) != flat_b.get(path, _MISSING):
                change = "added" if path not in flat_a else "removed" if path not in flat_b else "changed"
                found.append((name, path, change, flat_a.get(path), flat_b.get(path)))
    out = []
    for name, what, change, before, after in found:
        items = tuple(dict.fromkeys(
            item for item, file, touched in touches
            if file == name and (touched == what or what.startswith(touched + "."))))
        out.append(Difference(f"{name} {what.replace(':', ' ')}", change, before, after, items))
    return out


_MISSING = object()


def _prose_differences(old: str, new: str, between: tuple[str, ...]) -> list[Difference]:
    owners: dict[str, list[str]] = {}
    for version in between:
        for patch in prose.patches(version):
            owners.setdefault(patch.number, []).extend(f"{version}/{i}" for i in patch.items)
    units_a = {u.number: u.text for us in prose.chapter_units(old).values() for u in us}
    units_b = {u.number: u.text for us in prose.chapter_units(new).values() for u in us}
    out = []
    for number in sorted(set(units_a) | set(units_b), key=prose.number_key):
        a, b = units_a.get(number), units_b.get(number)
        if a is not None and b is not None and a.rstrip("\n") == b.rstrip("\n"):
            continue
        change = "added" if a is None else "removed" if b is None else "changed"
        lines = tuple(difflib.unified_diff((a or "").splitlines(), (b or "").splitlines(),
                                           f"{old} {number}", f"{new} {number}", lineterm="", n=1))
        out.append(Difference(f"section {number}", change, a, b, tuple(owners.get(number, ())), lines))
    return out


def compare(old: str, new: str) -> Comparison:
    """Every difference from version ``old`` to version ``new`` (``old`` a base of ``new``)."""
    versions.version(old)
    versions.version(new)
    between = _between(old, new)
    result = Comparison(old, new)
    touches = [t for v in between for t in _touches(v)]
    result.items = [dict(item, id=f"{v}/{item['id']}") for v in between
                    for item in versions.diff_document(v)["item"]]
    result.data = _data_differences(old, new, touches)
    result.prose = _prose_differences(old, new, between)
    for diff in result.data + result.prose:
        if not diff.items:
            result.problems.append(f"{diff.where}: {diff.change} by no item of the diff")
    declared = {(file, what) for _, file, what in touches}
    seen = {(d.where.split(" ", 1)[0], d.where.split(" ", 1)[1].replace(" ", ":", 1)) for d in result.data}
    for file, what in sorted(declared):
        if not any(f == file and (w == what or w.startswith(what + ".")) for f, w in seen):
            result.problems.append(f"{file} {what}: declared by the diff but the same in both versions")
    for item in result.items:
        version = item["id"].split("/")[0]
        patched = {p.number for p in prose.patches(version) if item["id"].split("/")[1] in p.items}
        missing = sorted(patched - set(item["sections"]), key=prose.number_key)
        if missing:
            result.problems.append(f"{item['id']}: section files {missing} are not in its sections")
    return result
