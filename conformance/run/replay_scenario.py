"""``rtwo-vm conformance replay`` of a scenario's bundle (chapter 11.9): the scenario sent in the
run (blinded, with the reference's expected results for it) is sent again as a scenario request
to the adapter the user names, in a fresh process per recorded pass (the main pass and every
pass whose answer differed from it, each under its recorded determinism variables), and judged
as the run judged it: the main pass by 11.9.3 (the first divergent step, both results and the
state before it, or the post-state), the others against the main pass. The scenarios the same
process ran before it are not sent again (the bundle names them).
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping

from conformance.run import determinism, safety_net
from conformance.run.compare import Mismatch
from conformance.run.outcomes import Outcome, PassRun
from conformance.run.process import Reply, Settings, StartError
from conformance.run.runner import Pool
from conformance.run.scenario_judge import describe, judge, signature
from conformance.run.scenarios import ScenarioRuns, not_run_reason, scenario_jobs
from conformance.run.suite import ImplementationRun, SuiteResult, probe, slug


def is_scenario(vector: Mapping[str, Any]) -> bool:
    """Whether a bundle's vector is a scenario vector (its input has steps)."""
    return isinstance(vector.get("input"), dict) and "steps" in vector["input"]


def _once(argv: list[str], settings: Settings, vector: Mapping[str, Any], record: Mapping[str, Any],
          index: int) -> Reply | None:
    env = determinism.apply({k: v for k, v in (record.get("environment") or {}).items() if k in determinism.ENV_KEYS})
    pool = Pool(argv, replace(settings, env=env, log_label=f"replay__{index}_{slug(record.get('name', ''))}"))
    report = pool.run(scenario_jobs([vector], f"replay-{time.monotonic_ns()}", f"replay{index}"))
    return report.replies.get(vector["id"])


def replay_scenario(plan: Any, settings: Settings, keep_logs: Path | None = None,
                    tail=None) -> tuple[SuiteResult, list[tuple[str, str]]]:
    """Run a scenario plan (conformance.run.replay.Plan); the result and each pass's stderr."""
    started = time.perf_counter()
    vector, vid = plan.vector, plan.vector["id"]
    run = ImplementationRun(plan.command, cwd=str(Path.cwd()))
    settings = replace(settings, spec_version=plan.version, workers=1, cwd=None)
    argv = shlex.split(plan.command)
    stderr: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory(prefix="rtwo-replay-") as tmp:
        settings = replace(settings, log_dir=Path(keep_logs) if keep_logs is not None else Path(tmp))
        try:
            run.hello = probe(argv, replace(settings, log_label="replay__probe"))
        except StartError as err:
            run.start_error = str(err)
            run.issues.append(f"the adapter could not start: {err}")
            run.scenarios = ScenarioRuns(not_run={vid: "the adapter could not start"})
            return SuiteResult([run], {}, plan.version, scenarios={vid: vector},
                               seconds=time.perf_counter() - started), stderr
        reason = not_run_reason(run.hello, vector)
        if reason is not None:
            run.scenarios = ScenarioRuns(not_run={vid: reason})
            return SuiteResult([run], {}, plan.version, scenarios={vid: vector},
                               seconds=time.perf_counter() - started), stderr
        outcome: Outcome | None = None
        for k, record in enumerate(plan.passes):
            reply = _once(argv, settings, vector, record, k)
            line = f"{record.get('name') or 'pass'}: fresh process, " + ", ".join(
                f"{key}={value}" if value is not None else f"{key} unset"
                for key, value in sorted((record.get("environment") or {}).items()))
            if safety_net.met_safety_net(reply):
                reply = _once(argv, safety_net.retry_settings(settings), vector, record, k)
                line += f"; met the {settings.timeout:g} s safety net and ran again"
                run.retried += 1
            run.passes.append(line)
            name = record.get("name") or f"pass {k}"
            if reply is not None and reply.log_path and tail is not None:
                stderr.append((name, tail(Path(reply.log_path))))
            differs = False
            if outcome is None:
                outcome = judge(vector, reply)
                outcome.signature = signature(reply)
                run.scenarios.outcomes[vid] = outcome
            elif signature(reply) != outcome.signature:
                differs = True
                outcome.status, outcome.correct = "fail", False
                outcome.failures.append(Mismatch(f"{name} against the main pass", outcome.passes[0].response,
                                                 describe(reply), "nondeterministic"))
            outcome.passes.append(PassRun(name, record.get("pass", name), record.get("environment") or {},
                                          record.get("order_seed"), reply, differs, describe(reply)))
    run.total_seconds = time.perf_counter() - started
    return SuiteResult([run], {}, plan.version, scenarios={vid: vector}, seconds=run.total_seconds), stderr
