"""The HTML report of a conformance run: one self-contained file (inline style, no script, no
external resource) with the counts of every implementation and its failure table in triage
order, each failure with its description, spec sections, field diffs and disassembly.
At most HTML_FAILURES failures per implementation are listed ("… and N more" after them)."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Mapping

from conformance.constants import PROTOCOL
from conformance.report import scenarios as scenario_report
from conformance.report.counts import ranked, status_counts
from conformance.report.text import disassembly
from conformance.report.triage import html_rows, triage
from conformance.run.suite import SuiteResult

HTML_FAILURES = 300

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;vertical-align:top}
th{background:#f3f3f3;text-align:left}.ok{color:#070}.bad{color:#b00}
pre{margin:0;font:12px/1.3 ui-monospace,monospace;white-space:pre-wrap}
td.diff{min-width:28em}details summary{cursor:pointer}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def render(result: SuiteResult, corpus: Mapping[str, Any], bundles: Mapping[tuple[str, str], Path],
           run_info: Mapping[str, Any]) -> str:
    out = ["<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
           "<title>RTWO VM conformance report</title>", f"<style>{STYLE}</style></head><body>",
           "<h1>RTWO VM conformance report</h1>",
           f"<p>spec {_e(result.version)}, {_e(PROTOCOL)}, corpus {_e(str(corpus.get('digest'))[:16])}, "
           f"seed {_e(run_info.get('seed'))}, fresh sample {_e(run_info.get('fresh'))}; "
           f"<b class='{'ok' if result.ok else 'bad'}'>"
           f"{'every implementation conforms' if result.ok else 'NOT CONFORMING'}</b></p>"]
    for run in result.runs:
        out.append(f"<h2>{_e(run.name)} {_e(run.version)}</h2><p><code>{_e(run.command)}</code></p>")
        if run.start_error:
            out.append(f"<p class='bad'>the adapter could not start: {_e(run.start_error[:2000])}</p>")
            continue
        out.append("<table><tr><th></th><th>pass</th><th>fail</th><th>unsupported</th><th>xfail</th>"
                   "<th>xpass</th></tr>")
        for label, fresh in (("corpus", False), ("fresh sample", True)):
            c = status_counts(run, fresh)
            out.append(f"<tr><th>{label}</th><td>{c['pass']}</td><td>{c['fail'] - c['unsupported']}</td>"
                       f"<td>{c['unsupported']}</td><td>{c['xfail']}</td><td>{c['xpass']}</td></tr>")
        out.append("</table>")
        out.append(html_rows(triage(run.outcomes.values(), result.vectors, result.version, result.executed), _e))
        out.append(scenario_report.html_section(run.scenarios, result.scenarios, bundles, run.command, _e))
        failing = ranked(run, ("fail", "xfail"))
        if not failing:
            continue
        out.append("<table><tr><th>vector</th><th>kind</th><th>description</th><th>field diffs</th>"
                   "<th>program</th></tr>")
        for o in failing[:HTML_FAILURES]:
            vector = result.vectors[o.vector_id]
            tags = vector.get("tags", {})
            diffs = [str(m) for m in o.failures[:20]] + ([o.reason[:500]] if o.reason else [])
            if o.divergence:
                diffs.append(str(o.divergence)[:500])
            bundle = bundles.get((run.command, o.vector_id))
            out.append(
                f"<tr><td><code>{_e(o.vector_id)}</code>{' (known)' if o.status == 'xfail' else ''}</td>"
                f"<td>{_e(o.kind)}</td><td>{_e(str(vector.get('description', ''))[:300])}<br>"
                f"spec {_e(', '.join(tags.get('sections', [])))}</td>"
                f"<td class='diff'><pre>{_e(chr(10).join(diffs))}</pre>"
                + (f"<br><small>bundle: {_e(bundle)}</small>" if bundle else "")
                + f"</td><td><details><summary>disassembly</summary><pre>"
                  f"{_e(chr(10).join(disassembly(vector, 40)))}</pre></details></td></tr>")
        out.append("</table>")
        if len(failing) > HTML_FAILURES:
            out.append(f"<p>… and {len(failing) - HTML_FAILURES} more (see report.json)</p>")
    out.append("</body></html>\n")
    return "".join(out)
