"""The clauses on the documentation site: each clause's identifier shown where it stands, with
the number of checks of each kind (a link to its entry on the chapter's checks page, which
names them), and the coverage page: every clause against every kind of check.

Everything is computed from rtwo_vm.clause_coverage when the site is built; the pages of a
version show that version's clauses and links only.
"""

from __future__ import annotations

import functools
import html
import re

import spec
from spec import clauses as spec_clauses
from rtwo_vm.site.versions import banner, version_root

SHORT = {"vector": "V", "scenario": "S", "theorem": "T", "agreement": "A", "selftest": "ST"}
NAMES = {"vector": "vectors", "scenario": "scenario vectors", "theorem": "theorems",
         "agreement": "agreement checks", "selftest": "self-test checks"}
SHOWN = 8          # check names listed per link on a checks page
_MARKED = re.compile(rf"[ \t]*{spec_clauses.MARKER.pattern}")


@functools.cache
def report(version: str):
    """The coverage report of ``version`` (one per build)."""
    from rtwo_vm import clause_coverage
    return clause_coverage.coverage(version)


def checks_path(chapter: str, version: str) -> str:
    return f"{version_root(version)}clauses/{chapter}"


def coverage_path(version: str) -> str:
    return f"{version_root(version)}reference/spec-coverage.md"


def _html_name(chapter: str) -> str:
    return chapter[:-3] + ".html"


def _title(entry) -> str:
    if entry.links:
        return ", ".join(f"{entry.count(k)} {NAMES[k]}" for k in SHORT if entry.count(k))
    if entry.reason is not None:
        return f"{entry.reason.kind}: {entry.reason.reason}"
    return "checked by nothing and not explained"


def badge(entry, href: str) -> str:
    """The inline mark of one clause: its id (the anchor others link to) and its counts."""
    clause_id = entry.clause.id
    if entry.links:
        counts = " ".join(f"{entry.count(k)}{SHORT[k]}" for k in SHORT if entry.count(k))
        state = "clause" + (" clause-review" if entry.review else "")
    else:
        counts = entry.reason.kind if entry.reason else "unchecked"
        state = "clause clause-" + ("explained" if entry.reason else "unchecked")
    flag = " (for review)" if entry.review else ""
    return (f'<a class="{state}" id="{clause_id}" href="{href}#{clause_id}" '
            f'title="{html.escape(_title(entry) + flag, quote=True)}">{clause_id} · {counts}</a>')


def with_badges(text: str, chapter: str, version: str, entries=None) -> str:
    """A chapter's Markdown with each clause marker replaced by its badge."""
    entries = entries if entries is not None else {e.clause.id: e for e in report(version).clauses}
    href = f"../clauses/{_html_name(chapter)}"

    def one(match: re.Match) -> str:
        entry = entries.get(match.group(1))
        return match.group(0) if entry is None else " " + badge(entry, href)
    return _MARKED.sub(one, text)


def _names(link) -> str:
    shown = ", ".join(f"`{c}`" for c in link.checks[:SHOWN])
    more = f" and {len(link.checks) - SHOWN} more" if len(link.checks) > SHOWN else ""
    return f"{shown}{more}"


def checks_page(chapter: str, version: str, entries=None) -> str:
    """Every clause of one chapter with the checks that check it, by kind."""
    entries = entries if entries is not None else [e for e in report(version).clauses if e.clause.chapter == chapter]
    text_href = f"../spec/{chapter}"
    lines = [f"# Checks of chapter {int(chapter[:2])}", "",
             f"Each clause of [chapter {int(chapter[:2])}]({text_href}) of spec "
             f"{version} with the checks linked to it (`rtwo-vm spec coverage --clause ID` prints the same), "
             "or why none is. The [coverage page](../reference/spec-coverage.md) shows every chapter.", ""]
    for entry in entries:
        clause = entry.clause
        lines += [f'<a id="{clause.id}"></a>', "",
                  f"**[{clause.id}]({text_href}#{clause.id})** (section {clause.section}, digest "
                  f"`{clause.digest}`): {html.escape(clause.summary, quote=False)}", ""]
        for kind in SHORT:
            links = [link for link in entry.links if link.kind == kind]
            if links:
                lines.append(f"- {entry.count(kind)} {NAMES[kind]}: " + "; ".join(
                    f"{html.escape(link.key, quote=False)} ({_names(link)})" for link in links))
        if entry.reason is not None:
            tests = f" Tests: {', '.join(f'`{t}`' for t in entry.reason.tests)}." if entry.reason.tests else ""
            lines.append(f"- {entry.reason.kind}: {html.escape(entry.reason.reason, quote=False)}{tests}")
        if not entry.links and entry.reason is None:
            lines.append("- **checked by nothing and not explained**")
        if entry.review:
            lines.append(f"- for review: {', '.join(html.escape(k, quote=False) for k, _ in entry.review)}")
        lines.append("")
    return "\n".join(lines)


