"""``rtwo-vm conformance run``: validate implementations against the corpus.

For each implementation (an adapter command): a probe handshake (its name selects its
known-failure entries), the main pass over the selected vectors, determinism passes in fresh
processes under perturbed environments and shuffled order, then evaluation of every vector —
result and usage field by field, resource bounds, stage, determinism — and, for failing
vectors when the adapter can trace, the first divergence of its step trace from the
reference's. With several implementations their results are also compared with each other.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance import determinism
from conformance.compare import Mismatch, compare_reply, compare_result
from conformance.protocol import encode, execute_request, reply_problems
from conformance.runner import AdapterProcess, Job, Pool, Reply, Settings, StartError
from conformance.selection import KnownFailure, known_failure
from conformance.tracediff import Divergence, first_divergence, reference_trace

# Process-level failures, as reported per vector.
PROCESS_FAILURES = ("crash", "timeout", "garbage", "wrong_id", "extra_output", "protocol", "unavailable")
# Outcome statuses: a listed known failure that fails is an expected failure (xfail); one that
# passes is "now passing" (xpass) and fails the run until it is removed from its list.
STATUSES = ("pass", "fail", "xfail", "xpass")
PRECEDING_KEPT = 64     # preceding vectors of the same process recorded per pass in a bundle


def reference_command() -> str:
    return shlex.join([sys.executable, "-m", "conformance.adapter"])


@dataclass
class Options:
    repeat: int = 1                  # determinism passes (fresh, perturbed, shuffled)
    seed: int = 1
    max_traces: int = 50             # failing vectors whose traces are diffed, per implementation
    settings: Settings = field(default_factory=Settings)


@dataclass
class PassRun:
    """One execution of a vector: the pass, its environment, and what came back."""

    name: str                                # "main pass", "determinism pass 1", ...
    label: str                               # how the pass ran (determinism.MAIN_PASS, ...)
    environment: dict[str, str | None]       # values of determinism.ENV_KEYS, None = unset
    order_seed: int | None                   # None: corpus order
    reply: Reply | None
    differs: bool = False                    # differs from the main pass (a determinism failure)

    def to_json(self) -> dict[str, Any]:
        preceded, count = self.reply.preceded_by(PRECEDING_KEPT) if self.reply else ([], 0)
        return {"name": self.name, "pass": self.label, "environment": self.environment, "order_seed": self.order_seed,
                "preceded_by": preceded, "preceded_count": count, "differs": self.differs,
                "response": determinism.describe(determinism.reply_signature(self.reply)),
                "message": self.reply.message if self.differs and self.reply else None,
                "log": self.reply.log_path if self.reply else None}


@dataclass
class Outcome:
    vector_id: str
    status: str                                   # one of STATUSES
    failures: list[Mismatch] = field(default_factory=list)
    reason: str = ""                              # process failure detail
    reply: dict[str, Any] | None = None           # the main pass's response message
    divergence: Divergence | None = None
    known: str = ""                               # the known-failure entry's reason, when listed
    passes: list[PassRun] = field(default_factory=list)
    correct: bool = False                         # the main pass's result matches the expected one

    @property
    def categories(self) -> list[str]:
        return sorted({m.category for m in self.failures})

    @property
    def failed(self) -> bool:
        """Whether the implementation got this vector wrong (listed or not)."""
        return self.status in ("fail", "xfail")


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

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes.values() if o.status == status)

    @property
    def ok(self) -> bool:
        return not self.issues and self.count("fail") == 0 and self.count("xpass") == 0


@dataclass
class SuiteResult:
    runs: list[ImplementationRun]
    vectors: dict[str, Mapping[str, Any]]
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        # A disagreement always comes with a failing (or known-failing) outcome of at least one
        # of the implementations; it is reported, and judged through those outcomes.
        return all(r.ok for r in self.runs)


def jobs(vectors: Sequence[Mapping[str, Any]], trace: bool = False) -> list[Job]:
    return [Job(v["id"], encode(execute_request(v["id"], v["input"], trace))) for v in vectors]


def probe(argv: list[str], settings: Settings) -> dict[str, Any]:
    """Start the adapter once, handshake and shut it down; its hello, or StartError."""
    with tempfile.TemporaryDirectory(prefix="rtwo-probe-") as logs:
        proc = AdapterProcess(argv, settings, Path(settings.log_dir or logs), 0)
        try:
            hello = proc.handshake()
            _, problem = proc.shutdown(timeout=min(5.0, settings.timeout))
        finally:
            proc.kill()
    if problem:
        raise StartError(f"adapter exit behaviour: {problem}")
    return hello


def evaluate(vector: Mapping[str, Any], reply: Reply | None) -> Outcome:
    """Judge the main pass's reply to one vector."""
    vid = vector["id"]
    if reply is None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", "none", "protocol")], "no response")
    if reply.failure is not None:
        return Outcome(vid, "fail", [Mismatch("response", "a response", reply.failure, reply.failure)], reply.detail)
    message = reply.message
    problems = reply_problems(message, vid, traced=False)
    if problems:
        return Outcome(vid, "fail", [Mismatch("response", "a result", p, "protocol") for p in problems],
                       "; ".join(problems), message)
    if message["type"] == "error":
        detail = f"adapter error {message.get('code')}: {message.get('message', '')}"
        return Outcome(vid, "fail", [Mismatch("response", "a result", message.get("code"), "adapter_error")],
                       detail, message)
    failures = compare_reply(vector, message)
    return Outcome(vid, "fail" if failures else "pass", failures, "", message, correct=not failures)


