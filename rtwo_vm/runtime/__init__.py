"""RTWO VM runtime services (spec chapter 10): the sandbox, resource accounting, determinism
policy and the 10-stage lifecycle around the pure reference interpreter, with durable records.

``Runtime`` composes the eleven services over one SQLite database; the eight domain models
are in ``rtwo_vm.runtime.models``; every enumeration they use is spec data
(``spec/data/sandbox.toml``, read through ``rtwo_vm.runtime.catalog``).
"""

from rtwo_vm.runtime.execution import CallRequest, ExecutionRun, RecordedExecution, RuntimeBusy
from rtwo_vm.runtime.lifecycle import IllegalTransition, Lifecycle
from rtwo_vm.runtime.models import (
    MODELS, ModelError, RTWODeterminismPolicy, RTWOExecutionContext, RTWOExecutionResult,
    RTWOExecutionSandbox, RTWOResourceAccounting, RTWORuntimeInstruction, RTWOSandboxViolation,
    RTWOVirtualMachine,
)
from rtwo_vm.runtime.records import InvalidInput, UnknownRecord
from rtwo_vm.runtime.runtime import Runtime, counting_ids
from rtwo_vm.runtime.store import StoreError

__all__ = [
    "CallRequest", "ExecutionRun", "IllegalTransition", "InvalidInput", "Lifecycle", "MODELS",
    "ModelError", "RTWODeterminismPolicy", "RTWOExecutionContext", "RTWOExecutionResult",
    "RTWOExecutionSandbox", "RTWOResourceAccounting", "RTWORuntimeInstruction",
    "RTWOSandboxViolation", "RTWOVirtualMachine", "RecordedExecution", "Runtime", "RuntimeBusy",
    "StoreError", "UnknownRecord", "counting_ids",
]
