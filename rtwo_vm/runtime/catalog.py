"""The runtime's view of the spec: sandbox.toml joined with the core data files.

Every enumeration, isolation level, violation mapping and lifecycle role the services use is
read from here, and :func:`problems` checks the references between sandbox.toml and the other
data files that a JSON Schema cannot express. The services refer to a few enumeration values
by name (for example the sandbox status ``halted``); :data:`NAMES_USED` lists them so that the
check fails if the data and the code ever disagree.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Sequence

import spec

# Enumeration values the service code names directly (checked against sandbox.toml).
NAMES_USED: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "vm_status": ("registered", "active", "retired"),
    "execution_mode": ("reference_interpreter", "compiled_engine", "native_engine"),
    "sandbox_status": ("requested", "provisioned", "active", "released", "halted", "refused",
                       "not_provisioned"),
    "accounting_status": ("metering", "charged", "not_charged", "included_in_parent"),
    "policy_status": ("active", "retired"),
    "violation_status": ("recorded", "acknowledged"),
    "action": ("execution_refused", "execution_halted", "call_refused", "call_halted"),
    "check_status": ("passed", "failed", "not_available"),
    "readiness": ("ready", "partial", "not_ready"),
    "event_type": ("lifecycle.transition", "result.recorded", "violation.recorded",
                   "violation.acknowledged", "contract.deployed", "vm.registered",
                   "vm.status_changed", "policy.created", "policy.retired"),
})


def runtime_version() -> str:
    """The version whose runtime tables the services read (sandbox.toml, lifecycle.toml,
    policy.toml, the error codes a record may hold): the newest. A later version only adds to
    these tables (new codes, new violation types), never changes them, so the newest one holds
    every version's; :func:`problems` checks that it does."""
    return spec.latest()


def runtime_spec() -> spec.Spec:
    """The newest version's tables (see :func:`runtime_version`)."""
    return spec.load(runtime_version())


# Lifecycle stages the execution engine names directly (checked against lifecycle.toml).
STAGES_USED = ("requested", "validated", "policy_bound", "sandbox_provisioned", "state_loaded",
               "executing", "executed", "accounted", "committed", "rolled_back", "finalized")


@dataclass(frozen=True)
class IsolationLevel:
    name: str
    order: int
    max_storage_access: str
    external_call: str
    meaning: str


@dataclass(frozen=True)
class ViolationType:
    name: str
    codes: tuple[str, ...]
    severity: str
    entry_action: str
    callee_action: str
    meaning: str


@dataclass(frozen=True)
class Catalog:
    """sandbox.toml, typed, plus the lifecycle of lifecycle.toml as a transition map."""

    isolation: Mapping[str, IsolationLevel]
    default_isolation: str
    storage_access_order: tuple[str, ...]
    enumerations: Mapping[str, tuple[str, ...]]
    meanings: Mapping[str, Mapping[str, str]]
    instruction_status_requires: Mapping[str, tuple[str, ...]]
    violation_types: Mapping[str, ViolationType]
    violation_by_code: Mapping[str, ViolationType]
    roles: Mapping[str, str]
    commit_statuses: tuple[str, ...]
    callee_failure_stage: Mapping[str, str]
    stages: tuple[str, ...]                       # lifecycle.toml order
    transitions: Mapping[str, tuple[str, ...]]    # from -> allowed targets

    def values(self, enumeration: str) -> tuple[str, ...]:
        return self.enumerations[enumeration]

    def storage_access_at_most(self, asked: str, bound: str) -> bool:
        order = self.storage_access_order
        return order.index(asked) <= order.index(bound)

    def failure_stage(self, code: str, *, callee: bool) -> str:
        """The lifecycle stage whose work raises ``code`` (errors.toml, or the callee table)."""
        if callee and code in self.callee_failure_stage:
            return self.callee_failure_stage[code]
        return runtime_spec().errors[code].stage

    def sandbox_status(self, stages: Sequence[str], status: str, code: str | None, *, callee: bool) -> str:
        """The status a context's sandbox ends in, from the context's path, status and code."""
        if code is not None and self.failure_stage(code, callee=callee) == "sandbox_provisioned":
            return "refused"
        if "sandbox_provisioned" not in stages:
            return "not_provisioned"
        if "executed" not in stages:
            # Provisioned but never halted normally: a host failure (INTERNAL_ERROR).
            return "halted" if "executing" in stages else "released"
        return "halted" if status in ("fault", "exhausted") else "released"

    def violation(self, code: str | None, *, callee: bool) -> tuple[str, str, str] | None:
        """(violation type, severity, action) of a code, or None when it is no violation."""
        vt = self.violation_by_code.get(code) if code else None
        if vt is None:
            return None
        return vt.name, vt.severity, vt.callee_action if callee else vt.entry_action


