"""``/reports``: the latest proofs report and conformance reports, when they exist.

They live where the commands write them: the server's data directory (``rtwo-vm serve
--data-dir``, else ``$RTWO_VM_DATA``, else the user's: rtwo_vm/arguments/evidence.py), the
same files as the CLI's (rtwo_vm/runtime/tools.py EvidenceFiles): ``rtwo-vm prove`` writes
proofs-report.json (a partial run proofs-partial-report.json), ``rtwo-vm conformance run``
conformance/VERSION/report.json. Never a file of the server's working directory. The paths
are fixed by the data directory; nothing from a request names a file. Each is read bounded
(spec.files) and shown as its summary; a report that cannot be read says why, and the page
says which directory it read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import spec
from spec import files
from rtwo_vm.runtime import tools
from rtwo_vm.runtime.tools import EvidenceFiles
from rtwo_vm.server.dashboard.html import Markup, definition, join, page, table, tag

CONFORMANCE_LIMIT = 64 << 20


def _read(path: Path, limit: int, what: str) -> tuple[Any, str | None]:
    if not path.exists():
        return None, f"no {path}"
    try:
        return files.read_json(path, limit, 64, what), None
    except (OSError, ValueError) as err:
        return None, f"{path} cannot be read: {str(err)[:300]}"


def _counts(value: Any) -> str:
    if not isinstance(value, dict) or not value:
        return "none"
    return ", ".join(f"{k} {v}" for k, v in value.items())


def _proofs(label: str, path: Path) -> Markup:
    doc, why = _read(path, tools.PROOFS_REPORT_LIMIT, "proofs report")
    if doc is None:
        return tag("section", Markup(tag("h2", label) + tag("p", f"{why} (`rtwo-vm prove` "
                                                                 "writes it)", class_="muted")),
                   class_="card")
    try:
        from proofs.report import assess, verdict
        usable, message = assess(doc)
        rows = [r for r in doc.get("results", []) if isinstance(r, dict)] if isinstance(doc, dict) else []
        outcome = verdict(rows) if rows else "no results"
    except Exception as err:  # noqa: BLE001 - a report the proofs package cannot assess
        usable, message, rows, outcome = False, f"not assessed: {type(err).__name__}: {err}", [], "-"
    summary = doc.get("summary", {}) if isinstance(doc, dict) else {}
    statuses: dict[str, int] = {}
    for r in rows:
        statuses[str(r.get("status"))] = statuses.get(str(r.get("status")), 0) + 1
    facts = definition([
        ("file", str(path)), ("counts for readiness", "yes" if usable else "no"),
        ("assessment", message), ("verdict of its rows", outcome), ("rows", len(rows)),
        ("statuses", _counts(statuses)),
        ("theorems", _counts(summary.get("theorems"))),
        ("agreement checks", _counts(summary.get("agreement"))),
        ("seconds", summary.get("seconds")),
    ])
    return tag("section", Markup(tag("h2", label) + facts), class_="card")


def _conformance(version: str, path: Path) -> Markup:
    title = f"Conformance report, spec {version}"
    doc, why = _read(path, CONFORMANCE_LIMIT, "conformance report")
    if doc is None or not isinstance(doc, dict):
        return tag("section", Markup(tag("h2", title) + tag(
            "p", f"{why or f'{path} is not a report'} (`rtwo-vm conformance run` writes it)",
            class_="muted")), class_="card")
    corpus = doc.get("corpus") or {}
    facts = definition([
        ("file", str(path)), ("all passed", doc.get("ok")),
        ("spec version", doc.get("spec_version")), ("seconds", doc.get("seconds")),
        ("corpus", f"{corpus.get('selected')} of {corpus.get('vector_count')} vectors, digest "
                   f"{str(corpus.get('digest'))[:16]}"),
    ])
    runs = [(r.get("name"), r.get("version"), r.get("command"), r.get("ok"),
             _counts(r.get("counts")), len(r.get("failed_ids") or []))
            for r in doc.get("implementations") or [] if isinstance(r, dict)]
    return tag("section", Markup(
        tag("h2", title) + facts
        + table(["implementation", "version", "command", "passed", "counts", "failed vectors"],
                runs, id=f"conformance-runs-{version.replace('.', '-')}")), class_="card")


def render(evidence: EvidenceFiles | None):
    """The page over the data directory of ``evidence`` (None: the server was given none)."""
    if evidence is None:
        return page("Reports", tag(
            "p", "no data directory given to the server (rtwo-vm serve --data-dir), so no "
                 "report is read", class_="muted", id="evidence-from"))
    parts = [tag("p", f"read from the data directory {evidence.root} (rtwo-vm serve --data-dir, "
                      "$RTWO_VM_DATA) when the page is asked for", class_="muted",
                 id="evidence-from")]
    parts += [_proofs("full proofs report", evidence.proofs_report),
              _proofs("partial proofs report", evidence.partial_proofs_report)]
    parts += [_conformance(version, evidence.conformance_report(version))
              for version in spec.names()]
    return page("Reports", join(parts))
