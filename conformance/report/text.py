"""The text report of a run: per implementation its passes, counts, tables by category (and
opcode), failure kinds, what to implement next and the failing vectors, each with its field
differences beside the disassembly of its code."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping

import spec
from conformance.constants import PROTOCOL
from conformance.report import scenarios as scenario_report
from conformance.report.counts import count_tables, plural, ranked, status_counts
from conformance.report.triage import text_lines as triage_lines, triage
from conformance.run.inputs import printable
from conformance.run.outcomes import KINDS, STATUSES, UNSUPPORTED, WRONG_ANSWERS, Outcome
from conformance.run.suite import ImplementationRun, SuiteResult



def _more(total: int, shown: int, indent: str = "     ") -> list[str]:
    return [f"{indent}… and {total - shown} more"] if total > shown else []


def _counts_line(run: ImplementationRun, fresh: bool = False) -> str:
    counts = status_counts(run, fresh)
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


def _cell(c: Counter, column: str) -> int:
    """A table cell: "fail" counts the wrong answers and adapter failures, "unsup" the failing
    vectors answered UNSUPPORTED_INPUT (apart from "fail", as in report.html)."""
    if column == "unsup":
        return c["unsupported"]
    return c["fail"] - c["unsupported"] if column == "fail" else c[column]


def _table(title: str, rows, columns: list[str], width: int) -> list[str]:
    out = [f"   {title:<{width}} " + " ".join(f"{c:>6}" for c in columns)]
    for name, c in rows:
        out.append(f"   {name:<{width}} " + " ".join(f"{_cell(c, col):>6}" for col in columns))
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
                f"   {run.start_error[:1000]}", f"   {plural(len(run.outcomes), 'vector')} not run"
                + (f", nor {plural(len(run.scenarios.not_run), 'scenario vector')}" if run.scenarios.not_run else "")]
    head = run.name + (f" {run.version}" if run.version else "")
    lines = ["", f"== {head}  [{run.command}]"]
    lines += [f"   {p}" for p in run.passes]
    if run.outcomes or not (run.scenarios.outcomes or run.scenarios.not_run):
        lines.append("   corpus: " + _counts_line(run))
    if any(o.fresh for o in run.outcomes.values()):
        lines.append(f"   fresh sample (seed {run.seed}): " + _counts_line(run, fresh=True))
    if run.stopped:
        lines.append(f"   stopped at the first failure (-x): {plural(run.stopped, 'vector')} not run")
    lines += scenario_report.text_lines(run.scenarios, result.scenarios, bundles, run.command, shown)
    by_group, by_opcode_counts = count_tables(run, result.vectors)
    # "unsup": the failing vectors answered UNSUPPORTED_INPUT, apart from "fail" (wrong answers
    # and adapter failures).
    columns = ["pass", "fail", "unsup"] + [s for s in ("xfail", "xpass") if run.count(s)]
    if by_group:
        lines += _table("category", sorted(by_group.items()), columns, 12)
    if by_opcode:
        lines += _table("opcode", ((i.mnemonic, by_opcode_counts.get(i.mnemonic, Counter()))
                                   for i in spec.load(result.version).instructions), columns, 15)
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
        lines += triage_lines(triage(run.outcomes.values(), result.vectors, result.version, result.executed))
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
    lines = [f"rtwo-vm conformance: {title} (spec {result.version}, {PROTOCOL}), "
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
    not_run = sum(len(r.scenarios.not_run) for r in result.runs)
    single_only = (f" on single calls only: {plural(not_run, 'scenario vector')} not run, carrying state "
                   "across calls not established" if not_run else "")
    lines += ["", "RESULT: " + ("every implementation conforms" + single_only if result.ok else "NOT CONFORMING")]
    return "\n".join(lines)
