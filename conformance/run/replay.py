"""``rtwo-vm conformance replay``: run one failing vector again the way it failed.

A replay bundle (conformance.report.bundles) records, besides the vector and the response, the
adapter command and the directory it ran in, and every pass the vector ran in: the pass's
environment (PYTHONHASHSEED, TZ, LC_ALL, LANG; unset ones as null), its order seed, and the
vectors the same adapter process received before it. A replay runs the main pass again and
every pass whose result differed from it, each in a fresh process under the recorded
environment and after the recorded preceding vectors (read from the corpus), then judges the
vector as ``conformance run`` does: the main pass against the expected result, the others
against the main pass. A determinism failure therefore fails its replay as it failed the run.

A bundle is data from whoever sent it (conformance.run.inputs checks it against its schema): its
command and directory are never used. A replay runs only the adapter its user names, from
the user's directory, in the user's environment with at most the four determinism variables
set to the recorded values.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from conformance.run import blind, determinism, safety_net
from conformance.run.inputs import MAX_REPEAT, bundle_version, one_line, read_bundle
from conformance.run.process import Settings, StartError
from conformance.run.runner import Pool
from conformance.run.outcomes import Outcome, PassRun, evaluate
from conformance.run.requests import jobs
from conformance.run.suite import ImplementationRun, SuiteResult, probe, slug

STDERR_LINES = 20
__all__ = ["MAX_REPEAT", "Plan", "impl_required", "plan_bundle", "plan_vector", "read_bundle", "replay"]


@dataclass
class Plan:
    """What to replay: one vector, one adapter, and the passes to run it in (main first)."""

    vector: Mapping[str, Any]
    command: str                                 # the user's adapter (never a bundle's)
    version: str                                 # the spec version of the session (the bundle's)
    passes: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _main_record(environment: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    return {"name": "main pass", "pass": determinism.MAIN_PASS,
            "environment": dict(environment) if environment is not None else determinism.environment_of(),
            "order_seed": None, "preceded_by": [], "preceded_count": 0}


def _perturbed(count: int, seed: int) -> list[dict[str, Any]]:
    out = []
    for k in range(count):
        p = determinism.perturbation(k, seed)
        out.append({"name": f"determinism pass {k + 1}", "pass": p.describe(), "environment": p.recorded,
                    "order_seed": p.order_seed, "preceded_by": [], "preceded_count": 0})
    return out


def impl_required(bundle: Mapping[str, Any]) -> str:
    """The one-line refusal of a bundle replayed without ``--impl``, with the recorded command
    (quoted, escaped) for the user to read and copy."""
    implementation = bundle["implementation"]
    where = f" in {one_line(implementation['cwd'], 200)}" if implementation.get("cwd") else ""
    return ("replay runs only the adapter you name: give --impl CMD (the bundle recorded "
            f"--impl {one_line(shlex.quote(implementation['command']), 400)}{where}; "
            "a bundle's command is never run)")


def plan_bundle(bundle: Mapping[str, Any], impl: str, repeat: int = 0, seed: int = 1) -> Plan:
    """The passes of a bundle (read by :func:`read_bundle`) to replay with the adapter ``impl``,
    run from the current directory: its main pass and every pass that differed from it, plus
    ``repeat`` standard perturbed passes."""
    if not impl:
        raise ValueError(impl_required(bundle))
    if not 0 <= repeat <= MAX_REPEAT:
        raise ValueError(f"--repeat must be between 0 and {MAX_REPEAT}")
    recorded = [p for p in bundle.get("passes") or [] if isinstance(p, dict)]
    main = next((p for p in recorded if p.get("name") == "main pass"), None)
    notes = []
    if main is None:
        main = _main_record()
        notes.append("the bundle records no environment (format 1): replayed in the current environment")
    passes = [main] + [p for p in recorded if p is not main and p.get("differs")]
    passes += _perturbed(repeat, seed)
    if "scenario" in bundle:        # a scenario's bundle (11.9): the scenarios before it are not sent again
        if any(p.get("preceded_by") for p in passes):
            notes.append("the scenarios its process ran before it are not replayed")
        passes = [dict(p, preceded_by=[], preceded_count=0) for p in passes]
        return Plan(bundle["scenario"], impl, bundle_version(bundle), passes, notes)
    return Plan(bundle["vector"], impl, bundle_version(bundle), passes, notes)


def plan_vector(vector: Mapping[str, Any], command: str, repeat: int = 1, seed: int = 1) -> Plan:
    """The passes of a corpus vector (of its own version) to replay with ``command``."""
    return Plan(vector, command, vector["_meta"]["spec_version"], [_main_record()] + _perturbed(repeat, seed))


def replay(plan: Plan, corpus: Mapping[str, Mapping[str, Any]], settings: Settings,
           keep_logs: Path | None = None) -> tuple[SuiteResult, list[tuple[str, str]]]:
    """Run the plan; the result (one implementation, one vector) and, per pass, the adapter's
    stderr from the process that ran the vector."""
    from conformance.run.replay_scenario import is_scenario, replay_scenario
    if is_scenario(plan.vector):
        return replay_scenario(plan, settings, keep_logs, _tail)
    started = time.perf_counter()
    vector, vid = plan.vector, plan.vector["id"]
    run = ImplementationRun(plan.command, cwd=str(Path.cwd()))
    settings = replace(settings, spec_version=plan.version, workers=1, cwd=None)
    argv = shlex.split(plan.command)
    stderr: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="rtwo-replay-") as tmp:
        logs = Path(keep_logs) if keep_logs is not None else Path(tmp)
        settings = replace(settings, log_dir=logs)
        try:
            run.hello = probe(argv, replace(settings, log_label="replay__probe"))
        except StartError as err:
            run.start_error = str(err)
            run.issues.append(f"the adapter could not start: {err}")
            run.outcomes[vid] = evaluate(vector, None)
            run.outcomes[vid].reason = str(err)
            return SuiteResult([run], {vid: vector}, plan.version, seconds=time.perf_counter() - started), stderr
        first = None
        for k, record in enumerate(plan.passes):
            reply, line = _run_pass(argv, settings, vector, record, corpus, k)
            if safety_net.met_safety_net(reply):   # a safety net, as in a run (chapter 11.5)
                reply, _ = _run_pass(argv, safety_net.retry_settings(settings), vector, record, corpus, k)
                line += (f"; met the {settings.timeout:g} s safety net and ran again with "
                         f"{safety_net.retry_settings(settings).timeout:g} s")
                run.retried += 1
            run.passes.append(line)
            name = record.get("name") or f"pass {k}"
            if reply is not None and reply.log_path:
                stderr.append((name, _tail(Path(reply.log_path))))
            diff = determinism.differences(first, reply, f"{name} against the main pass") if k else []
            if k == 0:
                first = reply
                outcome: Outcome = evaluate(vector, reply)
                run.outcomes[vid] = outcome
            outcome.passes.append(PassRun(name, record.get("pass", name), record.get("environment") or {},
                                          record.get("order_seed"), reply, bool(diff)))
            if diff:
                outcome.status = "fail"
                outcome.failures.extend(diff)
    run.total_seconds = time.perf_counter() - started
    return SuiteResult([run], {vid: vector}, plan.version, seconds=run.total_seconds), stderr


def _run_pass(argv: list[str], settings: Settings, vector, record: Mapping[str, Any],
              corpus: Mapping[str, Mapping[str, Any]], index: int):
    vid = vector["id"]
    wanted = [i for i in record.get("preceded_by") or [] if i != vid]
    # A blinded run sent the preceding vectors blinded too, for the same seed (spec 11.8.4).
    blinding = vector.get("blinding")
    seed = blinding.get("seed") if isinstance(blinding, dict) else None
    before = [corpus[i] if seed is None else blind.blind_vector(corpus[i], seed, settings.spec_version)
              for i in wanted if i in corpus]
    # Only the determinism variables, whatever the record holds (read_bundle refuses others).
    env = determinism.apply({k: v for k, v in (record.get("environment") or {}).items()
                             if k in determinism.ENV_KEYS})
    pool = Pool(argv, replace(settings, env=env, log_label=f"replay__{index}_{slug(record.get('name', ''))}"))
    report = pool.run(jobs([*before, vector]))
    reply = report.replies.get(vid)
    recorded = sorted((record.get("environment") or {}).items())
    line = f"{record.get('name') or 'pass'}: fresh process, " + ", ".join(
        f"{k}={v}" if v is not None else f"{k} unset" for k, v in recorded)
    if record.get("order_seed") is not None:
        line += f" (order seed {record['order_seed']})"
    total = record.get("preceded_count") or 0
    if total:
        ran = reply.position if reply is not None else 0
        line += (f"; after the {total} vectors its process ran before it" if ran == total
                 else f"; after {ran} of the {total} vectors its process ran before it")
        if len(before) < len(wanted):
            line += f" ({len(wanted) - len(before)} not in this corpus)"
        if total > len(wanted):
            line += f" (the bundle keeps the last {len(wanted)})"
    return reply, line


def _tail(path: Path, lines: int = STDERR_LINES) -> str:
    """The last lines of a kept log; "" for a log that is not a regular file of at most twice
    the bytes a log keeps (a link the adapter planted to /dev/zero or a FIFO is never read)."""
    from conformance.run.process import DEFAULT_MAX_LOG
    from spec.files import FileRefused, read_bounded
    try:
        blob = read_bounded(path, 2 * DEFAULT_MAX_LOG + 4096, "adapter log")
    except FileRefused:
        return ""
    text = blob.decode("utf-8", "replace").rstrip().splitlines()
    return "\n".join(text[-lines:])
