"""What the diffs between two spec versions declare about instructions (spec chapter 1.7).

An item of a version's diff declares an instruction *added* when it adds its row, *removed*
when it removes it, and *changed* when it changes its row, or names it (its mnemonic or its
instruction type) in ``affects``: the list of what an item changes beyond the rows its
operations touch (a repricing in the schedule, a frame rule read by existing instructions).
An item that names no instruction (a container rule, the conformance protocol) is listed as
such: its effect is not a per-instruction model difference, and the version's vectors check it.

``prove --diff`` (proofs/diff/run.py) holds the models to these declarations: an instruction
of both versions whose models differ must be declared changed, and one declared changed must
differ.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import spec
from spec import versioning


@dataclass(frozen=True)
class Item:
    id: str                                   # "1.1/P1"
    kind: str
    title: str
    added: tuple[str, ...] = ()               # mnemonics whose rows it adds
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()             # rows changed, or named (or typed) in affects
    other: tuple[str, ...] = ()               # affects entries that are not instructions


@dataclass(frozen=True)
class Declarations:
    old: str
    new: str
    items: tuple[Item, ...] = field(default=())

    def changed_by(self, mnemonic: str) -> tuple[str, ...]:
        """The ids of the items declaring ``mnemonic`` changed."""
        return tuple(i.id for i in self.items if mnemonic in i.changed)

    def added(self) -> dict[str, str]:
        return {m: i.id for i in self.items for m in i.added}

    def removed(self) -> dict[str, str]:
        return {m: i.id for i in self.items for m in i.removed}


def _item(version: str, base: str, item: dict) -> Item:
    old_table = spec.load(base)
    added, removed, changed, other = [], [], [], []
    for op in versioning.operations(item):
        if op.get("file") != "instructions":
            continue
        if op["op"] == "add":
            added.append(op["row"]["mnemonic"])
        elif op["op"] == "remove":
            removed.append(op["match"])
        elif op["op"] == "change":
            changed.append(op["match"])
    for name in item.get("affects", ()):
        if name in old_table.by_mnemonic:
            changed.append(name)
        elif name in old_table.instruction_types:
            changed += [r.mnemonic for r in old_table.instructions if r.type == name]
        else:
            other.append(name)
    unique = lambda names: tuple(dict.fromkeys(names))  # noqa: E731 - file order, once each
    return Item(f"{version}/{item['id']}", item.get("kind", ""), item.get("title", ""),
                unique(added), unique(removed), unique(changed), unique(other))


def declared(old: str, new: str) -> Declarations:
    """The items of the versions after ``old`` up to ``new`` (spec.VersionError when ``new``
    is not built on ``old``), each with the instructions it adds, removes and changes."""
    chain = versioning.lineage(new)
    if old not in chain or chain.index(old) >= chain.index(new):
        raise spec.VersionError(f"{new} is not a later version built on {old}: "
                                f"prove --diff OLD NEW compares a version with a later one")
    items = []
    for base, version in zip(chain[chain.index(old):], chain[chain.index(old) + 1:]):
        for item in versioning.diff_document(version)["item"]:
            items.append(_item(version, base, item))
    return Declarations(old, new, tuple(items))
