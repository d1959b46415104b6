"""Determinism and storage policy, bound before execution (spec chapter 4).

Binding scans the validated code in offset order. For each instruction it first applies the
policy's operation lists, then the instruction's gate; the first instruction refused decides
the error. Because every gated instruction is refused here, none ever executes under a policy
that closes its gate: there is no runtime policy check.

A policy's refusals depend only on the policy and the instruction, so they are computed once
per policy (``refusals``: opcode -> error code) and binding looks each instruction up there;
the result is the one ``refusal`` gives instruction by instruction.

May raise PolicyViolation with: INSTRUCTION_FORBIDDEN and every gate error of policy.toml.
May raise RequestRejected with: INVALID_REQUEST (a policy field or operation name unknown).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import spec
from reference_vm.errors import PolicyViolation, RequestRejected
from reference_vm.validate import ValidCode

# The Python API's defaults: the base version's (rules.rules refuses a version changing them).
_DEFAULTS = spec.load(spec.versions()[0].version).policy["fields"]


def _default(name: str) -> str:
    return _DEFAULTS[name]["default"]


@dataclass(frozen=True)
class Policy:
    """A determinism policy. ``allowed_operations`` of None allows every operation."""

    time_access: str = field(default_factory=lambda: _default("time_access"))
    randomness: str = field(default_factory=lambda: _default("randomness"))
    external_call: str = field(default_factory=lambda: _default("external_call"))
    storage_access: str = field(default_factory=lambda: _default("storage_access"))
    allowed_operations: tuple[str, ...] | None = None
    forbidden_operations: tuple[str, ...] = ()

    def check(self, table: spec.Spec) -> None:
        """Refuse a policy that names a value or an operation unknown to version ``table``."""
        for fname, fdef in table.policy["fields"].items():
            if getattr(self, fname) not in fdef["values"]:
                raise RequestRejected("INVALID_REQUEST",
                                      f"policy {fname} must be one of {', '.join(fdef['values'])}")
        for listed in (self.allowed_operations or ()), self.forbidden_operations:
            if not isinstance(listed, tuple):
                raise RequestRejected("INVALID_REQUEST", "operation lists must be tuples")
            unknown = [n for n in listed if not isinstance(n, str) or n not in _operation_names(table)]
            if unknown:
                raise RequestRejected("INVALID_REQUEST", f"unknown operation {unknown[0]!r}")

    def refusal(self, ins: spec.Instruction, table: spec.Spec) -> str | None:
        """The error code refusing this instruction under the policy in version ``table``, or None."""
        policy = table.policy
        keys = (ins.mnemonic, ins.type)
        if any(k in self.forbidden_operations for k in keys) or (
                self.allowed_operations is not None
                and not any(k in self.allowed_operations for k in keys)):
            return policy["forbidden_by_listing"]["error"]
        if ins.gate is not None:
            gate = policy["gate"][ins.gate]
            if getattr(self, gate["field"]) not in gate["open_when"]:
                return gate["error"]
        return None


@functools.cache
def _operation_names(table: spec.Spec) -> frozenset[str]:
    """What an operation list may name in a version: every mnemonic and every instruction type."""
    return frozenset(table.by_mnemonic) | frozenset(table.instruction_types)


@functools.lru_cache(maxsize=1024)
def refusals(policy: Policy, table: spec.Spec) -> dict[int, str]:
    """Opcode -> the error code refusing it under ``policy`` in version ``table``, for every
    refused instruction."""
    refused = {}
    for ins in table.instructions:
        code = policy.refusal(ins, table)
        if code is not None:
            refused[ins.opcode] = code
    return refused


@dataclass(frozen=True)
class Refusal:
    """The instruction binding refuses: the first in offset order the policy refuses."""

    offset: int
    mnemonic: str
    error: str


def first_refusal(code: ValidCode, policy: Policy, table: spec.Spec) -> Refusal | None:
    """The instruction of ``code`` that decides binding's error under ``policy`` in version
    ``table`` (the first refused in offset order), or None when the policy binds."""
    try:
        refused = refusals(policy, table)
    except TypeError:            # a policy holding a list: not cacheable, computed afresh
        refused = refusals.__wrapped__(policy, table)
    if not refused:
        return None
    for d in code.instructions:
        error = refused.get(d.instruction.opcode)
        if error is not None:
            return Refusal(d.offset, d.instruction.mnemonic, error)
    return None


def bind(code: ValidCode, policy: Policy, table: spec.Spec) -> None:
    """Refuse the code if the policy forbids any instruction it holds (the first in offset
    order decides the error), in version ``table``. The PolicyViolation carries that
    instruction (``refused``); the result does not (its ``error_pc`` is null: nothing ran)."""
    found = first_refusal(code, policy, table)
    if found is not None:
        raise PolicyViolation(found.error, f"{found.mnemonic} at offset {found.offset}",
                              refused=found)
