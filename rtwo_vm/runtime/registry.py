"""Registries: the Determinism Policy Service and the Runtime Instruction Registry (spec
chapter 10.7); the Virtual Machine Registry is vms.py. Policies are identified by their
content (the same policy is one record, however often it is asked for). Instruction statuses are computed from what exists
when they are asked for: handlers, SMT models, conformance vectors.
"""

from __future__ import annotations

from typing import Callable, Iterable

import spec
from reference_vm import Policy
from reference_vm.rules import rules as rules_of
from reference_vm.validate import validate
from rtwo_vm.runtime import tools
from rtwo_vm.runtime.catalog import catalog, runtime_spec, runtime_version
from rtwo_vm.runtime.events import RecordWriter
from rtwo_vm.runtime.models import (
    ModelError, RTWODeterminismPolicy, RTWORuntimeInstruction, row_of,
)
from rtwo_vm.runtime.records import InvalidInput, UnknownRecord, _RecordService
from rtwo_vm.runtime.store import Store
from rtwo_vm.runtime.vms import (  # noqa: F401 - the registry's services, imported from here
    REFERENCE_VM_NAME, VirtualMachineRegistry, engine_version, self_check,
)


class DeterminismPolicyService(_RecordService):
    """Determinism policies (content-addressed), their binding to a sandbox, static checks."""

    MODEL, TABLE, KEY = RTWODeterminismPolicy, "policies", "policy_id"
    NOUN = "policy"
    PAGE_KEY = ("t.created_at", "t.policy_id")
    JSON_FIELDS = ("allowed_operations", "forbidden_operations")

    def __init__(self, store: Store, clock: Callable[[], str], writer: RecordWriter):
        super().__init__(store)
        self._clock, self._writer = clock, writer

    def create(self, *, time_access: str | None = None, randomness: str | None = None,
               external_call: str | None = None, allowed_operations=None,
               forbidden_operations=()) -> RTWODeterminismPolicy:
        """The policy with these fields (spec defaults for those not given), created if new."""
        fields = runtime_spec().policy["fields"]
        try:
            policy = RTWODeterminismPolicy(
                policy_id="pending", status="active", created_at=self._clock(),
                time_access_policy=time_access or fields["time_access"]["default"],
                randomness_policy=randomness or fields["randomness"]["default"],
                external_call_policy=external_call or fields["external_call"]["default"],
                allowed_operations=None if allowed_operations is None
                else tuple(sorted(set(allowed_operations))),
                forbidden_operations=tuple(sorted(set(forbidden_operations))))
        except (ModelError, TypeError) as err:
            raise InvalidInput(str(err)) from None
        policy_id = RTWODeterminismPolicy.id_for(policy.content())
        existing = self.store.one("SELECT status FROM policies WHERE policy_id = ?", (policy_id,))
        if existing is not None:
            if existing["status"] != "active":
                raise InvalidInput(f"policy {policy_id} exists and is {existing['status']}")
            return self.get(policy_id)
        policy = RTWODeterminismPolicy(**{**row_of(policy), "policy_id": policy_id})
        with self._writer.transaction() as tx:
            # Checked again under the write lock: of concurrent first creators one inserts,
            # the others find its row (the primary key refuses a second one regardless).
            existing = tx.execute("SELECT status FROM policies WHERE policy_id = ?",
                                  (policy_id,)).fetchone()
            if existing is None:
                self.store.insert(tx, "policies", row_of(policy))
                self._writer.event(tx, f"policy:{policy_id}", "policy.created",
                                   policy.to_json(), policy.created_at)
        if existing is not None:
            if existing["status"] != "active":
                raise InvalidInput(f"policy {policy_id} exists and is {existing['status']}")
            return self.get(policy_id)
        return policy

    def default(self) -> RTWODeterminismPolicy:
        return self.create()

    def for_execution(self, policy_id: str | None) -> RTWODeterminismPolicy:
        if policy_id is None:
            return self.default()
        policy = self.get(policy_id)
        if policy.status != "active":
            raise InvalidInput(f"policy {policy_id} is {policy.status}")
        return policy

    def retire(self, policy_id: str) -> RTWODeterminismPolicy:
        policy = self.get(policy_id)
        if policy.status == "retired":
            return policy
        with self._writer.transaction() as tx:
            tx.execute("UPDATE policies SET status = 'retired' WHERE policy_id = ?", (policy_id,))
            self._writer.event(tx, f"policy:{policy_id}", "policy.retired",
                               {"policyId": policy_id}, self._clock())
        return self.get(policy_id)

    @staticmethod
    def interpreter_policy(policy: RTWODeterminismPolicy, storage_access: str,
                           calls_allowed: bool) -> Policy:
        """The reference interpreter's Policy for a context: the determinism policy's fields,
        the sandbox's storage access, and calls closed when the isolation level forbids them."""
        return Policy(time_access=policy.time_access_policy, randomness=policy.randomness_policy,
                      external_call=policy.external_call_policy if calls_allowed else "forbidden",
                      storage_access=storage_access,
                      allowed_operations=policy.allowed_operations,
                      forbidden_operations=policy.forbidden_operations)

    def check_code(self, policy_id: str, code: bytes, *, version: str,
                   isolation_level: str | None = None, storage_access: str | None = None
                   ) -> list[dict]:
        """Every instruction of ``code`` the policy (under a sandbox) refuses under spec
        ``version``, with its offset and code: binding (chapter 4.4) stops at the first of
        these. Raises InvalidInput for code that fails validation."""
        from rtwo_vm.runtime.records import SandboxManager
        level, access, calls = SandboxManager.plan(isolation_level, storage_access)
        bound = self.interpreter_policy(self.get(policy_id), access, calls)
        try:
            rules = rules_of(version)
            valid = validate(code, rules)
        except Exception as err:  # noqa: BLE001 - InvalidCode carries the spec code
            raise InvalidInput(f"code is not valid: {getattr(err, 'code', err)}") from None
        refusals = []
        for d in valid.instructions:
            refused = bound.refusal(d.instruction, rules.spec)
            if refused is not None:
                refusals.append({"offset": d.offset, "mnemonic": d.instruction.mnemonic,
                                 "error": refused,
                                 "violationType": catalog().violation_by_code[refused].name})
        return refusals


