"""The API's answers as declared response models, so that /openapi.json describes them.

The eight domain models' answers are derived from their dataclasses
(rtwo_vm/runtime/models.py: every field, camelCase, its type and whether it may be null),
never written again here; the other answers mirror the ``to_json`` of the runtime object
they come from (named beside each).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Generic, Literal, Optional, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from rtwo_vm.runtime import models

T = TypeVar("T")
JSON = dict[str, Any]

_TYPES: dict[str, Any] = {"str": str, "int": int, "bool": bool, "dict": JSON,
                          "tuple[str, ...]": list[str], "tuple[dict, ...]": list[JSON]}


def _answer_model(model_class: type) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(model_class):
        kind = str(f.type)
        nullable = kind.endswith(" | None")
        base = _TYPES[kind.removesuffix(" | None")]
        info = Field(ge=0) if base is int else Field()
        fields[models.camel(f.name)] = (Optional[base] if nullable else base, info)
    doc = (model_class.__doc__ or model_class.__name__).split("\n\n")[0]
    return create_model(model_class.__name__, __doc__=doc, **fields)


if TYPE_CHECKING:  # the static view; at run time the models derived from the dataclasses
    VirtualMachine = BaseModel
    ExecutionContext = BaseModel
    ExecutionSandbox = BaseModel
    ResourceAccounting = BaseModel
    DeterminismPolicy = BaseModel
    RuntimeInstruction = BaseModel
    ExecutionResult = BaseModel
    SandboxViolation = BaseModel
else:
    VirtualMachine = _answer_model(models.RTWOVirtualMachine)
    ExecutionContext = _answer_model(models.RTWOExecutionContext)
    ExecutionSandbox = _answer_model(models.RTWOExecutionSandbox)
    ResourceAccounting = _answer_model(models.RTWOResourceAccounting)
    DeterminismPolicy = _answer_model(models.RTWODeterminismPolicy)
    RuntimeInstruction = _answer_model(models.RTWORuntimeInstruction)
    ExecutionResult = _answer_model(models.RTWOExecutionResult)
    SandboxViolation = _answer_model(models.RTWOSandboxViolation)


class Damaged(BaseModel):
    """A row of the database that does not decode (a JSON column that does not parse, a
    number of the wrong type, an unknown enumerated value, a record its context refers to
    that is missing), in place of its record: the other records show as they are
    (rtwo_vm/runtime/damaged.py)."""

    damaged: Literal[True]
    table: str = Field(description="the table the row is in")
    id: str = Field(description="the row's key (cut when long)")
    reason: str = Field(description="why it does not decode, one line")


OUTPUT_WORDS = ("the output (returned or revert data) as little-endian words of word_bits "
                "(chapter 2), each 0x-hex, when it is a non-empty whole number of words; as "
                "rtwo-vm call --json computes them (rtwo_vm/arguments/recorded.py)")


class ExecutionResultWords(ExecutionResult):
    """An execution result as /results answers it: the record and its output as words."""

    outputWords: Optional[list[str]] = Field(description=OUTPUT_WORDS + "; else null")


# Each record as an answer shows it: the record, or its damaged entry.
VirtualMachineShown = Union[VirtualMachine, Damaged]
ExecutionContextShown = Union[ExecutionContext, Damaged]
ExecutionSandboxShown = Union[ExecutionSandbox, Damaged]
ResourceAccountingShown = Union[ResourceAccounting, Damaged]
DeterminismPolicyShown = Union[DeterminismPolicy, Damaged]
ExecutionResultShown = Union[ExecutionResult, Damaged]
ExecutionResultWordsShown = Union[ExecutionResultWords, Damaged]
SandboxViolationShown = Union[SandboxViolation, Damaged]


class PageOf(BaseModel, Generic[T]):
    """One page of a collection in its stable order."""

    items: list[T]
    next: Optional[str] = Field(description="the cursor of the next page (null: this is the last)")
    total: int = Field(ge=0, description=(
        "records matching the filters in all, counted up to api.toml bounds.max_counted: "
        "exact when totalExact is true; when false, more than this many match (counting "
        "stopped at the bound, so that a page costs the same at any size of the tables)"))
    totalExact: bool = Field(description="whether total is the exact count (false: more than "
                                         "total records match)")
    limit: int = Field(ge=1, description="the page size asked for")


class StageEntry(BaseModel):
    """One entry of a context's stage history (rtwo_vm.runtime.lifecycle.StageEntry)."""

    model_config = ConfigDict(populate_by_name=True)
    seq: int = Field(ge=0)
    stage: str
    from_: Optional[str] = Field(alias="from")
    at: str


class DeliveryError(BaseModel):
    eventId: int
    error: str


class DeliveryReport(BaseModel):
    """One delivery pass to one sink (rtwo_vm.runtime.delivery.DeliveryReport)."""

    delivered: int = Field(ge=0)
    failed: int = Field(ge=0)
    dead: int = Field(ge=0)
    left: int = Field(ge=0)
    error: Optional[str]
    nextIn: Optional[float]
    errors: list[DeliveryError]


