"""``rtwo-vm conformance run``: validate implementations against the corpus.

For each implementation (an adapter command): a probe handshake (its name and a fingerprint
select its known-failure entries), the main pass over the selected vectors and the run's
fresh sample (conformance.corpus.fresh), determinism passes in fresh processes under perturbed
environments and shuffled order, evaluation of every vector as its reply arrives — result and
usage field by field, resource bounds, stage, determinism — and, when the adapter can trace,
trace checks (conformance.run.traces). With several implementations their results are also
compared with each other.

A suite runs one spec version (``Settings.spec_version``: every session's hello names it, every
vector is of that version's corpus and every reference result is computed under it); ``rtwo-vm
conformance run`` runs one suite per version an adapter announces (conformance.run.versions).

Every request carries an opaque id derived from the run's seed, never the corpus id, and every
corpus input is blinded for the run (conformance.run.blind, spec 11.8.4): what an implementation
receives is never a published input, and its answers are judged against the reference's
results for what it received. Replies
are judged as they arrive and only what a report needs is kept: a correct result is not kept
at all (it is the vector's expected one), a wrong one within a memory budget.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance.corpus.selection import KnownFailure, fingerprints, known_failure
from conformance.run import blind, determinism, safety_net, traces
from conformance.run.compare import Mismatch, capped, compare_result
from conformance.run.outcomes import UNSUPPORTED, Keeper, Outcome, PassRun, evaluate, light, signature, small
from conformance.run.process import AdapterProcess, Reply, Settings, StartError
from conformance.run.requests import Prepared, jobs
from conformance.run.runner import Pool
from conformance.run.scenarios import ScenarioRuns, run_scenarios


def reference_command() -> str:
    return shlex.join([sys.executable, "-m", "conformance.adapter"])


@dataclass
class Options:
    settings: Settings               # the adapter processes' (spec_version: the version of the suite)
    repeat: int = 1                  # determinism passes (fresh, perturbed, shuffled)
    seed: int = 1                    # the run's seed: request ids, shuffled orders (and the fresh sample)
    max_traces: int = 50             # failing vectors whose traces are diffed, per implementation
    trace_sample: bool = True        # check traces of passing vectors covering every opcode
    exitfirst: bool = False          # stop an implementation at its first unlisted failure
    blind: bool = True               # blind every corpus request (conformance.run.blind, spec 11.8.4)
    prepared: Prepared | None = None     # encoded inputs, shared by the passes (run_suite makes it)


@dataclass
class ImplementationRun:
    command: str
    hello: dict[str, Any] | None = None
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    issues: list[str] = field(default_factory=list)
    restarts: int = 0
    main_seconds: float = 0.0
    total_seconds: float = 0.0
    main_count: int = 0
    passes: list[str] = field(default_factory=list)
    start_error: str = ""                         # why the adapter could not start at all
    cwd: str = ""                                 # the adapter's working directory
    seed: int = 0
    gave_up: str = ""                             # why the remaining vectors were not run
    stopped: int = 0                              # vectors not run after -x stopped the run
    retried: int = 0                              # attempts that met the safety net and ran again
    scenarios: ScenarioRuns = field(default_factory=ScenarioRuns)   # the scenario pass (11.9.4)

    @property
    def name(self) -> str:
        impl = (self.hello or {}).get("implementation") or {}
        return impl.get("name") or self.command

    @property
    def version(self) -> str:
        return ((self.hello or {}).get("implementation") or {}).get("version", "")

    @property
    def can_trace(self) -> bool:
        return "trace" in ((self.hello or {}).get("capabilities") or [])

    @property
    def rate(self) -> float:
        return self.main_count / self.main_seconds if self.main_seconds else 0.0

    def count(self, status: str, fresh: bool | None = None) -> int:
        return sum(1 for o in self.outcomes.values()
                   if o.status == status and (fresh is None or o.fresh == fresh))

    def unsupported(self) -> int:
        return sum(1 for o in self.outcomes.values() if o.status == "fail" and o.categories == [UNSUPPORTED])

    @property
    def ok(self) -> bool:
        return (not self.issues and self.count("fail") == 0 and self.count("xpass") == 0
                and self.scenarios.ok)


@dataclass
class SuiteResult:
    runs: list[ImplementationRun]
    vectors: dict[str, Mapping[str, Any]]
    version: str                      # the spec version of every session and vector
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    blinding: dict[str, Any] = field(default_factory=lambda: dict(blind.OFF))   # blind.Summary.to_json()
    scenarios: dict[str, Mapping[str, Any]] = field(default_factory=dict)    # scenario vectors, as sent
    executed: dict[str, frozenset[str]] = field(default_factory=dict)       # triage's cache: id -> instructions run

    @property
    def ok(self) -> bool:
        # A disagreement always comes with a failing (or known-failing) outcome of at least one
        # of the implementations; it is reported, and judged through those outcomes.
        return all(r.ok for r in self.runs)


def probe(argv: list[str], settings: Settings) -> dict[str, Any]:
    """Start the adapter once, handshake and shut it down; its hello, or StartError."""
    proc = AdapterProcess(argv, settings, settings.log_dir, 0)
    try:
        hello = proc.handshake()
        _, problem = proc.shutdown(timeout=min(5.0, settings.timeout))
    finally:
        proc.kill()
    if problem:
        raise StartError(f"adapter exit behaviour: {problem}")
    return hello


def _pass_settings(settings: Settings, label: str, run_name: str, env: Mapping[str, str] | None = None) -> Settings:
    return replace(settings, env=env if env is not None else settings.env,
                   log_label=f"{slug(run_name)}__{label}")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_")[:60] or "impl"


def run_implementation(command: str, vectors: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
                       options: Options, progress: Callable[[str, Reply], None] | None = None) -> ImplementationRun:
    started = time.perf_counter()
    settings = options.settings
    run = ImplementationRun(command, cwd=settings.cwd or os.getcwd(), seed=options.seed)
    argv = shlex.split(command)
    try:
        # Before the hello the name is unknown: the log is named after the command.
        run.hello = probe(argv, _pass_settings(settings, "probe", " ".join(Path(a).name for a in argv)[:40]))
    except StartError as err:
        run.start_error = str(err)
        run.issues.append(f"the adapter could not start: {err}")
        for v in vectors:
            run.outcomes[v["id"]] = Outcome(v["id"], "fail", [Mismatch("response", "a response", "unavailable",
                                                                        "unavailable")], str(err))
        run.total_seconds = time.perf_counter() - started
        return run
    by_id = {v["id"]: v for v in vectors}
    prints = fingerprints(command, run.name, run.version)
    keeper = Keeper()

    def listed(vid: str) -> KnownFailure | None:
        return known_failure(known, run.name, vid, prints)

    main_settings = _pass_settings(settings, "main", run.name)
    main_env = determinism.environment_of(main_settings.env)
    pool = Pool(argv, main_settings)

    def on_main(reply: Reply) -> None:
        vector = by_id[reply.vector_id]
        outcome = evaluate(vector, reply)
        # A correct result needs no digest: a second run is compared with the expected one.
        outcome.seconds, outcome.signature = reply.seconds, "" if outcome.correct else signature(reply)
        keeper.keep(outcome, vector, reply)
        outcome.passes.append(PassRun("main pass", determinism.MAIN_PASS, main_env, None, light(reply),
                                      response=determinism.describe(determinism.reply_signature(reply))))
        run.outcomes[reply.vector_id] = outcome
        if progress:
            progress(command, reply)
        if options.exitfirst and outcome.status == "fail" and listed(reply.vector_id) is None:
            pool.stop()

    main_started = time.perf_counter()
    prepared = options.prepared or Prepared(vectors, settings)
    main = pool.run(prepared.jobs(vectors, options.seed, "main"), on_main, keep=False)
    run.main_seconds, run.main_count = time.perf_counter() - main_started, len(run.outcomes)
    run.passes.append(determinism.MAIN_PASS)
    run.restarts += main.restarts
    run.issues.extend(main.issues)
    run.gave_up = next((i for i in main.issues if i.startswith("gave up")), "")
    if len(run.outcomes) < len(vectors):        # -x stopped the run: keep the corpus order
        run.stopped = len(vectors) - len(run.outcomes)
    run.outcomes = {v["id"]: run.outcomes[v["id"]] for v in vectors if v["id"] in run.outcomes}
    retried = safety_net.ids_of(run.outcomes)
    if retried and not run.gave_up:
        # The wall clock is a safety net: what met it runs once more with more time.
        again_settings = _pass_settings(settings, "retry", run.name)
        replies, restarts = safety_net.collect(argv, again_settings, prepared.jobs(
            [by_id[i] for i in retried], options.seed, "retry"))
        run.restarts += restarts
        run.retried = len(retried)
        for vid in retried:
            _settle(run, by_id[vid], replies.get(vid), keeper, main_env, settings)
    # A vector that hung in the main pass has its verdict; the passes do not run it again.
    ran = [by_id[i] for i, o in run.outcomes.items() if not safety_net.met_safety_net(o.passes[0].reply)]
    healthy = not run.gave_up and not run.stopped

    for k in range(options.repeat if healthy else 0):
        p = determinism.perturbation(k, options.seed, settings.env)
        order = determinism.shuffled([v["id"] for v in ran], p.order_seed)
        label, name = p.describe(), f"determinism pass {k + 1}"

        pending: list[str] = []

        def judge(reply: Reply, retry: bool, name=name, p=p, label=label) -> None:
            outcome = run.outcomes[reply.vector_id]
            if retry and safety_net.met_safety_net(reply):
                diff = [Mismatch(f"{name}: response", "an answer, as in the main pass",
                                 safety_net.hang_detail(settings), "timeout")]
            elif _same(outcome, by_id[reply.vector_id], reply):
                diff = []
            else:
                diff = determinism.differences(_main_reply(outcome), reply, f"{name} against the main pass")
            shown = f"{label}; run again with {safety_net.retry_settings(settings).timeout:g} s " \
                    "after meeting the wall-clock safety net" if retry else label
            kept = light(reply)
            outcome.passes.append(PassRun(name, shown, p.recorded, p.order_seed, kept, bool(diff),
                                          determinism.describe(determinism.reply_signature(reply))))
            if diff:
                kept.message = small(reply.message)
                outcome.status = "fail"
                outcome.failures = capped(outcome.failures + diff)

        def on_again(reply: Reply, pending=pending, judge=judge) -> None:
            if safety_net.met_safety_net(reply):
                pending.append(reply.vector_id)     # not compared: it is run again below
            else:
                judge(reply, False)
            if progress:
                progress(command, reply)
        pass_settings = _pass_settings(settings, f"pass{k + 1}", run.name, p.env)
        again = Pool(argv, pass_settings).run(
            prepared.jobs([by_id[i] for i in order], options.seed, f"pass{k + 1}"),
            on_again, keep=False)
        run.passes.append(label)
        run.restarts += again.restarts
        if pending:
            replies, restarts = safety_net.collect(argv, replace(pass_settings, log_label=pass_settings.log_label + "_retry"),
                                                   prepared.jobs([by_id[i] for i in pending], options.seed,
                                                                 f"pass{k + 1}-retry"))
            run.restarts += restarts
            run.retried += len(pending)
            for vid in pending:
                judge(replies.get(vid) or Reply(vid, None, "unavailable", "no reply to the retry"), True)
        run.issues.extend(f"{label}: {i}" for i in again.issues)

    _classify_known(run, listed)
    if run.can_trace and healthy:
        _check_traces(run, argv, _pass_settings(settings, "traces", run.name), by_id, options)
    run.total_seconds = time.perf_counter() - started
    return run


def _settle(run: ImplementationRun, vector: Mapping[str, Any], reply: Reply | None, keeper: "Keeper",
            env: dict[str, str | None], settings: Settings) -> None:
    """The main-pass verdict of a vector that met the safety net, from its second attempt."""
    first = run.outcomes[vector["id"]]
    label = (f"{determinism.MAIN_PASS}; run again with {safety_net.retry_settings(settings).timeout:g} s "
             "after meeting the wall-clock safety net")
    if reply is None or safety_net.met_safety_net(reply):
        first.reason = safety_net.hang_detail(settings)
        if reply is not None:
            first.passes.append(PassRun("main pass, run again", label, env, None, light(reply)))
        return
    outcome = evaluate(vector, reply)
    outcome.seconds, outcome.signature = reply.seconds, "" if outcome.correct else signature(reply)
    keeper.keep(outcome, vector, reply)
    outcome.passes = [PassRun("main pass", label, env, None, light(reply)),
                      replace(first.passes[0], name="main pass, first attempt (met the wall-clock safety net)")]
    run.outcomes[vector["id"]] = outcome


def _same(outcome: Outcome, vector: Mapping[str, Any], reply: Reply) -> bool:
    """Whether a later pass's reply equals the main pass's."""
    if outcome.correct:
        message = reply.message
        return (reply.failure is None and message is not None and message.get("type") == "result"
                and message.get("result") == vector["expected"]["result"]
                and message.get("stage") == (outcome.reply or {}).get("stage"))
    return signature(reply) == outcome.signature


def _main_reply(outcome: Outcome) -> Reply:
    main = outcome.passes[0].reply
    assert main is not None     # a live run records the main pass's reply (only a replayed report may not)
    return Reply(outcome.vector_id, outcome.reply if main.failure is None else None, main.failure, main.detail)


def _classify_known(run: ImplementationRun, listed: Callable[[str], KnownFailure | None]) -> None:
    """Listed vectors run like any other: a failure is expected (xfail), a pass is news (xpass)."""
    for vid, outcome in run.outcomes.items():
        entry = listed(vid)
        if entry is None:
            continue
        outcome.known = entry.describe()
        outcome.status = "xfail" if outcome.status == "fail" else "xpass"


def _check_traces(run: ImplementationRun, argv, settings: Settings, by_id, options: Options) -> None:
    """Traces of failing vectors that got a result (unlisted first) name the first divergence;
    traces of passing vectors covering every opcode must equal the reference's."""
    failing = sorted((o for o in run.outcomes.values()
                      if o.failed and o.reply is not None and o.reply.get("type") == "result"),
                     key=lambda o: o.status == "xfail")
    wanted = [o.vector_id for o in failing][:options.max_traces]
    passing = [by_id[vid] for vid, o in run.outcomes.items() if o.status in ("pass", "xpass") and not o.fresh]
    sample = traces.covering_sample(passing) if options.trace_sample else []
    if not wanted and not sample:
        return

    pending: list[str] = []

    def on_trace(reply: Reply, retry: bool = False) -> None:
        outcome = run.outcomes[reply.vector_id]
        passed = outcome.status in ("pass", "xpass")
        if safety_net.met_safety_net(reply) and not retry:
            pending.append(reply.vector_id)     # the safety net: judged after a second attempt
            return
        if safety_net.met_safety_net(reply):
            divergence, found = None, [Mismatch("trace", "a traced response",
                                                safety_net.hang_detail(settings), "timeout")]
        else:
            divergence, found = traces.judge(by_id[reply.vector_id], reply.message, passed,
                                             settings.spec_version)
        outcome.divergence = divergence
        if not passed and (reply.message is None or not isinstance(reply.message.get("trace"), list)):
            outcome.reason = (outcome.reason + "; " if outcome.reason else "") + "no trace returned"
        if found:
            outcome.failures.extend(found)
            outcome.status = "fail" if outcome.status == "pass" else "xfail" if outcome.known else outcome.status
            if outcome.status == "xpass":
                outcome.status = "xfail"
    Pool(argv, settings).run(jobs([by_id[i] for i in wanted + sample], trace=True, seed=options.seed,
                                  label="traces", settings=settings), on_trace, keep=False)
    if pending:
        replies, restarts = safety_net.collect(argv, settings, jobs(
            [by_id[i] for i in pending], trace=True, seed=options.seed, label="traces-retry",
            settings=settings))
        run.restarts += restarts
        run.retried += len(pending)
        for vid in pending:
            on_trace(replies.get(vid) or Reply(vid, None, "unavailable", "no reply to the retry"), True)


