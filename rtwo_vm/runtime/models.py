"""The eight domain models of the runtime (spec chapter 10.6), as typed, validated records.

Each model holds every field the architecture names (JSON names in camelCase, exactly as
named there) plus the links the runtime needs (parent context, VM, spec code). Construction
validates types and every enumerated value against sandbox.toml, lifecycle.toml or the other
spec data; ``to_json`` gives the record with camelCase names and ``canonical_json`` its
canonical encoding (sorted keys, no whitespace), the same encoding results use.

Ids and timestamps live in these records only; the execution result that implementations
compare (``RTWOExecutionResult.compared``) holds neither.
"""

from __future__ import annotations

import dataclasses
import hashlib
from datetime import datetime
from typing import Any, ClassVar, NoReturn

from reference_vm.result import STATUSES, canonical
from rtwo_vm.runtime.catalog import catalog, runtime_spec


class ModelError(ValueError):
    """A field of a domain model has the wrong type or a value the spec does not define."""


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def _fail(model: str, field: str, why: str) -> NoReturn:
    raise ModelError(f"{model}.{camel(field)} {why}")


class Model:
    """Validation and JSON shared by the domain models (dataclasses)."""

    # field -> enumeration name in sandbox.toml, or "stage" / "status" for lifecycle.toml
    # stages and execution statuses.
    ENUMS: ClassVar[dict[str, str]] = {}
    OPTIONAL: ClassVar[frozenset[str]] = frozenset()
    # Every model is a dataclass: this is what dataclasses.fields reads on it.
    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    def __post_init__(self) -> None:
        name = type(self).__name__
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is None:
                if f.name not in self.OPTIONAL:
                    _fail(name, f.name, "is required")
                continue
            _check_type(name, f.name, str(f.type), value)
            if f.name in self.ENUMS:
                allowed = _enum_values(self.ENUMS[f.name])
                if value not in allowed:
                    _fail(name, f.name, f"must be one of {', '.join(allowed)}, got {value!r}")
            if f.name.endswith("_at"):
                _check_timestamp(name, f.name, value)
        self.check()

    def check(self) -> None:
        """Cross-field rules of one model (override)."""

    def to_json(self) -> dict[str, Any]:
        return {camel(f.name): _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def canonical_json(self) -> str:
        return canonical(self.to_json())

    @classmethod
    def from_json(cls, doc: dict[str, Any]):
        names = {camel(f.name): f.name for f in dataclasses.fields(cls)}
        unknown = set(doc) - set(names)
        if unknown:
            raise ModelError(f"{cls.__name__}: unknown field {sorted(unknown)[0]!r}")
        values = {}
        for key, field_name in names.items():
            value = doc.get(key)
            values[field_name] = tuple(value) if isinstance(value, list) and _is_tuple_field(
                cls, field_name) else value
        return cls(**values)


def row_of(model: Model) -> dict[str, Any]:
    """The model's fields by Python name (the database columns)."""
    return {f.name: getattr(model, f.name) for f in dataclasses.fields(model)}


def field_names(model_class: type) -> list[str]:
    return [f.name for f in dataclasses.fields(model_class)]


def _is_tuple_field(cls, field_name: str) -> bool:
    f = next(f for f in dataclasses.fields(cls) if f.name == field_name)
    return "tuple" in str(f.type)


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


def _enum_values(enumeration: str) -> tuple[str, ...]:
    if enumeration == "stage":
        return catalog().stages
    if enumeration == "status":
        return STATUSES
    if enumeration == "isolation":
        return tuple(catalog().isolation)
    if enumeration == "storage_access":
        return catalog().storage_access_order
    if enumeration == "violation_type":
        return tuple(catalog().violation_types)
    if enumeration == "instruction_type":
        return runtime_spec().instruction_types
    if enumeration.startswith("policy."):
        return tuple(runtime_spec().policy["fields"][enumeration[7:]]["values"])
    return catalog().values(enumeration)


def _check_type(model: str, field: str, kind: str, value: Any) -> None:
    base = kind.replace(" | None", "")
    if base == "str":
        ok = isinstance(value, str) and value != ""
    elif base == "int":
        ok = type(value) is int and value >= 0
    elif base == "bool":
        ok = type(value) is bool
    elif base.startswith("tuple["):
        item = str if base.startswith("tuple[str") else dict
        ok = isinstance(value, tuple) and all(isinstance(v, item) for v in value)
    elif base == "dict":
        ok = isinstance(value, dict)
    else:  # pragma: no cover - a model declared a type this checker does not know
        raise ModelError(f"{model}.{camel(field)}: unchecked type {kind}")
    if not ok:
        _fail(model, field, f"must be {'a non-negative int' if base == 'int' else base}, got {value!r}")


def _check_timestamp(model: str, field: str, value: str) -> None:
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        _fail(model, field, f"must be an ISO 8601 time, got {value!r}")
    if moment.utcoffset() is None:
        _fail(model, field, "must carry a UTC offset")


@dataclasses.dataclass(frozen=True)
class RTWOVirtualMachine(Model):
    """A VM in the registry: which engine runs contracts, and which spec versions it implements."""

    ENUMS: ClassVar = {"execution_mode": "execution_mode", "status": "vm_status"}

    vm_id: str
    vm_name: str
    vm_version: str
    runtime_compatibility: tuple[str, ...]
    execution_mode: str
    status: str
    created_at: str

    def check(self) -> None:
        if not self.runtime_compatibility:
            _fail("RTWOVirtualMachine", "runtime_compatibility", "must name a spec version")


@dataclasses.dataclass(frozen=True)
class RTWOExecutionContext(Model):
    """One contract invocation (an entry call or a callee); ``status`` is its lifecycle stage."""

    ENUMS: ClassVar = {"status": "stage"}
    OPTIONAL: ClassVar = frozenset({"parent_context_id", "call_index"})

    context_id: str
    contract_id: str
    caller_reference: str
    transaction_reference: str
    state_reference: str
    resource_policy_id: str
    status: str
    created_at: str
    vm_id: str
    depth: int
    parent_context_id: str | None = None
    call_index: int | None = None

    def check(self) -> None:
        if (self.depth == 1) != (self.parent_context_id is None) or self.depth == 0:
            _fail("RTWOExecutionContext", "depth", "must be 1 exactly for a context without parent")


@dataclasses.dataclass(frozen=True)
class RTWOExecutionSandbox(Model):
    """The limits and access a context runs under. A callee's limits are its caller's remaining
    ones, which the interpreter does not report: they are None, with the parent sandbox named."""

    ENUMS: ClassVar = {"isolation_level": "isolation", "storage_access_policy": "storage_access",
                       "status": "sandbox_status"}
    OPTIONAL: ClassVar = frozenset({"memory_limit_reference", "compute_limit_reference",
                                    "storage_limit_reference", "parent_sandbox_id"})

    sandbox_id: str
    context_id: str
    isolation_level: str
    memory_limit_reference: int | None
    compute_limit_reference: int | None
    storage_access_policy: str
    status: str
    storage_limit_reference: int | None = None
    parent_sandbox_id: str | None = None

    def check(self) -> None:
        bound = catalog().isolation[self.isolation_level].max_storage_access
        if not catalog().storage_access_at_most(self.storage_access_policy, bound):
            _fail("RTWOExecutionSandbox", "storage_access_policy",
                  f"{self.storage_access_policy} exceeds isolation {self.isolation_level} ({bound})")


@dataclasses.dataclass(frozen=True)
class RTWOResourceAccounting(Model):
    """Usage in three dimensions and the fee. A callee's memory and storage are counted in the
    entry context's meters (the interpreter meters them per execution): None there."""

    ENUMS: ClassVar = {"status": "accounting_status"}
    OPTIONAL: ClassVar = frozenset({"memory_units", "storage_units", "fee", "storage_reads",
                                    "storage_writes", "storage_new_slots"})

    accounting_id: str
    context_id: str
    compute_units: int
    memory_units: int | None
    storage_units: int | None
    fee: int | None
    status: str
    storage_reads: int | None = None
    storage_writes: int | None = None
    storage_new_slots: int | None = None

    def check(self) -> None:
        per_context = (self.memory_units, self.storage_units, self.fee)
        if self.status == "included_in_parent":
            return
        if None in per_context:
            _fail("RTWOResourceAccounting", "fee", "and every unit must be set for status " + self.status)
        if self.status == "not_charged" and (self.compute_units or any(per_context)):
            _fail("RTWOResourceAccounting", "status", "not_charged requires zero usage")


@dataclasses.dataclass(frozen=True)
class RTWODeterminismPolicy(Model):
    """What code may hold: operation lists by mnemonic or type, and the time, randomness and
    external-call policies. ``allowed_operations`` None allows every operation."""

    ENUMS: ClassVar = {"time_access_policy": "policy.time_access",
                       "randomness_policy": "policy.randomness",
                       "external_call_policy": "policy.external_call", "status": "policy_status"}
    OPTIONAL: ClassVar = frozenset({"allowed_operations"})

    policy_id: str
    allowed_operations: tuple[str, ...] | None
    forbidden_operations: tuple[str, ...]
    time_access_policy: str
    randomness_policy: str
    external_call_policy: str
    status: str
    created_at: str

    def check(self) -> None:
        table = runtime_spec()
        names = set(table.by_mnemonic) | set(table.instruction_types)
        for field in ("allowed_operations", "forbidden_operations"):
            listed = getattr(self, field) or ()
            unknown = [n for n in listed if n not in names]
            if unknown:
                _fail("RTWODeterminismPolicy", field, f"names unknown operation {unknown[0]!r}")
            if len(set(listed)) != len(listed) or list(listed) != sorted(listed):
                _fail("RTWODeterminismPolicy", field, "must be sorted and without duplicates")

    def content(self) -> dict[str, Any]:
        """The fields that decide what the policy allows (its id is derived from these)."""
        doc = self.to_json()
        for key in ("policyId", "status", "createdAt"):
            del doc[key]
        return doc

    @staticmethod
    def id_for(content: dict[str, Any]) -> str:
        return "pol_" + hashlib.sha256(canonical(content).encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True)
class RTWORuntimeInstruction(Model):
    """One instruction of the spec table and what exists for it. ``smt_semantics`` and
    ``conformance_vectors`` are None when their tool is not available."""

    ENUMS: ClassVar = {"instruction_type": "instruction_type", "status": "instruction_status"}
    OPTIONAL: ClassVar = frozenset({"smt_semantics", "conformance_vectors"})

    instruction_id: str
    opcode: int
    instruction_type: str
    resource_cost_reference: dict
    status: str
    implemented: bool
    smt_semantics: bool | None = None
    conformance_vectors: int | None = None

    def check(self) -> None:
        row = runtime_spec().by_mnemonic.get(self.instruction_id)
        if row is None or (row.opcode, row.type) != (self.opcode, self.instruction_type):
            _fail("RTWORuntimeInstruction", "instruction_id",
                  "must be a mnemonic of the table with its opcode and type")


@dataclasses.dataclass(frozen=True)
class RTWOExecutionResult(Model):
    """A context's result. ``compared`` is the canonical result of chapter 7.5 (no ids, no
    times); for a callee it is its call record, the only per-frame outcome the interpreter
    reports, and output, state changes and events are None."""

    ENUMS: ClassVar = {"execution_status": "status"}
    OPTIONAL: ClassVar = frozenset({"output", "state_changes", "emitted_events", "error",
                                    "error_pc"})

    result_id: str
    context_id: str
    output: str | None
    state_changes: tuple[dict, ...] | None
    emitted_events: tuple[dict, ...] | None
    execution_status: str
    created_at: str
    error: str | None
    error_pc: int | None
    compared: dict
    digest: str

    def check(self) -> None:
        if self.digest != hashlib.sha256(canonical(self.compared).encode()).hexdigest():
            _fail("RTWOExecutionResult", "digest", "is not the SHA-256 of the compared result")
        # An entry context's output, state changes and events are the compared result's.
        for name, key in (("output", "output"), ("state_changes", "state_changes"),
                          ("emitted_events", "events")):
            value = getattr(self, name)
            if value is not None and _plain(value) != self.compared.get(key):
                _fail("RTWOExecutionResult", name, "differs from the compared result")
        if self.error is not None and self.error not in runtime_spec().errors:
            _fail("RTWOExecutionResult", "error", f"is not a spec code: {self.error}")


@dataclasses.dataclass(frozen=True)
class RTWOSandboxViolation(Model):
    """A violation: the spec code raised, its type, severity and the action taken (sandbox.toml)."""

    ENUMS: ClassVar = {"violation_type": "violation_type", "severity": "severity",
                       "action_taken": "action", "status": "violation_status"}
    OPTIONAL: ClassVar = frozenset({"error_pc", "instruction"})

    violation_id: str
    context_id: str
    violation_type: str
    severity: str
    action_taken: str
    status: str
    created_at: str
    code: str
    error_pc: int | None = None
    # A violation raised at policy binding: the mnemonic of the instruction refused, whose
    # offset is error_pc (chapter 10.5); None for every other violation.
    instruction: str | None = None

    def check(self) -> None:
        vt = catalog().violation_by_code.get(self.code)
        if vt is None or vt.name != self.violation_type or vt.severity != self.severity:
            _fail("RTWOSandboxViolation", "violation_type",
                  f"and severity must be those sandbox.toml gives code {self.code}")
        if self.action_taken not in (vt.entry_action, vt.callee_action):
            _fail("RTWOSandboxViolation", "action_taken", f"is not an action for {self.code}")


MODELS = (RTWOVirtualMachine, RTWOExecutionContext, RTWOExecutionSandbox, RTWOResourceAccounting,
          RTWODeterminismPolicy, RTWORuntimeInstruction, RTWOExecutionResult, RTWOSandboxViolation)
