"""Vectors: the definition type (Case), filling a Case with the reference result, and turning a
vector's input back into a reference_vm request (spec chapter 11.2).

A vector is plain JSON. Words are "0x" + lower-case hex without leading zeros, byte strings
"0x" + two hex digits per byte, exactly as in the canonical result encoding (chapter 7.5.2),
so an implementation decodes inputs and encodes results with the same two functions.

A vector is for one spec version (``_meta.spec_version``, chapter 11.2.6). A definition (Case)
declares the versions it is valid for: from ``since`` (default the first version) to ``until``
(default: every later one). Its containers are assembled for ``container`` (default
``since``), so a 1.0 definition filled for 1.1 sends the same 1.0 containers: one request,
one vector per version, each with that version's result.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import spec
from conformance.constants import GENERATOR, GENERATOR_VERSION
from conformance.corpus.expect import Expectation, expect_for, failure, outcome_of, problems
from reference_vm import (
    Context, Contract, ExecutionResult, Limits, Message, Policy, WorldState, assemble, execute,
)
from reference_vm.result import canonical

VERSIONS = spec.names()        # oldest first
BASE = VERSIONS[0]
# The defaults of a vector's policy and limits: the same in every version (reference_vm.rules
# refuses a version that changes them), read from the first.
DEFAULTS = spec.load(BASE)
ENTRY = 0x100
CALLER = 0xCA11E7
ZERO_SEED = bytes(32)
# The determinism policy's fields in a vector; storage_access belongs to the sandbox, next
# to its isolation level (chapter 10.2, 11.2.3).
DETERMINISM_FIELDS = ("time_access", "randomness", "external_call")
SOURCES = ("definition", "smt", "random", "fuzz", "symbolic")
BOUNDARY_POINTS = ("limit-1", "limit", "limit+1")


def version_order(version: str) -> tuple[int, int]:
    """The place of a version in spec/versions.toml's order (its number)."""
    return spec.version(version).number


def in_range(version: str, since: str, until: str | None) -> bool:
    """Whether ``version`` lies in [since, until] (until None: no end)."""
    at = version_order(version)
    return version_order(since) <= at and (until is None or at <= version_order(until))


@functools.cache
def isolation_levels(version: str) -> Mapping[str, Mapping[str, Any]]:
    """The isolation levels of version ``version``'s sandbox.toml (chapter 10.2), by name."""
    return MappingProxyType(dict(spec.raw("sandbox", version)["isolation"]))


def _storage_rank(value: str, version: str) -> int:
    order = spec.raw("sandbox", version)["sandbox"]["storage_access_order"]
    return order.index(value) if value in order else len(order)


def default_isolation(version: str) -> str:
    """The isolation level a sandbox gets when none is named (sandbox.toml)."""
    return spec.raw("sandbox", version)["sandbox"]["default_isolation"]


def level_for(storage_access: str, external_call: str, version: str) -> str:
    """The narrowest isolation level under which the chapter 4 policy keeps exactly this
    storage access and external call value; the default level when none is narrower."""
    levels = sorted(isolation_levels(version).items(), key=lambda kv: kv[1]["order"])
    for name, level in levels:
        if (_storage_rank(level["max_storage_access"], version) >= _storage_rank(storage_access, version)
                and (level["external_call"] != "forbidden" or external_call == "forbidden")):
            return name
    return default_isolation(version)


def bound_policy_fields(policy: Mapping[str, Any], sandbox: Mapping[str, Any],
                        version: str) -> tuple[str, str]:
    """(external_call, storage_access) of the policy bound for a vector (chapter 10.2): the
    sandbox's storage access, and calls forbidden when the level forbids them (before the
    request checks, chapter 7.3.2). ValueError when the sandbox is one chapter 10.2 refuses
    before any request exists: such an input is not a vector input (11.2.3)."""
    level = isolation_levels(version).get(sandbox["isolation_level"])
    access = sandbox["storage_access"]
    if level is None:
        raise ValueError(f"not a vector input: unknown isolation level {sandbox['isolation_level']!r}")
    if _storage_rank(access, version) > _storage_rank(level["max_storage_access"], version):
        raise ValueError(f"not a vector input: storage access {access!r} is unknown or wider than "
                         f"{sandbox['isolation_level']} allows")
    external = "forbidden" if level["external_call"] == "forbidden" else policy["external_call"]
    return external, sandbox["storage_access"]


def word_hex(value: int) -> str:
    return hex(value)


def bytes_hex(value: bytes) -> str:
    return "0x" + value.hex()


