"""Judging an adapter's answer to a scenario request (spec chapter 11.9.3).

A scenario passes when every step's result passes by 11.2.7 (the result byte-identical to the
step's expected one, its usage within the step's limits, its stage when reported equal to the
step's ``error_stage``) and the post-state equals the expected one. The first step whose result
differs is the *divergent step*: the judgement names its index (from 0), both results and the
state before it (the state the expected run had there, 11.9.2). When every step agrees and the
post-state does not, the post-state is what diverges.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.run.compare import Mismatch, bound_violations, bounded, capped, compare_result
from conformance.run.outcomes import UNSUPPORTED, Outcome
from conformance.run.process import Reply
from conformance.scenario.carry import next_state

RESPONSE = "scenario_result"
POST_STATE = "post_state"


@dataclass
class StepDivergence:
    """Where a scenario's answer departs from the expected run: a step (``index`` from 0) or,
    with ``index`` None, the post-state."""

    index: int | None
    steps: int                              # steps of the scenario
    expected: Any                           # the step's expected result, or the expected post-state
    got: Any                                # the adapter's result of the step, or its post-state
    state_before: Any = None                # the expected run's state before the step
    diverging_steps: int = 1                # how many steps differ in all
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def where(self) -> str:
        return POST_STATE if self.index is None else f"step {self.index}"

    def __str__(self) -> str:
        if self.index is None:
            return (f"every one of the {self.steps} steps agrees; the post-state diverges"
                    + (f" ({self.mismatches[0]})" if self.mismatches else ""))
        more = f" ({self.diverging_steps} of {self.steps} steps differ)" if self.diverging_steps > 1 else ""
        first = f": {self.mismatches[0]}" if self.mismatches else ""
        return f"first divergent step: {self.index} of {self.steps}{more}{first}"

    def to_json(self) -> dict[str, Any]:
        return {"step": self.index, "where": self.where, "steps": self.steps,
                "diverging_steps": self.diverging_steps, "expected": bounded(self.expected, 20000),
                "got": bounded(self.got, 20000), "state_before": bounded(self.state_before, 20000),
                "mismatches": [m.to_json() for m in self.mismatches[:50]]}


def expected_states(vector: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The state before each step of the expected run (S0 .. Sn-1, chapter 11.9.2)."""
    state = vector["input"]["pre_state"]
    out = []
    for want in vector["expected"]["steps"]:
        out.append(state)
        state = next_state(state, want["result"])
    return out


def _step_mismatches(index: int, step: Mapping[str, Any], want: Mapping[str, Any], got: Any) -> list[Mismatch]:
    if not isinstance(got, dict):
        return [Mismatch(f"steps[{index}]", "an object with a result", bounded(got, 200), "protocol")]
    actual = got.get("result")
    found = compare_result(want["result"], actual)
    found += bound_violations(actual, step["sandbox"]["limits"])
    if "stage" in got and got["stage"] != want["error_stage"]:
        found.append(Mismatch("stage", want["error_stage"], got["stage"], "stage"))
    return [Mismatch(f"steps[{index}].{m.field}", m.expected, m.actual, m.category) for m in found]


def _post_state_mismatches(expected: Any, actual: Any) -> list[Mismatch]:
    if not isinstance(actual, dict) or not isinstance(actual.get("contracts"), dict):
        return [Mismatch(POST_STATE, "a state object", bounded(actual, 200), "result")]
    out = []
    want, got = expected["contracts"], actual["contracts"]
    for address in sorted(set(want) | set(got)):
        a, b = want.get(address), got.get(address)
        if not isinstance(b, dict) or not isinstance(a, dict):
            out.append(Mismatch(f"{POST_STATE}.contracts[{address}]", bounded(a, 200), bounded(b, 200), "result"))
            continue
        if a.get("code") != b.get("code"):
            out.append(Mismatch(f"{POST_STATE}.contracts[{address}].code", "unchanged code", "another code", "result"))
        sa, sb = a.get("storage") or {}, b.get("storage")
        if not isinstance(sb, dict):
            out.append(Mismatch(f"{POST_STATE}.contracts[{address}].storage", "an object", bounded(sb, 200), "result"))
            continue
        for key in sorted(set(sa) | set(sb)):
            if sa.get(key) != sb.get(key):
                out.append(Mismatch(f"{POST_STATE}.contracts[{address}].storage[{key}]",
                                    sa.get(key, "<absent>"), sb.get(key, "<absent>"), "result"))
    return out or [Mismatch(POST_STATE, "the expected post-state", "another one", "result")]


