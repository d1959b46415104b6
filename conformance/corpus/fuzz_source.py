"""The ``fuzz`` source of the committed corpus: promoted findings, filled like every source.

``conformance/fuzz/promoted.jsonl`` holds one promoted finding per line (canonical JSON, sorted
by id): its id, description, categories, opcodes and vector input. ``vectors fill`` turns each
into a Case and runs it through the reference, so the expected results are recomputed by the
filler (never copied from a campaign) and a fill stays deterministic: the file is committed and
read in order.

The file (and a ``--promoted FILE`` naming another) is read bounded and every entry is checked
before anything runs (:func:`entry_problems`): its shape against the vector schema's, an id in
the ``fuzz/`` group and limits a fill can afford. A request whose limits lie inside the spec's request range runs until one of them is
used up, so a promoted finding may ask for at most the spec's default sandbox (limits.toml
[default]) in the dimensions that bound the work and the memory of that run; a limit outside the
range is rejected with INVALID_LIMITS before anything executes, and stays promotable.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import spec
from conformance.constants import PACKAGE_DIR
from conformance.corpus.store import MAX_GROUP_BYTES
from conformance.corpus.vector import BASE, DEFAULTS, Case, json_integer, parse_bytes, parse_word
from spec.files import FileRefused, loads_json, read_bounded

PROMOTED = PACKAGE_DIR / "fuzz" / "promoted.jsonl"
LIMITS = DEFAULTS.limits        # the request range and default sandbox: the same in every version
# The dimensions whose limit bounds how long (compute) and how large (memory) the reference's
# run of a request may grow; storage is charged compute as well.
BOUNDED = ("compute", "memory_pages")
ENTRY_KEYS = ("id", "description", "categories", "opcodes", "input")
# Optional: the spec version the finding was made under (default the first, 1.0): its vector is
# valid from that version on (Case.since), with the input as found.
VERSION_KEY = "spec_version"
GROUP = "fuzz/"
MAX_DEPTH = 64


def most(name: str) -> int:
    """The largest in-range limit a promoted finding may ask for in dimension ``name``."""
    return LIMITS["default"][name] if name in BOUNDED else LIMITS["maximum"][name]


@functools.cache
def _entry_check() -> Callable[[Any], list[str]]:
    """A validator of one entry, made of the vector schema's own definitions."""
    from conformance.corpus.fastschema import compile_schema
    vector = spec.schema("vector")
    tags = vector["$defs"]["tags"]["properties"]
    return compile_schema({
        "$defs": vector["$defs"], "type": "object", "additionalProperties": False,
        "required": list(ENTRY_KEYS),
        "properties": {"id": vector["properties"]["id"], "description": vector["properties"]["description"],
                       "categories": tags["categories"], "opcodes": tags["opcodes"],
                       "input": {"$ref": "#/$defs/input"},
                       VERSION_KEY: vector["properties"]["_meta"]["properties"]["spec_version"]}})


def entry_problems(entry: Any) -> list[str]:
    """What keeps ``entry`` out of the fuzz source (empty when nothing does), checked without
    running anything: the shape, the id's group and the limits."""
    found = _entry_check()(entry)
    if found:
        return found
    out = []
    if entry.get(VERSION_KEY, BASE) not in spec.names():
        out.append(f"spec_version {entry[VERSION_KEY]!r} is not a version of spec/versions.toml")
    if not entry["id"].startswith(GROUP):
        out.append(f"id {entry['id']!r} is not in the {GROUP} group")
    for name, value in entry["input"]["sandbox"]["limits"].items():
        number = json_integer(value)
        if isinstance(number, bool) or not isinstance(number, int):
            continue                 # not an integer: INVALID_LIMITS before anything runs
        if LIMITS["minimum"][name] <= number <= LIMITS["maximum"][name] and number > most(name):
            out.append(f"its {name} limit {number} is above the {most(name)} a promoted finding may ask "
                       f"for (the spec's default sandbox, limits.toml [default]): the reference would "
                       f"run it until that much is used")
    return out


def check_entry(entry: Any, where: str) -> dict[str, Any]:
    """``entry`` when it may enter the fuzz source, else FileRefused naming ``where``."""
    found = entry_problems(entry)
    if found:
        name = entry.get("id") if isinstance(entry, dict) and isinstance(entry.get("id"), str) else None
        raise FileRefused(f"{where}: " + (f"{name}: " if name else "") + found[0])
    return entry


def read(path: Path = PROMOTED) -> list[dict[str, Any]]:
    """The entries of a promoted-findings file, in id order; FileRefused (one line) for a file
    that is not a bounded regular file of valid entries with distinct ids. A missing file is
    an empty source."""
    if not path.exists() and not path.is_symlink():
        return []
    blob = read_bounded(path, MAX_GROUP_BYTES, "promoted-findings file")
    entries: dict[str, dict[str, Any]] = {}
    for number, line in enumerate(blob.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        entry = check_entry(loads_json(line, MAX_DEPTH, where, "promoted finding"), where)
        if entry["id"] in entries:
            raise FileRefused(f"{where}: {entry['id']} is listed twice")
        entries[entry["id"]] = entry
    return [entries[k] for k in sorted(entries)]


def case_of(entry: Mapping[str, Any]) -> Case:
    """The Case whose filled input is exactly the entry's input."""
    vi = entry["input"]
    contracts = {parse_word(a): (parse_bytes(b["code"]), {parse_word(k): parse_word(v) for k, v in b["storage"].items()})
                 for a, b in vi["pre_state"]["contracts"].items()}
    to = parse_word(vi["message"]["to"])
    deployed = to in contracts
    entry_code, entry_storage = contracts.pop(to, (b"", {}))
    pol, sandbox = vi["policy"], vi["sandbox"]
    policy = {"time_access": pol["time_access"], "randomness": pol["randomness"],
              "external_call": pol["external_call"], "storage_access": sandbox["storage_access"],
              "forbidden_operations": tuple(pol["forbidden_operations"])}
    if pol["allowed_operations"] is not None:
        policy["allowed_operations"] = tuple(pol["allowed_operations"])
    return Case(id=entry["id"], description=entry["description"], code=entry_code,
                opcodes=tuple(entry["opcodes"]), categories=tuple(entry["categories"]),
                storage=entry_storage, contracts=contracts, to=to, deploy_entry=deployed,
                caller=parse_word(vi["message"]["caller"]), call_data=parse_bytes(vi["message"]["call_data"]),
                block_time=parse_word(vi["context"]["block_time"]),
                random_seed=parse_bytes(vi["context"]["random_seed"]), policy=policy,
                limits=dict(sandbox["limits"]), source="fuzz", isolation_level=sandbox["isolation_level"],
                since=entry.get(VERSION_KEY, BASE))


def cases(path: Path = PROMOTED) -> Iterator[Case]:
    for entry in read(path):
        yield case_of(entry)
