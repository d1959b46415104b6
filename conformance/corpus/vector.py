"""Vectors: the definition type (Case), filling a Case with the reference result, and turning a
vector's input back into a reference_vm request (spec chapter 11.2).

A vector is plain JSON. Words are "0x" + lower-case hex without leading zeros, byte strings
"0x" + two hex digits per byte, exactly as in the canonical result encoding (chapter 7.5.2),
so an implementation decodes inputs and encodes results with the same two functions.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

import spec
from conformance.constants import GENERATOR, GENERATOR_VERSION, SPEC_VERSION
from reference_vm import (
    Context, Contract, ExecutionResult, Limits, Message, Policy, WorldState, assemble, execute,
)
from reference_vm.result import canonical

TABLE = spec.load()
ENTRY = 0x100
CALLER = 0xCA11E7
ZERO_SEED = bytes(32)
# The determinism policy's fields in a vector; storage_access belongs to the sandbox, next
# to its isolation level (chapter 10.2, 11.2.3).
DETERMINISM_FIELDS = ("time_access", "randomness", "external_call")
SOURCES = ("definition", "smt", "random", "fuzz", "symbolic")
BOUNDARY_POINTS = ("limit-1", "limit", "limit+1")


@functools.cache
def isolation_levels() -> Mapping[str, Mapping[str, Any]]:
    """The isolation levels of sandbox.toml (chapter 10.2), by name."""
    return MappingProxyType(dict(spec.raw("sandbox")["isolation"]))


def _storage_rank(value: str) -> int:
    order = spec.raw("sandbox")["sandbox"]["storage_access_order"]
    return order.index(value) if value in order else len(order)


def default_isolation() -> str:
    """The isolation level a sandbox gets when none is named (sandbox.toml)."""
    return spec.raw("sandbox")["sandbox"]["default_isolation"]


def level_for(storage_access: str, external_call: str) -> str:
    """The narrowest isolation level under which the chapter 4 policy keeps exactly this
    storage access and external call value; the default level when none is narrower."""
    levels = sorted(isolation_levels().items(), key=lambda kv: kv[1]["order"])
    for name, level in levels:
        if (_storage_rank(level["max_storage_access"]) >= _storage_rank(storage_access)
                and (level["external_call"] != "forbidden" or external_call == "forbidden")):
            return name
    return default_isolation()


def bound_policy_fields(policy: Mapping[str, Any], sandbox: Mapping[str, Any]) -> tuple[str, str]:
    """(external_call, storage_access) of the policy bound for a vector (chapter 10.2): the
    sandbox's storage access, and calls forbidden when the level forbids them (before the
    request checks, chapter 7.3.2). ValueError when the sandbox is one chapter 10.2 refuses
    before any request exists: such an input is not a vector input (11.2.3)."""
    level = isolation_levels().get(sandbox["isolation_level"])
    access = sandbox["storage_access"]
    if level is None:
        raise ValueError(f"not a vector input: unknown isolation level {sandbox['isolation_level']!r}")
    if _storage_rank(access) > _storage_rank(level["max_storage_access"]):
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


@functools.lru_cache(maxsize=4096)
def _assembled(source: str) -> bytes:
    # Generated sources repeat (the SMT source assembles each program twice), so cache them.
    return assemble(source)


def _container(code: Code) -> bytes:
    return _assembled(code) if isinstance(code, str) else code


def _contract_json(code: Code, storage: Mapping[int, int]) -> dict[str, Any]:
    return {"code": bytes_hex(_container(code)),
            "storage": {word_hex(k): word_hex(v) for k, v in sorted(storage.items()) if v}}


def input_of(case: Case) -> dict[str, Any]:
    """The vector input of a case: every field explicit, nothing left to defaults."""
    contracts: dict[int, dict[str, Any]] = {}
    if case.deploy_entry:
        contracts[case.to] = _contract_json(case.code, case.storage)
    for address, body in case.contracts.items():
        code, storage = body if isinstance(body, tuple) else (body, {})
        contracts[address] = _contract_json(code, storage)
    fields = TABLE.policy["fields"]
    policy = {name: case.policy.get(name, fields[name]["default"]) for name in fields}
    allowed = case.policy.get("allowed_operations")
    limits = {name: case.limits.get(name, TABLE.limits["default"][name])
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
                    or level_for(policy["storage_access"], policy["external_call"]),
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


def request_of(vector_input: Mapping[str, Any]) -> Request:
    """The reference_vm arguments a vector input stands for."""
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
    external_call, storage_access = bound_policy_fields(policy, sandbox)
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


def run_reference(vector_input: Mapping[str, Any], tracer=None) -> ExecutionResult:
    r = request_of(vector_input)
    return execute(r.state, r.message, r.context, r.policy, r.limits, tracer=tracer)


def error_stage(error: str | None) -> str | None:
    """The lifecycle stage at which an outcome code is raised (errors.toml), None for none."""
    return None if error is None else TABLE.errors[error].stage


def expected_of(result: ExecutionResult) -> dict[str, Any]:
    return {"result": result.to_json(), "error_stage": error_stage(result.error)}


def outcome_of(result_json: Mapping[str, Any]) -> str:
    """The outcome label of a result: its status when it has no code, else the code."""
    return result_json["error"] or result_json["status"]


def _sections(case: Case, result_json: Mapping[str, Any]) -> list[str]:
    found = set(case.sections)
    found.update(TABLE.by_mnemonic[m].section for m in case.opcodes)
    codes = {result_json["error"]} | {c["error"] for c in result_json["calls"]}
    found.update(TABLE.errors[c].section for c in codes if c is not None)
    return sorted(found, key=lambda s: tuple(int(p) for p in s.split(".")))


def tags_of(case: Case, result_json: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "opcodes": sorted(set(case.opcodes), key=lambda m: TABLE.by_mnemonic[m].opcode),
        "outcome": outcome_of(result_json),
        "call_outcomes": sorted({outcome_of(c) for c in result_json["calls"]}),
        "sections": _sections(case, result_json),
        "categories": sorted(set(case.categories)),
        "source": case.source,
        "boundary": None if case.boundary is None else {"limit": case.boundary.limit,
                                                        "at": case.boundary.at},
    }


def content_hash(vector: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the vector without its _meta member."""
    body = {k: v for k, v in vector.items() if k != "_meta"}
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def fill_case(case: Case) -> dict[str, Any]:
    """Run a case through the reference interpreter and return the complete vector."""
    vector_input = input_of(case)
    result = run_reference(vector_input)
    if result.status == "internal":
        raise AssertionError(f"{case.id}: the reference reported INTERNAL_ERROR")
    result_json = result.to_json()
    vector = {
        "id": case.id,
        "description": case.description,
        "tags": tags_of(case, result_json),
        "input": vector_input,
        "expected": expected_of(result),
    }
    vector["_meta"] = {"spec_version": SPEC_VERSION,
                       "generator": f"{GENERATOR} {GENERATOR_VERSION}",
                       "content_hash": content_hash(vector)}
    return vector


def vector_line(vector: Mapping[str, Any]) -> str:
    """The stored form of a vector: its canonical JSON on one line."""
    return canonical(vector)
