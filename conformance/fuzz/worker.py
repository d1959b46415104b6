"""One fuzzing worker: generates its share of requests, runs each on the in-process reference
(the oracle) and through every implementation's adapter, compares, and shrinks what diverges.

A worker owns its adapter processes (one main session per implementation and, lazily, one per
perturbation), a copy of the pool and of the campaign's known coverage, kept in step by
``update`` messages the coordinator sends at each epoch boundary. ``run(task)`` handles the
requests [start, start + count) against the pool as it stood at the epoch start, so its answer
depends on the task only, never on which worker ran it or how many there are.
"""

from __future__ import annotations

import json
import time
import traceback
from collections import Counter
from typing import Any, Mapping

from conformance.run import determinism
from conformance.adapter import tune_gc
from conformance.fuzz.classify import Divergence, compare, compare_runs
from conformance.fuzz.feedback import ArcTracer, cells
from conformance.fuzz.findings import SAFETY_NET_CLASS, make_vector, program_text, vector_id
from conformance.fuzz.build import has_loop
from conformance.fuzz.generate import generate
from conformance.fuzz.pool import Pool
from conformance.fuzz.mutate import _shift_targets
from conformance.fuzz.program import Code, FuzzInput, row
from conformance.fuzz.session import Session
from conformance.fuzz.shrink import Shrinker
from conformance.fuzz.state import request_problem
from conformance.run.requests import SLACK
from conformance.run.process import Settings
from conformance.run.safety_net import RETRY_FACTOR  # a request that met the limit runs once more
from conformance.run.tracediff import first_divergence, reference_trace
from conformance.corpus.vector import BASE, expected_of, run_reference

# Appended after an instruction to show the top of the stack in the output.
EXPOSE = [("PUSH1", 0), ("SWAP1", 0), ("MSTORE", 0), ("PUSH1", 0), ("PUSH1", 8), ("RETURN", 0)]
DEFAULTS = {"timeout": 10.0, "window": 32, "perturb_share": 4, "trace_share": 16, "arc_share": 32,
            "shrink_budget": 1500}
CRASH_TRACEBACK = 8000  # characters of a crash's traceback kept (its end: where it was raised)
SHRINK_TIMEOUTS = 3   # shrink candidates that may meet the wall-clock limit before the shrinker stops


def _every(index: int, share: int, salt: int) -> bool:
    return share > 0 and ((index + salt) * 2654435761 >> 5) % share == 0


