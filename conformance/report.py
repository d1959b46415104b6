"""Reporting a conformance run: progress bar, text summary by category and opcode, the JSON
report, JUnit XML, and one replay bundle per failing vector."""

from __future__ import annotations

import json
import re
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping, TextIO

import spec
from conformance.constants import PROTOCOL, SPEC_VERSION
from conformance.suite import ImplementationRun, Outcome, SuiteResult

BUNDLE_FORMAT = "rtwo-conformance replay bundle/1"
TABLE = spec.load()


class Progress:
    """A one-line progress bar on a terminal; silent when not enabled."""

    def __init__(self, total: int, stream: TextIO, enabled: bool):
        self.total, self.stream, self.enabled = total, stream, enabled
        self.done = self.failed = 0
        self.started = self.shown = time.perf_counter()

    def tick(self, failed: bool = False) -> None:
        self.done += 1
        self.failed += failed
        now = time.perf_counter()
        if self.enabled and (now - self.shown > 0.1 or self.done == self.total):
            self.shown = now
            width = 30
            filled = int(width * self.done / max(1, self.total))
            rate = self.done / max(1e-9, now - self.started)
            self.stream.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                              f"{rate:,.0f}/s  process failures {self.failed}  ")
            self.stream.flush()

    def finish(self) -> None:
        if self.enabled and self.done:
            self.stream.write("\n")
            self.stream.flush()


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=+-]+", "_", text).strip("_")[:80] or "impl"


def bundle_name(run: ImplementationRun, vector_id: str) -> str:
    return f"{_slug(run.name)}__{vector_id.replace('/', '__')}.json"


