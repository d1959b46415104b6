"""The versions of the specification, and each version's data as its base's plus a declared diff.

``versions.toml`` lists the versions oldest first. The first is the base: its data files are
``spec/data/*.toml``. Every later version names its ``base`` and holds
``versions/<version>/diff.toml``: items, each with the operations that make the version's data
from the base's (chapter 1.7). :func:`raw` applies them; nothing else builds a version's data,
so a version is exactly its base plus what its diff declares.

The operations are checked as they are applied: an ``add`` must not collide with a row of the
same key, a ``change`` or a ``set`` must state the value it replaces (``from``) and that value
must be the base's, a ``remove`` must find its row. A diff that does not match its base is a
:class:`VersionError` when the version is loaded, never a silently different table.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any, Mapping

_VERSION = re.compile(r"^[1-9][0-9]*\.(0|[1-9][0-9]*)$")
# The field that identifies a row of each array of tables, for add, change and remove.
ROW_KEYS = {("instructions", "instruction"): "mnemonic", ("errors", "error"): "code"}
SECOND_KEYS = {("instructions", "instruction"): "opcode"}


class VersionError(ValueError):
    """An unknown version, or a version whose diff does not apply to its base (one line)."""


@dataclass(frozen=True, slots=True)
class Version:
    """One row of versions.toml."""

    version: str
    release: str
    base: str | None

    @property
    def number(self) -> tuple[int, int]:
        """(major, minor): the order of versions, and the container header's bytes 4 and 5."""
        major, minor = self.version.split(".")
        return int(major), int(minor)


def _read_text(*parts: str) -> str:
    return resources.files("spec").joinpath(*parts).read_text(encoding="utf-8")


@functools.cache
def document() -> Mapping[str, Any]:
    """The parsed versions.toml."""
    return tomllib.loads(_read_text("versions.toml"))


@functools.cache
def versions() -> tuple[Version, ...]:
    """Every version of the specification, oldest first (versions.toml, checked)."""
    doc = document()
    rows = tuple(Version(r["version"], r["release"], r.get("base")) for r in doc["version"])
    seen: list[str] = []
    for i, row in enumerate(rows):
        if not _VERSION.match(row.version) or row.version in seen:
            raise VersionError(f"versions.toml: bad or repeated version {row.version!r}")
        if i == 0 and row.base is not None:
            raise VersionError("versions.toml: the first version is the base and names none")
        if i > 0 and row.base not in seen:
            raise VersionError(f"versions.toml: {row.version}'s base must be an earlier version")
        if i > 0 and row.number <= rows[i - 1].number:
            raise VersionError("versions.toml: versions must be listed oldest first")
        seen.append(row.version)
    return rows


def names() -> tuple[str, ...]:
    """The version names, oldest first."""
    return tuple(v.version for v in versions())


def latest() -> str:
    """The newest version (the last row of versions.toml)."""
    return versions()[-1].version


def version(name: object) -> Version:
    """The row of ``name``; VersionError (one line) for anything that is not a version."""
    for row in versions():
        if row.version == name:
            return row
    shown = name if isinstance(name, str) and len(name) <= 40 else repr(name)[:40]
    raise VersionError(f"unknown spec version {shown!r} (versions: {', '.join(names())})")


def base_version() -> str:
    return versions()[0].version


def lineage(name: str) -> tuple[str, ...]:
    """The versions from the base to ``name``, each the base of the next."""
    chain = [version(name).version]
    while (base := version(chain[-1]).base) is not None:
        chain.append(base)
    return tuple(reversed(chain))


@functools.cache
def diff_document(name: str) -> Mapping[str, Any]:
    """The parsed ``versions/<name>/diff.toml`` of a version that has a base."""
    row = version(name)
    if row.base is None:
        raise VersionError(f"version {name} is the base: it has no diff")
    doc = tomllib.loads(_read_text("versions", name, "diff.toml"))
    if doc.get("version") != name or doc.get("base") != row.base:
        raise VersionError(f"versions/{name}/diff.toml: version and base must be {name} and {row.base}")
    ids = [item["id"] for item in doc.get("item", [])]
    if len(set(ids)) != len(ids):
        raise VersionError(f"versions/{name}/diff.toml: repeated item id")
    return doc


def data_files() -> tuple[str, ...]:
    folder = resources.files("spec").joinpath("data")
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml")))


@functools.cache
def raw(name: str, version_name: str) -> Mapping[str, Any]:
    """The content of data file ``name`` in version ``version_name``: the base's TOML, or the
    base version's content with the diff's operations on that file applied in order."""
    if name not in data_files():
        raise KeyError(f"no spec data file {name!r}")
    row = version(version_name)
    if row.base is None:
        return tomllib.loads(_read_text("data", f"{name}.toml"))
    doc = copy.deepcopy(dict(raw(name, row.base)))
    for item in diff_document(row.version)["item"]:
        for op in operations(item):
            if op["file"] == name:
                _apply(doc, op, f"versions/{row.version}/diff.toml item {item['id']}")
    doc["spec_version"] = row.version
    return doc


def operations(item: Mapping[str, Any]) -> list[dict]:
    """An item's operations in file order: each a dict with ``op`` set to its kind."""
    ops: list[dict] = []
    for kind in ("remove", "change", "add", "set"):
        ops.extend({"op": kind, **op} for op in item.get(kind, []))
    return ops


def _apply(doc: dict, op: dict, where: str) -> None:
    kind = op["op"]
    if kind == "set":
        _set(doc, op, where)
        return
    rows = doc.get(op["array"])
    if not isinstance(rows, list):
        raise VersionError(f"{where}: {op['file']}.toml has no array {op['array']!r}")
    key = ROW_KEYS.get((op["file"], op["array"]), op.get("key"))
    if kind == "add":
        new = op["row"]
        for k in (key, SECOND_KEYS.get((op["file"], op["array"]))):
            if k is not None and any(r.get(k) == new.get(k) for r in rows):
                raise VersionError(f"{where}: add {op['array']} {new.get(key)!r}: {k} already in the base")
        rows.append(copy.deepcopy(new))
        return
    if op.get("key") != key:
        raise VersionError(f"{where}: rows of {op['array']} are named by {key!r}")
    found = [r for r in rows if r.get(key) == op["match"]]
    if len(found) != 1:
        raise VersionError(f"{where}: no {op['array']} with {key} = {op['match']!r}")
    if kind == "remove":
        rows.remove(found[0])
        return
    target = found[0]
    for field, old in op["from"].items():
        if target.get(field) != old:
            raise VersionError(f"{where}: {op['match']}.{field} is {target.get(field)!r}, not {old!r}")
    if set(op["from"]) != set(op["to"]):
        raise VersionError(f"{where}: change of {op['match']} must name the same fields in from and to")
    target.update(copy.deepcopy(op["to"]))


def _set(doc: dict, op: dict, where: str) -> None:
    *parents, last = op["path"].split(".")
    node = doc
    for part in parents:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise VersionError(f"{where}: {op['file']}.{op['path']}: {part} is not a table")
    if last in node:
        if "from" not in op:
            raise VersionError(f"{where}: set {op['file']}.{op['path']} must say the value it replaces (from)")
        if node[last] != op["from"]:
            raise VersionError(f"{where}: {op['file']}.{op['path']} is {node[last]!r}, not {op['from']!r}")
    elif "from" in op:
        raise VersionError(f"{where}: {op['file']}.{op['path']} is not in the base (a new key has no from)")
    node[last] = copy.deepcopy(op["value"])


def canonical(value: Any) -> str:
    """A value as sorted, compact JSON (for printing differences)."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
