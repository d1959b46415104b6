"""Load the spec data files into typed, immutable objects.

The loader checks the cross-references a JSON Schema cannot express (unique opcodes, gates
and error codes that exist, stages that exist); :func:`validate_against_schemas` checks each
file against its schema and is run by the test suite and ``rtwo-vm spec check``.
"""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any, Mapping

SPEC_VERSION = "1.0"
# The release of the specification text: patch releases (1.0.x) only clarify it, so vectors,
# data files and adapters keep naming SPEC_VERSION (spec/CHANGELOG.md).
SPEC_RELEASE = "1.0.2"


def _data_files() -> tuple[str, ...]:
    folder = resources.files("spec").joinpath("data")
    return tuple(sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".toml")))


# Every data file has a schema of the same name; the core ones are typed in Spec below and
# the rest are read with raw(name).
DATA_FILES = _data_files()


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


@dataclass(frozen=True)
class Spec:
    """The whole machine-readable specification."""

    version: str
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

    def error(self, code: str) -> ErrorCode:
        return self.errors[code]


def _read_text(*parts: str) -> str:
    return resources.files("spec").joinpath(*parts).read_text(encoding="utf-8")


@functools.cache
def raw(name: str) -> Mapping[str, Any]:
    """The parsed content of ``spec/data/<name>.toml``."""
    if name not in DATA_FILES:
        raise KeyError(f"no spec data file {name!r}")
    return tomllib.loads(_read_text("data", f"{name}.toml"))


@functools.cache
def schema(name: str) -> Mapping[str, Any]:
    """The JSON Schema of ``spec/schemas/<name>.schema.json``."""
    return json.loads(_read_text("schemas", f"{name}.schema.json"))


def chapters() -> dict[str, str]:
    """The normative prose chapters, file name -> Markdown text, in chapter order."""
    folder = resources.files("spec").joinpath("chapters")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".md"))
    return {n: folder.joinpath(n).read_text(encoding="utf-8") for n in names}


def validate_against_schemas() -> list[str]:
    """Check every data file against its JSON Schema; return the problems found."""
    import jsonschema  # only needed by the checker, not by the VM

    problems = []
    for name in DATA_FILES:
        validator = jsonschema.Draft202012Validator(schema(name))
        for err in validator.iter_errors(raw(name)):
            path = "/".join(str(p) for p in err.absolute_path)
            problems.append(f"{name}.toml: {path}: {err.message}")
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
        if raw(name)["spec_version"] != SPEC_VERSION:
            problems.append(f"{name}.toml: spec_version is not {SPEC_VERSION}")
    return problems


@functools.cache
def load() -> Spec:
    """Load and cross-check the specification. Raises ValueError if the data is inconsistent."""
    rows = [
        Instruction(cost_rule=r.get("cost_rule"), gate=r.get("gate"),
                    **{k: v for k, v in r.items() if k not in ("cost_rule", "gate")})
        for r in raw("instructions")["instruction"]
    ]
    rows.sort(key=lambda i: i.opcode)
    errors = {e["code"]: ErrorCode(**e) for e in raw("errors")["error"]}
    strip = lambda d: {k: v for k, v in d.items() if k != "spec_version"}  # noqa: E731
    spec = Spec(
        version=SPEC_VERSION,
        instructions=tuple(rows),
        by_opcode=MappingProxyType({i.opcode: i for i in rows}),
        by_mnemonic=MappingProxyType({i.mnemonic: i for i in rows}),
        errors=MappingProxyType(errors),
        schedule=_freeze(strip(raw("schedule"))),
        limits=_freeze(strip(raw("limits"))),
        lifecycle=_freeze(strip(raw("lifecycle"))),
        policy=_freeze(strip(raw("policy"))),
    )
    problems = _check_references(spec)
    if problems:
        raise ValueError("inconsistent spec data: " + "; ".join(problems))
    return spec
