"""Reporting a conformance run: progress bar, text summary by category and opcode, the JSON
report, JUnit XML, and one replay bundle per failing vector (written atomically; the bundles
of an earlier run are removed only once they are recognised as bundles, never through a
link). conformance.report_files writes them all into the run's output folder."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import stat
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any, Mapping

import spec
from conformance.constants import PROTOCOL, SPEC_VERSION
from conformance.compare import bounded
from conformance.inputs import BUNDLE_FORMAT, BUNDLE_FORMATS, BUNDLE_LIMIT, MAX_DEPTH, printable
from conformance.report_junit import JUNIT_BYTES, NOW_PASSING, junit_xml
from conformance.triage import text_lines as triage_lines, triage
from conformance.suite import (
    KINDS, STATUSES, UNSUPPORTED, WRONG_ANSWERS, ImplementationRun, Outcome, SuiteResult, slug,
)

# Re-exported: the bundle formats (conformance.inputs) and the JUnit XML (conformance.report_junit).
__all__ = ["BUNDLE_FORMAT", "BUNDLE_FORMATS", "JUNIT_BYTES", "NOW_PASSING", "junit_xml"]
TABLE = spec.load()
MAX_BUNDLES = 50                 # replay bundles written per run (--max-bundles)
BUNDLE_BYTES = 512 << 10         # bytes of one bundle
REPORT_BYTES = 16 << 20          # bytes of report.json
REPORT_FAILURES = 1000           # failure entries per implementation in report.json


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
    """A file name unique and safe on every file system for any id: a slug of the prefix and
    the id, and a short hash of both (so ``a/b`` and ``a__b`` never share a file)."""
    digest = hashlib.sha256(f"{prefix}\0{vector_id}".encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{slug(prefix)[:40]}__{slug(vector_id)[:100]}-{digest}.json"


def ranked(run: ImplementationRun, statuses: tuple[str, ...] = ("fail",)) -> list[Outcome]:
    """Failing outcomes in triage order: real wrong answers first, then the adapter's
    misbehaviour, then unsupported inputs; within each, by category, opcode and id."""
    def key(o: Outcome):
        kind = o.kind
        tier = 0 if kind in WRONG_ANSWERS else 2 if kind in (UNSUPPORTED, "unavailable") else 1
        return (tier, o.fresh, KINDS.index(kind) if kind in KINDS else len(KINDS), _group(o.vector_id), o.vector_id)
    return sorted((o for o in run.outcomes.values() if o.status in statuses), key=key)


def _shrunk(doc: dict[str, Any], limit: int) -> str:
    """The bundle as JSON, within ``limit`` bytes: the response and pass messages are cut
    first (with a marker), the vector is always kept whole (replay needs it)."""
    text = json.dumps(doc, indent=1, sort_keys=True, default=str)
    if len(text) <= limit:
        return text
    doc = dict(doc, truncated=f"bundle cut to {limit} bytes: the response, failures and pass messages shortened")
    doc["response"] = bounded(doc["response"], 4000)
    doc["failures"] = doc["failures"][:20]
    doc["passes"] = [dict(p, message=bounded(p.get("message"), 2000)) for p in doc["passes"]]
    return json.dumps(doc, indent=1, sort_keys=True, default=str)


def bundle_texts(result: SuiteResult, directory: Path, max_bundles: int = MAX_BUNDLES,
                 max_bytes: int = BUNDLE_BYTES) -> dict[tuple[str, str], tuple[Path, str]]:
    """The bundles of a run, rendered, not written: (command, id) -> (path in ``directory``,
    JSON text), one per failing vector and implementation, in triage order, at most
    ``max_bundles`` in all: the vector, the response, the failures, the adapter command and
    its working directory (information, never run by a replay), and every pass the vector
    ran in with its environment and the vectors the same process ran before it."""
    out: dict[tuple[str, str], tuple[Path, str]] = {}
    for run, prefix in zip(result.runs, bundle_prefixes(result.runs)):
        for o in ranked(run, ("fail", "xfail")):
            # A vector never sent (the adapter would not start) has nothing to replay.
            if "unavailable" in o.categories:
                continue
            if len(out) >= max_bundles:
                return out
            # The folder resolved, the name not: a link planted under the name is not followed.
            path = directory.resolve() / bundle_name(prefix, o.vector_id)
            doc = {
                "bundle": BUNDLE_FORMAT,
                "implementation": {"command": run.command, "cwd": run.cwd, "name": run.name,
                                   "version": run.version},
                "vector": result.vectors[o.vector_id],
                "response": o.reply,
                "failures": [m.to_json() for m in o.failures],
                "reason": o.reason[:4000],
                "known_failure": o.known or None,
                "divergence": o.divergence.to_json() if o.divergence else None,
                "passes": [p.to_json() for p in o.passes],
                "replay": f"rtwo-vm conformance replay {shlex.quote(str(path))} --impl {shlex.quote(run.command)}",
            }
            out[(run.command, o.vector_id)] = (path, _shrunk(doc, max_bytes) + "\n")
    return out


def write_bundles(result: SuiteResult, directory: Path, max_bundles: int = MAX_BUNDLES,
                  max_bytes: int = BUNDLE_BYTES, remove_stale: bool = True) -> dict[tuple[str, str], Path]:
    """Write :func:`bundle_texts` into ``directory`` (created; never a link), each file
    atomically, then (``remove_stale``) remove the bundles of an earlier run."""
    from spec.files import atomic_write, output_dir
    output_dir(directory, "bundle folder")
    texts = bundle_texts(result, directory, max_bundles, max_bytes)
    for path, text in texts.values():
        atomic_write(path, text)
    written = {key: path for key, (path, _) in texts.items()}
    if remove_stale:
        remove_stale_bundles(directory, set(written.values()))
    return written


_BUNDLE_NAME = re.compile(r"[A-Za-z0-9_.+=-]{1,150}-[0-9a-f]{12}\.json")


def remove_stale_bundles(directory: Path, keep: set[Path]) -> list[Path]:
    """Remove the bundles of an earlier run from ``directory`` (they would mislead): only
    regular files (never a link, never what a link names) with a bundle's file name whose
    content is a bundle. Anything else is left alone. Returns what was removed."""
    from spec.files import FileRefused, read_json
    removed = []
    keep_names = {p.name for p in keep}
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name in keep_names or not _BUNDLE_NAME.fullmatch(entry.name):
                continue
            try:
                if not stat.S_ISREG(os.lstat(entry.path).st_mode):
                    continue
                doc = read_json(entry.path, BUNDLE_LIMIT, MAX_DEPTH, "replay bundle")
                if isinstance(doc, dict) and doc.get("bundle") in BUNDLE_FORMATS:
                    os.unlink(entry.path)          # unlink never follows a link
                    removed.append(Path(entry.path))
            except (OSError, FileRefused):
                continue
    return removed


def _group(vector_id: str) -> str:
    return vector_id.split("/", 1)[0]


def _tables(run: ImplementationRun, vectors: Mapping[str, Mapping[str, Any]]):
    """Counts by category and by tagged opcode: each status, and "unsupported" (failing
    vectors answered UNSUPPORTED_INPUT, also counted in "fail")."""
    by_group: dict[str, Counter] = defaultdict(Counter)
    by_opcode: dict[str, Counter] = defaultdict(Counter)
    for o in run.outcomes.values():
        unsupported = o.status == "fail" and o.categories == [UNSUPPORTED]
        by_group[_group(o.vector_id)][o.status] += 1
        by_group[_group(o.vector_id)]["unsupported"] += unsupported
        for m in vectors[o.vector_id]["tags"]["opcodes"]:
            by_opcode[m][o.status] += 1
            by_opcode[m]["unsupported"] += unsupported
    return by_group, by_opcode


def failure_summary(o: Outcome) -> dict[str, Any]:
    """The few fields of a failure kept for every failing vector in report.json (never cut):
    what --last-failed --kind selects by."""
    return {"id": o.vector_id, "status": o.status, "kind": o.kind, "categories": o.categories}


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


def _counts(run: ImplementationRun, fresh: bool) -> dict[str, int]:
    out = {s: run.count(s, fresh) for s in STATUSES}
    out["unsupported"] = sum(1 for o in run.outcomes.values()
                             if o.fresh == fresh and o.status == "fail" and o.categories == [UNSUPPORTED])
    return out


def to_json(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            filters: list[str] | None = None, run_info: Mapping[str, Any] | None = None,
            limit: int = REPORT_BYTES) -> dict[str, Any]:
    """The report as a JSON document, at most ``limit`` bytes once encoded: failure entries
    beyond REPORT_FAILURES per implementation (then fewer, until it fits) are left out and
    counted in ``failures_left_out``; ``failed_ids`` and ``failure_summaries`` (id, status,
    kind and categories) always list every failing vector, and ``what_to_implement_next``
    holds the triage of conformance.triage."""
    bundles = bundles or {}
    runs = []
    for run in result.runs:
        by_group, by_opcode = _tables(run, result.vectors)
        failing = ranked(run)
        runs.append({
            "command": run.command, "cwd": run.cwd, "name": run.name, "version": run.version,
            "started": not run.start_error, "start_error": run.start_error or None,
            "capabilities": (run.hello or {}).get("capabilities", []),
            "ok": run.ok, "passes": run.passes, "issues": [i[:2000] for i in run.issues[:100]],
            "restarts": run.restarts, "gave_up": run.gave_up or None, "not_run_after_exitfirst": run.stopped,
            "safety_net_retries": run.retried,
            "counts": _counts(run, False), "fresh_counts": _counts(run, True),
            "main_pass_vectors_per_second": round(run.rate, 1), "seconds": round(run.total_seconds, 3),
            "failure_kinds": dict(Counter(c for o in failing for c in o.categories)),
            "failed_ids": [o.vector_id for o in ranked(run, ("fail", "xfail", "xpass"))],
            "failures": [_entry(o, result, run, bundles) for o in failing[:REPORT_FAILURES]],
            "failures_left_out": max(0, len(failing) - REPORT_FAILURES),
            "failure_summaries": [failure_summary(o) for o in ranked(run, ("fail", "xfail"))],
            "what_to_implement_next": triage(run.outcomes.values(), result.vectors),
            "known_failures": [{**_entry(o, result, run, bundles), "known_failure": o.known}
                               for o in ranked(run, ("xfail",))[:REPORT_FAILURES]],
            "now_passing": [{"id": o.vector_id, "known_failure": o.known, "action": NOW_PASSING}
                            for o in run.outcomes.values() if o.status == "xpass"],
            "by_category": {g: _nonzero(c) for g, c in sorted(by_group.items())},
            "by_opcode": {m: _nonzero(c) for m, c in sorted(by_opcode.items())},
        })
    doc = {"report": "rtwo-vm conformance run", "protocol": PROTOCOL, "spec_version": SPEC_VERSION,
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


def _more(total: int, shown: int, indent: str = "     ") -> list[str]:
    return [f"{indent}… and {total - shown} more"] if total > shown else []


def _counts_line(run: ImplementationRun, fresh: bool = False) -> str:
    counts = _counts(run, fresh)
    wrong = counts["fail"] - counts["unsupported"]
    parts = [f"{counts['pass']} passed", f"{wrong} failed"]
    if counts["unsupported"]:
        parts.append(f"{counts['unsupported']} unsupported (UNSUPPORTED_INPUT)")
    if counts["xfail"]:
        parts.append(f"{plural(counts['xfail'], 'known failure')} (expected)")
    if counts["xpass"]:
        parts.append(f"{counts['xpass']} now passing (listed as known failures)")
    if fresh:
        return ", ".join(parts)
    rate = f"; main pass {run.rate:,.0f} vectors/s" if run.main_seconds else ""
    retried = (f"; {plural(run.retried, 'attempt')} met the wall-clock safety net and ran again"
               if run.retried else "")
    return ", ".join(parts) + rate + "; " + plural(run.restarts, "adapter restart") + retried


def _table(title: str, rows, columns: list[str], width: int) -> list[str]:
    out = [f"   {title:<{width}} " + " ".join(f"{c:>6}" for c in columns)]
    for name, c in rows:
        out.append(f"   {name:<{width}} " + " ".join(f"{c['unsupported' if col == 'unsup' else col]:>6}"
                                                     for col in columns))
    return out


def disassembly(vector: Mapping[str, Any], lines: int = 14) -> list[str]:
    """The entry contract's code as assembly (at most ``lines`` lines, then "… and N more")."""
    from reference_vm.disassembler import disassemble
    vector_input = vector.get("input") or {}
    contract = vector_input.get("pre_state", {}).get("contracts", {}).get(vector_input.get("message", {}).get("to"))
    if not contract:
        return ["(no code at the entry address)"]
    try:
        text = disassemble(bytes.fromhex(contract["code"][2:])).splitlines()
    except Exception as err:  # noqa: BLE001 - invalid containers are vectors too
        return [f"(not a valid container: {getattr(err, 'code', err)})"]
    text = [t for t in text if t.strip() != ".code"]
    return text[:lines] + ([f"… and {len(text) - lines} more lines"] if len(text) > lines else [])


