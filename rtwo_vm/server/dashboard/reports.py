"""``/reports``: the latest proofs report and conformance report, when they exist.

They live where the commands write them, under the server's working directory (the same
place readiness reads): ``rtwo-vm prove`` writes build/proofs-report.json (a partial run
build/proofs-partial-report.json), ``rtwo-vm conformance run`` build/conformance/report.json.
The paths are fixed here; nothing from a request names a file. Each is read bounded
(spec.files) and shown as its summary; a report that cannot be read says why.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from spec import files
from rtwo_vm.runtime import tools
from rtwo_vm.server.dashboard.html import Markup, definition, join, page, table, tag

PROOFS = (("full proofs report", Path(tools.PROOFS_REPORT)),
          ("partial proofs report", Path("build") / "proofs-partial-report.json"))
CONFORMANCE = Path("build") / "conformance" / "report.json"
CONFORMANCE_LIMIT = 64 << 20


def _read(path: Path, limit: int, what: str) -> tuple[Any, str | None]:
    if not path.exists():
        return None, f"no {path.resolve()}"
    try:
        return files.read_json(path, limit, 64, what), None
    except (OSError, ValueError) as err:
        return None, f"{path.resolve()} cannot be read: {str(err)[:300]}"


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
        ("file", str(path.resolve())), ("counts for readiness", "yes" if usable else "no"),
        ("assessment", message), ("verdict of its rows", outcome), ("rows", len(rows)),
        ("statuses", _counts(statuses)),
        ("theorems", _counts(summary.get("theorems"))),
        ("agreement checks", _counts(summary.get("agreement"))),
        ("seconds", summary.get("seconds")),
    ])
    return tag("section", Markup(tag("h2", label) + facts), class_="card")


def _conformance() -> Markup:
    doc, why = _read(CONFORMANCE, CONFORMANCE_LIMIT, "conformance report")
    if doc is None or not isinstance(doc, dict):
        return tag("section", Markup(tag("h2", "Conformance report") + tag(
            "p", f"{why or 'not a report'} (`rtwo-vm conformance run` writes it)", class_="muted")),
            class_="card")
    corpus = doc.get("corpus") or {}
    facts = definition([
        ("file", str(CONFORMANCE.resolve())), ("all passed", doc.get("ok")),
        ("spec version", doc.get("spec_version")), ("seconds", doc.get("seconds")),
        ("corpus", f"{corpus.get('selected')} of {corpus.get('vector_count')} vectors, digest "
                   f"{str(corpus.get('digest'))[:16]}"),
    ])
    runs = [(r.get("name"), r.get("version"), r.get("command"), r.get("ok"),
             _counts(r.get("counts")), len(r.get("failed_ids") or []))
            for r in doc.get("implementations") or [] if isinstance(r, dict)]
    return tag("section", Markup(
        tag("h2", "Conformance report") + facts
        + table(["implementation", "version", "command", "passed", "counts", "failed vectors"],
                runs, id="conformance-runs")), class_="card")


def render():
    parts = [tag("p", f"read from {Path.cwd()} when the page is asked for", class_="muted")]
    parts += [_proofs(label, path) for label, path in PROOFS]
    parts.append(_conformance())
    return page("Reports", join(parts))