def parse_word(text: str) -> int:
    return int(text, 16)


def parse_bytes(text: str) -> bytes:
    return bytes.fromhex(text[2:])


def json_integer(value: Any) -> Any:
    """A JSON number whose value is an integer, as an int (1000.0 and 1e3 are 1000, chapter
    7.3.2); anything else (1.5, booleans, strings) unchanged, for the request checks to refuse."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


Code = str | bytes  # assembly source, or container bytes as they are (for invalid code)


@dataclass(frozen=True)
class Boundary:
    """The vector sits at a limit: its demand is one below, exactly at, or one above it."""

    limit: str          # a sandbox dimension, a machine limit or a request-range bound
    at: str             # one of BOUNDARY_POINTS (checked with the case, fill.case_problems)


@dataclass(frozen=True)
class Case:
    """One hand-written (or generated) test definition, before the reference fills it."""

    id: str
    description: str
    code: Code
    opcodes: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    storage: Mapping[int, int] = field(default_factory=dict)
    contracts: Mapping[int, "Code | tuple[Code, Mapping[int, int]]"] = field(default_factory=dict)
    to: int = ENTRY
    deploy_entry: bool = True
    caller: int = CALLER
    call_data: bytes = b""
    block_time: int = 0
    random_seed: bytes = ZERO_SEED
    policy: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    boundary: Boundary | None = None
    source: str = "definition"
    # The sandbox's isolation level when it is not the narrowest one the policy allows (a
    # vector about the level itself, chapter 10.2).
    isolation_level: str | None = None
    # The versions the definition is valid for (chapter 11.2.6): filled for each of them.
    since: str = BASE
    until: str | None = None
    # The version its assembly is written for (default: since): its containers' version.
    container: str | None = None
    # The tool that made the vector, when not the filler (the symbolic source's witnesses).
    generator: str | None = None
    # What the author expects of the result (conformance.corpus.expect): an Expect for every
    # version, or version -> Expect; checked at fill, never written into the vector.
    expect: Expectation | None = None

    @property
    def container_version(self) -> str:
        return self.container or self.since

    def valid_in(self, version: str) -> bool:
        return in_range(version, self.since, self.until)


@functools.lru_cache(maxsize=8192)
def _assembled(source: str, version: str) -> bytes:
    # Generated sources repeat (the SMT source assembles each program twice, and every version
    # a definition is valid in fills it), so cache them.
    return assemble(source, version)


def _container(code: Code, version: str) -> bytes:
    return _assembled(code, version) if isinstance(code, str) else code


def _contract_json(code: Code, storage: Mapping[int, int], version: str) -> dict[str, Any]:
    return {"code": bytes_hex(_container(code, version)),
            "storage": {word_hex(k): word_hex(v) for k, v in sorted(storage.items()) if v}}


def input_of(case: Case) -> dict[str, Any]:
    """The vector input of a case: every field explicit, nothing left to defaults. The same in
    every version the case is valid in (its containers are of its container version)."""
    version = case.container_version
    contracts: dict[int, dict[str, Any]] = {}
    if case.deploy_entry:
        contracts[case.to] = _contract_json(case.code, case.storage, version)
    for address, body in case.contracts.items():
        code, storage = body if isinstance(body, tuple) else (body, {})
        contracts[address] = _contract_json(code, storage, version)
    fields = DEFAULTS.policy["fields"]
    policy = {name: case.policy.get(name, fields[name]["default"]) for name in fields}
    allowed = case.policy.get("allowed_operations")
    limits = {name: case.limits.get(name, DEFAULTS.limits["default"][name])
              for name in Limits.DIMENSIONS}
    return {
        "pre_state": {"contracts": {word_hex(a): contracts[a] for a in sorted(contracts)}},
        "message": {"to": word_hex(case.to), "caller": word_hex(case.caller),
                    "call_data": bytes_hex(case.call_data)},
        "context": {"block_time": word_hex(case.block_time),
                    "random_seed": bytes_hex(case.random_seed)},
        "policy": {**{n: policy[n] for n in DETERMINISM_FIELDS},
                   "allowed_operations": None if allowed is None else list(allowed),
                   "forbidden_operations": list(case.policy.get("forbidden_operations", ()))},
        "sandbox": {"isolation_level": case.isolation_level
                    or level_for(policy["storage_access"], policy["external_call"], version),
                    "storage_access": policy["storage_access"], "limits": limits},
    }


@dataclass(frozen=True)
class Request:
    """The arguments of reference_vm.execute for one vector input."""

    state: WorldState
    message: Message
    context: Context
    policy: Policy
    limits: Limits


def request_of(vector_input: Mapping[str, Any], version: str) -> Request:
    """The reference_vm arguments a vector input stands for under spec version ``version``."""
    contracts = {
        parse_word(address): Contract(parse_bytes(body["code"]),
                                      {parse_word(k): parse_word(v)
                                       for k, v in body["storage"].items()})
        for address, body in vector_input["pre_state"]["contracts"].items()}
    message = vector_input["message"]
    context = vector_input["context"]
    policy = vector_input["policy"]
    sandbox = vector_input["sandbox"]
    allowed = policy["allowed_operations"]
    external_call, storage_access = bound_policy_fields(policy, sandbox, version)
    return Request(
        state=WorldState(contracts),
        message=Message(parse_word(message["to"]), parse_word(message["caller"]),
                        parse_bytes(message["call_data"])),
        context=Context(parse_word(context["block_time"]), parse_bytes(context["random_seed"])),
        policy=Policy(time_access=policy["time_access"], randomness=policy["randomness"],
                      external_call=external_call, storage_access=storage_access,
                      allowed_operations=None if allowed is None else tuple(allowed),
                      forbidden_operations=tuple(policy["forbidden_operations"])),
        limits=Limits(**{k: json_integer(v) for k, v in sandbox["limits"].items()}))


def run_reference(vector_input: Mapping[str, Any], version: str, tracer=None) -> ExecutionResult:
    """The reference interpreter's result for a vector input under spec version ``version``."""
    r = request_of(vector_input, version)
    return execute(r.state, r.message, r.context, r.policy, r.limits, version=version, tracer=tracer)


