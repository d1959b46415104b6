"""What every report says of a run's scenario vectors (spec chapter 11.9), apart from the
single-call vectors: counts, the scenarios not run and why (the capability, or step versions the
adapter lacks: never silent), whether the run establishes that the implementation carries state
across calls, and each failing scenario with its first divergent step (index, both results, the
state before it) or its post-state; the triage counts of failing scenarios by where they
diverge, by group and by failure kind.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Mapping

from conformance.report.counts import plural
from conformance.run.outcomes import KINDS, UNSUPPORTED, WRONG_ANSWERS, Outcome
from conformance.run.scenarios import ScenarioRuns

NOT_ESTABLISHED = "this run is complete for single calls and does not establish that the implementation " \
                  "carries state across calls"
SHOWN_STATE = 300               # characters of a state or result shown in the text report


def _ranked(runs: ScenarioRuns, statuses: tuple[str, ...] = ("fail",)) -> list[Outcome]:
    def key(o: Outcome):
        kind = o.kind
        tier = 0 if kind in WRONG_ANSWERS else 2 if kind in (UNSUPPORTED, "unavailable") else 1
        return (tier, o.fresh, KINDS.index(kind) if kind in KINDS else len(KINDS), o.vector_id)
    return sorted((o for o in runs.outcomes.values() if o.status in statuses), key=key)


def failing(runs: ScenarioRuns) -> list[Outcome]:
    """Failing scenarios (known failures included), in triage order."""
    return _ranked(runs, ("fail", "xfail"))


def _where(o: Outcome) -> str:
    if o.scenario is None:
        return o.kind
    return o.scenario.where


def reasons(runs: ScenarioRuns) -> dict[str, int]:
    """Why scenarios were not run: reason -> how many."""
    return dict(Counter(runs.not_run.values()))


def carries_state_line(runs: ScenarioRuns) -> str:
    state = runs.carries_state
    if state is None:
        return "no scenario vector selected: carrying state across calls not checked"
    if state:
        return f"carries state across calls: every one of the {plural(len(runs.outcomes), 'scenario')} passed"
    if runs.not_run:
        return NOT_ESTABLISHED
    return "does NOT carry state across calls as chapter 11.9 says: scenarios fail"


def triage(runs: ScenarioRuns) -> dict[str, Any]:
    """The scenarios' part of "what to implement next": failing scenarios counted apart from
    single-call vectors, by where they first diverge (step 0, a later step, the post-state), by
    group and by failure kind, and the scenarios not run."""
    bad = failing(runs)
    where: Counter[str] = Counter()
    for o in bad:
        d = o.scenario
        where["step 0" if d is not None and d.index == 0 else "a later step" if d is not None and d.index
              else "post-state" if d is not None else o.kind] += 1
    return {"failing": len(bad), "passed": runs.count("pass") + runs.count("xpass"),
            "not_run": len(runs.not_run), "not_run_reasons": reasons(runs),
            "first_divergence": dict(where),
            "by_group": dict(Counter(o.vector_id.split("/")[1] if not o.fresh else "fresh" for o in bad)),
            "kinds": dict(Counter(o.kind for o in bad))}


def entry(o: Outcome, bundles: Mapping[tuple[str, str], Any], command: str) -> dict[str, Any]:
    key = (command, o.vector_id)
    return {"id": o.vector_id, "status": o.status, "kind": o.kind, "categories": o.categories,
            "reason": o.reason[:2000], "known_failure": o.known or None,
            "divergence": o.scenario.to_json() if o.scenario is not None else None,
            "mismatches": [m.to_json() for m in o.failures[:50]],
            "bundle": str(bundles[key]) if key in bundles else None, "seconds": round(o.seconds, 6)}


def json_section(runs: ScenarioRuns, bundles: Mapping[tuple[str, str], Any], command: str) -> dict[str, Any]:
    """report.json's ``scenarios`` of one implementation."""
    counts = {s: runs.count(s, False) for s in ("pass", "fail", "xfail", "xpass")}
    fresh = {s: runs.count(s, True) for s in ("pass", "fail", "xfail", "xpass")}
    return {"sent": len(runs.outcomes), "counts": counts, "fresh_counts": fresh,
            "not_run": len(runs.not_run), "not_run_reasons": reasons(runs),
            "not_run_ids": sorted(runs.not_run)[:1000],
            "carries_state": runs.carries_state, "carries_state_note": carries_state_line(runs),
            "ok": runs.ok, "issues": [i[:2000] for i in runs.issues[:100]],
            "steps_sent": runs.steps, "main_pass_steps_per_second": round(runs.rate, 1),
            "failed_ids": [o.vector_id for o in _ranked(runs, ("fail", "xfail", "xpass"))],
            "failures": [entry(o, bundles, command) for o in failing(runs)[:1000]]}


