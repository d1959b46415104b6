"""Scenario definitions (ScenarioCase, Step) and the scenario input they stand for (11.9.1).

A definition deploys contracts (assembly or container bytes, with storage) and lists its
steps: for each the call (target, caller, call data), the context, the policy and the limits,
exactly the fields of a single-call definition (conformance.corpus.vector.Case), and what the
author expects of it (``expect``: the outcome, a status or a code, or a whole
conformance.corpus.expect.Expect, whose slots are those after the step). ``expect_storage``
states slots of the state after the last step. Expectations are checked when the definition is
filled (conformance.scenario.fill), as a single-call definition's are: a definition whose
expectations fail does not fill.

Like a single-call definition, it is valid from ``since`` to ``until`` and filled once for each
version in that range, every step under that version. A step may instead name its own version
(``version``): such a definition is about moving from one version to the next on one state
(containers of the older version, run under the older, then the newer rules); it is filled once,
for the newest version its steps name, and the versions along its steps may not decrease.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.corpus.expect import Expect
from conformance.corpus.vector import (
    BASE, CALLER, ENTRY, ZERO_SEED, Case, Code, in_range, input_of, version_order,
)


@dataclass(frozen=True)
class Step:
    """One top-level call of a scenario, and the outcome its author expects."""

    to: int = ENTRY
    caller: int = CALLER
    call_data: bytes = b""
    block_time: int = 0
    random_seed: bytes = ZERO_SEED
    policy: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, int] = field(default_factory=dict)
    isolation_level: str | None = None
    version: str | None = None      # this step's version, when the definition is an upgrade
    expect: str | Expect | None = None   # the outcome (success, reverted or a code), or an Expect
    output: bytes | None = None     # the output the author expects


@dataclass(frozen=True)
class ScenarioCase:
    """One scenario definition: contracts on a state, and the steps run on it in order."""

    id: str
    description: str
    contracts: Mapping[int, "Code | tuple[Code, Mapping[int, int]]"]
    steps: tuple[Step, ...]
    opcodes: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    sections: tuple[str, ...] = ()
    since: str = BASE
    until: str | None = None
    container: str | None = None
    # Slots of the state after the last step, {address: {key: value}}: 0 means absent.
    expect_storage: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    source: str = "definition"

    @property
    def container_version(self) -> str:
        return self.container or min((s.version for s in self.steps if s.version),
                                     key=version_order, default=self.since)

    @property
    def upgrade(self) -> bool:
        """Whether the steps name their versions (a definition filled once)."""
        return any(s.version for s in self.steps)

    def versions(self, known: tuple[str, ...]) -> tuple[str, ...]:
        """The versions among ``known`` this definition is filled for."""
        if self.upgrade:
            return (max((s.version for s in self.steps if s.version), key=version_order),)
        return tuple(v for v in known if in_range(v, self.since, self.until))

    def step_versions(self, version: str) -> tuple[str, ...]:
        """The version of each step when filled for ``version``: its own, else the one before
        it (the first step defaults to the oldest version named), else ``version``."""
        if not self.upgrade:
            return tuple(version for _ in self.steps)
        out, current = [], self.container_version
        for step in self.steps:
            current = step.version or current
            out.append(current)
        return tuple(out)


def scenario_input(case: ScenarioCase, version: str) -> dict[str, Any]:
    """The scenario input of ``case`` filled for ``version``: its pre-state (containers of its
    container version) and each step with every field explicit (11.9.1)."""
    steps = []
    pre_state: dict[str, Any] | None = None
    for step, step_version in zip(case.steps, case.step_versions(version)):
        single = input_of(Case(
            id=case.id, description=case.description, code="", deploy_entry=False,
            contracts=case.contracts, to=step.to, caller=step.caller, call_data=step.call_data,
            block_time=step.block_time, random_seed=step.random_seed, policy=step.policy,
            limits=step.limits, isolation_level=step.isolation_level, since=case.since,
            container=case.container_version))
        pre_state = single["pre_state"] if pre_state is None else pre_state
        steps.append({"spec_version": step_version, "message": single["message"],
                      "context": single["context"], "policy": single["policy"],
                      "sandbox": single["sandbox"]})
    assert pre_state is not None, f"{case.id}: a scenario has at least one step"
    return {"pre_state": pre_state, "steps": steps}