def _build() -> Catalog:
    core = runtime_spec()
    data = core.raw("sandbox")
    isolation = {name: IsolationLevel(name=name, **body) for name, body in
                 sorted(data["isolation"].items(), key=lambda kv: kv[1]["order"])}
    types = {name: ViolationType(name=name, codes=tuple(body["codes"]), severity=body["severity"],
                                 entry_action=body["entry_action"],
                                 callee_action=body["callee_action"], meaning=body["meaning"])
             for name, body in data["violation_type"].items()}
    by_code = {code: vt for vt in types.values() for code in vt.codes}
    roles = {k: v for k, v in data["lifecycle_roles"].items() if k != "commit_statuses"}
    stages = tuple(s["name"] for s in sorted(core.lifecycle["stage"], key=lambda s: s["order"]))
    transitions = {t["from"]: tuple(t["to"]) for t in core.lifecycle["transition"]}
    return Catalog(
        isolation=MappingProxyType(isolation),
        default_isolation=data["sandbox"]["default_isolation"],
        storage_access_order=tuple(data["sandbox"]["storage_access_order"]),
        enumerations=MappingProxyType({k: tuple(v) for k, v in data["enumerations"].items()}),
        meanings=MappingProxyType({k: MappingProxyType(dict(v))
                                   for k, v in data["enumerations"].items()}),
        instruction_status_requires=MappingProxyType(
            {k: tuple(v) for k, v in data["instruction_status_requires"].items()}),
        violation_types=MappingProxyType(types),
        violation_by_code=MappingProxyType(by_code),
        roles=MappingProxyType(roles),
        commit_statuses=tuple(data["lifecycle_roles"]["commit_statuses"]),
        callee_failure_stage=MappingProxyType(dict(data["callee_failure_stage"])),
        stages=stages,
        transitions=MappingProxyType(transitions),
    )


def problems(cat: Catalog) -> list[str]:
    """Cross-references between sandbox.toml, the core data files and this code."""
    core = runtime_spec()
    out: list[str] = []
    for name in spec.names():
        older = spec.load(name)
        for what, mine, newest in (("error codes", older.errors, core.errors),
                                   ("instructions", older.by_mnemonic, core.by_mnemonic)):
            if set(mine) - set(newest):
                out.append(f"version {name} has {what} the newest version lacks: "
                           f"{sorted(set(mine) - set(newest))[:5]}")
        if (older.lifecycle["stage"], older.lifecycle["transition"]) != (
                core.lifecycle["stage"], core.lifecycle["transition"]):
            out.append(f"version {name} has another lifecycle than the newest version")
    access_values = list(core.policy["fields"]["storage_access"]["values"])
    if sorted(cat.storage_access_order) != sorted(access_values):
        out.append("sandbox.storage_access_order must list every storage_access value once")
    external_values = core.policy["fields"]["external_call"]["values"]
    if "forbidden" not in external_values:
        out.append("policy.toml external_call has no value 'forbidden' for isolation to use")
    for level in cat.isolation.values():
        if level.max_storage_access not in access_values:
            out.append(f"isolation {level.name}: unknown storage access {level.max_storage_access}")
    if cat.default_isolation not in cat.isolation:
        out.append(f"default isolation {cat.default_isolation} is not a level")
    for enumeration, names in NAMES_USED.items():
        missing = set(names) - set(cat.enumerations.get(enumeration, ()))
        if missing:
            out.append(f"enumerations.{enumeration} lacks {sorted(missing)} used by the runtime")
    if tuple(cat.instruction_status_requires) != cat.values("instruction_status"):
        out.append("instruction_status_requires must follow enumerations.instruction_status")
    severities, actions = set(cat.values("severity")), set(cat.values("action"))
    for vt in cat.violation_types.values():
        if vt.severity not in severities:
            out.append(f"violation type {vt.name}: unknown severity {vt.severity}")
        if not {vt.entry_action, vt.callee_action} <= actions:
            out.append(f"violation type {vt.name}: unknown action")
        unknown = [c for c in vt.codes if c not in core.errors]
        if unknown:
            out.append(f"violation type {vt.name}: unknown codes {unknown}")
    listed = [c for vt in cat.violation_types.values() for c in vt.codes]
    if len(listed) != len(set(listed)):
        out.append("a code belongs to more than one violation type")
    must = {e.code for e in core.errors.values()
            if e.kind in ("invalid", "violation", "fault", "exhausted")}
    if not must <= set(listed):
        out.append(f"codes without a violation type: {sorted(must - set(listed))}")
    stages = set(cat.stages)
    if set(STAGES_USED) - stages:
        out.append(f"lifecycle.toml lacks stages the runtime uses: {sorted(set(STAGES_USED) - stages)}")
    for role, stage in cat.roles.items():
        if stage not in stages:
            out.append(f"lifecycle role {role}: unknown stage {stage}")
    if cat.roles.get("final") in cat.transitions:
        out.append("the final stage must have no outgoing transition")
    for code, stage in cat.callee_failure_stage.items():
        if code not in core.errors or stage not in stages:
            out.append(f"callee_failure_stage {code}: unknown code or stage")
    from reference_vm.result import STATUSES
    if not set(cat.commit_statuses) <= set(STATUSES):
        out.append("commit_statuses must be execution statuses")
    return out


@functools.cache
def catalog() -> Catalog:
    """The checked catalog. Raises ValueError if sandbox.toml disagrees with the rest."""
    cat = _build()
    found = problems(cat)
    if found:
        raise ValueError("inconsistent sandbox spec data: " + "; ".join(found))
    return cat