def _beside(left: list[str], right: list[str], width: int = 66, indent: str = "       ") -> list[str]:
    out = []
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        a = a if len(a) <= width else a[:width - 1] + "…"
        out.append(f"{indent}{a:<{width}} │ {b}".rstrip())
    return out


def _vector_lines(o: Outcome, run: ImplementationRun, bundles, vector: Mapping[str, Any]) -> list[str]:
    tags = vector.get("tags", {})
    lines = [f"     {o.vector_id}  [{', '.join(o.categories)}]",
             f"       {printable(str(vector.get('description', ''))[:200])}",
             f"       spec {', '.join(tags.get('sections', [])) or '-'}; opcodes {', '.join(tags.get('opcodes', [])) or '-'}"]
    diff = [str(m) for m in o.failures[:8]] + _more(len(o.failures), 8, "")
    lines += _beside(diff, disassembly(vector))
    if o.reason:
        lines.append(f"       {o.reason[:300]}")
    if o.divergence:
        lines.append(f"       {str(o.divergence)[:300]}")
    if (run.command, o.vector_id) in bundles:
        lines.append(f"       replay bundle: {bundles[(run.command, o.vector_id)]}")
    return lines


def _failure_block(title: str, failing: list[Outcome], run, result, bundles, shown: int) -> list[str]:
    if not failing:
        return []
    if shown <= 0:
        return [f"   {title}: {len(failing)} (not printed: raise --show to see them)"]
    lines = [f"   {title} ({min(shown, len(failing))} of {len(failing)}):"]
    for o in failing[:shown]:
        lines += _vector_lines(o, run, bundles, result.vectors[o.vector_id])
    return lines + _more(len(failing), shown)


