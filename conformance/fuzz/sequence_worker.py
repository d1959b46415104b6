"""A fuzzing worker of sequence mode (``rtwo-vm fuzz --sequences K``): each request is a scenario
of 2..K steps on a shared pre-state (conformance.fuzz.sequence), run on the in-process reference
step by step (conformance.scenario.carry.run_steps) and sent to every implementation as one
scenario request (spec chapter 11.9.4); the answers are compared step by step and on the
post-state (conformance.fuzz.sequence_check), and a divergence is shrunk to the shortest
sequence of the smallest programs (conformance.fuzz.sequence_shrink) and written as a scenario
vector of source ``fuzz`` (conformance.scenario.fill.fill_input).

What the single-call worker does and this one shares: the task (requests [start, start +
count) against the pool as of the epoch start, so a request, its verdict and which request of a
class is shrunk do not depend on the workers), the pool and its grid-cell coverage — here per
step: a step that reaches a new cell puts its request, on the state that step ran on, into the
pool — the buckets and the wall-clock safety net. Not done in this mode: traces (protocol 1 has
none for scenarios), branch arcs and the perturbed second runs.
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any, Mapping

from conformance.fuzz.classify import Divergence
from conformance.fuzz.feedback import cells
from conformance.fuzz.findings import GENERATOR, SAFETY_NET_CLASS, categories
from conformance.fuzz.sequence import SequenceInput, generate_sequence, sequence_text
from conformance.fuzz.sequence_check import ScenarioSession, compare_scenario, response_bound
from conformance.fuzz.sequence_shrink import SequenceShrinker
from conformance.fuzz.worker import SHRINK_TIMEOUTS, Worker, tune_gc
from conformance.scenario.carry import ScenarioRun, run_steps


def scenario_id(seed: int, index: int) -> str:
    return f"scenario/fuzz/s{seed}-{index:09d}"


def scenario_vector(seq: SequenceInput, seed: int, index: int, kind: str, impl: str,
                    description: str | None = None) -> dict[str, Any]:
    """The scenario vector of a (shrunk) sequence, every step's result from the reference."""
    from conformance.constants import GENERATOR_VERSION
    from conformance.scenario.fill import fill_input
    text = description or (f"Fuzz finding: sequence {index} of campaign seed {seed}, shrunk to "
                           f"{len(seq.steps)} steps; divergence class {kind} of {impl}.")
    return fill_input(seq.scenario_input(), id=scenario_id(seed, index), description=text, source="fuzz",
                      categories=categories(seed, kind), opcodes=seq.mnemonics(),
                      generator=f"{GENERATOR} {GENERATOR_VERSION}")


def _contracts_at(seq: SequenceInput, state: Mapping[str, Any]):
    """The sequence's contracts with the storage of ``state`` (a carried state, chapter 11.9.2)."""
    out = {}
    for address, (code, _) in seq.contracts.items():
        body = state["contracts"].get(hex(address), {"storage": {}})
        out[address] = (code, {int(k, 16): int(v, 16) for k, v in body["storage"].items()})
    return out