def _pass_settings(settings: Settings, label: str, run_name: str, env: Mapping[str, str] | None = None) -> Settings:
    return replace(settings, env=env if env is not None else settings.env,
                   log_label=f"{slug(run_name)}__{label}")


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_")[:60] or "impl"


def run_implementation(command: str, vectors: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
                       options: Options, progress: Callable[[str, Reply], None] | None = None) -> ImplementationRun:
    started = time.perf_counter()
    settings = options.settings
    run = ImplementationRun(command, cwd=settings.cwd or os.getcwd())
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
    tick = (lambda r: progress(command, r)) if progress else None

    main_started = time.perf_counter()
    main_settings = _pass_settings(settings, "main", run.name)
    main = Pool(argv, main_settings).run(jobs(vectors), tick)
    run.main_seconds, run.main_count = time.perf_counter() - main_started, len(vectors)
    run.passes.append(determinism.MAIN_PASS)
    run.restarts += main.restarts
    run.issues.extend(main.issues)
    main_env = determinism.environment_of(main_settings.env)
    for v in vectors:
        reply = main.replies.get(v["id"])
        outcome = run.outcomes[v["id"]] = evaluate(v, reply)
        outcome.passes.append(PassRun("main pass", determinism.MAIN_PASS, main_env, None, reply))

    for k in range(options.repeat):
        p = determinism.perturbation(k, options.seed, settings.env)
        order = determinism.shuffled([v["id"] for v in vectors], p.order_seed)
        again = Pool(argv, _pass_settings(settings, f"pass{k + 1}", run.name, p.env)).run(
            jobs([by_id[i] for i in order]), tick)
        label = p.describe()
        run.passes.append(label)
        run.restarts += again.restarts
        run.issues.extend(f"{label}: {i}" for i in again.issues)
        for vid in order:
            reply = again.replies.get(vid)
            name = f"determinism pass {k + 1}"
            diff = determinism.differences(main.replies.get(vid), reply, f"{name} against the main pass")
            outcome = run.outcomes[vid]
            outcome.passes.append(PassRun(name, label, p.recorded, p.order_seed, reply, bool(diff)))
            if diff:
                outcome.status = "fail"
                outcome.failures.extend(diff)

    _classify_known(run, known)
    if run.can_trace:
        _diff_traces(run, argv, _pass_settings(settings, "traces", run.name), by_id, options.max_traces)
    run.total_seconds = time.perf_counter() - started
    return run


def _classify_known(run: ImplementationRun, known: Sequence[KnownFailure]) -> None:
    """Listed vectors run like any other: a failure is expected (xfail), a pass is news (xpass)."""
    for vid, outcome in run.outcomes.items():
        entry = known_failure(known, run.name, vid)
        if entry is None:
            continue
        outcome.known = entry.describe()
        outcome.status = "xfail" if outcome.status == "fail" else "xpass"


def _diff_traces(run: ImplementationRun, argv, settings: Settings, by_id, limit: int) -> None:
    """For failing vectors that got a result, name the first step where the traces part
    (unlisted failures first: they are the ones to fix)."""
    failing = sorted((o for o in run.outcomes.values()
                      if o.failed and o.reply is not None and o.reply.get("type") == "result"),
                     key=lambda o: o.status == "xfail")
    wanted = [o.vector_id for o in failing][:limit]
    if not wanted:
        return
    traced = Pool(argv, settings).run(jobs([by_id[i] for i in wanted], trace=True))
    for vid in wanted:
        reply = traced.replies.get(vid)
        outcome = run.outcomes[vid]
        if reply is None or reply.message is None or not isinstance(reply.message.get("trace"), list):
            outcome.reason = (outcome.reason + "; " if outcome.reason else "") + "no trace returned"
            continue
        outcome.divergence = first_divergence(reference_trace(by_id[vid]["input"]), reply.message["trace"])


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
              options: Options, progress: Callable[[str, Reply], None] | None = None) -> SuiteResult:
    started = time.perf_counter()
    runs = [run_implementation(c, vectors, known, options, progress) for c in commands]
    result = SuiteResult(runs, {v["id"]: v for v in vectors})
    if len(runs) > 1:
        _cross_check(runs, result)
    result.seconds = time.perf_counter() - started
    return result