def _run_lines(run: ImplementationRun, result: SuiteResult, bundles, shown: int, by_opcode: bool,
               kinds: tuple[str, ...] | None) -> list[str]:
    if run.start_error:
        return ["", f"== {run.command}: the adapter could not start",
                f"   {run.start_error[:1000]}", f"   {plural(len(run.outcomes), 'vector')} not run"]
    head = run.name + (f" {run.version}" if run.version else "")
    lines = ["", f"== {head}  [{run.command}]"]
    lines += [f"   {p}" for p in run.passes]
    lines.append("   corpus: " + _counts_line(run))
    if any(o.fresh for o in run.outcomes.values()):
        lines.append(f"   fresh sample (seed {run.seed}): " + _counts_line(run, fresh=True))
    if run.stopped:
        lines.append(f"   stopped at the first failure (-x): {plural(run.stopped, 'vector')} not run")
    by_group, by_opcode_counts = _tables(run, result.vectors)
    columns = ["pass", "fail"] + [s for s in ("xfail", "xpass") if run.count(s)]
    lines += _table("category", sorted(by_group.items()), columns, 12)
    if by_opcode:
        # "unsup": of the failing vectors, those answered UNSUPPORTED_INPUT (also in "fail").
        lines += _table("opcode", ((i.mnemonic, by_opcode_counts.get(i.mnemonic, Counter()))
                                   for i in TABLE.instructions), columns + ["unsup"], 15)
    failing = ranked(run)
    unavailable = [o for o in failing if o.categories == ["unavailable"]]
    failing = [o for o in failing if o.categories != ["unavailable"]]
    if failing or unavailable:
        kind_counts = Counter(o.kind for o in failing + unavailable)
        lines.append("   failure kinds: " + ", ".join(f"{k} {n}" for k, n in
                                                     sorted(kind_counts.items(), key=lambda kn: KINDS.index(kn[0])
                                                            if kn[0] in KINDS else 99)))
        # Wrong answers and adapter failures by tagged opcode: unsupported vectors say nothing
        # about an opcode (what they lack is in "what to implement next").
        worst = sorted(((m, c) for m, c in by_opcode_counts.items() if c["fail"] - c["unsupported"]),
                       key=lambda mc: -(mc[1]["fail"] - mc[1]["unsupported"]))
        if worst:
            lines.append("   opcodes with failures: " + ", ".join(
                f"{m} {c['fail'] - c['unsupported']}/{sum(c[s] for s in STATUSES)}" for m, c in worst[:20]) + (
                f" … and {len(worst) - 20} more" if len(worst) > 20 else ""))
        lines += triage_lines(triage(run.outcomes.values(), result.vectors))
    if kinds:
        failing = [o for o in failing if o.kind in kinds or set(o.categories) & set(kinds)]
    wrong = [o for o in failing if o.kind in WRONG_ANSWERS]
    other = [o for o in failing if o.kind not in WRONG_ANSWERS and o.kind != UNSUPPORTED]
    unsupported = [o for o in failing if o.kind == UNSUPPORTED]
    budget = shown
    for title, group in (("wrong answers", [o for o in wrong if not o.fresh]),
                         ("wrong answers on the fresh sample", [o for o in wrong if o.fresh]),
                         ("adapter failures (crash, hang, garbage, protocol)", other)):
        lines += _failure_block(title, group, run, result, bundles, budget)
        budget = max(0, budget - len(group))
    if unsupported:
        ids = [o.vector_id for o in unsupported]
        lines.append(f"   unsupported (UNSUPPORTED_INPUT, counted apart from wrong answers): {len(ids)}: "
                     + ", ".join(ids[:8]) + (f" … and {len(ids) - 8} more" if len(ids) > 8 else ""))
    if unavailable:
        lines.append(f"   {plural(len(unavailable), 'vector')} not run: the adapter was unavailable "
                     f"({unavailable[0].reason[:300]})")
    xpass = sorted(o.vector_id for o in run.outcomes.values() if o.status == "xpass")
    if xpass:
        lines.append(f"   NOW PASSING ({len(xpass)}): listed as known failures but passed; "
                     "remove them from the list (the run fails until then):")
        lines += [f"     {vid}  (listed: {run.outcomes[vid].known})" for vid in xpass[:shown]]
        lines += _more(len(xpass), shown)
    xfail = ranked(run, ("xfail",))
    if xfail:
        lines.append(f"   known failures, expected ({min(shown, len(xfail))} of {len(xfail)}):")
        for o in xfail[:shown]:
            first = f": {o.failures[0]}" if o.failures else ""
            lines.append(f"     {o.vector_id}  [{', '.join(o.categories)}]{first}"[:240])
            lines.append(f"       reason: {o.known}")
        lines += _more(len(xfail), shown)
    for issue in run.issues[:10]:
        lines.append(f"   adapter issue: {issue[:500]}")
    lines += _more(len(run.issues), 10, "   ")
    return lines


