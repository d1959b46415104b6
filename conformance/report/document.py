"""The JSON documents of a run: ``report.json`` (bounded: failure entries are cut until it fits,
the failing ids never) and the short summary that ``--json`` prints on stdout."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any, Mapping

from conformance.constants import PROTOCOL
from conformance.report import scenarios as scenario_report
from conformance.report.counts import count_tables, failure_summary, ranked, status_counts
from conformance.report.junit import NOW_PASSING
from conformance.report.triage import triage
from conformance.run.outcomes import Outcome
from conformance.run.suite import ImplementationRun, SuiteResult

REPORT_BYTES = 16 << 20          # bytes of report.json
REPORT_FAILURES = 1000           # failure entries per implementation in report.json


def _logs(o: Outcome) -> list[str]:
    return [p.reply.log_path for p in o.passes if p.reply is not None and p.reply.log_path]


def _entry(o: Outcome, result: SuiteResult, run: ImplementationRun, bundles) -> dict[str, Any]:
    key = (run.command, o.vector_id)
    return {"id": o.vector_id, "opcodes": result.vectors[o.vector_id]["tags"]["opcodes"],
            "kind": o.kind, "categories": o.categories, "reason": o.reason[:2000],
            "mismatches": [m.to_json() for m in o.failures],
            "divergence": o.divergence.to_json() if o.divergence else None,
            "bundle": str(bundles[key]) if key in bundles else None, "logs": _logs(o)[:8],
            "seconds": round(o.seconds, 6)}


def to_json(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            filters: list[str] | None = None, run_info: Mapping[str, Any] | None = None,
            limit: int = REPORT_BYTES) -> dict[str, Any]:
    """The report as a JSON document, at most ``limit`` bytes once encoded: failure entries
    beyond REPORT_FAILURES per implementation (then fewer, until it fits) are left out and
    counted in ``failures_left_out``; ``failed_ids`` and ``failure_summaries`` (id, status,
    kind and categories) always list every failing vector, and ``what_to_implement_next``
    holds the triage of conformance.report.triage."""
    bundles = bundles or {}
    runs = []
    for run in result.runs:
        by_group, by_opcode = count_tables(run, result.vectors)
        failing = ranked(run)
        runs.append({
            "command": run.command, "cwd": run.cwd, "name": run.name, "version": run.version,
            "started": not run.start_error, "start_error": run.start_error or None,
            "capabilities": (run.hello or {}).get("capabilities", []),
            "ok": run.ok, "passes": run.passes, "issues": [i[:2000] for i in run.issues[:100]],
            "restarts": run.restarts, "gave_up": run.gave_up or None, "not_run_after_exitfirst": run.stopped,
            "safety_net_retries": run.retried,
            "counts": status_counts(run, False), "fresh_counts": status_counts(run, True),
            "main_pass_vectors_per_second": round(run.rate, 1), "seconds": round(run.total_seconds, 3),
            "failure_kinds": dict(Counter(c for o in failing for c in o.categories)),
            "failed_ids": [o.vector_id for o in ranked(run, ("fail", "xfail", "xpass"))]
            + scenario_report.json_section(run.scenarios, {}, run.command)["failed_ids"],
            "failures": [_entry(o, result, run, bundles) for o in failing[:REPORT_FAILURES]],
            "failures_left_out": max(0, len(failing) - REPORT_FAILURES),
            "failure_summaries": [failure_summary(o) for o in ranked(run, ("fail", "xfail"))]
            + [failure_summary(o) for o in scenario_report.failing(run.scenarios)],
            "what_to_implement_next": dict(triage(run.outcomes.values(), result.vectors, result.version, result.executed),
                                           scenarios=scenario_report.triage(run.scenarios)),
            "scenarios": scenario_report.json_section(run.scenarios, bundles, run.command),
            "known_failures": [{**_entry(o, result, run, bundles), "known_failure": o.known}
                               for o in ranked(run, ("xfail",))[:REPORT_FAILURES]],
            "now_passing": [{"id": o.vector_id, "known_failure": o.known, "action": NOW_PASSING}
                            for o in run.outcomes.values() if o.status == "xpass"],
            "by_category": {g: _nonzero(c) for g, c in sorted(by_group.items())},
            "by_opcode": {m: _nonzero(c) for m, c in sorted(by_opcode.items())},
        })
    doc = {"report": "rtwo-vm conformance run", "protocol": PROTOCOL, "spec_version": result.version,
           "ok": result.ok, "seconds": round(result.seconds, 3),
           "corpus": {"digest": corpus.get("digest"), "vector_count": corpus.get("vector_count"),
                      "selected": sum(1 for v in result.vectors if not v.startswith("fresh/")),
                      "filters": filters or []},
           **dict(run_info or {}),
           "implementations": runs, "disagreements": result.disagreements[:REPORT_FAILURES],
           "disagreements_left_out": max(0, len(result.disagreements) - REPORT_FAILURES)}
    keep = REPORT_FAILURES
    while len(encode_report(doc)) > limit and keep > 0:
        keep //= 2
        for entry in runs:
            total = len(entry["failures"]) + entry["failures_left_out"]
            entry["failures"], entry["known_failures"] = entry["failures"][:keep], entry["known_failures"][:keep]
            entry["failures_left_out"] = total - len(entry["failures"])
        doc["disagreements"] = doc["disagreements"][:keep]
        doc["truncated"] = f"failure entries cut to fit {limit} bytes (failed_ids lists them all)"
    return doc


def _nonzero(counts: Counter) -> dict[str, int]:
    return {k: n for k, n in counts.items() if n}


def encode_report(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n"


def summary_json(result: SuiteResult, corpus: Mapping[str, Any], exit_code: int, paths: Mapping[str, Any],
                 run_info: Mapping[str, Any]) -> dict[str, Any]:
    """The short machine-readable summary ``--json`` prints on stdout."""
    return {"ok": result.ok, "exit_code": exit_code, "spec_version": result.version,
            "corpus": {"digest": corpus.get("digest"),
                       "selected": sum(1 for v in result.vectors if not v.startswith("fresh/"))},
            **dict(run_info), "seconds": round(result.seconds, 3), "reports": dict(paths),
            "implementations": [{
                "command": r.command, "name": r.name, "version": r.version, "ok": r.ok,
                "start_error": r.start_error or None, "gave_up": r.gave_up or None,
                "counts": status_counts(r, False), "fresh_counts": status_counts(r, True),
                "failure_kinds": dict(Counter(o.kind for o in ranked(r))),
                "first_failures": [o.vector_id for o in ranked(r)[:10]],
                "scenarios": {k: v for k, v in scenario_report.json_section(r.scenarios, {}, r.command).items()
                              if k in ("sent", "counts", "fresh_counts", "not_run", "not_run_reasons",
                                       "carries_state", "carries_state_note", "failed_ids")}}
               for r in result.runs],
            "disagreements": len(result.disagreements)}