def _run_scenarios(run: ImplementationRun, scenarios: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
                   options: Options, progress: Callable[[str, Reply], None] | None) -> None:
    """The scenario pass of one implementation (conformance.run.scenarios)."""
    if run.start_error or run.stopped:
        why = "the adapter could not start" if run.start_error else "-x stopped the run at the first failure"
        run.scenarios = ScenarioRuns(not_run={s["id"]: why for s in scenarios})
        return
    prints = fingerprints(run.command, run.name, run.version)
    run.scenarios = run_scenarios(
        run.command, run.hello, scenarios, _pass_settings(options.settings, "scenarios", run.name), options.seed,
        options.repeat, lambda vid: known_failure(known, run.name, vid, prints),
        (lambda reply: progress(run.command, reply)) if progress else None)
    run.restarts += run.scenarios.restarts
    run.retried += run.scenarios.retried


def _labels(runs: Sequence[ImplementationRun]) -> dict[int, str]:
    """How to call each implementation: its name, or its command when names repeat."""
    names = [r.name for r in runs]
    return {id(r): r.name if names.count(r.name) == 1 else r.command for r in runs}


def _cross_check(runs: Sequence[ImplementationRun], result: SuiteResult) -> None:
    """Implementations must agree with each other too (result, and stage when both report it).

    A disagreement is reported with the fields it is about. It counts against the
    implementations that do not match the expected result, never against one that does."""
    label = _labels(runs)
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            for vid, oa in a.outcomes.items():
                ob = b.outcomes.get(vid)
                if ob is None:
                    continue
                ra = oa.reply.get("result") if oa.reply else None
                rb = ob.reply.get("result") if ob.reply else None
                if ra is None and rb is None:
                    continue
                found = compare_result(ra, rb) if isinstance(ra, dict) else [Mismatch("result", ra, rb, "result")]
                sa, sb = (oa.reply or {}).get("stage", "-"), (ob.reply or {}).get("stage", "-")
                if "-" not in (sa, sb) and sa != sb:
                    found.append(Mismatch("stage", sa, sb, "stage"))
                if not found:
                    continue
                pair = ((a, oa, b), (b, ob, a))
                wrong = [(run, o, other) for run, o, other in pair if not o.correct]
                result.disagreements.append({
                    "vector": vid, "implementations": [label[id(a)], label[id(b)]],
                    "commands": [a.command, b.command],
                    "matches_expected": [label[id(run)] for run, o, _ in pair if o.correct],
                    "fields": [m.field for m in found],
                    "differences": [{"field": m.field, "values": [m.expected, m.actual]} for m in found]})
                # Both match the expected result yet differ: impossible unless the comparisons
                # drift apart; then neither is trusted.
                for run, outcome, other in wrong or pair:
                    outcome.status = "fail" if outcome.status == "pass" else outcome.status
                    flip = run is b     # compare_result's "expected" side is a's value
                    outcome.failures.extend(
                        Mismatch(f"agreement with {label[id(other)]}: {m.field}", m.expected if flip else m.actual,
                                 m.actual if flip else m.expected, "disagreement") for m in found)


