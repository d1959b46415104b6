"""One vector's expected result held against the second oracle (proofs/oracle).

A single-call vector's input is run by the proofs' models; its result must equal the vector's
expected result in every field. A scenario vector's steps are run by the models one after the
other, the state carried from the *models'* results (11.9.2), so the two executions share
nothing but the input: each step's result and the post-state must equal the vector's.

When they differ, both executions are run again with their steps recorded, and the first step
where they part is named (the reference's native trace against the models' steps).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.run.tracediff import first_divergence, reference_trace
from conformance.scenario.carry import next_state, step_input
from proofs.oracle import NotAnInput, Undecided, model_run


@dataclass
class Disagreement:
    """The second oracle's answer differs from a vector's expected result (or it gave none)."""

    vector_id: str
    version: str
    fields: list[str]                      # the result's members that differ ([] when undecided)
    model: Any                             # the model's result, or why it gave none
    reference: Any                         # the vector's expected result
    step: int | None = None                # a scenario's step
    first_step: str | None = None          # where the executions part
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        where = f"{self.vector_id} (spec {self.version}" + (
            f", scenario step {self.step})" if self.step is not None else ")")
        if not self.fields:
            return [f"{where}: the second oracle gives no result: {self.model}"]
        out = [f"{where}: the models and the reference disagree in {', '.join(self.fields)}"]
        for name in self.fields:
            model = self.model.get(name) if isinstance(self.model, dict) else self.model
            out.append(f"  {name}: models {_short(model)}")
            out.append(f"  {' ' * len(name)}  reference {_short(self.reference.get(name))}")
        if self.first_step:
            out.append(f"  first differing step: {self.first_step}")
        return out


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def differing(model: Mapping[str, Any], expected: Mapping[str, Any]) -> list[str]:
    """The members of a canonical result that differ (every member of the expected one)."""
    return [name for name in sorted(expected) if model.get(name) != expected[name]]


def first_step(doc: Mapping[str, Any], version: str) -> str | None:
    """Where the models' and the reference's executions of ``doc`` part: the reference's
    native trace against the models' steps, compared as the runner compares an
    implementation's trace (conformance/run/tracediff); None when every step agrees."""
    try:
        model = model_run(dict(doc), version, steps=True).steps
    except (Undecided, NotAnInput):
        return None
    reference = [s for s in reference_trace(doc, version) if "pc" in s]   # without the summary
    found = first_divergence(reference, model)
    if found is None:
        return None
    if found.field == "step":
        shorter = "models" if found.actual == "end of trace" else "reference"
        return (f"step {found.step}: the {shorter} ran no more instructions "
                f"({len(model)} model steps, {len(reference)} reference)")
    return (f"step {found.step} (pc {found.pc} {found.op_name}): {found.field}: "
            f"model {found.actual!r}, reference {found.expected!r}")


def check_call(doc: Mapping[str, Any], expected: Mapping[str, Any], version: str, vector_id: str,
               step: int | None = None) -> tuple[Disagreement | None, dict | None]:
    """(the disagreement or None, the models' result or None) for one call."""
    try:
        model = model_run(dict(doc), version).result
    except (Undecided, NotAnInput) as err:
        return Disagreement(vector_id, version, [], f"{type(err).__name__}: {err}", dict(expected),
                            step), None
    except Exception as err:  # noqa: BLE001 - a model that fails on an input is a finding, never agreement
        return Disagreement(vector_id, version, [], f"the models failed: {type(err).__name__}: "
                            f"{str(err)[:200]}", dict(expected), step), None
    fields = differing(model, expected)
    if not fields:
        return None, model
    return Disagreement(vector_id, version, fields, model, dict(expected), step,
                        first_step(doc, version)), model


def check_vector(vector: Mapping[str, Any], version: str) -> Disagreement | None:
    """A single-call vector (11.2) of ``version``."""
    return check_call(vector["input"], vector["expected"]["result"], version, vector["id"])[0]


def check_scenario(vector: Mapping[str, Any], version: str) -> Disagreement | None:
    """A scenario vector (11.9): every step under its own version, the state carried from the
    models' results; then the post-state."""
    state = vector["input"]["pre_state"]
    for index, (step, expected) in enumerate(zip(vector["input"]["steps"], vector["expected"]["steps"])):
        found, model = check_call(step_input(state, step), expected["result"], step["spec_version"],
                                  vector["id"], index)
        if found is not None or model is None:
            return found
        state = next_state(state, model)
    if state != vector["expected"]["post_state"]:
        return Disagreement(vector["id"], version, ["post_state"], {"post_state": state},
                            {"post_state": vector["expected"]["post_state"]})
    return None
