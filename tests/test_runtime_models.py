"""The eight domain models and the sandbox spec data they draw their enumerations from."""

from __future__ import annotations

import dataclasses
import json

import jsonschema
import pytest

import spec
from test_runtime_support import VERSION
from rtwo_vm.runtime import catalog as catalog_mod
from rtwo_vm.runtime.catalog import catalog, problems
from rtwo_vm.runtime.models import (
    MODELS, ModelError, RTWODeterminismPolicy, RTWOExecutionContext, RTWOExecutionResult,
    RTWOExecutionSandbox, RTWOResourceAccounting, RTWORuntimeInstruction, RTWOSandboxViolation,
    RTWOVirtualMachine,
)

T = "2025-01-01T00:00:00.000000+00:00"

# Field names exactly as the architecture page names them (accounting per the issue).
SEED_FIELDS = {
    RTWOVirtualMachine: "vmId vmName vmVersion runtimeCompatibility executionMode status createdAt",
    RTWOExecutionContext: "contextId contractId callerReference transactionReference "
                          "stateReference resourcePolicyId status createdAt",
    RTWOExecutionSandbox: "sandboxId contextId isolationLevel memoryLimitReference "
                          "computeLimitReference storageAccessPolicy status",
    RTWOResourceAccounting: "accountingId contextId computeUnits memoryUnits storageUnits fee status",
    RTWODeterminismPolicy: "policyId allowedOperations forbiddenOperations timeAccessPolicy "
                           "randomnessPolicy externalCallPolicy status",
    RTWORuntimeInstruction: "instructionId opcode instructionType resourceCostReference status",
    RTWOExecutionResult: "resultId contextId output stateChanges emittedEvents executionStatus createdAt",
    RTWOSandboxViolation: "violationId contextId violationType severity actionTaken status createdAt",
}


def _compared():
    # An entry context's output, state changes and events are its compared result's.
    return {"status": "success", "error": None, "output": "0x", "state_changes": [], "events": []}


def _digest(doc):
    import hashlib
    from reference_vm.result import canonical
    return hashlib.sha256(canonical(doc).encode()).hexdigest()


VALID = {
    RTWOVirtualMachine: dict(vm_id="vm_1", vm_name="ref", vm_version="1.0.0",
                             runtime_compatibility=("1.0",), execution_mode="reference_interpreter",
                             status="registered", created_at=T),
    RTWOExecutionContext: dict(context_id="ctx_1", contract_id="0x100", caller_reference="0x1",
                               transaction_reference="tx_1", state_reference="0" * 64,
                               resource_policy_id="pol_1", status="finalized", created_at=T,
                               vm_id="vm_1", depth=1),
    RTWOExecutionSandbox: dict(sandbox_id="sbx_1", context_id="ctx_1", isolation_level="view",
                               memory_limit_reference=4, compute_limit_reference=1000,
                               storage_access_policy="read_only", status="released",
                               storage_limit_reference=10),
    RTWOResourceAccounting: dict(accounting_id="acc_1", context_id="ctx_1", compute_units=5,
                                 memory_units=1, storage_units=0, fee=105, status="charged"),
    RTWODeterminismPolicy: dict(policy_id="pol_1", allowed_operations=None,
                                forbidden_operations=("SSTORE", "arithmetic"),
                                time_access_policy="forbidden", randomness_policy="seeded",
                                external_call_policy="allowed", status="active", created_at=T),
    RTWORuntimeInstruction: dict(instruction_id="ADD", opcode=spec.load(VERSION).by_mnemonic["ADD"].opcode, instruction_type="arithmetic",
                                 resource_cost_reference={"baseCost": 3}, status="implemented",
                                 implemented=True),
    RTWOExecutionResult: dict(result_id="res_1", context_id="ctx_1", output="0x",
                              state_changes=(), emitted_events=(), execution_status="success",
                              created_at=T, error=None, error_pc=None, compared=_compared(),
                              digest=_digest(_compared())),
    RTWOSandboxViolation: dict(violation_id="vio_1", context_id="ctx_1",
                               violation_type="compute_limit", severity="medium",
                               action_taken="execution_halted", status="recorded", created_at=T,
                               code="COMPUTE_LIMIT_EXCEEDED", error_pc=4),
}


def test_sandbox_spec_data_matches_its_schema_and_the_other_data_files():
    jsonschema.validate(dict(spec.raw("sandbox", VERSION)), spec.schema("sandbox"))
    assert problems(catalog()) == []


def test_every_outcome_code_a_sandbox_can_raise_has_exactly_one_violation_type():
    kinds = {"invalid", "violation", "fault", "exhausted"}
    codes = {e.code for e in spec.load(VERSION).errors.values() if e.kind in kinds}
    listed = [c for vt in catalog().violation_types.values() for c in vt.codes]
    assert codes <= set(listed) and len(listed) == len(set(listed))


