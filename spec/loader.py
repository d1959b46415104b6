"""Load a version of the spec data into typed, immutable objects.

A version is a value: :func:`load` takes its name (``spec.versions`` lists them) and returns
that version's :class:`Spec`; nothing here holds a current or default version. The loader
checks the cross-references a JSON Schema cannot express (unique opcodes, gates and error
codes that exist, stages that exist); :func:`validate_against_schemas` checks each file of
each version against its schema and is run by the test suite and ``rtwo-vm spec check``.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

from spec import prose, versioning as versions
from spec.versioning import VersionError, data_files

# Every data file has a schema of the same name; the core ones are typed in Spec below and
# the rest are read with raw(name, version).
DATA_FILES = data_files()


@dataclass(frozen=True, slots=True)
class Instruction:
    """One row of the instruction table (spec/data/instructions.toml)."""

    opcode: int
    mnemonic: str
    type: str
    immediate_size: int
    immediate_kind: str
    inputs: int
    outputs: int
    signature: str
    cost: int
    cost_rule: str | None
    determinism: str
    gate: str | None
    flow: str
    meaning: str
    section: str

    @property
    def size(self) -> int:
        """Encoded length in bytes: the opcode byte and its immediate."""
        return 1 + self.immediate_size


@dataclass(frozen=True, slots=True)
class ErrorCode:
    """One outcome code (spec/data/errors.toml)."""

    code: str
    kind: str
    stage: str
    section: str
    meaning: str


@dataclass(frozen=True, eq=False)
class Spec:
    """The whole machine-readable specification of one version (one object per version, from
    load(): compared and hashed by identity)."""

    version: str
    release: str
    instructions: tuple[Instruction, ...]
    by_opcode: Mapping[int, Instruction]
    by_mnemonic: Mapping[str, Instruction]
    errors: Mapping[str, ErrorCode]
    schedule: Mapping[str, Mapping[str, int]]
    limits: Mapping[str, Mapping[str, int]]
    lifecycle: Mapping[str, Any]
    policy: Mapping[str, Any]

    @functools.cached_property
    def instruction_types(self) -> tuple[str, ...]:
        """Instruction types in table order, each once (computed once: policy checks ask often)."""
        return tuple(dict.fromkeys(i.type for i in self.instructions))

    @property
    def number(self) -> tuple[int, int]:
        """(major, minor): the bytes 4 and 5 of a container of this version (chapter 3.1)."""
        return versions.version(self.version).number

    @functools.cached_property
    def container_versions(self) -> tuple[tuple[int, int], ...]:
        """The container versions a VM of this version runs: every version of the same major
        version up to this one (chapter 3.1.2, check 3; from 1.1, chapter 1.7)."""
        mine = self.number
        return tuple(v.number for v in versions.versions()
                     if v.number[0] == mine[0] and v.number <= mine)

    def error(self, code: str) -> ErrorCode:
        return self.errors[code]

    def raw(self, name: str) -> Mapping[str, Any]:
        """The parsed content of one data file of this version."""
        return raw(name, self.version)


def _read_text(*parts: str) -> str:
    return resources.files("spec").joinpath(*parts).read_text(encoding="utf-8")


def raw(name: str, version: str) -> Mapping[str, Any]:
    """The parsed content of data file ``name`` in ``version`` (the base's file, or the base's
    content with the version's diff applied: spec/versions.py)."""
    return versions.raw(name, version)


@functools.cache
def schema(name: str) -> Mapping[str, Any]:
    """The JSON Schema of ``spec/schemas/<name>.schema.json``."""
    return json.loads(_read_text("schemas", f"{name}.schema.json"))


def chapters(version: str) -> dict[str, str]:
    """The normative prose chapters of ``version``, file name -> Markdown, in chapter order."""
    return prose.chapters(version)


def validate_against_schemas() -> list[str]:
    """Check every data file of every version, and every version's diff, against its JSON
    Schema; return the problems found."""
    from spec import ecma   # jsonschema, with the schemas' ECMA-262 patterns (11.2.1)

    problems = []
    check = ecma.validator(schema("versions"))
    problems += [f"versions.toml: {e.message}" for e in check.iter_errors(versions.document())]
    for version in versions.names():
        if versions.version(version).base is not None:
            check = ecma.validator(schema("version-diff"))
            for err in check.iter_errors(versions.diff_document(version)):
                path = "/".join(str(p) for p in err.absolute_path)
                problems.append(f"versions/{version}/diff.toml: {path}: {err.message}")
        for name in DATA_FILES:
            validator = ecma.validator(schema(name))
            for err in validator.iter_errors(raw(name, version)):
                path = "/".join(str(p) for p in err.absolute_path)
                problems.append(f"{version} {name}.toml: {path}: {err.message}")
    return problems


def _freeze(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType({k: _freeze(v) if isinstance(v, dict) else v for k, v in d.items()})


def _check_references(spec: Spec) -> list[str]:
    problems = []
    opcodes = [i.opcode for i in spec.instructions]
    if len(set(opcodes)) != len(opcodes):
        problems.append("instructions: duplicate opcode")
    mnemonics = [i.mnemonic for i in spec.instructions]
    if len(set(mnemonics)) != len(mnemonics):
        problems.append("instructions: duplicate mnemonic")
    for ins in spec.instructions:
        if ins.gate is not None and ins.gate not in spec.policy["gate"]:
            problems.append(f"{ins.mnemonic}: gate {ins.gate!r} is not defined in policy.toml")
    for name, gate in spec.policy["gate"].items():
        if gate["error"] not in spec.errors:
            problems.append(f"gate {name}: unknown error {gate['error']}")
        field = spec.policy["fields"].get(gate["field"])
        if field is None or not set(gate["open_when"]) <= set(field["values"]):
            problems.append(f"gate {name}: bad field or values")
    if spec.policy["forbidden_by_listing"]["error"] not in spec.errors:
        problems.append("forbidden_by_listing: unknown error")
    stages = {s["name"] for s in spec.lifecycle["stage"]}
    for err in spec.errors.values():
        if err.stage not in stages:
            problems.append(f"{err.code}: unknown stage {err.stage}")
    for t in spec.lifecycle["transition"]:
        if t["from"] not in stages or not set(t["to"]) <= stages:
            problems.append(f"transition from {t['from']}: unknown stage")
    for name in DATA_FILES:
        if raw(name, spec.version)["spec_version"] != spec.version:
            problems.append(f"{name}.toml: spec_version is not {spec.version}")
    return problems


@functools.cache
def load(version: str) -> Spec:
    """Load and cross-check version ``version`` of the specification. Raises VersionError (a
    ValueError) for an unknown version and ValueError if the data is inconsistent."""
    row = versions.version(version)
    instructions = raw("instructions", row.version)["instruction"]
    rows = [
        Instruction(cost_rule=r.get("cost_rule"), gate=r.get("gate"),
                    **{k: v for k, v in r.items() if k not in ("cost_rule", "gate")})
        for r in instructions
    ]
    rows.sort(key=lambda i: i.opcode)
    errors = {e["code"]: ErrorCode(**e) for e in raw("errors", row.version)["error"]}
    strip = lambda d: {k: v for k, v in d.items() if k != "spec_version"}  # noqa: E731
    spec = Spec(
        version=row.version,
        release=row.release,
        instructions=tuple(rows),
        by_opcode=MappingProxyType({i.opcode: i for i in rows}),
        by_mnemonic=MappingProxyType({i.mnemonic: i for i in rows}),
        errors=MappingProxyType(errors),
        schedule=_freeze(strip(raw("schedule", row.version))),
        limits=_freeze(strip(raw("limits", row.version))),
        lifecycle=_freeze(strip(raw("lifecycle", row.version))),
        policy=_freeze(strip(raw("policy", row.version))),
    )
    problems = _check_references(spec)
    if problems:
        raise ValueError(f"inconsistent spec data of version {row.version}: " + "; ".join(problems))
    return spec


__all__ = ["DATA_FILES", "ErrorCode", "Instruction", "Spec", "VersionError", "chapters", "load",
           "raw", "schema", "validate_against_schemas"]
