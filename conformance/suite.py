"""``rtwo-vm conformance run``: validate implementations against the corpus.

For each implementation (an adapter command): a probe handshake (its name selects its
known-failure entries), the main pass over the selected vectors, determinism passes in fresh
processes under perturbed environments and shuffled order, then evaluation of every vector —
result and usage field by field, resource bounds, stage, determinism — and, for failing
vectors when the adapter can trace, the first divergence of its step trace from the
reference's. With several implementations their results are also compared with each other.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance import determinism
from conformance.compare import Mismatch, compare_reply, compare_result
from conformance.protocol import encode, execute_request, reply_problems
from conformance.runner import AdapterProcess, Job, Pool, Reply, Settings, StartError
from conformance.selection import KnownFailure, skip_reason
from conformance.tracediff import Divergence, first_divergence, reference_trace

# Process-level failures, as reported per vector.
PROCESS_FAILURES = ("crash", "timeout", "garbage", "wrong_id", "extra_output", "protocol", "unavailable")


def reference_command() -> str:
    return shlex.join([sys.executable, "-m", "conformance.adapter"])


@dataclass
class Options:
    repeat: int = 1                  # determinism passes (fresh, perturbed, shuffled)
    seed: int = 1
    max_traces: int = 50             # failing vectors whose traces are diffed, per implementation
    settings: Settings = field(default_factory=Settings)


@dataclass
class Outcome:
    vector_id: str
    status: str                                   # pass, fail, skip
    failures: list[Mismatch] = field(default_factory=list)
    reason: str = ""                              # skip reason or process failure detail
    reply: dict[str, Any] | None = None           # the main pass's response message
    divergence: Divergence | None = None

    @property
    def categories(self) -> list[str]:
        return sorted({m.category for m in self.failures})


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

    @property
    def name(self) -> str:
        impl = (self.hello or {}).get("implementation") or {}
        return impl.get("name") or self.command

    @property
    def version(self) -> str:
        return ((self.hello or {}).get("implementation") or {}).get("version", "?")

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
        return not self.issues and self.count("fail") == 0


@dataclass
class SuiteResult:
    runs: list[ImplementationRun]
    vectors: dict[str, Mapping[str, Any]]
    disagreements: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.runs) and not self.disagreements


def _jobs(vectors: Sequence[Mapping[str, Any]], trace: bool = False) -> list[Job]:
    return [Job(v["id"], encode(execute_request(v["id"], v["input"], trace))) for v in vectors]


def probe(argv: list[str], settings: Settings) -> dict[str, Any]:
    """Start the adapter once, handshake and shut it down; its hello, or StartError."""
    with tempfile.TemporaryDirectory(prefix="rtwo-probe-") as logs:
        proc = AdapterProcess(argv, settings, Path(logs), 0)
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
    return Outcome(vid, "fail" if failures else "pass", failures, "", message)


def run_implementation(command: str, vectors: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
                       options: Options, progress: Callable[[str, Reply], None] | None = None) -> ImplementationRun:
    started = time.perf_counter()
    run = ImplementationRun(command)
    argv = shlex.split(command)
    settings = options.settings
    try:
        run.hello = probe(argv, settings)
    except StartError as err:
        run.issues.append(str(err))
        for v in vectors:
            run.outcomes[v["id"]] = Outcome(v["id"], "fail", [Mismatch("response", "a response", "unavailable",
                                                                        "unavailable")], str(err))
        run.total_seconds = time.perf_counter() - started
        return run
    selected = []
    for v in vectors:
        reason = skip_reason(known, run.name, v["id"])
        if reason is None:
            selected.append(v)
        else:
            run.outcomes[v["id"]] = Outcome(v["id"], "skip", reason=f"known failure: {reason}")
    by_id = {v["id"]: v for v in selected}
    tick = (lambda r: progress(command, r)) if progress else None

    main_started = time.perf_counter()
    main = Pool(argv, settings).run(_jobs(selected), tick)
    run.main_seconds, run.main_count = time.perf_counter() - main_started, len(selected)
    run.passes.append("main pass: environment as given, corpus order")
    run.restarts += main.restarts
    run.issues.extend(main.issues)
    for v in selected:
        run.outcomes[v["id"]] = evaluate(v, main.replies.get(v["id"]))

    for k in range(options.repeat):
        p = determinism.perturbation(k, options.seed)
        order = determinism.shuffled([v["id"] for v in selected], p.order_seed)
        again = Pool(argv, Settings(**{**settings.__dict__, "env": p.env})).run(
            _jobs([by_id[i] for i in order]), tick)
        run.passes.append(p.describe())
        run.restarts += again.restarts
        run.issues.extend(f"{p.describe()}: {i}" for i in again.issues)
        for vid in order:
            diff = determinism.differences(main.replies.get(vid), again.replies.get(vid),
                                           f"determinism pass {k + 1} against the main pass")
            if diff:
                outcome = run.outcomes[vid]
                outcome.status = "fail"
                outcome.failures.extend(diff)

    if run.can_trace:
        _diff_traces(run, argv, settings, by_id, options.max_traces)
    run.total_seconds = time.perf_counter() - started
    return run


def _diff_traces(run: ImplementationRun, argv, settings: Settings, by_id, limit: int) -> None:
    """For failing vectors that got a result, name the first step where the traces part."""
    wanted = [o.vector_id for o in run.outcomes.values()
              if o.status == "fail" and o.reply is not None and o.reply.get("type") == "result"][:limit]
    if not wanted:
        return
    traced = Pool(argv, settings).run(_jobs([by_id[i] for i in wanted], trace=True))
    for vid in wanted:
        reply = traced.replies.get(vid)
        outcome = run.outcomes[vid]
        if reply is None or reply.message is None or not isinstance(reply.message.get("trace"), list):
            outcome.reason = (outcome.reason + "; " if outcome.reason else "") + "no trace returned"
            continue
        outcome.divergence = first_divergence(reference_trace(by_id[vid]["input"]), reply.message["trace"])


def _cross_check(runs: Sequence[ImplementationRun], result: SuiteResult) -> None:
    """Implementations must agree with each other too (result, and stage when both report it)."""
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            for vid, oa in a.outcomes.items():
                ob = b.outcomes.get(vid)
                if ob is None or oa.status == "skip" or ob.status == "skip":
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
                result.disagreements.append({"vector": vid, "implementations": [a.command, b.command],
                                             "differences": [m.to_json() for m in found]})
                for run, other in ((a, b), (b, a)):
                    outcome = run.outcomes[vid]
                    outcome.status = "fail"
                    outcome.failures.append(Mismatch(f"agreement with {other.name}", "identical results",
                                                     f"{len(found)} differing fields", "disagreement"))


def run_suite(commands: Sequence[str], vectors: Sequence[Mapping[str, Any]], known: Sequence[KnownFailure],
              options: Options, progress: Callable[[str, Reply], None] | None = None) -> SuiteResult:
    started = time.perf_counter()
    runs = [run_implementation(c, vectors, known, options, progress) for c in commands]
    result = SuiteResult(runs, {v["id"]: v for v in vectors})
    if len(runs) > 1:
        _cross_check(runs, result)
    result.seconds = time.perf_counter() - started
    return result
