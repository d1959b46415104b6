"""Reporting a conformance run: progress bar, text summary by category and opcode, the JSON
report, JUnit XML, and one replay bundle per failing vector."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping

import spec
from conformance.constants import PROTOCOL, SPEC_VERSION
from conformance.suite import STATUSES, ImplementationRun, Outcome, SuiteResult, slug

BUNDLE_FORMAT = "rtwo-conformance replay bundle/2"
BUNDLE_FORMATS = ("rtwo-conformance replay bundle/1", BUNDLE_FORMAT)   # what replay reads
TABLE = spec.load()
NOW_PASSING = "now passing: remove it from the known-failure list"


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def bundle_prefixes(runs) -> list[str]:
    """A file-name prefix per implementation run: its name, numbered when two runs share one
    (two builds of the same VM), so that their bundles never overwrite each other."""
    names = [slug(run.name) for run in runs]
    seen: Counter = Counter()
    out = []
    for name in names:
        seen[name] += 1
        out.append(name if names.count(name) == 1 else f"{name}-{seen[name]}")
    return out


def bundle_name(prefix: str, vector_id: str) -> str:
    return f"{prefix}__{vector_id.replace('/', '__')}.json"


def write_bundles(result: SuiteResult, directory: Path) -> dict[tuple[str, str], Path]:
    """One self-contained JSON file per failing vector and implementation: the vector, the
    response, the failures, the adapter command and its working directory, and every pass
    the vector ran in with its environment and the vectors the same process ran before it."""
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.json"):  # bundles of an earlier run would mislead
        try:
            if json.loads(stale.read_text(encoding="utf-8")).get("bundle") in BUNDLE_FORMATS:
                stale.unlink()
        except (OSError, ValueError, AttributeError):
            pass
    written = {}
    for run, prefix in zip(result.runs, bundle_prefixes(result.runs)):
        for o in run.outcomes.values():
            # A vector never sent (the adapter would not start) has nothing to replay.
            if not o.failed or "unavailable" in o.categories:
                continue
            path = (directory / bundle_name(prefix, o.vector_id)).resolve()
            doc = {
                "bundle": BUNDLE_FORMAT,
                "implementation": {"command": run.command, "cwd": run.cwd, "name": run.name,
                                   "version": run.version},
                "vector": result.vectors[o.vector_id],
                "response": o.reply,
                "failures": [m.to_json() for m in o.failures],
                "reason": o.reason,
                "known_failure": o.known or None,
                "divergence": o.divergence.to_json() if o.divergence else None,
                "passes": [p.to_json() for p in o.passes],
                "replay": f"rtwo-vm conformance replay {shlex.quote(str(path))}",
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


def _logs(o: Outcome) -> list[str]:
    return [p.reply.log_path for p in o.passes if p.reply is not None and p.reply.log_path]


def _entry(o: Outcome, result: SuiteResult, run: ImplementationRun, bundles) -> dict[str, Any]:
    key = (run.command, o.vector_id)
    return {"id": o.vector_id, "opcodes": result.vectors[o.vector_id]["tags"]["opcodes"],
            "categories": o.categories, "reason": o.reason,
            "mismatches": [m.to_json() for m in o.failures],
            "divergence": o.divergence.to_json() if o.divergence else None,
            "bundle": str(bundles[key]) if key in bundles else None, "logs": _logs(o)}


def to_json(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            filters: list[str] | None = None) -> dict[str, Any]:
    bundles = bundles or {}
    runs = []
    for run in result.runs:
        by_group, by_opcode = _tables(run, result.vectors)
        failing = [o for o in run.outcomes.values() if o.status == "fail"]
        runs.append({
            "command": run.command, "cwd": run.cwd, "name": run.name, "version": run.version,
            "started": not run.start_error, "start_error": run.start_error or None,
            "capabilities": (run.hello or {}).get("capabilities", []),
            "ok": run.ok, "passes": run.passes, "issues": run.issues, "restarts": run.restarts,
            "counts": {s: run.count(s) for s in STATUSES},
            "main_pass_vectors_per_second": round(run.rate, 1), "seconds": round(run.total_seconds, 3),
            "failure_kinds": dict(Counter(c for o in failing for c in o.categories)),
            "failures": [_entry(o, result, run, bundles) for o in failing],
            "known_failures": [{**_entry(o, result, run, bundles), "known_failure": o.known}
                               for o in run.outcomes.values() if o.status == "xfail"],
            "now_passing": [{"id": o.vector_id, "known_failure": o.known, "action": NOW_PASSING}
                            for o in run.outcomes.values() if o.status == "xpass"],
            "by_category": {g: dict(c) for g, c in sorted(by_group.items())},
            "by_opcode": {m: dict(c) for m, c in sorted(by_opcode.items())},
        })
    return {"report": "rtwo-vm conformance run", "protocol": PROTOCOL, "spec_version": SPEC_VERSION,
            "ok": result.ok, "seconds": round(result.seconds, 3),
            "corpus": {"digest": corpus.get("digest"), "vector_count": corpus.get("vector_count"),
                       "selected": len(result.vectors), "filters": filters or []},
            "implementations": runs, "disagreements": result.disagreements}


def junit_xml(result: SuiteResult) -> str:
    """JUnit XML as pytest writes it: an expected failure is skipped, a strict unexpected pass
    is a failure."""
    root = ET.Element("testsuites", name="rtwo-vm conformance")
    totals = Counter()
    for run in result.runs:
        suite = ET.SubElement(root, "testsuite", name=run.name, time=f"{run.total_seconds:.3f}")
        counts = Counter()
        for o in sorted(run.outcomes.values(), key=lambda o: o.vector_id):
            case = ET.SubElement(suite, "testcase", classname=f"{slug(run.name)}.{_group(o.vector_id)}",
                                 name=o.vector_id, time="0")
            counts["tests"] += 1
            if o.status == "xfail":
                counts["skipped"] += 1
                skipped = ET.SubElement(case, "skipped", type="xfail", message=f"known failure: {o.known}"[:300])
                skipped.text = _details(o)
            elif o.status == "xpass":
                counts["failures"] += 1
                ET.SubElement(case, "failure", type="xpass", message=f"{NOW_PASSING} (listed: {o.known})"[:300])
            elif o.status == "fail":
                counts["failures"] += 1
                first = str(o.failures[0]) if o.failures else o.reason
                failure = ET.SubElement(case, "failure", message=first[:300], type=",".join(o.categories))
                failure.text = _details(o)
        for issue in run.issues:
            counts["errors"] += 1
            ET.SubElement(ET.SubElement(suite, "testcase", classname=f"{slug(run.name)}.adapter",
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


def _unavailable_only(o: Outcome) -> bool:
    return o.categories == ["unavailable"]


def _counts_line(run: ImplementationRun) -> str:
    parts = [f"{run.count('pass')} passed", f"{run.count('fail')} failed"]
    if run.count("xfail"):
        parts.append(f"{plural(run.count('xfail'), 'known failure')} (expected)")
    if run.count("xpass"):
        parts.append(f"{run.count('xpass')} now passing (listed as known failures)")
    rate = f"; main pass {run.rate:,.0f} vectors/s" if run.main_seconds else ""
    return ", ".join(parts) + rate + "; " + plural(run.restarts, "adapter restart")


def _table(title: str, rows, columns: list[str], width: int) -> list[str]:
    out = [f"   {title:<{width}} " + " ".join(f"{c:>6}" for c in columns)]
    for name, c in rows:
        out.append(f"   {name:<{width}} " + " ".join(f"{c[col]:>6}" for col in columns))
    return out


def _vector_lines(o: Outcome, run: ImplementationRun, bundles) -> list[str]:
    lines = [f"     {o.vector_id}  [{', '.join(o.categories)}]"]
    lines += [f"       {m}" for m in o.failures[:6]]
    if len(o.failures) > 6:
        lines.append(f"       ... {len(o.failures) - 6} more")
    if o.reason:
        lines.append(f"       {o.reason[:300]}")
    if o.divergence:
        lines.append(f"       {o.divergence}")
    if (run.command, o.vector_id) in bundles:
        lines.append(f"       replay bundle: {bundles[(run.command, o.vector_id)]}")
    return lines


def _run_lines(run: ImplementationRun, result: SuiteResult, bundles, shown: int, by_opcode: bool) -> list[str]:
    if run.start_error:
        return ["", f"== {run.command}: the adapter could not start",
                f"   {run.start_error}", f"   {plural(len(run.outcomes), 'vector')} not run"]
    head = run.name + (f" {run.version}" if run.version else "")
    lines = ["", f"== {head}  [{run.command}]"]
    lines += [f"   {p}" for p in run.passes]
    lines.append("   " + _counts_line(run))
    by_group, by_opcode_counts = _tables(run, result.vectors)
    columns = ["pass", "fail"] + [s for s in ("xfail", "xpass") if run.count(s)]
    lines += _table("category", sorted(by_group.items()), columns, 12)
    if by_opcode:
        lines += _table("opcode", ((i.mnemonic, by_opcode_counts.get(i.mnemonic, Counter()))
                                   for i in TABLE.instructions), columns, 15)
    failing = sorted((o for o in run.outcomes.values() if o.status == "fail"), key=lambda o: o.vector_id)
    unavailable = [o for o in failing if _unavailable_only(o)]
    failing = [o for o in failing if not _unavailable_only(o)]
    if failing or unavailable:
        kinds = Counter(c for o in failing + unavailable for c in o.categories)
        lines.append("   failure kinds: " + ", ".join(f"{k} {n}" for k, n in kinds.most_common()))
        worst = sorted(((m, c) for m, c in by_opcode_counts.items() if c["fail"]), key=lambda mc: -mc[1]["fail"])
        if worst:
            lines.append("   opcodes with failures: " + ", ".join(
                f"{m} {c['fail']}/{sum(c.values())}" for m, c in worst[:20]) + (" ..." if len(worst) > 20 else ""))
    if failing:
        lines.append(f"   failing vectors ({min(shown, len(failing))} of {len(failing)}):")
        for o in failing[:shown]:
            lines += _vector_lines(o, run, bundles)
    if unavailable:
        lines.append(f"   {plural(len(unavailable), 'vector')} not run: the adapter was unavailable "
                     f"({unavailable[0].reason[:300]})")
    xpass = sorted(o.vector_id for o in run.outcomes.values() if o.status == "xpass")
    if xpass:
        lines.append(f"   NOW PASSING ({len(xpass)}): listed as known failures but passed; "
                     "remove them from the list (the run fails until then):")
        lines += [f"     {vid}  (listed: {run.outcomes[vid].known})" for vid in xpass[:shown]]
    xfail = sorted((o for o in run.outcomes.values() if o.status == "xfail"), key=lambda o: o.vector_id)
    if xfail:
        lines.append(f"   known failures, expected ({min(shown, len(xfail))} of {len(xfail)}):")
        for o in xfail[:shown]:
            first = f": {o.failures[0]}" if o.failures else ""
            lines.append(f"     {o.vector_id}  [{', '.join(o.categories)}]{first}"[:240])
            lines.append(f"       reason: {o.known}")
    for issue in run.issues:
        lines.append(f"   adapter issue: {issue}")
    return lines


def summary(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            shown: int = 15, by_opcode: bool = False, title: str | None = None) -> str:
    bundles = bundles or {}
    title = title or (f"{plural(len(result.vectors), 'vector')} of corpus {str(corpus.get('digest'))[:12]}")
    lines = [f"rtwo-vm conformance: {title} (spec {SPEC_VERSION}, {PROTOCOL}), "
             f"{plural(len(result.runs), 'implementation')}, {result.seconds:.1f} s"]
    for run in result.runs:
        lines += _run_lines(run, result, bundles, shown, by_opcode)
    if result.disagreements:
        lines += ["", f"implementations disagree on {plural(len(result.disagreements), 'vector')}:"]
        for d in result.disagreements[:shown]:
            a, b = d["implementations"]
            right = d["matches_expected"]
            verdict = (f"; {', '.join(right)} matches the expected result" if right
                       else "; neither matches the expected result")
            lines.append(f"   {d['vector']}: {a} and {b} differ in {', '.join(d['fields'][:8])}"
                         + (" ..." if len(d["fields"]) > 8 else "") + verdict)
    lines += ["", "RESULT: " + ("every implementation conforms" if result.ok else "NOT CONFORMING")]
    return "\n".join(lines)
