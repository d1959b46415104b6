"""Execution Lifecycle Service: one invocation through the ten stages, recorded atomically.

An :class:`ExecutionRun` does the work of each stage of chapter 8 around the pure interpreter
and moves its :class:`Lifecycle` one transition at a time (``step``), so the stages can be
driven and observed one by one; ``ExecutionLifecycleService.run`` drives them all.

Durability (chapter 10.9): the world state is read inside a write transaction opened at
``state_loaded`` and held to ``finalized``, so no other writer changes it underneath the
execution; at ``finalized`` the context, its stage history, sandbox, accounting, result,
violations, state changes, callee contexts and every event describing them are written in
that one transaction. A process killed at any point leaves all of it or none of it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from reference_vm import Context, ExecutionResult, Limits, Message
from reference_vm import policy as policy_mod
from reference_vm.errors import RequestRejected, VMError
from reference_vm.program import Program, load_program
from reference_vm.request import check_limits, check_request, check_state
from reference_vm.result import Usage
from reference_vm.state import WorldState
from reference_vm.rules import Rules, rules as rules_of
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.engines import executor
from rtwo_vm.runtime.events import RecordWriter, VMEvent
from rtwo_vm.runtime.lifecycle import Lifecycle, StageEntry
from rtwo_vm.runtime.models import (
    RTWODeterminismPolicy, RTWOExecutionContext, RTWOExecutionResult, RTWOExecutionSandbox,
    RTWOResourceAccounting, RTWOSandboxViolation, RTWOVirtualMachine,
)
from rtwo_vm.runtime.records import SandboxManager
from rtwo_vm.runtime.store import DamagedRecord, Store, StoreError

class RuntimeBusy(Exception):
    """The database's write lock is held (by another run or process); the run did not move."""


class RunFinished(Exception):
    """The run has reached the final stage (or was abandoned); it cannot step again."""


@dataclass(frozen=True)
class CallRequest:
    """An invocation of a deployed contract, with its sandbox and policy choices. The message
    and context fields default as chapter 7.3.1 says (caller 0, no call data, block time 0, a
    zero seed), as ``rtwo-vm call`` does; None picks the runtime's default VM, policy and
    sandbox. An address holding no contract is recorded as rejected (CONTRACT_NOT_FOUND). The
    call runs under the spec version the contract was deployed under, on the VM named or else
    on an active VM of that version (in ``execution_mode`` when one is given)."""

    to: int
    caller: int = 0
    call_data: bytes = b""
    block_time: int = 0
    random_seed: bytes = bytes(32)
    policy_id: str | None = None
    isolation_level: str | None = None
    storage_access: str | None = None
    limits: Limits = field(default_factory=Limits)
    transaction_reference: str | None = None
    vm_id: str | None = None
    execution_mode: str | None = None

    def reference(self) -> str:
        """A transaction reference derived from the request itself (deterministic)."""
        # (A mode not asked for is left out: references stay those of runtimes before modes.)
        doc = {k: (v.hex() if isinstance(v, bytes) else v) for k, v in self.__dict__.items()
               if k not in ("limits", "transaction_reference")
               and not (k == "execution_mode" and v is None)}
        doc["limits"] = {d: getattr(self.limits, d, None) for d in Limits.DIMENSIONS}
        text = json.dumps(doc, sort_keys=True, default=repr)
        return "tx_" + hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class RecordedExecution:
    """Everything recorded for one context (and, through ``children``, its callees)."""

    context: RTWOExecutionContext
    history: list[StageEntry]
    sandbox: RTWOExecutionSandbox
    accounting: RTWOResourceAccounting
    result: RTWOExecutionResult
    violations: list[RTWOSandboxViolation]
    children: list["RecordedExecution"] = field(default_factory=list)
    events: list[VMEvent] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"context": self.context.to_json(),
                "history": [e.to_json() for e in self.history],
                "sandbox": self.sandbox.to_json(), "accounting": self.accounting.to_json(),
                "result": self.result.to_json(),
                "violations": [v.to_json() for v in self.violations],
                "children": [c.to_json() for c in self.children]}


def _nothing_ran(status: str, code: str) -> ExecutionResult:
    """The result of chapter 7.3.2 / 7.4: status and code, nothing else."""
    return ExecutionResult(status=status, error=code, error_pc=None, output=b"",
                           state_changes=(), events=(), calls=(), usage=Usage())