def _short(value: Any, limit: int = SHOWN_STATE) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _result_line(result: Any) -> str:
    if not isinstance(result, dict):
        return _short(result, 120)
    return (f"{result.get('status')}/{result.get('error')} output {str(result.get('output'))[:40]} "
            f"changes {_short(result.get('state_changes'), 160)}")


def outcome_lines(o: Outcome, vector: Mapping[str, Any], bundle: Any = None) -> list[str]:
    lines = [f"     {o.vector_id}  [{', '.join(o.categories)}]" + ("  (known failure)" if o.status == "xfail" else ""),
             f"       {str(vector.get('description', ''))[:200]}"]
    d = o.scenario
    if d is not None:
        lines.append(f"       {str(d)[:300]}")
        if d.index is not None:
            lines.append(f"       state before step {d.index}: {_short(d.state_before)}")
            lines.append(f"       expected: {_result_line(d.expected)}")
            lines.append(f"       got:      {_result_line(d.got)}")
        lines += [f"       {m}"[:240] for m in d.mismatches[:6]]
    else:
        lines += [f"       {m}"[:240] for m in o.failures[:4]]
        if o.reason:
            lines.append(f"       {o.reason[:300]}")
    if bundle is not None:
        lines.append(f"       replay bundle: {bundle}")
    return lines


def text_lines(runs: ScenarioRuns, scenarios: Mapping[str, Mapping[str, Any]],
               bundles: Mapping[tuple[str, str], Any], command: str, shown: int) -> list[str]:
    """The scenario lines of one implementation in the text summary."""
    if not runs.outcomes and not runs.not_run:
        return []
    lines = []
    if runs.outcomes:
        c = {s: runs.count(s, False) for s in ("pass", "fail", "xfail", "xpass")}
        f = {s: runs.count(s, True) for s in ("pass", "fail", "xfail", "xpass")}
        parts = [f"{c['pass']} passed", f"{c['fail']} failed"]
        parts += [f"{c['xfail']} known failures (expected)"] if c["xfail"] else []
        parts += [f"{c['xpass']} now passing (listed as known failures)"] if c["xpass"] else []
        fresh = f"; fresh scenarios: {f['pass']} passed, {f['fail']} failed" if sum(f.values()) else ""
        rate = f"; main pass {runs.rate:,.0f} steps/s" if runs.seconds else ""
        lines.append("   scenarios: " + ", ".join(parts) + fresh + rate)
    for reason, n in reasons(runs).items():
        lines.append(f"   scenarios not run: {plural(n, 'scenario vector')}: {reason}")
    lines.append(f"   {carries_state_line(runs)}")
    bad = failing(runs)
    if bad:
        t = triage(runs)
        lines.append("   failing scenarios (counted apart from single-call vectors), first divergence: "
                     + ", ".join(f"{k} {n}" for k, n in t["first_divergence"].items()))
        for o in bad[:shown]:
            lines += outcome_lines(o, scenarios.get(o.vector_id, {}), bundles.get((command, o.vector_id)))
        if len(bad) > shown:
            lines.append(f"     … and {len(bad) - shown} more")
    for issue in runs.issues[:5]:
        lines.append(f"   scenario pass issue: {issue[:500]}")
    return lines


def html_section(runs: ScenarioRuns, scenarios: Mapping[str, Mapping[str, Any]],
                 bundles: Mapping[tuple[str, str], Any], command: str, escape, limit: int = 300) -> str:
    if not runs.outcomes and not runs.not_run:
        return ""
    c = {s: runs.count(s) for s in ("pass", "fail", "xfail", "xpass")}
    out = ["<h3>Scenario vectors</h3>",
           f"<p>{c['pass']} passed, {c['fail']} failed, {c['xfail']} known failures, {c['xpass']} now passing; "
           f"{escape(carries_state_line(runs))}</p>"]
    for reason, n in reasons(runs).items():
        out.append(f"<p class='bad'>not run: {n} scenario vectors: {escape(reason)}</p>")
    bad = failing(runs)
    if bad:
        out.append("<table><tr><th>scenario</th><th>kind</th><th>first divergence</th><th>details</th></tr>")
        for o in bad[:limit]:
            details = outcome_lines(o, scenarios.get(o.vector_id, {}), bundles.get((command, o.vector_id)))[1:]
            out.append(f"<tr><td><code>{escape(o.vector_id)}</code></td><td>{escape(o.kind)}</td>"
                       f"<td>{escape(_where(o))}</td><td><pre>{escape(chr(10).join(d.strip() for d in details))}"
                       "</pre></td></tr>")
        out.append("</table>")
    return "".join(out)