def test_catalog_problems_catch_data_that_disagrees():
    cat = catalog()
    vt = next(iter(cat.violation_types.values()))
    broken = dataclasses.replace(
        cat, violation_by_code={}, violation_types={vt.name: dataclasses.replace(
            vt, codes=("NO_SUCH_CODE",), severity="apocalyptic")},
        roles={**cat.roles, "final": "nowhere"}, default_isolation="floating")
    found = "\n".join(problems(broken))
    for expected in ("NO_SUCH_CODE", "apocalyptic", "codes without a violation type",
                     "unknown stage nowhere", "default isolation floating"):
        assert expected in found


def test_catalog_names_every_enumeration_value_the_code_uses():
    for enumeration, names in catalog_mod.NAMES_USED.items():
        assert set(names) <= set(catalog().values(enumeration)), enumeration


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_model_has_every_seed_field_and_round_trips_through_canonical_json(model):
    record = model(**VALID[model])
    doc = record.to_json()
    assert set(SEED_FIELDS[model].split()) <= set(doc)
    assert model.from_json(json.loads(record.canonical_json())) == record
    text = record.canonical_json()
    assert text == json.dumps(json.loads(text), sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_model_refuses_wrong_types_and_missing_fields(model):
    fields = VALID[model]
    first = next(iter(fields))
    with pytest.raises(ModelError):
        model(**{**fields, first: 12})          # an id that is not a string
    with pytest.raises(ModelError):
        model(**{**fields, first: None})        # a required field missing
    with pytest.raises(ModelError, match="unknown field"):
        model.from_json({**model(**fields).to_json(), "surprise": 1})


@pytest.mark.parametrize("model,field,bad", [
    (RTWOVirtualMachine, "status", "operational"),
    (RTWOVirtualMachine, "execution_mode", "jit"),
    (RTWOExecutionContext, "status", "running"),
    (RTWOExecutionSandbox, "isolation_level", "hermetic"),
    (RTWOExecutionSandbox, "storage_access_policy", "write_only"),
    (RTWOResourceAccounting, "status", "estimated"),
    (RTWODeterminismPolicy, "time_access_policy", "sometimes"),
    (RTWORuntimeInstruction, "instruction_type", "floating"),
    (RTWOExecutionResult, "execution_status", "ok"),
    (RTWOSandboxViolation, "severity", "critical"),
    (RTWOSandboxViolation, "action_taken", "ignored"),
])
def test_enumerated_fields_accept_only_spec_values(model, field, bad):
    with pytest.raises(ModelError, match="must be one of"):
        model(**{**VALID[model], field: bad})


def test_cross_field_rules():
    with pytest.raises(ModelError, match="exceeds isolation"):
        RTWOExecutionSandbox(**{**VALID[RTWOExecutionSandbox], "storage_access_policy": "read_write"})
    with pytest.raises(ModelError, match="not_charged requires zero"):
        RTWOResourceAccounting(**{**VALID[RTWOResourceAccounting], "status": "not_charged"})
    with pytest.raises(ModelError, match="digest"):
        RTWOExecutionResult(**{**VALID[RTWOExecutionResult], "digest": "0" * 64})
    with pytest.raises(ModelError, match="sandbox.toml gives"):
        RTWOSandboxViolation(**{**VALID[RTWOSandboxViolation], "violation_type": "trap"})
    with pytest.raises(ModelError, match="unknown operation"):
        RTWODeterminismPolicy(**{**VALID[RTWODeterminismPolicy], "forbidden_operations": ("FLY",)})
    with pytest.raises(ModelError, match="depth"):
        RTWOExecutionContext(**{**VALID[RTWOExecutionContext], "depth": 2})
    with pytest.raises(ModelError, match="with its opcode"):
        RTWORuntimeInstruction(**{**VALID[RTWORuntimeInstruction], "opcode": 0})
    with pytest.raises(ModelError, match="UTC offset"):
        RTWOVirtualMachine(**{**VALID[RTWOVirtualMachine], "created_at": "2025-01-01T00:00:00"})
    # A callee's accounting may leave memory, storage and fee to its entry context.
    RTWOResourceAccounting(accounting_id="acc_2", context_id="ctx_2", compute_units=7,
                           memory_units=None, storage_units=None, fee=None,
                           status="included_in_parent")


def test_policy_ids_are_derived_from_content():
    policy = RTWODeterminismPolicy(**VALID[RTWODeterminismPolicy])
    same = RTWODeterminismPolicy(**{**VALID[RTWODeterminismPolicy], "policy_id": "other",
                                    "created_at": "2030-01-01T00:00:00+00:00"})
    assert RTWODeterminismPolicy.id_for(policy.content()) == RTWODeterminismPolicy.id_for(same.content())
    different = RTWODeterminismPolicy(**{**VALID[RTWODeterminismPolicy], "randomness_policy": "forbidden"})
    assert RTWODeterminismPolicy.id_for(different.content()) != RTWODeterminismPolicy.id_for(policy.content())