class ExecutionRun:
    """One entry invocation moving through the lifecycle, one stage per ``step``."""

    def __init__(self, service: "ExecutionLifecycleService", request: CallRequest,
                 vm: RTWOVirtualMachine, policy: RTWODeterminismPolicy, isolation: str,
                 storage_access: str, calls_allowed: bool, version: str):
        self._svc = service
        self._cat = catalog()
        self.request = request
        self.vm = vm
        self.policy_record = policy
        # The spec version the run executes under (its contract's), and its rules.
        self.version = version
        self.rules: Rules = rules_of(version)
        self.isolation = isolation
        self.storage_access = storage_access
        self.calls_allowed = calls_allowed
        self.policy = service.policies.interpreter_policy(policy, storage_access, calls_allowed)
        self.message = Message(request.to, request.caller, request.call_data)
        self.context = Context(request.block_time, request.random_seed)
        self.limits = request.limits
        self.transaction_reference = request.transaction_reference or request.reference()
        self.context_id = service.ids("ctx")
        self.sandbox_id = service.ids("sbx")
        self.lifecycle = Lifecycle(service.clock, self._cat)
        self.sandbox_status = "requested"
        self.refused = None   # the instruction binding refused (reference_vm.policy.Refusal)
        self.accounting_status: str | None = None
        self.result: ExecutionResult | None = None
        self.state_reference = service.store.state_root()
        self.recorded: RecordedExecution | None = None
        self._program: Program | None = None       # loaded at validated
        self._world: WorldState | None = None      # read at state_loaded
        self._holds_lock = False
        self._abandoned = False
        roles = self._cat.roles
        self._work: dict[str, Callable[[], None]] = {
            roles["initial"]: self._validate, "validated": self._bind,
            "policy_bound": self._provision, "sandbox_provisioned": self._load_state,
            "state_loaded": self._start, roles["running"]: self._execute,
            "executed": self._account, "accounted": self._settle,
            roles["commit"]: self._finalize, roles["rollback"]: self._finalize,
        }

    @property
    def stage(self) -> str:
        return self.lifecycle.stage

    @property
    def finished(self) -> bool:
        return self.lifecycle.finished or self._abandoned

    @property
    def decided_result(self) -> ExecutionResult:
        """The result, once a stage has decided it: the interpreter's at the running stage, or
        a refusal's or an internal error's before it (every stage from executed on has one)."""
        assert self.result is not None, "no stage has decided the result yet"
        return self.result

    def step(self) -> str:
        """Do the work of the current stage and move to the next; returns the new stage."""
        if self.finished:
            raise RunFinished(f"context {self.context_id} is {self.stage}")
        try:
            self._work[self.stage]()
        except RuntimeBusy:
            raise
        except DamagedRecord:
            self.abandon()  # a damaged record is refused, never recorded upon
            raise
        except Exception:  # noqa: BLE001 - a host failure is reported as INTERNAL_ERROR (8.3)
            if self.stage in (self._cat.roles["commit"], self._cat.roles["rollback"],
                              self._cat.roles["final"]):
                raise  # the record itself could not be written: nothing was recorded
            self._internal()
        return self.stage

    def run(self) -> RecordedExecution:
        while not self.finished:
            self.step()
        assert self.recorded is not None
        return self.recorded

    def abandon(self) -> None:
        """Give the run up: its transaction (if any) is rolled back and nothing is recorded."""
        if self._holds_lock:
            self._svc.writer.rollback()
            self._holds_lock = False
        self._abandoned = True

    # -- stage work (chapter 8.1, last column) ---------------------------------------------

    def _validate(self) -> None:
        try:
            check_request(self.message, self.context, self.rules)
            self.policy.check(self.rules.spec)
            code = self._svc.store.contract_code(self.message.to)
            if code is None:
                raise RequestRejected("CONTRACT_NOT_FOUND", hex(self.message.to))
            self._program = load_program(code, self.rules)
        except VMError as err:
            return self._refuse(err)
        self.lifecycle.advance("validated")

    def _bind(self) -> None:
        assert self._program is not None  # loaded at the stage before
        try:
            policy_mod.bind(self._program.code, self.policy, self.rules.spec)
        except VMError as err:
            return self._refuse(err)
        self.lifecycle.advance("policy_bound")

    def _provision(self) -> None:
        try:
            check_limits(self.limits, self.rules.spec)
        except VMError as err:
            return self._refuse(err)
        self.sandbox_status = "provisioned"
        self.lifecycle.advance("sandbox_provisioned")

    def _load_state(self) -> None:
        self._lock()
        self.state_reference = self._svc.store.state_root()
        # A view over the database, read (by primary key) only where the execution touches
        # it. Deploy admits only words and bytes; a stored entry that is not is a host failure
        # (INTERNAL_ERROR, chapter 8.3), not the request's fault: the view says so when read.
        self._world = self._svc.store.world_state()
        check_state(self._world, self.rules.word)
        self.lifecycle.advance("state_loaded")

    def _start(self) -> None:
        self.sandbox_status = "active"
        self.accounting_status = "metering"
        self.lifecycle.advance(self._cat.roles["running"])

    def _execute(self) -> None:
        assert self._world is not None  # read at the stage before
        engine = executor(self.vm.execution_mode)
        result = engine(self._world, self.message, self.context, self.policy, self.limits,
                        version=self.version)
        if result.status == "internal":
            self.result = result
            return self._roll_back_from_here()
        if result.status in ("invalid", "rejected", "violation"):
            # The stages before found nothing and the interpreter did: an invariant failed.
            raise AssertionError(f"pre-execution checks disagree with the interpreter: {result.error}")
        self.result = result
        self.lifecycle.advance("executed")

    def _account(self) -> None:
        result = self.decided_result
        usage = result.usage
        fee = self.rules.fee(usage.compute, usage.memory_pages, usage.storage_units)
        # Run-time sandbox checks (10.3): the interpreter enforces these; the service layer
        # refuses to record a result that breaks them (INTERNAL_ERROR, chapter 7.4).
        broken = []
        if fee != result.fee:
            broken.append("fee")
        if self.storage_access != "read_write" and result.state_changes:
            broken.append("storage access")
        if not self.calls_allowed and result.calls:
            broken.append("isolation calls")
        if (usage.compute > self.limits.compute or usage.memory_pages > self.limits.memory_pages
                or usage.storage_units > self.limits.storage_units):
            broken.append("limits")
        if broken:
            raise AssertionError(f"sandbox invariants broken: {', '.join(broken)}")
        self.accounting_status = "charged"
        self.lifecycle.advance("accounted")

    def _settle(self) -> None:
        if self.decided_result.status in self._cat.commit_statuses:
            self.lifecycle.advance(self._cat.roles["commit"])
        else:
            self.lifecycle.advance(self._cat.roles["rollback"])

    def _finalize(self) -> None:
        self._lock()  # busy: the run stays where it is and may step again
        try:
            tx = self._svc.store.conn
            if self.stage == self._cat.roles["commit"]:
                changes = self.decided_result.to_json()["state_changes"]
                self._svc.store.apply_state_changes(tx, changes)
                if changes:
                    self._svc.store.advance_state_root(tx, {"state_changes": changes})
            self.lifecycle.advance(self._cat.roles["final"])
            self.recorded = self._svc.recorder.write(tx, self)
            self._holds_lock = False
            self._svc.writer.commit()
            self.sandbox_status = self.recorded.sandbox.status
            self.accounting_status = self.recorded.accounting.status
        except BaseException:
            self.abandon()
            raise

    # -- failures ---------------------------------------------------------------------------

    def _refuse(self, err: VMError) -> None:
        """A check before execution failed: nothing runs, the context rolls back."""
        self.result = _nothing_ran(err.kind, err.code)
        # binding names the instruction it refused (recorded with the violation, 10.5)
        self.refused = getattr(err, "refused", None)
        self.lifecycle.advance(self._cat.roles["rollback"])

    def _internal(self) -> None:
        self.result = _nothing_ran("internal", "INTERNAL_ERROR")
        self.accounting_status = None
        self._roll_back_from_here()

    def _roll_back_from_here(self) -> None:
        rollback = self._cat.roles["rollback"]
        while rollback not in self.lifecycle.allowed():
            self.lifecycle.advance(self.lifecycle.allowed()[0])
        self.lifecycle.advance(rollback)

    def _lock(self) -> None:
        if self._holds_lock:
            return
        try:
            self._svc.writer.begin()
        except StoreError as err:
            raise RuntimeBusy(str(err)) from None
        self._holds_lock = True