def summary(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path] | None = None,
            shown: int = 15, by_opcode: bool = False, title: str | None = None,
            kinds: tuple[str, ...] | None = None) -> str:
    bundles = bundles or {}
    selected = sum(1 for v in result.vectors if not v.startswith("fresh/"))
    title = title or (f"{plural(selected, 'vector')} of corpus {str(corpus.get('digest'))[:12]}")
    lines = [f"rtwo-vm conformance: {title} (spec {SPEC_VERSION}, {PROTOCOL}), "
             f"{plural(len(result.runs), 'implementation')}, {result.seconds:.1f} s"]
    for run in result.runs:
        lines += _run_lines(run, result, bundles, shown, by_opcode, kinds)
    if result.disagreements:
        lines += ["", f"implementations disagree on {plural(len(result.disagreements), 'vector')}:"]
        for d in result.disagreements[:shown]:
            a, b = d["implementations"]
            right = d["matches_expected"]
            verdict = (f"; {', '.join(right)} matches the expected result" if right
                       else "; neither matches the expected result")
            lines.append(f"   {d['vector']}: {a} and {b} differ in {', '.join(d['fields'][:8])}"
                         + (" ..." if len(d["fields"]) > 8 else "") + verdict)
        lines += _more(len(result.disagreements), shown, "   ")
    lines += ["", "RESULT: " + ("every implementation conforms" if result.ok else "NOT CONFORMING")]
    return "\n".join(lines)


def summary_json(result: SuiteResult, corpus: Mapping[str, Any], exit_code: int, paths: Mapping[str, Any],
                 run_info: Mapping[str, Any]) -> dict[str, Any]:
    """The short machine-readable summary ``--json`` prints on stdout."""
    return {"ok": result.ok, "exit_code": exit_code, "spec_version": SPEC_VERSION,
            "corpus": {"digest": corpus.get("digest"),
                       "selected": sum(1 for v in result.vectors if not v.startswith("fresh/"))},
            **dict(run_info), "seconds": round(result.seconds, 3), "reports": dict(paths),
            "implementations": [{
                "command": r.command, "name": r.name, "version": r.version, "ok": r.ok,
                "start_error": r.start_error or None, "gave_up": r.gave_up or None,
                "counts": _counts(r, False), "fresh_counts": _counts(r, True),
                "failure_kinds": dict(Counter(o.kind for o in ranked(r))),
                "first_failures": [o.vector_id for o in ranked(r)[:10]]} for r in result.runs],
            "disagreements": len(result.disagreements)}