def _chapter_rows(rep) -> list[str]:
    """Per chapter: its clauses, how many are checked, explained and unexplained, and how many
    each kind of check checks."""
    rows = []
    for chapter in dict.fromkeys(e.clause.chapter for e in rep.clauses):
        mine = [e for e in rep.clauses if e.clause.chapter == chapter]
        counts = [sum(1 for e in mine if e.count(k)) for k in SHORT]
        rows.append(f"| [{int(chapter[:2])}](../clauses/{chapter}) | {len(mine)} | "
                    f"{sum(1 for e in mine if e.status == 'checked')} | "
                    f"{sum(1 for e in mine if e.status == 'explained')} | "
                    f"{sum(1 for e in mine if e.status == 'unexplained')} | " + " | ".join(map(str, counts)) + " |")
    return rows


def coverage_page(version: str, rep=None) -> str:
    """Every clause of ``version`` against every kind of check: the coverage matrix."""
    rep = rep if rep is not None else report(version)
    s = rep.summary()
    explained = ", ".join(f"{n} {k}" for k, n in s["explained"].items() if n) or "none"
    rows = []
    for entry in rep.clauses:
        cells = "".join(f"<td>{entry.count(k) or ''}</td>" for k in SHORT)
        why = "" if entry.links else (entry.reason.kind if entry.reason else "<b>unexplained</b>")
        if entry.review:
            why = (why + " " if why else "") + "<b>for review</b>"
        rows.append(f'<tr><th><a href="../clauses/{_html_name(entry.clause.chapter)}#{entry.clause.id}">'
                    f"{entry.clause.id}</a></th>{cells}<td>{why}</td></tr>")
    head = "".join(f'<th title="{NAMES[k]}">{SHORT[k]}</th>' for k in SHORT)
    lines = ["# Spec coverage", "",
             f"Every clause of spec {version} (chapter 1.3: each paragraph, list item, table and code "
             "block has an identifier) against the kinds of check that check it: conformance vectors (V), "
             "scenario vectors (S), theorems (T), agreement checks of the SMT model with the interpreter (A) "
             "and checks of the adapter self-test (ST). A number counts the checks of that kind linked to the "
             "clause; a clause no check links to says why (`spec/coverage/untestable.toml`: informative, "
             "checked by the project's tests, or untestable). Each clause links to its chapter's checks page, "
             "which names the checks. `rtwo-vm spec coverage` prints the same, and lists the links whose "
             "clause changed since they were confirmed.", "",
             f"{s['clauses']} clauses: {s['checked']} checked, {sum(s['explained'].values())} explained "
             f"({explained}), {s['unexplained']} unexplained; {s['review']} links for review.", "",
             "| chapter | clauses | checked | explained | unexplained | " + " | ".join(SHORT.values()) + " |",
             "| --- | " + " | ".join("---:" for _ in range(4 + len(SHORT))) + " |", *_chapter_rows(rep), "",
             '<div class="cov-scroll"><table class="cov clause-matrix"><thead><tr><th>clause</th>'
             f'{head}<th>or why</th></tr></thead><tbody>{"".join(rows)}</tbody></table></div>']
    for why in rep.unavailable:
        lines += ["", f"Not gathered: {html.escape(why, quote=False)}."]
    for problem in rep.problems:
        lines += ["", f"Problem: {html.escape(problem, quote=False)}"]
    return "\n".join(lines) + "\n"


def pages(version: str) -> dict[str, str]:
    """The checks page of every chapter and the coverage page of ``version``."""
    out = {}
    for chapter in spec.chapters(version):
        path = f"clauses/{chapter}"
        out[checks_path(chapter, version)] = banner(checks_page(chapter, version), version, path)
    out[coverage_path(version)] = banner(coverage_page(version), version, "reference/spec-coverage.md")
    return out