def write_bundles(result: SuiteResult, directory: Path) -> dict[tuple[str, str], Path]:
    """One self-contained JSON file per failing vector and implementation."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.json"):  # bundles of an earlier run would mislead
        try:
            if json.loads(stale.read_text(encoding="utf-8")).get("bundle") == BUNDLE_FORMAT:
                stale.unlink()
        except (OSError, ValueError, AttributeError):
            pass
    written = {}
    for run in result.runs:
        for o in run.outcomes.values():
            # A vector never sent (the adapter would not start) has nothing to replay.
            if o.status != "fail" or "unavailable" in o.categories:
                continue
            path = directory / bundle_name(run, o.vector_id)
            doc = {
                "bundle": BUNDLE_FORMAT,
                "implementation": {"command": run.command, "name": run.name, "version": run.version},
                "vector": result.vectors[o.vector_id],
                "response": o.reply,
                "failures": [m.to_json() for m in o.failures],
                "reason": o.reason,
                "divergence": o.divergence.to_json() if o.divergence else None,
                "replay": f"rtwo-vm conformance replay {path} --impl {json.dumps(run.command)}",
            }
            path.write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
            written[(run.command, o.vector_id)] = path
    return written


def _group(vector_id: str) -> str:
    return vector_id.split("/", 1)[0]


def _tables(run: ImplementationRun, vectors: Mapping[str, Mapping[str, Any]]):
    by_group: dict[str, Counter] = defaultdict(Counter)
    by_opcode: dict[str, Counter] = defaultdict(Counter)
    for o in run.outcomes.values():
        by_group[_group(o.vector_id)][o.status] += 1
        for m in vectors[o.vector_id]["tags"]["opcodes"]:
            by_opcode[m][o.status] += 1
    return by_group, by_opcode


def to_json(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            filters: list[str] | None = None) -> dict[str, Any]:
    bundles = bundles or {}
    runs = []
    for run in result.runs:
        by_group, by_opcode = _tables(run, result.vectors)
        failing = [o for o in run.outcomes.values() if o.status == "fail"]
        runs.append({
            "command": run.command, "name": run.name, "version": run.version,
            "capabilities": (run.hello or {}).get("capabilities", []),
            "ok": run.ok, "passes": run.passes, "issues": run.issues, "restarts": run.restarts,
            "counts": {s: run.count(s) for s in ("pass", "fail", "skip")},
            "main_pass_vectors_per_second": round(run.rate, 1), "seconds": round(run.total_seconds, 3),
            "failure_kinds": dict(Counter(c for o in failing for c in o.categories)),
            "failures": [{
                "id": o.vector_id, "opcodes": result.vectors[o.vector_id]["tags"]["opcodes"],
                "categories": o.categories, "reason": o.reason,
                "mismatches": [m.to_json() for m in o.failures],
                "divergence": o.divergence.to_json() if o.divergence else None,
                "bundle": str(bundles[(run.command, o.vector_id)]) if (run.command, o.vector_id) in bundles else None,
            } for o in failing],
            "skipped": [{"id": o.vector_id, "reason": o.reason} for o in run.outcomes.values() if o.status == "skip"],
            "by_category": {g: dict(c) for g, c in sorted(by_group.items())},
            "by_opcode": {m: dict(c) for m, c in sorted(by_opcode.items())},
        })
    return {"report": "rtwo-vm conformance run", "protocol": PROTOCOL, "spec_version": SPEC_VERSION,
            "ok": result.ok, "seconds": round(result.seconds, 3),
            "corpus": {"digest": corpus.get("digest"), "vector_count": corpus.get("vector_count"),
                       "selected": len(result.vectors), "filters": filters or []},
            "implementations": runs, "disagreements": result.disagreements}


def junit_xml(result: SuiteResult) -> str:
    root = ET.Element("testsuites", name="rtwo-vm conformance")
    totals = Counter()
    for run in result.runs:
        suite = ET.SubElement(root, "testsuite", name=run.name, time=f"{run.total_seconds:.3f}")
        counts = Counter()
        for o in sorted(run.outcomes.values(), key=lambda o: o.vector_id):
            case = ET.SubElement(suite, "testcase", classname=f"{_slug(run.name)}.{_group(o.vector_id)}",
                                 name=o.vector_id, time="0")
            counts["tests"] += 1
            if o.status == "skip":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", message=o.reason)
            elif o.status == "fail":
                counts["failures"] += 1
                first = str(o.failures[0]) if o.failures else o.reason
                failure = ET.SubElement(case, "failure", message=first[:300], type=",".join(o.categories))
                failure.text = _details(o)
        for issue in run.issues:
            counts["errors"] += 1
            ET.SubElement(ET.SubElement(suite, "testcase", classname=f"{_slug(run.name)}.adapter",
                                        name="adapter protocol"), "error", message=issue[:300])
        for key in ("tests", "failures", "skipped", "errors"):
            suite.set(key, str(counts[key]))
        totals.update(counts)
    for key in ("tests", "failures", "skipped", "errors"):
        root.set(key, str(totals[key]))
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _details(o: Outcome) -> str:
    lines = [f"{m.category}: {m}" for m in o.failures]
    if o.reason:
        lines.append(o.reason)
    if o.divergence:
        lines.append(str(o.divergence))
    return "\n".join(lines)


def summary(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            shown: int = 15, by_opcode: bool = False) -> str:
    bundles = bundles or {}
    lines = [f"rtwo-vm conformance: {len(result.vectors)} vectors of corpus {str(corpus.get('digest'))[:12]} "
             f"(spec {SPEC_VERSION}, {PROTOCOL}), {len(result.runs)} implementation(s), {result.seconds:.1f} s"]
    for run in result.runs:
        lines += ["", f"== {run.name} {run.version}  [{run.command}]"]
        lines += [f"   {p}" for p in run.passes]
        lines.append(f"   {run.count('pass')} passed, {run.count('fail')} failed, {run.count('skip')} skipped; "
                     f"main pass {run.rate:,.0f} vectors/s; {run.restarts} adapter restarts")
        by_group, by_opcode_counts = _tables(run, result.vectors)
        lines.append(f"   {'category':<12} {'pass':>6} {'fail':>6} {'skip':>6}")
        for g, c in sorted(by_group.items()):
            lines.append(f"   {g:<12} {c['pass']:>6} {c['fail']:>6} {c['skip']:>6}")
        if by_opcode:
            lines.append(f"   {'opcode':<15} {'pass':>6} {'fail':>6} {'skip':>6}")
            for ins in TABLE.instructions:
                c = by_opcode_counts.get(ins.mnemonic, Counter())
                lines.append(f"   {ins.mnemonic:<15} {c['pass']:>6} {c['fail']:>6} {c['skip']:>6}")
        failing = sorted((o for o in run.outcomes.values() if o.status == "fail"), key=lambda o: o.vector_id)
        if failing:
            kinds = Counter(c for o in failing for c in o.categories)
            lines.append("   failure kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
            worst = sorted(((m, c) for m, c in by_opcode_counts.items() if c["fail"]), key=lambda mc: -mc[1]["fail"])
            lines.append("   opcodes with failures: " + ", ".join(
                f"{m} {c['fail']}/{c['fail'] + c['pass']}" for m, c in worst[:20]) + (" ..." if len(worst) > 20 else ""))
            lines.append(f"   failing vectors ({min(shown, len(failing))} of {len(failing)}):")
            for o in failing[:shown]:
                lines.append(f"     {o.vector_id}  [{', '.join(o.categories)}]")
                lines += [f"       {m}" for m in o.failures[:6]]
                if len(o.failures) > 6:
                    lines.append(f"       ... {len(o.failures) - 6} more")
                if o.reason:
                    lines.append(f"       {o.reason[:200]}")
                if o.divergence:
                    lines.append(f"       {o.divergence}")
                if (run.command, o.vector_id) in bundles:
                    lines.append(f"       replay bundle: {bundles[(run.command, o.vector_id)]}")
        for issue in run.issues:
            lines.append(f"   adapter issue: {issue}")
    if result.disagreements:
        lines += ["", f"implementations disagree on {len(result.disagreements)} vectors, e.g. "
                      + ", ".join(d["vector"] for d in result.disagreements[:5])]
    lines += ["", "RESULT: " + ("every implementation conforms" if result.ok else "NOT CONFORMING")]
    return "\n".join(lines)
