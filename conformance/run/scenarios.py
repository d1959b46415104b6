"""The scenario pass of a run (spec chapter 11.9.4): scenario vectors sent to an adapter that
announces the capability ``"scenario"``, one ``scenario`` request per vector, judged by 11.9.3
(conformance.run.scenario_judge).

A scenario is sent only when the adapter's hello announces the capability and lists the version
of every one of its steps; every other scenario of the selection is *not run*, with the reason
(the capability, or the step versions the adapter lacks). Requests go through the same process
machinery as execute requests (conformance.run.runner.Pool: opaque ids, pipelining, the bounded
response line of 11.9.4, a crash, hang, flood or garbage charged to the scenario the adapter was
on, restarts, giving up after consecutive failures). The wall clock is a safety net as for single
calls: a scenario that met it runs once more with four times the time. Determinism: the same
scenarios run again in fresh processes under each perturbed environment of the run's
determinism passes, in a shuffled order, and must be answered identically.
"""

from __future__ import annotations

import json
import shlex
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

from conformance.protocol import encode
from conformance.run import determinism, safety_net
from conformance.run.compare import Mismatch, capped
from conformance.run.outcomes import Outcome, PassRun, light, small
from conformance.run.process import Job, Reply, Settings
from conformance.run.requests import SLACK, request_id
from conformance.run.runner import Pool
from conformance.run.scenario_judge import describe, judge, signature

CAPABILITY = "scenario"
NO_CAPABILITY = f'the adapter does not announce the capability "{CAPABILITY}" (11.9.4)'


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))


def response_limit(vector: Mapping[str, Any]) -> int:
    """The longest acceptable scenario_result line (11.9.4): the single-call bound of 11.5.1 of
    every step (twice its expected result plus 8 KiB), twice the expected post-state, 8 KiB."""
    steps = sum(2 * _size(s["result"]) + SLACK for s in vector["expected"]["steps"])
    return steps + 2 * _size(vector["expected"]["post_state"]) + SLACK


def step_versions(vector: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys(s["spec_version"] for s in vector["input"]["steps"]))


def not_run_reason(hello: Mapping[str, Any] | None, vector: Mapping[str, Any]) -> str | None:
    """Why ``vector`` is not sent to the adapter whose hello is ``hello`` (None: it is sent)."""
    hello = hello or {}
    capabilities = hello.get("capabilities")
    if not isinstance(capabilities, list) or CAPABILITY not in capabilities:
        return NO_CAPABILITY
    announced = hello.get("spec_versions")
    versions: list[Any] = announced if isinstance(announced, list) else []
    missing = [v for v in step_versions(vector) if v not in versions]
    if missing:
        return f"its steps run spec {', '.join(missing)}, which the adapter does not announce"
    return None


def request_line(request_id_: str, vector: Mapping[str, Any]) -> bytes:
    return encode({"type": "scenario", "id": request_id_, "input": vector["input"]})


def scenario_jobs(vectors: Sequence[Mapping[str, Any]], seed: int | str, label: str) -> list[Job]:
    """Scenario requests with opaque ids (11.8.1): the id never names the scenario."""
    out = []
    for v in vectors:
        rid = request_id(seed, f"scenario/{label}", v["id"])
        out.append(Job(v["id"], request_line(rid, v), rid, response_limit(v)))
    return out