def error_stage(error: str | None, version: str) -> str | None:
    """The lifecycle stage at which an outcome code is raised (errors.toml), None for none."""
    return None if error is None else spec.load(version).errors[error].stage


def expected_of(result: ExecutionResult, version: str) -> dict[str, Any]:
    return {"result": result.to_json(), "error_stage": error_stage(result.error, version)}


def _sections(case: Case, result_json: Mapping[str, Any], table: spec.Spec) -> list[str]:
    found = set(case.sections)
    found.update(table.by_mnemonic[m].section for m in case.opcodes)
    codes = {result_json["error"]} | {c["error"] for c in result_json["calls"]}
    found.update(table.errors[c].section for c in codes if c is not None)
    return sorted(found, key=lambda s: tuple(int(p) for p in s.split(".")))


def tags_of(case: Case, result_json: Mapping[str, Any], version: str) -> dict[str, Any]:
    table = spec.load(version)
    return {
        "opcodes": sorted(set(case.opcodes), key=lambda m: table.by_mnemonic[m].opcode),
        "outcome": outcome_of(result_json),
        "call_outcomes": sorted({outcome_of(c) for c in result_json["calls"]}),
        "sections": _sections(case, result_json, table),
        "categories": sorted(set(case.categories)),
        "source": case.source,
        "boundary": None if case.boundary is None else {"limit": case.boundary.limit,
                                                        "at": case.boundary.at},
    }


def content_hash(vector: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the vector without its _meta member."""
    body = {k: v for k, v in vector.items() if k != "_meta"}
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def fill_case(case: Case, version: str, vector_input: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Run a case through the reference interpreter under ``version`` and return the complete
    vector of that version (``vector_input``: the case's input, when already made);
    ExpectationFailed when the result is not what the case's author expects."""
    vector_input = input_of(case) if vector_input is None else vector_input
    result = run_reference(vector_input, version)
    if result.status == "internal":
        raise AssertionError(f"{case.id}: the reference reported INTERNAL_ERROR under {version}")
    result_json = result.to_json()
    expect = expect_for(case.expect, version)
    found = [] if expect is None else problems(expect, vector_input, result_json)
    if found:
        raise failure(case.id, version, found)
    vector = {
        "id": case.id,
        "description": case.description,
        "tags": tags_of(case, result_json, version),
        "input": vector_input,
        "expected": expected_of(result, version),
    }
    return stamped(vector, version, case.generator)


def stamped(vector: dict[str, Any], version: str, generator: str | None = None) -> dict[str, Any]:
    """``vector`` (without _meta) with its _meta: the version, the generator, the content hash."""
    vector["_meta"] = {"spec_version": version,
                       "generator": generator or f"{GENERATOR} {GENERATOR_VERSION}",
                       "content_hash": content_hash(vector)}
    return vector


def vector_line(vector: Mapping[str, Any]) -> str:
    """The stored form of a vector: its canonical JSON on one line."""
    return canonical(vector)
