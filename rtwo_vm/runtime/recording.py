"""Recording a finished run in one transaction: the records of the entry context and of its
callees, built in one pass in lifecycle order (the rules of sandbox.toml from the catalog),
then written context by context, each with the events that describe it.

Callee contexts are built from the interpreter's call records (chapter 7.5.1). Records come
in the order calls started and a call's record precedes those of the calls its callee made,
so the parent of a record at depth d is the latest record before it at depth d - 1 (the
entry context at depth 1). A callee's effects survive only if it and every ancestor,
the entry frame included, succeeded: only then does its context commit.

The interpreter runs callees inside the entry context's ``executing`` stage and reports no
times of its own, so a callee's stage times are the time its parent context reached
``executed``.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable

from reference_vm.result import canonical
from rtwo_vm.runtime.catalog import Catalog, catalog
from rtwo_vm.runtime.events import RecordWriter
from rtwo_vm.runtime.execution import ExecutionRun, RecordedExecution
from rtwo_vm.runtime.lifecycle import Lifecycle, path_for_outcome
from rtwo_vm.runtime.models import (
    RTWOExecutionContext, RTWOExecutionResult, RTWOExecutionSandbox, RTWOResourceAccounting,
    RTWOSandboxViolation, row_of,
)
from rtwo_vm.runtime.store import Store

SQLITE_MAX = (1 << 63) - 1


def _callee_refusal(run: ExecutionRun, record: Any) -> Any:
    """The instruction binding refused in a callee (a call record says only the code): found
    as binding finds it, in the callee's code of the pre-state under the run's policy."""
    if record.status != "violation" or record.error_pc is not None or run._world is None:
        return None
    from reference_vm import policy as policy_mod
    from reference_vm.errors import VMError
    from reference_vm.program import load_program
    contract = run._world.contracts.get(record.callee)
    if contract is None:
        return None
    try:
        program = load_program(contract.code, run.rules)
    except VMError:
        return None
    return policy_mod.first_refusal(program.code, run.policy, run.rules.spec)


def _ref(value: Any) -> str:
    """A word as canonical hex; anything else (a rejected request's field) as its repr."""
    return hex(value) if type(value) is int and value >= 0 else repr(value)


def _bytes(value: Any) -> str:
    """Bytes as 0x-prefixed hex; anything else (a rejected request's field) as its repr."""
    return "0x" + value.hex() if isinstance(value, (bytes, bytearray)) else repr(value)


def _count(value: Any) -> int | None:
    """A limit as asked for, when it is an integer the database can hold."""
    return value if type(value) is int and 0 <= value <= SQLITE_MAX else None


class ExecutionRecorder:
    """Builds the records of a finished run and writes them in the run's transaction."""

    def __init__(self, store: Store, writer: RecordWriter, ids: Callable[[str], str]):
        self.store, self.writer, self.ids = store, writer, ids

    def write(self, tx: sqlite3.Connection, run: ExecutionRun) -> RecordedExecution:
        """One pass in lifecycle order: the entry context's records, then each callee's in the
        order its call started; then each context's rows and events, in the same order."""
        cat = catalog()
        entry = self._entry(run, cat)
        recorded = [entry, *self._callees(run, entry, cat)]
        for context in recorded:
            self._insert(tx, context)
        self.store.insert(tx, "call_requests", {
            "context_id": run.context_id, "call_data": _bytes(run.message.call_data),
            "block_time": _ref(run.context.block_time), "random_seed": _bytes(run.context.random_seed)})
        entry.children = recorded[1:]
        return entry

    def _entry(self, run: ExecutionRun, cat: Catalog) -> RecordedExecution:
        result, history = run.decided_result, list(run.lifecycle.history)
        stages = [e.stage for e in history]
        compared = result.to_json()
        at_end = history[-1].at
        context = RTWOExecutionContext(
            context_id=run.context_id, contract_id=_ref(run.message.to),
            caller_reference=_ref(run.message.caller), transaction_reference=run.transaction_reference,
            state_reference=run.state_reference, resource_policy_id=run.policy_record.policy_id,
            status=stages[-1], created_at=history[0].at, vm_id=run.vm.vm_id, depth=1)
        sandbox = RTWOExecutionSandbox(
            sandbox_id=run.sandbox_id, context_id=run.context_id, isolation_level=run.isolation,
            memory_limit_reference=_count(getattr(run.limits, "memory_pages", None)),
            compute_limit_reference=_count(getattr(run.limits, "compute", None)),
            storage_limit_reference=_count(getattr(run.limits, "storage_units", None)),
            storage_access_policy=run.storage_access,
            status=cat.sandbox_status(stages, result.status, result.error, callee=False))
        charged = "executed" in stages and result.status != "internal"
        usage = result.usage
        accounting = RTWOResourceAccounting(
            accounting_id=self.ids("acc"), context_id=run.context_id,
            compute_units=usage.compute, memory_units=usage.memory_pages,
            storage_units=usage.storage_units, fee=result.fee,
            status="charged" if charged else "not_charged", storage_reads=usage.storage_reads,
            storage_writes=usage.storage_writes, storage_new_slots=usage.storage_new_slots)
        outcome = RTWOExecutionResult(
            result_id=self.ids("res"), context_id=run.context_id, output=compared["output"],
            state_changes=tuple(compared["state_changes"]),
            emitted_events=tuple(compared["events"]), execution_status=result.status,
            created_at=at_end, error=result.error, error_pc=result.error_pc, compared=compared,
            digest=result.digest())
        violations = self._violations(cat.violation(result.error, callee=False), run.context_id,
                                      result.error, result.error_pc, at_end, run.refused)
        return RecordedExecution(context=context, history=history, sandbox=sandbox,
                                 accounting=accounting, result=outcome, violations=violations)

    def _callees(self, run: ExecutionRun, entry: RecordedExecution, cat: Catalog) -> list[RecordedExecution]:
        root = entry.context
        executed_at = next((e.at for e in entry.history if e.stage == "executed"), entry.result.created_at)
        chain: dict[int, tuple[str, str, bool]] = {  # depth -> (context, sandbox, survived)
            1: (run.context_id, run.sandbox_id, run.decided_result.status in cat.commit_statuses)}
        out = []
        for index, (record, record_json) in enumerate(zip(run.decided_result.calls, entry.result.compared["calls"])):
            parent_id, parent_sandbox, parent_survived = chain[record.depth - 1]
            survived = parent_survived and record.status in cat.commit_statuses
            stages = path_for_outcome(record.status, record.error, callee=True,
                                      survived=survived, cat=cat)
            # Replaying the path through a Lifecycle refuses any illegal one.
            lifecycle = Lifecycle(lambda: executed_at, cat)
            for stage in stages[1:]:
                lifecycle.advance(stage)
            context_id, sandbox_id = self.ids("ctx"), self.ids("sbx")
            context = RTWOExecutionContext(
                context_id=context_id, contract_id=_ref(record.callee),
                caller_reference=_ref(record.caller), transaction_reference=root.transaction_reference,
                state_reference=root.state_reference, resource_policy_id=root.resource_policy_id,
                status=stages[-1], created_at=executed_at, vm_id=root.vm_id, depth=record.depth,
                parent_context_id=parent_id, call_index=index)
            sandbox = RTWOExecutionSandbox(
                sandbox_id=sandbox_id, context_id=context_id,
                isolation_level=entry.sandbox.isolation_level, memory_limit_reference=None,
                compute_limit_reference=None,
                storage_access_policy=entry.sandbox.storage_access_policy,
                status=cat.sandbox_status(stages, record.status, record.error, callee=True),
                parent_sandbox_id=parent_sandbox)
            accounting = RTWOResourceAccounting(
                accounting_id=self.ids("acc"), context_id=context_id, compute_units=record.compute,
                memory_units=record.memory_pages, storage_units=record.storage_units,
                fee=run.rules.fee(record.compute, record.memory_pages, record.storage_units),
                status="included_in_parent")
            outcome = RTWOExecutionResult(
                result_id=self.ids("res"), context_id=context_id, output=None, state_changes=None,
                emitted_events=None, execution_status=record.status, created_at=executed_at,
                error=record.error, error_pc=record.error_pc, compared=record_json,
                digest=_digest(record_json))
            violations = self._violations(cat.violation(record.error, callee=True), context_id,
                                          record.error, record.error_pc, executed_at,
                                          _callee_refusal(run, record))
            out.append(RecordedExecution(context=context, history=lifecycle.history, sandbox=sandbox,
                                         accounting=accounting, result=outcome, violations=violations))
            chain[record.depth] = (context_id, sandbox_id, survived)
        return out

    def _violations(self, found: tuple[str, str, str] | None, context_id: str, code: str | None,
                    error_pc: int | None, at: str, refused: Any = None) -> list[RTWOSandboxViolation]:
        if found is None or code is None:   # Catalog.violation finds one only for a code
            return []
        kind, severity, action = found
        instruction = None
        if refused is not None and refused.error == code:   # refused at binding (10.5)
            error_pc, instruction = refused.offset, refused.mnemonic
        return [RTWOSandboxViolation(
            violation_id=self.ids("vio"), context_id=context_id, violation_type=kind,
            severity=severity, action_taken=action, status="recorded", created_at=at,
            code=code, error_pc=error_pc, instruction=instruction)]

    def _insert(self, tx: sqlite3.Connection, recorded: RecordedExecution) -> None:
        """The context's rows, then the events describing them (stage transitions, violations,
        the result), each in the run's transaction."""
        store, writer = self.store, self.writer
        context, outcome = recorded.context, recorded.result
        store.insert(tx, "contexts", {**row_of(context), "seq": store.next_context_seq(tx)})
        for entry in recorded.history:
            store.insert(tx, "stage_history", {"context_id": context.context_id, "seq": entry.seq,
                                               "stage": entry.stage, "from_stage": entry.previous,
                                               "at": entry.at})
        store.insert(tx, "sandboxes", row_of(recorded.sandbox))
        store.insert(tx, "accounting", row_of(recorded.accounting))
        store.insert(tx, "results", row_of(outcome))
        for violation in recorded.violations:
            store.insert(tx, "violations", row_of(violation))
        stream = context.context_id
        events = [writer.event(tx, stream, "lifecycle.transition", {"contextId": stream, **entry.to_json()},
                               entry.at) for entry in recorded.history]
        events += [writer.event(tx, stream, "violation.recorded", violation.to_json(), violation.created_at)
                   for violation in recorded.violations]
        events.append(writer.event(tx, stream, "result.recorded", {
            "contextId": stream, "resultId": outcome.result_id,
            "parentContextId": context.parent_context_id,
            "executionStatus": outcome.execution_status, "error": outcome.error,
            "errorPc": outcome.error_pc, "digest": outcome.digest}, outcome.created_at))
        recorded.events = events


def _digest(doc: dict) -> str:
    import hashlib
    return hashlib.sha256(canonical(doc).encode()).hexdigest()