@dataclass
class ScenarioRuns:
    """The scenarios of one implementation's run."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)
    not_run: dict[str, str] = field(default_factory=dict)    # scenario id -> why it was not sent
    steps: int = 0                                           # steps of the scenarios sent (main pass)
    seconds: float = 0.0                                     # the main pass's time
    restarts: int = 0
    issues: list[str] = field(default_factory=list)
    retried: int = 0

    @property
    def rate(self) -> float:
        """Steps per second of the main pass."""
        return self.steps / self.seconds if self.seconds else 0.0

    def count(self, status: str, fresh: bool | None = None) -> int:
        return sum(1 for o in self.outcomes.values() if o.status == status and (fresh is None or o.fresh == fresh))

    @property
    def ok(self) -> bool:
        return not self.issues and self.count("fail") == 0 and self.count("xpass") == 0

    @property
    def carries_state(self) -> bool | None:
        """Whether the run establishes that the implementation carries state across calls: every
        selected scenario ran and passed (None when the selection has none)."""
        if not self.outcomes and not self.not_run:
            return None
        return not self.not_run and bool(self.outcomes) and self.ok


def _record(outcome: Outcome, reply: Reply, name: str, label: str, env: Mapping[str, str | None],
            order_seed: int | None, differs: bool = False) -> None:
    kept = light(reply)
    if differs:
        kept.message = small(reply.message)
    outcome.passes.append(PassRun(name, label, dict(env), order_seed, kept, differs, describe(reply)))


def _main(argv: list[str], vectors: Sequence[Mapping[str, Any]], settings: Settings, seed: int,
          runs: ScenarioRuns, progress: Callable[[Reply], None] | None) -> None:
    by_id = {v["id"]: v for v in vectors}
    env = determinism.environment_of(settings.env)

    def on_reply(reply: Reply, label: str = determinism.MAIN_PASS) -> None:
        outcome = judge(by_id[reply.vector_id], reply)
        outcome.seconds, outcome.signature = reply.seconds, signature(reply)
        if outcome.correct:
            outcome.reply = None        # the expected answer: nothing to keep
        else:
            outcome.reply = small(outcome.reply)
        _record(outcome, reply, "main pass", label, env, None)
        runs.outcomes[reply.vector_id] = outcome
        if progress:
            progress(reply)

    started = time.perf_counter()
    report = Pool(argv, settings).run(scenario_jobs(vectors, seed, "main"), on_reply, keep=False)
    runs.seconds = time.perf_counter() - started
    runs.steps = sum(len(v["input"]["steps"]) for v in vectors)
    runs.restarts += report.restarts
    runs.issues.extend(report.issues)
    hung = [vid for vid, o in runs.outcomes.items() if safety_net.met_safety_net(o.passes[0].reply)]
    if hung and not any(i.startswith("gave up") for i in report.issues):
        replies, restarts = safety_net.collect(argv, settings, scenario_jobs([by_id[i] for i in hung], seed, "retry"))
        runs.restarts += restarts
        runs.retried += len(hung)
        label = (f"{determinism.MAIN_PASS}; run again with {safety_net.retry_settings(settings).timeout:g} s "
                 "after meeting the wall-clock safety net")
        for vid in hung:
            reply = replies.get(vid)
            if reply is None or safety_net.met_safety_net(reply):
                runs.outcomes[vid].reason = safety_net.hang_detail(settings)
                continue
            first = runs.outcomes[vid].passes[0]
            on_reply(reply, label)
            runs.outcomes[vid].passes.append(replace(first, name="main pass, first attempt (met the wall-clock "
                                                                 "safety net)"))


def _again(argv: list[str], vectors: Sequence[Mapping[str, Any]], settings: Settings, seed: int, k: int,
           runs: ScenarioRuns) -> None:
    """Determinism pass ``k``: fresh processes, a perturbed environment, a shuffled order."""
    p = determinism.perturbation(k, seed, settings.env)
    name, label = f"determinism pass {k + 1}", p.describe()
    order = determinism.shuffled([v["id"] for v in vectors], p.order_seed)
    by_id = {v["id"]: v for v in vectors}
    again = replace(settings, env=p.env, log_label=f"{settings.log_label}_pass{k + 1}")

    def on_reply(reply: Reply) -> None:
        outcome = runs.outcomes[reply.vector_id]
        if safety_net.met_safety_net(reply):
            diff = [Mismatch(f"{name}: response", "an answer, as in the main pass",
                             safety_net.hang_detail(settings), "timeout")]
        elif signature(reply) == outcome.signature:
            diff = []
        else:
            diff = [Mismatch(f"{name} against the main pass", outcome.passes[0].response, describe(reply),
                             "nondeterministic")]
        _record(outcome, reply, name, label, p.recorded, p.order_seed, bool(diff))
        if diff:
            outcome.status, outcome.correct = "fail", False
            outcome.failures = capped(outcome.failures + diff)

    report = Pool(argv, again).run(scenario_jobs([by_id[i] for i in order], seed, f"pass{k + 1}"),
                                   on_reply, keep=False)
    runs.restarts += report.restarts
    runs.issues.extend(f"{label}: {i}" for i in report.issues)


def run_scenarios(command: str, hello: Mapping[str, Any] | None, vectors: Sequence[Mapping[str, Any]],
                  settings: Settings, seed: int, repeat: int, listed: Callable[[str], Any] | None = None,
                  progress: Callable[[Reply], None] | None = None) -> ScenarioRuns:
    """Run the scenarios ``vectors`` (blinded or not) through the adapter ``command`` whose hello
    is ``hello``: those it can run in a main pass and ``repeat`` determinism passes, the others
    recorded as not run with the reason."""
    runs = ScenarioRuns()
    sent = []
    for v in vectors:
        reason = not_run_reason(hello, v)
        if reason is None:
            sent.append(v)
        else:
            runs.not_run[v["id"]] = reason
    if not sent:
        return runs
    argv = shlex.split(command)
    _main(argv, sent, settings, seed, runs, progress)
    healthy = not any(i.startswith("gave up") for i in runs.issues)
    ran = [v for v in sent if v["id"] in runs.outcomes
           and not safety_net.met_safety_net(runs.outcomes[v["id"]].passes[0].reply)]
    for k in range(repeat if healthy else 0):
        _again(argv, ran, settings, seed, k, runs)
    runs.outcomes = {v["id"]: runs.outcomes[v["id"]] for v in sent if v["id"] in runs.outcomes}
    for vid, outcome in runs.outcomes.items():
        entry = listed(vid) if listed is not None else None
        if entry is not None:
            outcome.known = entry.describe()
            outcome.status = "xfail" if outcome.status == "fail" else "xpass"
    return runs


def _views(vector: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A scenario as the single-call filter keys see it: one view per step outcome (``outcome``
    matches any step's), its group ``scenario``, no boundary and no call outcome."""
    tags = vector["tags"]
    return [{"id": vector["id"], "tags": {"opcodes": tags["opcodes"], "outcome": outcome, "call_outcomes": [],
                                          "sections": tags["sections"], "categories": tags["categories"],
                                          "source": tags["source"], "boundary": None}}
            for outcome in tags["outcomes"] or [""]]


def select(vectors: Sequence[Mapping[str, Any]], filters: Sequence[str]) -> list[Mapping[str, Any]]:
    """The scenarios the ``--filter`` expressions select (all without filters; possibly none:
    a filter that selects single-call vectors only selects no scenario, and is no error)."""
    from conformance.corpus.selection import compile_filter
    compiled = [compile_filter(f) for f in filters]
    if not compiled:
        return list(vectors)
    return [v for v in vectors if any(m(view) for m in compiled for view in _views(v))]
