"""Read routes: a collection at ``GET /api/v1/<name>`` (one page, filters, a cursor) and one
record at ``GET /api/v1/<name>/{id}``, for every record service of the runtime. Each route
calls the service the command line calls (``rtwo-vm contexts list`` ...), with its page."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request

from reference_vm.result import STATUSES
from rtwo_vm.arguments.recorded import output_words_hex
from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.store import DamagedRecord
from rtwo_vm.runtime.catalog import catalog, runtime_spec
from rtwo_vm.runtime.records import Page
from rtwo_vm.server.api import schemas
from rtwo_vm.server.api.codes import ApiError, bounds, refusals
from rtwo_vm.server.api.paging import PageParams, TextQuery, TimeQuery, enum_query, moment
from rtwo_vm.server.runtimes import runtime

router = APIRouter()
RT = Annotated[Runtime, Depends(runtime)]
Pages = Annotated[PageParams, Depends()]
RecordId = Annotated[str, Path(min_length=1, max_length=bounds().max_text_chars,
                               description="the record's id (or its context's id)")]
LIST = refusals("INVALID_REQUEST")
ONE = refusals("INVALID_REQUEST", "UNKNOWN_RECORD")
_cat = catalog()


def _range(created_from: str | None, created_to: str | None) -> dict[str, Any]:
    return {"created_from": moment(created_from, "createdFrom"),
            "created_to": moment(created_to, "createdTo")}


def _contract(text: str | None) -> str | None:
    if text is None:
        return None
    from rtwo_vm.server.api.bodies import _word
    try:
        return hex(_word(text))
    except ValueError as err:
        raise ApiError("INVALID_REQUEST", f"contract: {err}") from None


def _by_id_or_context(service: Any, record_id: str) -> dict:
    """A record by its id, or the record of a context (as ``rtwo-vm results show`` takes);
    a row that does not decode is its damaged entry (200: the answer shows the database)."""
    return service.get_entry(record_id).to_json()


def _state_root(rt: Runtime) -> str | None:
    try:
        return rt.state_root
    except DamagedRecord:
        return None


# -- overview ----------------------------------------------------------------------------

@router.get("/overview", response_model=schemas.Overview, tags=["overview"])
def overview(rt: RT, request: Request):
    """Record counts per domain model and, per service, its count and latest record time.
    Each count reads at most api.toml ``bounds.max_counted`` records (an index range): above
    that it answers the bound with ``countExact`` false, "more than"; each latest time is
    one index seek."""
    latest = request.app.state.readiness.latest()
    bound = bounds().max_counted
    services = {
        "vms": (*rt.vms.count_at_most(bound), rt.vms.last_at()),
        "contexts": (*rt.contexts.count_at_most(bound), rt.contexts.last_at()),
        "sandboxes": (*rt.sandboxes.count_at_most(bound), rt.sandboxes.last_at()),
        "accounting": (*rt.accounting.count_at_most(bound), rt.accounting.last_at()),
        "policies": (*rt.policies.count_at_most(bound), rt.policies.last_at()),
        "instructions": (len(runtime_spec().instructions), True, None),
        "lifecycle": (*rt.contexts.entry_count_at_most(bound), rt.contexts.last_at()),
        "results": (*rt.results.count_at_most(bound), rt.results.last_at()),
        "violations": (*rt.violations.count_at_most(bound), rt.violations.last_at()),
        "readiness": (0 if latest is None else 1, True,
                      None if latest is None else latest.checked_at),
        "events": (*rt.events.count_at_most(bound), rt.events.last_at()),
    }
    counts = {"RTWOVirtualMachine": "vms", "RTWOExecutionContext": "contexts",
              "RTWOExecutionSandbox": "sandboxes", "RTWOResourceAccounting": "accounting",
              "RTWODeterminismPolicy": "policies", "RTWORuntimeInstruction": "instructions",
              "RTWOExecutionResult": "results", "RTWOSandboxViolation": "violations"}
    return {"models": {model: services[name][0] for model, name in counts.items()},
            "modelsExact": {model: services[name][1] for model, name in counts.items()},
            "services": {name: {"count": c, "countExact": exact, "lastAt": at}
                         for name, (c, exact, at) in services.items()},
            "stateRoot": _state_root(rt), "schemaVersion": rt.store.schema_version,
            "readiness": None if latest is None else latest.readiness,
            "readinessAt": None if latest is None else latest.checked_at}


# -- VMs, contracts, policies --------------------------------------------------------------

@router.get("/vms", response_model=schemas.PageOf[schemas.VirtualMachineShown], responses=LIST, tags=["vms"])
def vms(rt: RT, page: Pages,
        status: str | None = enum_query(_cat.values("vm_status"), "only VMs with this status"),
        createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("status", status, _cat.values("vm_status"))
    return page.answer(rt.vms.page(**page.window(2), status=status,
                                   **_range(createdFrom, createdTo)))


@router.get("/vms/{vm_id}", response_model=schemas.VirtualMachineShown, responses=ONE, tags=["vms"])
def vm(rt: RT, vm_id: RecordId):
    return rt.vms.get_entry(vm_id).to_json()


@router.get("/contracts", response_model=schemas.PageOf[schemas.ContractSummaryShown], responses=LIST,
            tags=["contracts"])
def contracts(rt: RT, page: Pages):
    return page.answer(rt.contracts_page(**page.window(2)))


@router.get("/contracts/{address}", response_model=schemas.ContractShown, responses=ONE, tags=["contracts"])
def contract(rt: RT, address: Annotated[str, Path(max_length=24, description="hex or decimal")]):
    address_word = _contract(address)
    assert address_word is not None
    return rt.contract(int(address_word, 16))


@router.get("/policies", response_model=schemas.PageOf[schemas.DeterminismPolicyShown], responses=LIST,
            tags=["policies"])
def policies(rt: RT, page: Pages,
             status: str | None = enum_query(_cat.values("policy_status"), "only these"),
             createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("status", status, _cat.values("policy_status"))
    return page.answer(rt.policies.page(**page.window(2), status=status,
                                        **_range(createdFrom, createdTo)))


@router.get("/policies/{policy_id}", response_model=schemas.DeterminismPolicyShown, responses=ONE,
            tags=["policies"])
def policy(rt: RT, policy_id: RecordId):
    return rt.policies.get_entry(policy_id).to_json()


# -- contexts and their records ------------------------------------------------------------

@router.get("/contexts", response_model=schemas.PageOf[schemas.ExecutionContextShown], responses=LIST,
            tags=["contexts"])
def contexts(rt: RT, page: Pages,
             status: str | None = enum_query(_cat.stages, "only contexts whose stage history "
                                             "entered this stage (committed, rolled_back ...)"),
             executionStatus: str | None = enum_query(STATUSES, "only contexts whose result "
                                                      "has this execution status"),
             contract: TextQuery = None, createdFrom: TimeQuery = None, createdTo: TimeQuery = None,
             entryOnly: bool = False):
    return page.answer(rt.contexts.page(
        **page.window(1), status=status, execution_status=executionStatus,
        contract_id=_contract(contract), roots_only=entryOnly, **_range(createdFrom, createdTo)))


@router.get("/contexts/{context_id}", response_model=schemas.ContextRecord, responses=ONE,
            tags=["contexts"])
def context(rt: RT, context_id: RecordId):
    return rt.context_record(context_id)


def _check(name: str, value: str | None, allowed) -> None:
    if value is not None and value not in allowed:
        raise ApiError("INVALID_REQUEST", f"{name}: must be one of {', '.join(allowed)}")


@router.get("/sandboxes", response_model=schemas.PageOf[schemas.ExecutionSandboxShown], responses=LIST,
            tags=["sandboxes"])
def sandboxes(rt: RT, page: Pages,
              isolationLevel: str | None = enum_query(tuple(_cat.isolation), "only this level"),
              status: str | None = enum_query(_cat.values("sandbox_status"), "only this status"),
              contract: TextQuery = None, createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("isolationLevel", isolationLevel, tuple(_cat.isolation))
    _check("status", status, _cat.values("sandbox_status"))
    return page.answer(rt.sandboxes.page(
        **page.window(1), isolation_level=isolationLevel, status=status,
        contract_id=_contract(contract), **_range(createdFrom, createdTo)))


@router.get("/sandboxes/{record_id}", response_model=schemas.ExecutionSandboxShown, responses=ONE,
            tags=["sandboxes"])
def sandbox(rt: RT, record_id: RecordId):
    return _by_id_or_context(rt.sandboxes, record_id)


@router.get("/accounting", response_model=schemas.PageOf[schemas.ResourceAccountingShown],
            responses=LIST, tags=["accounting"])
def accounting(rt: RT, page: Pages,
               status: str | None = enum_query(_cat.values("accounting_status"), "only this status"),
               contract: TextQuery = None, createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("status", status, _cat.values("accounting_status"))
    return page.answer(rt.accounting.page(
        **page.window(1), status=status, contract_id=_contract(contract),
        **_range(createdFrom, createdTo)))


@router.get("/accounting/{record_id}", response_model=schemas.ResourceAccountingShown, responses=ONE,
            tags=["accounting"])
def accounting_record(rt: RT, record_id: RecordId):
    return _by_id_or_context(rt.accounting, record_id)


@router.get("/results", response_model=schemas.PageOf[schemas.ExecutionResultWordsShown], responses=LIST,
            tags=["results"])
def results(rt: RT, page: Pages,
            executionStatus: str | None = enum_query(STATUSES, "only this execution status"),
            contract: TextQuery = None, createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("executionStatus", executionStatus, STATUSES)
    found = rt.results.page(**page.window(1), execution_status=executionStatus,
                            contract_id=_contract(contract), **_range(createdFrom, createdTo))
    return page.answer(found, [_with_words(r.to_json() if hasattr(r, "to_json") else r)
                              for r in found.items])


@router.get("/results/{record_id}", response_model=schemas.ExecutionResultWordsShown, responses=ONE,
            tags=["results"])
def result(rt: RT, record_id: RecordId):
    return _with_words(_by_id_or_context(rt.results, record_id))


def _with_words(doc: dict) -> dict:
    """A result as the API shows it: with ``outputWords``, its output as words, computed as
    ``rtwo-vm call --json`` computes them (a damaged entry as it is)."""
    if doc.get("damaged"):
        return doc
    return {**doc, "outputWords": output_words_hex(doc.get("output"))}


@router.get("/violations", response_model=schemas.PageOf[schemas.SandboxViolationShown],
            responses=LIST, tags=["violations"])
def violations(rt: RT, page: Pages,
               violationType: str | None = enum_query(tuple(_cat.violation_types), "only this type"),
               severity: str | None = enum_query(_cat.values("severity"), "only this severity"),
               status: str | None = enum_query(_cat.values("violation_status"), "only this status"),
               context: TextQuery = None, contract: TextQuery = None,
               createdFrom: TimeQuery = None, createdTo: TimeQuery = None):
    _check("severity", severity, _cat.values("severity"))
    _check("status", status, _cat.values("violation_status"))
    return page.answer(rt.violations.page(
        **page.window(2), violation_type=violationType, severity=severity,
        status=status, context_id=context, contract_id=_contract(contract),
        **_range(createdFrom, createdTo)))


@router.get("/violations/{record_id}", response_model=schemas.SandboxViolationShown, responses=ONE,
            tags=["violations"])
def violation(rt: RT, record_id: RecordId):
    return _by_id_or_context(rt.violations, record_id)


# -- instructions --------------------------------------------------------------------------

@router.get("/instructions", response_model=schemas.PageOf[schemas.RuntimeInstruction],
            responses=LIST, tags=["instructions"])
def instructions(request: Request, page: Pages,
                 status: str | None = enum_query(_cat.values("instruction_status"), "only this status"),
                 instructionType: str | None = enum_query(runtime_spec().instruction_types, "only this type")):
    """The instruction table in opcode order with what exists for each instruction (handlers,
    SMT models, conformance vectors: computed by the server at most a minute earlier)."""
    _check("status", status, _cat.values("instruction_status"))
    _check("instructionType", instructionType, runtime_spec().instruction_types)
    after = page.after(1)
    rows = [i for i in request.app.state.instructions.view().records
            if (status is None or i.status == status)
            and (instructionType is None or i.instruction_type == instructionType)]
    following = [i for i in rows if after is None or i.opcode > after[0]]
    shown = following[:page.limit]
    more = len(following) > page.limit
    return page.answer(Page(shown, (shown[-1].opcode,) if more else None, len(rows)))


@router.get("/instructions/{name}", response_model=schemas.RuntimeInstruction, responses=ONE,
            tags=["instructions"])
def instruction(request: Request,
                name: Annotated[str, Path(max_length=32, description="mnemonic or opcode")]):
    """One instruction of the table, as the collection shows it."""
    return request.app.state.instructions.one(name).to_json()
