"""Filling scenario vectors (11.9): the reference interpreter runs every step on the carried
state, and the vector records each step's result and stage and the state after the last step.

``fill_case`` fills a definition for one version and checks its author's expectations first
(a definition whose expectations fail does not fill); ``fill_input`` fills a bare scenario
input (one exported from a runtime database, a counterexample of the invariant checker, a
fuzzing finding), whose version is that of its last step.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable, Mapping

import spec
from conformance.corpus.expect import (
    Expect, definition_problems, failure, result_problems, state_slots, storage_problems,
)
from conformance.corpus.vector import outcome_of, stamped, version_order
from conformance.scenario.carry import ScenarioRun, run_steps
from conformance.scenario.case import ScenarioCase, Step, scenario_input

SECTION = "11.9"
# The sources a scenario vector may name (the schema's enum, chapter 11.9.1).
SOURCES: tuple[str, ...] = tuple(spec.schema("scenario-vector")["$defs"]["tags"]["properties"]["source"]["enum"])


def steps_version(steps: Iterable[Mapping[str, Any]]) -> str:
    """The version of a scenario: that of its last step. ValueError when the steps' versions
    decrease or one is not a version of spec/versions.toml (11.9.1)."""
    previous = None
    for index, step in enumerate(steps):
        version = step["spec_version"]
        if version not in spec.names():
            raise ValueError(f"step {index}: {str(version)[:40]!r} is not a version of spec/versions.toml")
        if previous is not None and version_order(version) < version_order(previous):
            raise ValueError(f"step {index}: version {version} comes after {previous} (versions may not decrease)")
        previous = version
    if previous is None:
        raise ValueError("a scenario has at least one step")
    return previous


def _sections(run: ScenarioRun, opcodes: Iterable[str], extra: Iterable[str], version: str) -> list[str]:
    table = spec.load(version)
    found = {SECTION, *extra}
    found.update(table.by_mnemonic[m].section for m in opcodes)
    for result in run.results:
        codes = {result["error"]} | {c["error"] for c in result["calls"]}
        found.update(table.errors[c].section for c in codes if c is not None and c in table.errors)
    return sorted(found, key=lambda s: tuple(int(p) for p in s.split(".")))


def vector_of(run: ScenarioRun, scenario: Mapping[str, Any], *, id: str, description: str,
              source: str, opcodes: Iterable[str] = (), categories: Iterable[str] = (),
              sections: Iterable[str] = (), generator: str | None = None) -> dict[str, Any]:
    """The scenario vector of a run of ``scenario`` (its input), stamped for its version."""
    version = steps_version(scenario["steps"])
    if source not in SOURCES:
        raise ValueError(f"source {source!r} is not one of {', '.join(SOURCES)}")
    table = spec.load(version)
    for index, result in enumerate(run.results):
        if result["status"] == "internal":
            raise AssertionError(f"{id}: the reference reported INTERNAL_ERROR at step {index}")
    vector = {
        "id": id,
        "description": description,
        "tags": {
            "opcodes": sorted(set(opcodes), key=lambda m: table.by_mnemonic[m].opcode),
            "outcomes": [outcome_of(r) for r in run.results],
            "sections": _sections(run, opcodes, sections, version),
            "categories": sorted(set(categories)),
            "source": source,
        },
        "input": scenario,
        "expected": {"steps": [{"result": r, "error_stage": s} for r, s in zip(run.results, run.stages)],
                     "post_state": run.post_state},
    }
    return stamped(vector, version, generator)


def fill_input(scenario: Mapping[str, Any], *, id: str, description: str, source: str,
               categories: Iterable[str] = (), opcodes: Iterable[str] = (),
               generator: str | None = None) -> dict[str, Any]:
    """The scenario vector of a bare scenario input, each step run under its own version."""
    scenario = dict(scenario)
    steps_version(scenario["steps"])
    return vector_of(run_steps(scenario), scenario, id=id, description=description, source=source,
                     opcodes=opcodes, categories=categories, generator=generator)


def step_expect(step: Step) -> Expect:
    """What the author states of a step's result: its ``expect`` (an outcome, or an Expect)
    with its ``output``."""
    expect = step.expect if isinstance(step.expect, Expect) else Expect(outcome=step.expect)
    return expect if step.output is None else replace(expect, output=step.output)


def expectation_problems(case: ScenarioCase, run: ScenarioRun) -> list[str]:
    """Where the run differs from what the definition's author states (conformance.corpus.expect):
    each step's result, the slots after a step, the slots after the last step."""
    found = []
    after = (*run.states[1:], run.post_state)
    for index, (step, result) in enumerate(zip(case.steps, run.results)):
        expect = step_expect(step)
        found += [f"step {index}: {p}" for p in result_problems(expect, result)
                  + storage_problems(expect.storage, state_slots(after[index]))]
    found += [f"after the last step: {p}" for p in storage_problems(case.expect_storage, state_slots(run.post_state))]
    return found


def fill_case(case: ScenarioCase, version: str) -> dict[str, Any]:
    """The scenario vector of ``case`` for ``version``; ExpectationFailed
    (conformance.corpus.expect) when the reference's results are not what the author states,
    ValueError before anything runs when a step's expectation is malformed."""
    for index, (step, step_version) in enumerate(zip(case.steps, case.step_versions(version))):
        wrong = definition_problems(step_expect(step), [step_version])
        if wrong:
            raise ValueError(f"{case.id}: step {index}: " + "; ".join(wrong))
    scenario = scenario_input(case, version)
    run = run_steps(scenario)
    problems = expectation_problems(case, run)
    if problems:
        raise failure(case.id, version, problems)
    return vector_of(run, scenario, id=case.id, description=case.description, source=case.source,
                     opcodes=case.opcodes, categories=case.categories, sections=case.sections)
