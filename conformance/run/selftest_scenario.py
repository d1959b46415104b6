"""The self-test's checks of the capability ``"scenario"`` (spec chapter 11.9.4), run when the
adapter's hello announces it: one scenario request answered with a ``scenario_result`` that is
valid against adapter-message.schema.json, echoes the id, has one entry per step and (unless the
adapter answers UNSUPPORTED_INPUT, which a partial VM may) equals the expected run by 11.9.3; and
malformed scenario requests (no input, versions that decrease along the steps, an unknown member)
answered with an error BAD_MESSAGE echoing the id, the adapter alive after each.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.run.process import Reply

SCENARIO_ID = "scenario/state/counter_three_calls"    # the scenario checked, when the corpus has it
UNSUPPORTED = "UNSUPPORTED_INPUT"


def probe_scenario(probe: Mapping[str, Any], version: str) -> dict[str, Any]:
    """A scenario of two steps of the probe vector (one STOP), filled by the reference: what is
    checked when no scenario corpus is at hand."""
    from conformance.scenario.fill import fill_input
    step = {"spec_version": version, **{k: probe["input"][k] for k in ("message", "context", "policy", "sandbox")}}
    return fill_input({"pre_state": probe["input"]["pre_state"], "steps": [step, step]},
                      id="scenario/selftest/probe_twice", description="The probe program called twice.",
                      source="definition")


def chosen(scenarios: Sequence[Mapping[str, Any]], probe: Mapping[str, Any], version: str) -> Mapping[str, Any]:
    return next((s for s in scenarios if s["id"] == SCENARIO_ID), None) or \
        (scenarios[0] if scenarios else probe_scenario(probe, version))


def answer_problem(session: Any, scenario: Mapping[str, Any], schema_problem) -> str | None:
    """The scenario answered in the form of 11.9.4 (an error UNSUPPORTED_INPUT is noted, not failed)."""
    from conformance.run.scenario_judge import judge
    rid = "scenario-selftest-1"
    reply = session.ask({"type": "scenario", "id": rid, "input": scenario["input"]}, f"scenario {scenario['id']}")
    if reply is None:
        return "no response to the scenario request"
    if reply.get("id") != rid:
        return f"the response must echo id {rid!r}, got {str(reply.get('id'))[:80]!r}"
    if reply.get("type") == "error" and reply.get("code") == UNSUPPORTED:
        session.note = f"scenario: answered {UNSUPPORTED} (not a failure of the protocol)"
        return None
    problem = schema_problem("adapter-message", reply)
    if problem:
        return f"the response is not valid against adapter-message.schema.json: {problem[:300]}"
    if reply.get("type") != "scenario_result":
        return f"expected a scenario_result, got {str(reply.get('type'))[:40]!r}"
    outcome = judge(scenario, Reply(scenario["id"], reply))
    if outcome.status != "pass":
        return f"{scenario['id']}: {outcome.reason or outcome.failures[0]}"[:600]
    return None


def malformed_problem(session: Any, scenario: Mapping[str, Any], alive) -> str | None:
    """Each malformed scenario request answered BAD_MESSAGE with its id, the adapter alive after
    (``alive(session, message, code, echoed)``)."""
    import spec
    step = scenario["input"]["steps"][0]
    names = sorted(spec.names(), key=lambda v: spec.version(v).number)
    cases = [("no input", {"type": "scenario", "id": "bad-scenario-1"}),
             ("an unknown member", {"type": "scenario", "id": "bad-scenario-2", "input": scenario["input"], "x": 1}),
             ("no steps", {"type": "scenario", "id": "bad-scenario-3",
                           "input": {"pre_state": scenario["input"]["pre_state"], "steps": []}})]
    if len(names) > 1:      # the newest version, then the oldest: versions that decrease
        steps = [dict(step, spec_version=names[-1]), dict(step, spec_version=names[0])]
        cases.append(("step versions that decrease", {"type": "scenario", "id": "bad-scenario-4",
                                                      "input": dict(scenario["input"], steps=steps)}))
    for what, message in cases:
        problem = alive(session, message, "BAD_MESSAGE", message["id"])
        if problem:
            return f"a scenario request with {what}: {problem}"
    return None


def add(checks: Any, scenarios: Sequence[Mapping[str, Any]], probe: Sequence[Mapping[str, Any]], version: str,
        schema_problem, error_then_alive) -> None:
    """Add the scenario checks to a self-test (conformance.run.selftest._Checks)."""
    scenario = chosen(scenarios, probe[0], version)
    checks.run(f"capability scenario: answers {scenario['id']} with a scenario_result valid against "
               "adapter-message.schema.json, equal to the expected run",
               lambda s: answer_problem(s, scenario, schema_problem))
    checks.run("capability scenario: answers malformed scenario requests (no input, an unknown member, no "
               "steps, decreasing versions) with an error BAD_MESSAGE (id echoed), and stays alive",
               lambda s: malformed_problem(s, scenario, lambda s_, m, c, e: error_then_alive(s_, m, c, probe, e)))