class Worker:
    session_class = Session           # the adapter session of each implementation

    def __init__(self, index: int, config: Mapping[str, Any]):
        self.index = index
        self.config = {**DEFAULTS, **config}
        self.seed = int(self.config["seed"])
        self.version = str(self.config.get("spec_version", BASE))     # every request's (the campaign's)
        settings = Settings(self.version, timeout=float(self.config["timeout"]), window=int(self.config["window"]),
                            workers=1)
        self.settings = settings
        self.sessions = [self.session_class(cmd, settings) for cmd in self.config["impls"]]
        self.perturbed: dict[tuple[int, int], Session] = {}
        self.pool = Pool.from_json(self.config.get("pool", []), int(self.config.get("pool_added", 0)))
        self.known_cells: set[str] = set(self.config.get("cells", ()))
        self.known_arcs: set[str] = set(self.config.get("arcs", ()))
        self.known_classes: set[str] = set(self.config.get("classes", ()))
        # the campaign keeps no more findings: a new class is counted, not shrunk (its finding
        # would be dropped; set between epochs, so the results do not depend on the workers)
        self.findings_full = bool(self.config.get("findings_full"))
        self.tracer = ArcTracer(int(self.config["arc_share"]), self.version)
        self.skip: frozenset[int] = frozenset(int(i) for i in self.config.get("skip", ()))
        self._at: tuple[int, FuzzInput | None] = (0, None)
        try:
            for s in self.sessions:
                s.start()
        except BaseException:
            self.close()
            raise

    # -- coordinator messages ----------------------------------------------------------------
    def update(self, message: Mapping[str, Any]) -> None:
        for j in message.get("pool", ()):
            self.pool.add(FuzzInput.from_json(j))
        self.known_cells.update(message.get("cells", ()))
        self.known_arcs.update(message.get("arcs", ()))
        self.known_classes.update(message.get("classes", ()))
        self.findings_full = self.findings_full or bool(message.get("findings_full"))

    def hellos(self) -> list[dict[str, Any] | None]:
        return [s.hello for s in self.sessions]

    def close(self) -> None:
        for s in [*self.sessions, *self.perturbed.values()]:
            s.close()

    # -- one task ------------------------------------------------------------------------------
    def _perturbed(self, impl: int, which: int) -> Session:
        key = (impl, which % len(determinism.PERTURBATIONS))
        if key not in self.perturbed:
            env = determinism.perturbation(key[1], self.seed).env
            settings = Settings(self.version, timeout=self.settings.timeout, window=self.settings.window, workers=1,
                                env=env)
            self.perturbed[key] = Session(self.config["impls"][impl], settings)
        return self.perturbed[key]

    def run(self, task: Mapping[str, Any]) -> dict[str, Any]:
        """The results of one task; an unexpected exception anywhere in it (a bug of the fuzzer
        or of the reference) is caught here, in the worker, and returned as the task's ``crash``
        with the request it happened at and its traceback, so the coordinator can save the
        campaign, report it and skip that request on ``--resume``."""
        self._at = (int(task["start"]), None)
        started = time.perf_counter()
        try:
            return self._run(task, started)
        except Exception as err:  # noqa: BLE001 - reported whole, with the request and traceback
            return self._crashed(task, err, started)

    def _crashed(self, task: Mapping[str, Any], err: Exception, started: float) -> dict[str, Any]:
        index, inp = self._at
        for s in [*self.sessions, *self.perturbed.values()]:
            s.reset()            # a batch may be half read: the next task starts on fresh processes
        request = None
        try:
            # kept only when it is a request the campaign could hold (a resume checks it so)
            if inp is not None and request_problem(inp.to_json()) is None:
                request = inp.to_json()
        except Exception:  # noqa: BLE001 - the input itself may be what is broken
            request = None
        message = " ".join(f"{type(err).__name__}: {err}".split())[:500]
        crash = {"index": index, "worker": self.index, "exception": message,
                 "traceback": traceback.format_exc()[-CRASH_TRACEBACK:], "input": request}
        return {"start": int(task["start"]), "count": 0, "worker": self.index, "new": [], "divergences": [],
                "findings": [], "safety_net": [], "outcomes": {}, "arc_runs": 0, "ref_seconds": 0.0,
                "seconds": time.perf_counter() - started, "restarts": sum(s.restarts for s in self.sessions),
                "crash": crash}

    def _run(self, task: Mapping[str, Any], started: float) -> dict[str, Any]:
        start, count = int(task["start"]), int(task["count"])
        view = self.pool.view(int(task["pool_size"]))
        skip = self.skip
        inputs = []
        for idx in range(start, start + count):
            if idx in skip:              # crashed in an earlier session: recorded, not run again
                continue
            self._at = (idx, None)
            inp = generate(self.seed, idx, view, self.version)
            self._at = (idx, inp)
            inputs.append((idx, inp, inp.vector_input()))
        by_id = {f"fuzz/{idx}": vi for idx, _, vi in inputs}
        checks = [f"fuzz/{idx}" for idx, _, _ in inputs if _every(idx, int(self.config["perturb_share"]), 7)]
        order = determinism.shuffled(checks, self.seed + start)
        traced, second_sessions = [], []
        # The adapters start on the batch while the reference runs here.
        for impl, session in enumerate(self.sessions):
            wanted = {idx for idx, inp, _ in inputs if session.can_trace and _traceable(idx, inp, self.config)}
            traced.append(wanted)
            session.submit([(f"fuzz/{idx}", vi, idx in wanted) for idx, _, vi in inputs])
            second = self._perturbed(impl, start // max(1, count)) if checks else None
            if second is not None:
                second.submit([(rid, by_id[rid], False) for rid in order], session.untraced_lines())
            second_sessions.append(second)
        any_traced = set().union(*traced) if traced else set()
        requests, new = [], []
        outcomes: Counter[str] = Counter()
        ref_traces: dict[int, list] = {}        # the reference trace of a request, once for every implementation
        limits: dict[str, int] = {}             # response bounds above the default (11.5.1)
        trace_limits: dict[str, int] = {}
        arc_runs, ref_seconds = 0, 0.0
        for idx, inp, vi in inputs:
            self._at = (idx, inp)
            t0 = time.perf_counter()
            if self.tracer.wanted(idx):
                result, arcs = self.tracer.run(run_reference, vi, self.version)
                arc_runs += 1
            else:
                result, arcs = run_reference(vi, self.version), set()
            expected = expected_of(result, self.version)
            rj = expected["result"]
            rid = f"fuzz/{idx}"
            bound = self._bound(rj)
            if bound is not None:
                limits[rid] = bound
            if idx in any_traced:
                ref_traces[idx] = trace = reference_trace(vi, self.version)
                tb = self._trace_bound(rj, trace, bound)
                if tb is not None:
                    trace_limits[rid] = tb
            ref_seconds += time.perf_counter() - t0
            outcomes[rj["error"] or rj["status"]] += 1
            fresh_cells = cells(inp.mnemonics(), rj, vi["sandbox"]["limits"]) - self.known_cells
            fresh_arcs = arcs - self.known_arcs
            if fresh_cells or fresh_arcs:
                new.append([idx, sorted(fresh_cells), sorted(fresh_arcs), inp.to_json()])
            requests.append((idx, inp, vi, expected))
        divergences, findings, safety = [], [], []
        shrunk_here: set[str] = set()
        for impl, session in enumerate(self.sessions):
            wanted = traced[impl]
            bounds = {**limits, **{r: b for r, b in trace_limits.items() if int(r[5:]) in wanted}}
            answers = session.collect(bounds)
            second_session = second_sessions[impl]
            perturbed = second_session.collect(limits) if second_session is not None else {}
            for idx, inp, vi, expected in requests:
                self._at = (idx, inp)
                rid = f"fuzz/{idx}"
                div: Divergence | None
                if expected["result"]["status"] == "internal":
                    div = Divergence("reference:INTERNAL_ERROR", detail="the reference itself failed")
                else:
                    answer = answers[rid]
                    if answer.failure == "timeout":
                        answer = self._retry(session, rid, vi, idx in wanted, bounds.get(rid))
                        if answer.failure == "timeout":
                            safety.append(self._safety(impl, idx, inp, answer, "main run"))
                            continue
                    div = compare(expected, vi, answer, ref_traces.get(idx) if idx in wanted else None)
                    if div is None and rid in perturbed:
                        again = perturbed[rid]
                        if again.failure == "timeout":
                            assert second_session is not None     # it gave the perturbed answers
                            again = self._retry(second_session, rid, vi, False, limits.get(rid))
                            if again.failure == "timeout":
                                safety.append(self._safety(impl, idx, inp, again, "perturbed run"))
                                continue
                        div = compare_runs(_untraced(answer), again)
                if div is None:
                    continue
                key = f"{impl}|{div.kind}"
                divergences.append([idx, impl, div.kind])
                if key in self.known_classes or key in shrunk_here or self.findings_full:
                    continue
                shrunk_here.add(key)
                findings.append(self._finding(impl, idx, inp, div))
        return {"start": start, "count": len(inputs), "worker": self.index, "new": new, "divergences": divergences,
                "findings": findings, "safety_net": safety, "outcomes": dict(outcomes), "arc_runs": arc_runs,
                "ref_seconds": ref_seconds, "seconds": time.perf_counter() - started,
                "restarts": sum(s.restarts for s in self.sessions)}

    # -- the wall-clock safety net ---------------------------------------------------------------
    def _retry(self, session: Session, rid: str, vi: Mapping[str, Any], trace: bool, bound: int | None):
        """A request that met the wall-clock limit, once more on a fresh process with RETRY_FACTOR
        times the limit: an answer then is judged like any other; a second timeout is not."""
        limits = {rid: bound} if bound is not None else None
        return session.run([(rid, vi, trace)], limits, timeout=RETRY_FACTOR * self.settings.timeout)[rid]

    def _safety(self, impl: int, idx: int, inp: FuzzInput, answer, run: str) -> dict[str, Any]:
        """A safety-net entry: reported with what reproduces it, never a verdict."""
        name = self.sessions[impl].name
        limit = self.settings.timeout
        text = (f"Safety-net entry, not a divergence: request {idx} of campaign seed {self.seed} met the "
                f"wall-clock limit twice ({limit:g} s, then {answer.seconds:g} s) on {name} ({run}).")
        return {"index": idx, "impl": impl, "run": run, "seconds": [limit, answer.seconds], "detail": answer.detail,
                "vector_id": vector_id(self.seed, idx), "size": inp.size(),
                "vector": make_vector(inp, self.seed, idx, SAFETY_NET_CLASS, name, description=text)}

    def _trace_bound(self, rj: Mapping[str, Any], trace: list, bound: int | None) -> int | None:
        """The bound of a traced response when above the default: twice the reference's trace
        and result plus 8 KiB (as conformance.run.requests bounds a traced vector)."""
        result = bound if bound is not None else 2 * len(json.dumps(rj, separators=(",", ":"))) + SLACK
        size = 2 * len(json.dumps(trace, separators=(",", ":"))) + result
        return size if size > self.settings.max_line else None

    def _bound(self, rj: Mapping[str, Any]) -> int | None:
        """The response bound of a request whose expected result may need more than the default
        line (spec 11.5.1: twice the expected result plus 8 KiB); None for the default. A cheap
        overestimate first, the exact size only when it passes the default."""
        items = len(rj["calls"]) + len(rj["events"]) + len(rj["state_changes"])
        guess = len(rj["output"]) + sum(len(e["data"]) for e in rj["events"]) + 1024 * items + 4096
        if 2 * guess + SLACK <= self.settings.max_line:
            return None
        exact = 2 * len(json.dumps(rj, separators=(",", ":"))) + SLACK
        return exact if exact > self.settings.max_line else None

    # -- a divergence: shrink it and describe it -----------------------------------------------
    def check(self, impl: int, inp: FuzzInput, kind: str, trace: bool = False) -> Divergence | None:
        vi = inp.vector_input()
        result = run_reference(vi, self.version)
        if result.status == "internal":
            return Divergence("reference:INTERNAL_ERROR")
        expected = expected_of(result, self.version)
        session = self.sessions[impl]
        want_trace = (trace or kind.startswith("trace:")) and session.can_trace
        bound = self._bound(expected["result"])
        limits = {"fuzz/shrink": bound} if bound is not None else None
        ref_trace = reference_trace(vi, self.version) if want_trace else None
        traced_limits = limits
        if ref_trace is not None:
            tb = self._trace_bound(expected["result"], ref_trace, bound)
            traced_limits = {"fuzz/shrink": tb} if tb is not None else limits
        answer = session.run([("fuzz/shrink", vi, want_trace)], traced_limits)["fuzz/shrink"]
        div = compare(expected, vi, answer, ref_trace)
        if div is None and kind.startswith("nondeterministic:"):
            answer = _untraced(answer)
            for which in range(len(determinism.PERTURBATIONS)):
                again = self._perturbed(impl, which).run([("fuzz/shrink", vi, False)], limits)["fuzz/shrink"]
                div = compare_runs(answer, again)
                if div is not None:
                    break
        return div

    def _expose(self, impl: int, inp: FuzzInput) -> tuple[FuzzInput, Divergence] | None:
        """A trace-only divergence made visible in the result: right after the entry-frame
        instruction whose effect the traces first disagree on, store the top of the stack and
        return it. (A vector whose result matches cannot fail ``conformance run``.)"""
        entry = inp.contracts.get(inp.to)
        if entry is None:
            return None
        code, storage = entry
        if code.rows is None or not self.sessions[impl].can_trace:
            return None
        vi = inp.vector_input()
        answer = self.sessions[impl].run([("fuzz/expose", vi, True)])["fuzz/expose"]
        if answer.message is None or not isinstance(answer.message.get("trace"), list):
            return None
        ref = reference_trace(vi, self.version)
        d = first_divergence(ref, answer.message["trace"])
        if d is None or d.step == 0 or d.summary or ref[d.step - 1].get("depth") != 1:
            return None
        offsets: dict[int, int] = {}        # byte offset -> row index
        pc = 0
        for index, (m, _) in enumerate(code.rows):
            offsets[pc] = index
            pc += row(m).size
        at = ref[d.step - 1].get("pc")
        j = offsets.get(at) if isinstance(at, int) else None
        if j is None:
            return None
        rows = _shift_targets(list(code.rows), j + 1, len(EXPOSE))
        rows[j + 1:j + 1] = EXPOSE
        cand = inp.copy()
        cand.contracts[inp.to] = (Code(rows=rows, data=code.data, version=code.version), dict(storage))
        found = self.check(impl, cand, "")
        if found is None or found.kind.startswith(("trace:", "process:", "reference:")):
            return None
        return cand, found

    def _finding(self, impl: int, idx: int, inp: FuzzInput, div: Divergence) -> dict[str, Any]:
        kind = div.kind
        if kind.startswith("trace:"):
            exposed = self._expose(impl, inp)
            if exposed is not None:
                finding = self._finding(impl, idx, *exposed)
                finding.update({"class": kind, "exposed_as": exposed[1].kind, "original_size": inp.size()})
                return finding
        budget = int(self.config["shrink_budget"])
        if kind.startswith("reference:"):
            budget = 0
        timeouts = 0

        def keeps(cand: FuzzInput) -> bool:
            # A candidate that meets the wall-clock limit does not keep the class; after
            # SHRINK_TIMEOUTS of them the shrinker stops with what it has (each costs the limit).
            nonlocal timeouts
            d = self.check(impl, cand, kind)
            if d is not None and d.kind == "process:timeout":
                timeouts += 1
                if timeouts >= SHRINK_TIMEOUTS:
                    shrinker.budget = shrinker.tests
            return d is not None and d.kind == kind
        shrinker = Shrinker(keeps, budget)
        t0 = time.perf_counter()
        small = shrinker.shrink(inp) if budget else inp
        final = self.check(impl, small, kind, trace=True)
        if final is None or final.kind == "process:timeout":        # a wall-clock event is no diff
            final = div
        trace_line = ""
        session = self.sessions[impl]
        if session.can_trace and not kind.startswith("process:"):
            vi = small.vector_input()
            answer = session.run([("fuzz/trace", vi, True)])["fuzz/trace"]
            if answer.message is not None and isinstance(answer.message.get("trace"), list):
                d = first_divergence(reference_trace(vi, self.version), answer.message["trace"])
                trace_line = str(d) if d is not None else "traces agree"
        vector = make_vector(small, self.seed, idx, kind, session.name)
        ended = {"minimal": shrinker.minimal} if budget else {}     # not shrunk: neither minimal nor cut
        return {"index": idx, "impl": impl, "class": kind, "vector_id": vector_id(self.seed, idx),
                "vector": vector, "input": small.to_json(), "original_size": inp.size(), "size": small.size(),
                "tests": shrinker.tests, **ended, "shrink_seconds": time.perf_counter() - t0,
                "program": program_text(small), "diff": final.lines(), "trace": trace_line}


def _untraced(answer):
    """An answer without its trace (a perturbed run is not traced)."""
    if answer.message is None or "trace" not in answer.message:
        return answer
    return type(answer)({k: v for k, v in answer.message.items() if k != "trace"}, answer.failure, answer.detail)


def _traceable(idx: int, inp: FuzzInput, config: Mapping[str, Any]) -> bool:
    """Trace a share of the requests, those small enough for traces to stay cheap."""
    return _every(idx, int(config["trace_share"]), 3) and not has_loop(inp) and inp.size() <= 48


def make_worker(index: int, config: Mapping[str, Any]) -> Worker:
    """The backend's factory (a module-level function, so local processes and Ray can import it).

    A worker is the main work of its process (the CLI's with one worker, a spawned process or
    a Ray actor otherwise) and allocates many short-lived objects per request while the pool,
    the coverage sets and the spec tables stay: the collector is tuned as in the adapter and
    ``conformance run`` (results do not depend on it; the worker's CPU time per request drops
    by about a third)."""
    worker = Worker(index, config)
    tune_gc()
    return worker