class SequenceWorker(Worker):
    session_class = ScenarioSession

    def __init__(self, index: int, config: Mapping[str, Any]):
        self.steps = int(config["sequences"])
        # the wall-clock safety net bounds one request: here K calls
        super().__init__(index, {**config, "timeout": float(config.get("timeout", 10.0)) * self.steps})

    def _reference(self, seq: SequenceInput) -> tuple[dict[str, Any], ScenarioRun]:
        scenario = seq.scenario_input()
        return scenario, run_steps(scenario)

    def _run(self, task: Mapping[str, Any], started: float) -> dict[str, Any]:
        start, count = int(task["start"]), int(task["count"])
        view = self.pool.view(int(task["pool_size"]))
        inputs = []
        for idx in range(start, start + count):
            if idx in self.skip:
                continue
            self._at = (idx, None)
            seq = generate_sequence(self.seed, idx, view, self.version, self.steps)
            self._at = (idx, seq.step_request(0))
            inputs.append((idx, seq, seq.scenario_input()))
        for session in self.sessions:
            session.submit([(f"fuzz/{idx}", scenario, False) for idx, _, scenario in inputs])
        outcomes: Counter[str] = Counter()
        requests, new, bounds = [], [], {}
        ref_seconds = 0.0
        for idx, seq, scenario in inputs:
            self._at = (idx, seq.step_request(0))
            t0 = time.perf_counter()
            run = run_steps(scenario)
            ref_seconds += time.perf_counter() - t0
            bounds[f"fuzz/{idx}"] = response_bound(run, self.settings.max_line)
            mnemonics = seq.mnemonics()
            for i, result in enumerate(run.results):
                outcomes[result["error"] or result["status"]] += 1
                fresh = cells(mnemonics, result, scenario["steps"][i]["sandbox"]["limits"]) - self.known_cells
                if fresh:
                    step = seq.step_request(i, _contracts_at(seq, run.states[i]))
                    new.append([idx, sorted(fresh), [], step.to_json()])
            requests.append((idx, seq, scenario, run))
        divergences, findings, safety = [], [], []
        shrunk_here: set[str] = set()
        for impl, session in enumerate(self.sessions):
            answers = session.collect(bounds)
            for idx, seq, scenario, run in requests:
                self._at = (idx, seq.step_request(0))
                rid = f"fuzz/{idx}"
                div: Divergence | None
                if any(r["status"] == "internal" for r in run.results):
                    div = Divergence("reference:INTERNAL_ERROR", detail="the reference itself failed")
                else:
                    answer = answers[rid]
                    if answer.failure == "timeout":
                        answer = self._retry(session, rid, scenario, False, bounds[rid])
                        if answer.failure == "timeout":
                            safety.append(self._sequence_safety(impl, idx, seq, answer))
                            continue
                    div = compare_scenario(run, scenario, answer)
                if div is None:
                    continue
                key = f"{impl}|{div.kind}"
                divergences.append([idx, impl, div.kind])
                if key in self.known_classes or key in shrunk_here or self.findings_full:
                    continue
                shrunk_here.add(key)
                findings.append(self._sequence_finding(impl, idx, seq, div))
        return {"start": start, "count": len(inputs), "worker": self.index, "new": new, "divergences": divergences,
                "findings": findings, "safety_net": safety, "outcomes": dict(outcomes), "arc_runs": 0,
                "ref_seconds": ref_seconds, "seconds": time.perf_counter() - started,
                "restarts": sum(s.restarts for s in self.sessions)}

    def _sequence_safety(self, impl: int, idx: int, seq: SequenceInput, answer) -> dict[str, Any]:
        name = self.sessions[impl].name
        limit = self.settings.timeout
        text = (f"Safety-net entry, not a divergence: sequence {idx} of campaign seed {self.seed} met the "
                f"wall-clock limit twice ({limit:g} s, then {answer.seconds:g} s) on {name}.")
        return {"index": idx, "impl": impl, "run": "main run", "seconds": [limit, answer.seconds],
                "detail": answer.detail, "vector_id": scenario_id(self.seed, idx), "size": seq.size(),
                "vector": scenario_vector(seq, self.seed, idx, SAFETY_NET_CLASS, name, description=text)}

    def check_sequence(self, impl: int, seq: SequenceInput) -> Divergence | None:
        scenario, run = self._reference(seq)
        if any(r["status"] == "internal" for r in run.results):
            return Divergence("reference:INTERNAL_ERROR")
        rid = "fuzz/shrink"
        answer = self.sessions[impl].run([(rid, scenario, False)], {rid: response_bound(run, self.settings.max_line)})
        return compare_scenario(run, scenario, answer[rid])

    def _sequence_finding(self, impl: int, idx: int, seq: SequenceInput, div: Divergence) -> dict[str, Any]:
        kind = div.kind
        budget = 0 if kind.startswith("reference:") else int(self.config["shrink_budget"])
        timeouts = 0

        def keeps(cand: SequenceInput) -> bool:
            nonlocal timeouts
            d = self.check_sequence(impl, cand)
            if d is not None and d.kind == "process:timeout":
                timeouts += 1
                if timeouts >= SHRINK_TIMEOUTS:
                    shrinker.budget = shrinker.tests
            return d is not None and d.kind == kind
        shrinker = SequenceShrinker(keeps, budget)
        t0 = time.perf_counter()
        small = shrinker.shrink(seq) if budget else seq
        final = self.check_sequence(impl, small)
        if final is None or final.kind == "process:timeout":
            final = div
        name = self.sessions[impl].name
        ended = {"minimal": shrinker.minimal} if budget else {}
        return {"index": idx, "impl": impl, "class": kind, "vector_id": scenario_id(self.seed, idx),
                "vector": scenario_vector(small, self.seed, idx, kind, name), "input": small.to_json(),
                "original_size": seq.size(), "size": small.size(), "original_steps": len(seq.steps),
                "steps": len(small.steps), "tests": shrinker.tests, **ended,
                "shrink_seconds": time.perf_counter() - t0, "program": sequence_text(small),
                "diff": final.lines(), "trace": ""}


def make_sequence_worker(index: int, config: Mapping[str, Any]) -> SequenceWorker:
    """The backend's factory in sequence mode (module level: local processes and Ray import it)."""
    worker = SequenceWorker(index, config)
    tune_gc()
    return worker