class ExecutionLifecycleService:
    """Starts runs and drives them; the stages and transitions are lifecycle.toml's."""

    def __init__(self, *, store: Store, writer: RecordWriter, clock: Callable[[], str],
                 ids: Callable[[str], str], vms, policies, recorder):
        self.store, self.writer, self.clock, self.ids = store, writer, clock, ids
        self.vms, self.policies, self.recorder = vms, policies, recorder

    @property
    def stages(self) -> tuple[str, ...]:
        return catalog().stages

    @property
    def transitions(self) -> dict[str, tuple[str, ...]]:
        return dict(catalog().transitions)

    def start(self, request: CallRequest) -> ExecutionRun:
        """Check the request's references (refused before anything is recorded) and create
        the run at the initial stage."""
        isolation, access, calls = SandboxManager.plan(request.isolation_level,
                                                       request.storage_access)
        # Named records are looked up (read only) before a default is created, so that a
        # refused request writes nothing.
        policy = self.policies.for_execution(request.policy_id) if request.policy_id else None
        version = self.contract_version(request.to)
        vm = self.vms.for_execution(request.vm_id, version, request.execution_mode)
        policy = policy or self.policies.default()
        return ExecutionRun(self, request, vm, policy, isolation, access, calls, version)

    def contract_version(self, address: object) -> str:
        """The version the contract at ``address`` was deployed under; for an address that
        holds none (or is no word: the request is rejected at its first stage either way),
        the version new deployments take."""
        found = None
        if type(address) is int and 0 <= address < 1 << 64:
            found = self.store.contract_version(address)
        return found or self.vms.newest_version()

    def run(self, request: CallRequest) -> RecordedExecution:
        return self.start(request).run()

