"""How state carries from one step of a scenario to the next (spec chapter 11.9.2), and running
a scenario input step by step on an engine.

Everything here works on the JSON forms of chapter 11.2 (words and byte strings as hex), the
forms an implementation in another language reads: the state before step i+1 is the state
before step i with the state changes of step i's result applied in their listed order, each
setting its slot to ``after`` (0 removes it). A step that does not succeed has no state
changes, so the state stays as it was. Transient storage (1.1) is not state: each step is a
top-level call that starts with it empty (chapter 2.3.3).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import spec
from conformance.corpus.vector import error_stage, request_of
from reference_vm import ExecutionResult, execute

STEP_MEMBERS = ("message", "context", "policy", "sandbox")
# Steps in one scenario: the schema's bound (chapter 11.9.1), read from spec/.
MAX_STEPS: int = spec.schema("scenario-vector")["$defs"]["input"]["properties"]["steps"]["maxItems"]


def step_input(state: Mapping[str, Any], step: Mapping[str, Any]) -> dict[str, Any]:
    """The single-call vector input (11.2.3) step ``step`` stands for on ``state``: the state as
    its pre-state, the step's message, context, policy and sandbox."""
    return {"pre_state": state, **{name: step[name] for name in STEP_MEMBERS}}


def next_state(state: Mapping[str, Any], result: Mapping[str, Any]) -> dict[str, Any]:
    """The state after a step whose canonical result is ``result``, from the state before it
    (11.9.2). ``state`` is not modified. A state change of a contract the state does not hold
    (never in a conforming result: an execution only writes deployed contracts) is an error."""
    contracts = copy.deepcopy(dict(state["contracts"]))
    for change in result["state_changes"]:
        # A result's words are canonical (no leading zeros) and so are the state's keys: the
        # same slot has the same text on both sides.
        body = contracts.get(change["address"])
        if body is None:
            raise ValueError(f"a state change of {change['address']}, a contract the state does not hold")
        if change["after"] == "0x0":
            body["storage"].pop(change["key"], None)
        else:
            body["storage"][change["key"]] = change["after"]
    for body in contracts.values():     # canonical order of the slots, as a pre-state is written
        body["storage"] = dict(sorted(body["storage"].items(), key=lambda kv: int(kv[0], 16)))
    return {"contracts": contracts}


Engine = Callable[..., ExecutionResult]


@dataclass(frozen=True)
class ScenarioRun:
    """What running a scenario gave: for each step the state before it, its result (canonical
    JSON) and stage; and the state after the last step."""

    states: tuple[dict[str, Any], ...]
    results: tuple[dict[str, Any], ...]
    stages: tuple[str | None, ...]
    post_state: dict[str, Any]


def run_steps(scenario_input: Mapping[str, Any], engine: Engine = execute,
              versions: Sequence[str] | None = None) -> ScenarioRun:
    """Run every step of a scenario input on ``engine`` (reference_vm.execute's signature), each
    under its own ``spec_version`` (or ``versions[i]`` when given), the state carried (11.9.2)."""
    state: dict[str, Any] = copy.deepcopy(dict(scenario_input["pre_state"]))
    states, results, stages = [], [], []
    for index, step in enumerate(scenario_input["steps"]):
        version = versions[index] if versions is not None else step["spec_version"]
        request = request_of(step_input(state, step), version)
        result = engine(request.state, request.message, request.context, request.policy,
                        request.limits, version=version).to_json()
        states.append(state)
        results.append(result)
        stages.append(error_stage(result["error"], version))
        state = next_state(state, result)
    return ScenarioRun(tuple(states), tuple(results), tuple(stages), state)
