"""Sending a sequence request as one scenario request (spec chapter 11.9.4) and judging the
answer against the reference's run of the same scenario (conformance.scenario.carry.run_steps),
step by step and on the post-state.

The class of a sequence divergence names what differs, never where: ``step:<fields>`` for the
first step whose result differs (its fields as conformance.fuzz.classify names them, whatever
the step's index), ``steps.length`` for an answer with another number of steps,
``post_state`` when every step agrees and the state after the last one does not, and the
classes of a whole answer a single request has too (``process:crash``, ``protocol``,
``error:BAD_MESSAGE``, ...). The shrinker keeps the class while it drops steps, so a finding's
divergent step is the same kind of difference in the shortest sequence.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from conformance.fuzz.classify import Divergence, _fields, compare as compare_single
from conformance.fuzz.session import Session
from conformance.protocol import ERROR_CODES, encode
from conformance.run.compare import Mismatch, compare_reply
from conformance.run.requests import SLACK
from conformance.scenario.carry import ScenarioRun, step_input

CAPABILITY = "scenario"


def scenario_request(rid: str, scenario_input: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "scenario", "id": rid, "input": scenario_input}


class ScenarioSession(Session):
    """A Session whose requests are scenario requests and whose answers are scenario_result
    messages (or errors)."""

    @property
    def can_scenario(self) -> bool:
        return CAPABILITY in ((self.hello or {}).get("capabilities") or [])

    @property
    def can_trace(self) -> bool:          # protocol 1 has no traces of scenarios (11.9.4)
        return False

    def request_line(self, rid: str, payload: Mapping[str, Any], trace: bool) -> bytes:
        return encode(scenario_request(rid, payload))

    def reply_problems(self, message: Mapping[str, Any], rid: str, traced: bool) -> list[str]:
        kind = message.get("type")
        if kind == "error":
            return [] if message.get("code") in ERROR_CODES else [f"error response with unknown code "
                                                                   f"{str(message.get('code'))[:40]!r}"]
        if kind != "scenario_result":
            return [f"expected a scenario_result or an error, got type {str(kind)[:40]!r}"]
        steps = message.get("steps")
        if not isinstance(steps, list) or not all(isinstance(s, dict) and isinstance(s.get("result"), dict)
                                                  for s in steps):
            return ["scenario_result without a list of steps, each with a result object"]
        post = message.get("post_state")
        if not isinstance(post, dict) or not isinstance(post.get("contracts"), dict):
            return ["scenario_result without a post_state holding contracts"]
        return []


def response_bound(run: ScenarioRun, default: int) -> int:
    """The longest scenario_result line a runner accepts for this scenario (11.9.4): the sum over
    its steps of the single-call bound (11.5.1: the default line, or twice the expected result
    plus 8 KiB when larger), plus twice the expected post-state's JSON and 8 KiB."""
    steps = sum(max(default, 2 * len(json.dumps(r, separators=(",", ":"))) + SLACK) for r in run.results)
    return steps + 2 * len(json.dumps(run.post_state, separators=(",", ":"))) + SLACK


def compare_scenario(run: ScenarioRun, scenario_input: Mapping[str, Any], answer) -> Divergence | None:
    """The divergence of one answer to a scenario request from the reference's run, or None."""
    whole = compare_single({}, {}, answer) if (answer.failure is not None
                                               or (answer.message or {}).get("type") == "error") else None
    if whole is not None:
        return whole
    message = answer.message
    steps = message["steps"]
    if len(steps) != len(run.results):
        return Divergence("steps.length", [Mismatch("steps.length", len(run.results), len(steps), "result")])
    for index, (state, result, stage, got) in enumerate(zip(run.states, run.results, run.stages, steps)):
        vector = {"expected": {"result": result, "error_stage": stage},
                  "input": step_input(state, scenario_input["steps"][index])}
        reply = {"result": got["result"], **({"stage": got["stage"]} if "stage" in got else {})}
        mismatches = compare_reply(vector, reply)
        if mismatches:
            named = [Mismatch(f"step {index}: {m.field}", m.expected, m.actual, m.category) for m in mismatches]
            return Divergence("step:" + _fields(mismatches), named)
    if message["post_state"] != run.post_state:
        return Divergence("post_state", _state_mismatches(run.post_state, message["post_state"]))
    return None


def _state_mismatches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[Mismatch]:
    """The slots (and contracts) whose values differ between two states, in address order."""
    out = []
    want, got = expected.get("contracts", {}), actual.get("contracts", {})
    if not isinstance(got, dict):
        return [Mismatch("post_state", expected, actual, "post_state")]
    for address in sorted(set(want) | set(got), key=str):
        a, b = want.get(address), got.get(address)
        if not isinstance(a, dict) or not isinstance(b, dict):
            out.append(Mismatch(f"post_state {address}", a is not None, b is not None, "post_state"))
            continue
        if a.get("code") != b.get("code"):
            out.append(Mismatch(f"post_state {address} code", a.get("code"), b.get("code"), "post_state"))
        sa, sb = a.get("storage") or {}, b.get("storage") or {}
        if not isinstance(sb, dict):
            out.append(Mismatch(f"post_state {address} storage", sa, sb, "post_state"))
            continue
        for key in sorted(set(sa) | set(sb), key=str):
            if sa.get(key) != sb.get(key):
                out.append(Mismatch(f"post_state {address} slot {key}", sa.get(key, "0x0"), sb.get(key, "0x0"),
                                    "post_state"))
    return out or [Mismatch("post_state", "the expected state", "another form of it", "post_state")]


def run_of_vector(vector: Mapping[str, Any]) -> ScenarioRun:
    """The expected run a scenario vector records (states carried by 11.9.2), to judge a replay
    of the vector with compare_scenario."""
    from conformance.scenario.carry import next_state
    state = vector["input"]["pre_state"]
    states, results, stages = [], [], []
    for want in vector["expected"]["steps"]:
        states.append(state)
        results.append(want["result"])
        stages.append(want["error_stage"])
        state = next_state(state, want["result"])
    return ScenarioRun(tuple(states), tuple(results), tuple(stages), vector["expected"]["post_state"])
