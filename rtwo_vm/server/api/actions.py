"""Actions: deploy (``POST /api/v1/contracts``), call (``POST /api/v1/calls``) and policy
create (``POST /api/v1/policies``), each as the command line does it (rtwo_vm/commands/
services.py) with the same services. Every action needs the bearer token (access.py); a
refused request records nothing. A call that the checks of chapter 7.3.2 refuse (an unknown
contract, code that fails validation) is not a refused request: it is recorded as a context
that rolled back and answered 201 with that record, as ``rtwo-vm call`` records it."""

from __future__ import annotations

from typing import Annotated, cast

from fastapi import APIRouter, Depends

from reference_vm import Limits
from reference_vm.errors import VMError
from reference_vm.rules import rules as rules_of
from reference_vm.validate import validate
import spec
from rtwo_vm.arguments.inputs import CliError, operation_names, parse_hex
from rtwo_vm.arguments.recorded import output_words_hex
from rtwo_vm.runtime import CallRequest, Runtime
from rtwo_vm.runtime.records import SandboxManager
from rtwo_vm.server.api import schemas
from rtwo_vm.server.api.bodies import CallBody, DeployBody, PolicyBody
from rtwo_vm.server.api.codes import ApiError, refusals
from rtwo_vm.server.runtimes import runtime

from rtwo_vm.runtime.catalog import runtime_spec, runtime_version

router = APIRouter()
RT = Annotated[Runtime, Depends(runtime)]
COMMON = ("INVALID_REQUEST", "UNAUTHORIZED", "BODY_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE",
          "SERVER_BUSY")
CONTAINER_CODES = tuple(e.code for e in runtime_spec().errors.values() if e.kind == "invalid")


@router.post("/contracts", status_code=201, response_model=schemas.DeployedContract,
             responses=refusals(*COMMON, *CONTAINER_CODES), tags=["contracts"])
def deploy(rt: RT, body: DeployBody):
    """Deploy a container (hex) at ``address`` (default: the lowest free one from 0x100) with
    initial ``storage``; code that fails validation is refused with its container code."""
    code = body.code_bytes()
    version = body.specVersion or rt.vms.newest_version()
    if version not in spec.names():
        raise ApiError("INVALID_REQUEST", f"specVersion: no spec version {version!r} "
                                          f"(versions: {', '.join(spec.names())})")
    try:
        validate(code, rules_of(version))
    except VMError as err:
        raise ApiError(err.code, f"code is not a valid container: {err.code}") from None
    return rt.deploy(code, cast("int | None", body.address), body.storage_words(),
                     spec_version=version).to_json()


@router.post("/calls", status_code=201, response_model=schemas.RecordedExecution,
             response_model_exclude_unset=True,
             responses=refusals(*COMMON, "INVALID_LIMITS", "UNKNOWN_RECORD"), tags=["calls"])
def call(rt: RT, body: CallBody):
    """Invoke the contract at ``to`` through the ten lifecycle stages and record it."""
    given = body.limits.model_dump(exclude_none=True)
    request = CallRequest(
        to=cast(int, body.to), caller=cast(int, body.caller), call_data=parse_hex(body.callData, "callData"),
        block_time=cast(int, body.time), random_seed=parse_hex(body.seed, "seed"), policy_id=body.policy,
        isolation_level=body.isolation, storage_access=body.storageAccess,
        limits=Limits(**{d: given[d] for d in Limits.DIMENSIONS if d in given}),
        transaction_reference=body.txRef, vm_id=body.vm, execution_mode=body.executionMode)
    SandboxManager.plan(request.isolation_level, request.storage_access)
    # Runtime references are refused before anything is recorded (10.9), as rtwo-vm call does.
    if body.policy:
        rt.policies.for_execution(body.policy)
    if body.vm or body.executionMode:
        rt.vms.for_execution(body.vm, rt.lifecycle.contract_version(request.to),
                             body.executionMode)
    recorded = rt.call(request)
    doc = recorded.to_json()
    words = output_words_hex(recorded.result.output)
    if words is not None:   # the entry's output (returned or revert data) as words, as the CLI
        doc["outputWords"] = words
    if body.deliver:
        doc["delivery"] = {name: r.to_json() for name, r in rt.events.deliver().items()}
    return doc


@router.post("/policies", status_code=201, response_model=schemas.DeterminismPolicy,
             responses=refusals(*COMMON), tags=["policies"])
def create_policy(rt: RT, body: PolicyBody):
    """The determinism policy with these fields (policy.toml's defaults for the others),
    created if new: policies are identified by their content."""
    try:
        allowed = operation_names(body.allowedOperations, "allowedOperations", runtime_version())
        forbidden = operation_names(body.forbiddenOperations, "forbiddenOperations",
                                    runtime_version()) or ()
    except CliError as err:
        raise ApiError("INVALID_REQUEST", str(err)) from None
    return rt.policies.create(time_access=body.timeAccess, randomness=body.randomness,
                              external_call=body.externalCall, allowed_operations=allowed,
                              forbidden_operations=forbidden).to_json()