def judge(vector: Mapping[str, Any], reply: Reply | None) -> Outcome:
    """The verdict of one answer to a scenario request."""
    vid = vector["id"]
    if reply is None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", "none", "protocol")], "no response")
    if reply.failure is not None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", reply.failure, reply.failure)], reply.detail)
    message = reply.message or {}
    kind = message.get("type")
    if kind == "error":
        code = message.get("code")
        detail = f"adapter error {str(code)[:40]}: {str(message.get('message', ''))[:300]}"
        category = UNSUPPORTED if code == "UNSUPPORTED_INPUT" else "adapter_error"
        return Outcome(vid, "fail", [Mismatch("response", "a scenario_result", code, category)], detail, message)
    steps, expected = vector["input"]["steps"], vector["expected"]["steps"]
    answers = message.get("steps")
    problem = (f"expected a {RESPONSE}, got type {str(kind)[:40]!r}" if kind != RESPONSE
               else "steps: not a list" if not isinstance(answers, list)
               else f"steps: {len(answers)} answers for {len(steps)} steps" if len(answers) != len(steps)
               else "post_state missing" if POST_STATE not in message else "")
    if problem:
        return Outcome(vid, "fail", [Mismatch("response", f"a {RESPONSE}", problem, "protocol")], problem, message)
    assert isinstance(answers, list)
    diverging = [(i, found) for i, (step, want, got) in enumerate(zip(steps, expected, answers))
                 if (found := _step_mismatches(i, step, want, got))]
    if diverging:
        index, found = diverging[0]
        got = answers[index]
        divergence = StepDivergence(index, len(steps), expected[index]["result"],
                                    got.get("result") if isinstance(got, dict) else got,
                                    expected_states(vector)[index], len(diverging), capped(found))
    else:
        want = vector["expected"][POST_STATE]
        if message[POST_STATE] == want:
            return Outcome(vid, "pass", [], "", message, correct=True)
        divergence = StepDivergence(None, len(steps), want, message[POST_STATE],
                                    mismatches=capped(_post_state_mismatches(want, message[POST_STATE])))
    outcome = Outcome(vid, "fail", capped(divergence.mismatches), str(divergence)[:300], message)
    outcome.scenario = divergence
    return outcome


def signature(reply: Reply | None) -> str:
    """A digest of what two runs of the same scenario must share: every step's result and
    stage and the post-state, or the error code, or the process-level failure."""
    if reply is None:
        shape: Any = ("missing",)
    elif reply.failure is not None:
        shape = ("failure", reply.failure)
    elif (reply.message or {}).get("type") == "error":
        shape = ("error", (reply.message or {}).get("code"))
    else:
        message = reply.message or {}
        shape = ("scenario", message.get("type"), message.get("steps"), message.get(POST_STATE))
    return hashlib.sha256(json.dumps(shape, sort_keys=True, default=str).encode()).hexdigest()


def describe(reply: Reply | None) -> str:
    """What came back, in a few words (a pass record's ``response``)."""
    if reply is None:
        return "missing"
    if reply.failure is not None:
        return f"failure {reply.failure}"
    message = reply.message or {}
    if message.get("type") == "error":
        return f"error {str(message.get('code'))[:40]}"
    answers = message.get("steps")
    if isinstance(answers, list):
        outcomes = [str((a.get("result") or {}).get("error") or (a.get("result") or {}).get("status"))
                    if isinstance(a, dict) and isinstance(a.get("result"), dict) else "?" for a in answers[:8]]
        return f"scenario_result of {len(answers)} steps: " + ", ".join(outcomes) + (" ..." if len(answers) > 8 else "")
    return f"{str(message.get('type'))[:40]} message"
