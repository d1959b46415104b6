"""Why a vector's result differs between two versions: the diff items that explain it.

A definition valid in several versions is filled once per version with the same input
(chapter 11.2.6). Where two consecutive versions give it different vectors, the difference
must come from a change the newer version declares: some item of its diff
(spec/versions/<version>/diff.toml) must touch what the request ran into. The rule, checked by
``rtwo-vm vectors fill`` for every such pair:

- What a request *touches*, under either version: every instruction it executed (the
  reference's trace, every frame), every instruction or type its policy names, every outcome
  code of its result and call records, and the version of every container of its pre-state.
- What an item *touches*: the instruction rows its operations add, change or remove (their
  mnemonics and types), the outcome codes it adds, changes or removes, and what its `affects`
  list names (a mnemonic, a type, a code, or ``container <version>``).

The difference is explained when the two sets meet; otherwise the fill fails, naming the
vector, the fields that differ and what the request touched. The rule is deliberately coarse
(an item that reprices SHA256 explains any difference of a request that hashed), but it
catches what matters: a version whose results move where no item says anything changed,
as a cost changed behind the diff's back or an interpreter that runs a version's rules where
they do not belong.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Mapping

import spec
from spec import versioning

Token = tuple[str, str]        # (kind, name): ("op", "SHA256"), ("type", "transient"), ("code", ...), ("container", "1.1")


@dataclass(frozen=True)
class Item:
    id: str                    # "1.1/P1"
    tokens: frozenset[Token]


class _Executed:
    """A tracer that keeps the mnemonics of the executed instructions."""

    def __init__(self) -> None:
        self.mnemonics: set[str] = set()

    def step(self, frame, decoded) -> None:
        self.mnemonics.add(decoded.instruction.mnemonic)


def _classify(name: str, versions: tuple[str, ...], where: str) -> Token:
    """The token of an `affects` entry, refused (ValueError) when it names nothing."""
    if name.startswith("container "):
        spec.version(name.split(" ", 1)[1])
        return ("container", name.split(" ", 1)[1])
    for version in versions:
        table = spec.load(version)
        if name in table.by_mnemonic:
            return ("op", name)
        if name in table.errors:
            return ("code", name)
        if name in table.instruction_types:
            return ("type", name)
    raise ValueError(f"{where}: affects {name!r} names no instruction, type, outcome code or container version")


@functools.cache
def items(old: str, new: str) -> tuple[Item, ...]:
    """The items of the versions after ``old`` up to ``new``, with what each touches."""
    chain = versioning.lineage(new)
    if old not in chain:
        raise spec.VersionError(f"{new} is not built on {old}")
    out = []
    for version in chain[chain.index(old) + 1:]:
        for item in versioning.diff_document(version)["item"]:
            where = f"versions/{version}/diff.toml item {item['id']}"
            tokens: set[Token] = set()
            for op in versioning.operations(item):
                key = versioning.ROW_KEYS.get((op["file"], op["array"])) if "array" in op else None
                if key is None:
                    continue
                rows = [op["row"]] if op["op"] == "add" else [
                    r for v in (old, version) for r in spec.raw(op["file"], v)[op["array"]]
                    if r.get(key) == op["match"]]
                for row in rows:
                    if op["file"] == "instructions":
                        tokens |= {("op", row["mnemonic"]), ("type", row["type"])}
                    elif op["file"] == "errors":
                        tokens.add(("code", row["code"]))
            tokens |= {_classify(name, (old, version), where) for name in item.get("affects", ())}
            out.append(Item(f"{version}/{item['id']}", frozenset(tokens)))
    return tuple(out)


def _container_version(code_hex: str) -> str | None:
    """The version a container's header names (bytes 4 and 5), None when it has no magic."""
    blob = bytes.fromhex(code_hex[2:18]) if len(code_hex) >= 18 else b""
    from reference_vm.container import MAGIC
    if blob[:4] != MAGIC:
        return None
    return f"{blob[4]}.{blob[5]}"


def touched(vector_input: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]]) -> set[Token]:
    """What a request touches under each version of ``results`` (version -> result JSON): the
    instructions each run executed (traced again here), the names its policy lists, the codes
    of its results and the container versions of its pre-state."""
    from conformance.corpus.vector import run_reference
    found: set[Token] = set()
    for version, result in results.items():
        executed = _Executed()
        run_reference(vector_input, version, tracer=executed)
        found |= {("op", m) for m in executed.mnemonics}
        found |= {("code", c) for c in [result["error"], *(c["error"] for c in result["calls"])] if c}
    policy = vector_input["policy"]
    for name in [*(policy["allowed_operations"] or ()), *policy["forbidden_operations"]]:
        found |= {("op", name), ("type", name)}
    for contract in vector_input["pre_state"]["contracts"].values():
        held = _container_version(contract["code"])
        if held is not None:
            found.add(("container", held))
    return found


def differing_fields(a: Any, b: Any, path: str = "") -> list[str]:
    """The paths (``expected/result/usage/compute``) at which two JSON values differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for key in sorted(set(a) | set(b)):
            out += differing_fields(a.get(key), b.get(key), f"{path}/{key}" if path else key)
        return out
    return [] if a == b else [path or "(top)"]


def _shown(token: Token) -> str:
    kind, name = token
    return f"container {name}" if kind == "container" else f"{kind} {name}"


def unexplained(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why two vectors of one definition (same id and input, consecutive versions) differ with
    no item to explain it; None when they are the same apart from _meta or an item explains
    the difference."""
    body = lambda v: {k: x for k, x in v.items() if k != "_meta"}   # noqa: E731
    fields = differing_fields(body(old), body(new))
    if not fields:
        return None
    v_old, v_new = old["_meta"]["spec_version"], new["_meta"]["spec_version"]
    found = touched(new["input"], {v_old: old["expected"]["result"], v_new: new["expected"]["result"]})
    if any(item.tokens & found for item in items(v_old, v_new)):
        return None
    shown = ", ".join(fields[:6]) + (f" and {len(fields) - 6} more" if len(fields) > 6 else "")
    names = sorted(_shown(t) for t in found)
    ran = (", ".join(names[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "")) or "nothing"
    return (f"{new['id']}: differs between {v_old} and {v_new} in {shown}, and no item of the diff "
            f"explains it (the request touches {ran}; an item explains a difference when it "
            "touches one of these: its rows, or its affects list)")


def explaining(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The ids of the items that explain the difference of two vectors of one definition."""
    v_old, v_new = old["_meta"]["spec_version"], new["_meta"]["spec_version"]
    found = touched(new["input"], {v_old: old["expected"]["result"], v_new: new["expected"]["result"]})
    return [item.id for item in items(v_old, v_new) if item.tokens & found]