class RecordedExecution(BaseModel):
    """Everything recorded for one context and its callees (RecordedExecution.to_json), and
    with ``deliver`` the delivery pass that followed, per sink."""

    context: ExecutionContext
    history: list[StageEntry]
    sandbox: ExecutionSandbox
    accounting: ResourceAccounting
    result: ExecutionResult
    violations: list[SandboxViolation]
    children: list[RecordedExecution]
    outputWords: Optional[list[str]] = Field(None, description=(
        "the entry's " + OUTPUT_WORDS.removeprefix("the ") + "; absent otherwise"))
    delivery: Optional[dict[str, DeliveryReport]] = None


class ContextRecord(BaseModel):
    """A context with its ten-stage history and every record of it (as ``contexts show``);
    a part that does not decode, or is missing, is its damaged entry."""

    context: ExecutionContextShown
    history: list[Union[StageEntry, Damaged]]
    sandbox: ExecutionSandboxShown
    accounting: ResourceAccountingShown
    result: ExecutionResultShown
    violations: list[SandboxViolationShown]
    children: list[str] = Field(description="the context ids of its callees")


class DeployedContract(BaseModel):
    """A deployment (rtwo_vm.runtime.runtime.DeployedContract)."""

    address: str
    codeHash: str
    codeSize: int = Field(ge=0)
    storageSlots: int = Field(ge=0)
    deployedAt: str
    stateRoot: str
    specVersion: str


class ContractSummary(BaseModel):
    """A deployed contract in a listing (Runtime.contracts_page)."""

    address: str
    codeHash: str
    codeSize: int = Field(ge=0)
    deployedAt: str
    specVersion: str
    storageSlots: int = Field(ge=0)


class Contract(BaseModel):
    """A deployed contract with its storage (Runtime.contract)."""

    address: str
    codeHash: str
    codeSize: int = Field(ge=0)
    deployedAt: str
    specVersion: str
    storage: dict[str, str]
    damaged: Optional[list[Damaged]] = Field(
        None, description="storage slots that do not decode (the others are in storage)")


class Event(BaseModel):
    """An outbox event (rtwo_vm.runtime.events.VMEvent)."""

    eventId: int = Field(ge=0)
    stream: str
    type: str
    payload: JSON
    createdAt: str


class Sinks(BaseModel):
    """The registered sinks, what each has not received yet, and the failures being retried
    (as ``events sinks``; credentials redacted)."""

    sinks: list[JSON]
    undelivered: dict[str, int]
    failures: list[JSON]


class DeadEvent(BaseModel):
    """An event parked as dead for a sink (VMEventPublisher.dead)."""

    sink: str
    eventId: int
    stream: str
    type: str
    attempts: int
    reason: str
    lastAt: str
    deadAt: str
    heldBack: int = Field(description="later events of its stream it holds back")


class Requeued(BaseModel):
    requeued: int = Field(ge=0, description="dead events put back")


class Delivered(BaseModel):
    delivery: dict[str, DeliveryReport]
    complete: bool = Field(description="every registered sink received every event")


class Check(BaseModel):
    """One readiness check (rtwo_vm.runtime.readiness.Check)."""

    name: str
    status: str
    evidence: str
    seconds: float


class ReadinessReport(BaseModel):
    readiness: str
    checkedAt: str
    checks: list[Check]


class EvidenceFrom(BaseModel):
    """Where readiness reads its evidence (as ``rtwo-vm readiness --json`` says it)."""

    dataDir: Optional[str] = Field(description=(
        "the server's data directory, absolute (rtwo-vm serve --data-dir, else $RTWO_VM_DATA, "
        "else the user's data directory; null: none given, no evidence file is read)"))
    proofsReport: Optional[str] = Field(description=(
        "the proofs report the proof_results check reads (null: none)"))


class Readiness(BaseModel):
    """The latest readiness report, computed in the background (the checks take seconds):
    ``state`` says whether one is being computed, ``computedAt`` when the one served was."""

    state: str = Field(description="computing (none yet, or a newer one on the way) or computed")
    computedAt: Optional[str]
    ageSeconds: Optional[float] = Field(description=(
        "how long ago the report was computed (presentation only, never part of a verdict)"))
    computingSince: Optional[str] = Field(description="when the computation running now "
                                                      "started (null: none runs)")
    seconds: Optional[float] = Field(description="how long computing it took")
    maxAgeSeconds: int
    note: str
    evidenceFrom: EvidenceFrom
    report: Optional[ReadinessReport]


class ServiceFacts(BaseModel):
    count: int = Field(ge=0, description="its records, counted up to api.toml bounds.max_counted")
    countExact: bool = Field(description="whether count is exact (false: more than count)")
    lastAt: Optional[str]


class Overview(BaseModel):
    """Record counts per domain model and, per service, the facts a status line needs. Each
    count reads at most api.toml bounds.max_counted records: past it the figure is that
    bound and its exactness flag is false ("more than")."""

    models: dict[str, int]
    modelsExact: dict[str, bool] = Field(description="per model, whether its count is exact")
    services: dict[str, ServiceFacts]
    stateRoot: Optional[str] = Field(description="null when the stored root does not decode")
    schemaVersion: int
    readiness: Optional[str] = Field(description="the latest readiness (null: not computed yet)")
    readinessAt: Optional[str]


ContractShown = Union[Contract, Damaged]
ContractSummaryShown = Union[ContractSummary, Damaged]
EventShown = Union[Event, Damaged]
DeadEventShown = Union[DeadEvent, Damaged]