class RuntimeInstructionRegistry:
    """The instruction table with what exists for each instruction, computed on each call."""

    def __init__(self) -> None:
        self.last_evidence: dict[str, str] = {}

    def list(self) -> list[RTWORuntimeInstruction]:
        from reference_vm.instructions import MODULES
        handled: set[str] = set()
        for type_name, module in MODULES.items():
            try:
                handled.update(m for m in module.handlers(rules_of(runtime_version()))
                               if runtime_spec().by_mnemonic.get(m) is not None
                               and runtime_spec().by_mnemonic[m].type == type_name)
            except Exception:  # noqa: BLE001 - a broken module implements nothing
                continue
        # The newest version's table and corpus (they hold every version's instructions) and
        # the models of the newest version the proofs model.
        probes = [tools.smt_models(name) for name in reversed(spec.names())]
        smt = next((p for p in probes if p.available), probes[0])
        vectors = tools.conformance_vectors(runtime_version())
        self.last_evidence = {"smt_semantics": smt.evidence, "conformance_vectors": vectors.evidence,
                              "handlers": f"{len(handled)} handlers"}
        requires = catalog().instruction_status_requires
        out = []
        for ins in runtime_spec().instructions:
            facts = {"handler": ins.mnemonic in handled,
                     "smt_semantics": bool(smt.value and ins.mnemonic in smt.value),
                     "conformance_vectors": bool(vectors.value and vectors.value.get(ins.mnemonic))}
            status = [name for name, needs in requires.items() if all(facts[n] for n in needs)][-1]
            out.append(RTWORuntimeInstruction(
                instruction_id=ins.mnemonic, opcode=ins.opcode, instruction_type=ins.type,
                resource_cost_reference={"baseCost": ins.cost, "costRule": ins.cost_rule,
                                         "section": ins.section},
                status=status, implemented=facts["handler"],
                smt_semantics=(ins.mnemonic in smt.value) if smt.available else None,
                conformance_vectors=vectors.value.get(ins.mnemonic, 0) if vectors.available else None))
        return out

    def get(self, name: str) -> RTWORuntimeInstruction:
        return find_instruction(self.list(), name)


def find_instruction(records: Iterable[RTWORuntimeInstruction], name: str) -> RTWORuntimeInstruction:
    """The instruction of ``records`` named ``name``: its mnemonic (any case) or its opcode."""
    key = name.upper()
    try:
        opcode = int(name, 0)
    except ValueError:
        opcode = None
    for ins in records:
        if ins.instruction_id == key or ins.opcode == opcode:
            return ins
    raise UnknownRecord(f"no instruction {name!r}")

