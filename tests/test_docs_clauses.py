"""The clauses on the documentation site (rtwo_vm/site/clauses.py), checked on the generated
Markdown with a report of hand-made links (no site build): each clause shows its identifier
and its checks where it stands, its chapter's checks page names them, and the coverage page
has a row per clause of the version."""

from __future__ import annotations

import pytest

import spec
from rtwo_vm import clause_coverage as cc
from rtwo_vm.site import clauses as site
from spec import clauses
from spec.clauses import Link

LINKS = [Link("vector", "opcode=TRAP", ("6.1-trap",), tuple(f"control/TRAP/v{n}" for n in range(11))),
         Link("theorem", "halts_exactly TRAP", ("6.1-trap", "7.2-trap-executed"), ("TRAP halts_exactly",)),
         Link("selftest", "shutdown: answers bye", ("11.5.6-exit",), ("shutdown: answers bye and exits",))]
REASONS = {"1.2-chapters": cc.Reason("informative", "the table of chapters")}


@pytest.fixture
def report(monkeypatch):
    made = cc.coverage("1.0", LINKS, store={}, reasons=REASONS)
    monkeypatch.setattr(site, "report", lambda version: made)
    return made


def test_each_clause_shows_its_id_and_its_checks_where_it_stands(report):
    page = site.with_badges(spec.chapters("1.0")["06-instructions.md"], "06-instructions.md", "1.0")
    assert "{#" not in page.replace("`{#", "")
    assert ('<a class="clause clause-review" id="6.1-trap" href="../clauses/06-instructions.html#6.1-trap" '
            'title="11 vectors, 1 theorems (for review)">6.1-trap · 11V 1T</a>') in page
    assert '<a class="clause clause-unchecked" id="6.1-nop"' in page and "6.1-nop · unchecked</a>" in page
    # a row of a table keeps its cells: the badge stands in the last one
    errors = site.with_badges(spec.chapters("1.0")["07-outcomes.md"], "07-outcomes.md", "1.0")
    row = next(line for line in errors.splitlines() if line.startswith("| `TRAP_EXECUTED`"))
    assert row.endswith("7.2-trap-executed · 1T</a> |") and row.count("|") == 3
    intro = site.with_badges(spec.chapters("1.0")["01-introduction.md"], "01-introduction.md", "1.0")
    assert "`{#6.3-divs}`" in intro                     # the example of a marker in 1.3 stays text
    assert 'id="1.2-chapters"' in intro and "1.2-chapters · informative</a>" in intro


def test_the_checks_page_names_the_checks(report):
    page = site.checks_page("06-instructions.md", "1.0")
    entry = page[page.index('<a id="6.1-trap"></a>'):page.index('<a id="6.2-summary"></a>')]
    assert "[6.1-trap](../spec/06-instructions.md#6.1-trap)" in entry
    assert "- 11 vectors: opcode=TRAP (`control/TRAP/v0`" in entry and "and 3 more" in entry
    assert "- 1 theorems: halts_exactly TRAP (`TRAP halts_exactly`)" in entry
    assert "for review: vector:opcode=TRAP, theorem:halts_exactly TRAP" in entry
    nop = page[page.index('<a id="6.1-nop"></a>'):page.index('<a id="6.1-jump"></a>')]
    assert "checked by nothing and not explained" in nop


def test_the_coverage_page_is_the_matrix_of_every_clause(report):
    page = site.coverage_page("1.0")
    rows = [line for line in page.split("<tr>") if line.startswith("<th><a href=")]
    assert len(rows) == len(clauses.clauses("1.0"))
    trap = next(r for r in rows if "#6.1-trap" in r)
    assert trap.startswith('<th><a href="../clauses/06-instructions.html#6.1-trap">6.1-trap</a></th>'
                           "<td>11</td><td></td><td>1</td><td></td><td></td><td><b>for review</b></td>")
    assert "<td>informative <b>for review</b></td>" in next(r for r in rows if "#1.2-chapters" in r)
    assert "| [6](../clauses/06-instructions.md) |" in page
    assert f"{len(clauses.clauses('1.0'))} clauses: 3 checked, 1 explained (1 informative)" in page


def test_every_version_has_its_checks_pages_and_coverage_page(report):
    pages = site.pages("1.0")
    assert set(pages) == {f"v1.0/clauses/{c}" for c in spec.chapters("1.0")} | {"v1.0/reference/spec-coverage.md"}
    assert "This page is of spec 1.0" in pages["v1.0/reference/spec-coverage.md"]