def run_suite(commands: Sequence[str], vectors: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
              options: Options, progress: Callable[[str, Reply], None] | None = None,
              scenarios: Sequence[Mapping[str, Any]] = ()) -> SuiteResult:
    """Run every implementation over ``vectors``. With ``options.blind`` (the default) every
    vector, the fresh sample's too, is first blinded for the run's seed (conformance.run.blind):
    what is sent, judged, reported and bundled is the blinded vector, whose expected result
    the reference computed. ``scenarios`` (scenario vectors, the fresh ones included) are
    blinded alike (conformance.run.blind_scenario) and sent to every adapter that announces
    the capability (conformance.run.scenarios)."""
    started = time.perf_counter()
    blinding = dict(blind.OFF)
    if options.blind:
        vectors, summary = blind.blind_all(vectors, options.seed, options.settings.spec_version)
        blinding = summary.to_json()
        options = replace(options, prepared=None)   # inputs encoded from the blinded vectors
    if options.prepared is None:        # encode every input once, for every implementation and pass
        options = replace(options, prepared=Prepared(vectors, options.settings))
    runs = [run_implementation(c, vectors, known, options, progress) for c in commands]
    scenarios = list(scenarios)
    if options.blind and scenarios:
        from conformance.run import blind_scenario
        scenarios, scenario_summary = blind_scenario.blind_all(scenarios, options.seed, options.settings.spec_version)
        blinding["scenarios"] = scenario_summary.to_json()
    for run in runs:
        _run_scenarios(run, scenarios, known, options, progress)
    result = SuiteResult(runs, {v["id"]: v for v in vectors}, options.settings.spec_version, blinding=blinding,
                         scenarios={s["id"]: s for s in scenarios})
    if len(runs) > 1:
        _cross_check(runs, result)
    result.seconds = time.perf_counter() - started
    return result
