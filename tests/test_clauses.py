"""Clause identifiers (spec 1.3, spec/clauses.py): every block of every version's chapters has
one, unique and named for its section; an identifier does not move when text is inserted
around it; what is not a marker is reported. Planted texts are hand-written here."""

from __future__ import annotations

import hashlib

import pytest

import spec
from spec import clauses


@pytest.mark.parametrize("version", spec.names())
def test_every_block_of_every_version_has_one_identifier(version):
    assert clauses.problems(version) == ()
    found = clauses.clauses(version)
    ids = [c.id for c in found]
    assert len(ids) == len(set(ids)) and len(ids) > 500
    assert all(c.id.split("-", 1)[0] == c.section for c in found)


def test_nothing_of_1_1_is_in_1_0():
    old, new = clauses.by_id("1.0"), clauses.by_id("1.1")
    for clause_id in ("1.7-no-leak", "2.3.3-transient", "6.13-tload", "6.11-staticcall", "7.2-read-only-write"):
        assert clause_id in new and clause_id not in old
    # a clause 1.1 rewords keeps its identifier and gets another digest
    assert old["3.1.2-version"].digest != new["3.1.2-version"].digest
    assert old["6.3-divs"].digest == new["6.3-divs"].digest


UNIT = """## 6.3 Arithmetic

All arithmetic wraps. {#6.3-wraps}

**DIVS** pushes the quotient; for b = 0 it pushes 2^W − 1. {#6.3-divs}

The checks, in order:

| # | Check | Error |
| --- | --- | --- |
| 1 | b ≠ 0 | none {#6.3-row-one} |
| 2 | more | none {#6.3-row-two} |

```
example
```

{#6.3-example}

- an item that goes on
  over two lines {#6.3-item}
"""


def _parse(text: str):
    return clauses.unit_clauses("06-instructions.md", "6.3", text)


def test_a_unit_is_cut_into_its_clauses():
    found, problems = _parse(UNIT)
    assert problems == []
    assert [(c.id, c.kind) for c in found] == [
        ("6.3-wraps", "paragraph"), ("6.3-divs", "paragraph"), ("6.3-row-one", "row"), ("6.3-row-two", "row"),
        ("6.3-example", "code"), ("6.3-item", "item")]
    rows = {c.id: c for c in found}
    assert rows["6.3-row-one"].lead.startswith("The checks, in order:") and "| # | Check" in rows["6.3-row-one"].lead


def test_the_digest_is_the_sha256_of_the_normalised_lead_and_text():
    found, _ = _parse(UNIT)
    divs = next(c for c in found if c.id == "6.3-divs")
    body = "\n" + "**DIVS** pushes the quotient; for b = 0 it pushes 2^W − 1."
    assert divs.digest == hashlib.sha256(body.encode()).hexdigest()[:12]
    rewrapped, _ = _parse(UNIT.replace("quotient; for", "quotient;\n   for"))
    assert next(c for c in rewrapped if c.id == "6.3-divs").digest == divs.digest
    edited, _ = _parse(UNIT.replace("2^W − 1", "0"))
    assert next(c for c in edited if c.id == "6.3-divs").digest != divs.digest


def test_identifiers_and_digests_do_not_move_when_text_is_inserted():
    before, _ = _parse(UNIT)
    inserted = UNIT.replace("All arithmetic wraps. {#6.3-wraps}\n",
                            "A new first rule. {#6.3-new}\n\nAll arithmetic wraps. {#6.3-wraps}\n")
    after, problems = _parse(inserted)
    assert problems == []
    assert [c.id for c in after] == ["6.3-new"] + [c.id for c in before]
    assert {c.id: c.digest for c in after if c.id != "6.3-new"} == {c.id: c.digest for c in before}


def test_a_lead_in_counts_in_each_clause_it_introduces():
    before, _ = _parse(UNIT)
    after, _ = _parse(UNIT.replace("The checks, in order:", "The checks, in any order:"))
    changed = {c.id for c, d in zip(before, after) if c.digest != d.digest}
    assert changed == {"6.3-row-one", "6.3-row-two"}


@pytest.mark.parametrize("planted, problem", [
    (UNIT.replace(" {#6.3-divs}", ""), "a paragraph without a clause marker"),
    (UNIT.replace(" {#6.3-row-two}", ""), "rows are not all marked"),
    (UNIT.replace("\n{#6.3-example}\n", ""), "code without a clause marker line"),
    (UNIT.replace("{#6.3-divs}", "{#6.3-wraps}"), ""),            # duplicates: found across the version
    (UNIT.replace("All arithmetic wraps.", "All {#6.3-odd} arithmetic wraps."), "inside the text"),
    (UNIT.replace("{#6.3-item}", "{#6.4-item}"), "named for another section"),
])
def test_a_missing_or_misplaced_marker_is_reported(planted, problem):
    found, problems = _parse(planted)
    if problem:
        assert any(problem in p for p in problems), problems
    else:
        assert [c.id for c in found].count("6.3-wraps") == 2


def test_a_marker_in_a_code_span_is_an_example_not_a_marker():
    found, problems = _parse(UNIT.replace("All arithmetic wraps.", "Write `{#6.3-x}` like this."))
    assert problems == [] and "6.3-x" not in [c.id for c in found]


@pytest.mark.parametrize("mnemonic, version, expected", [
    ("DIVS", "1.0", ("6.3-divs",)), ("SUB", "1.0", ("6.3-add-sub-mul",)), ("DUP3", "1.0", ("6.2-dupn",)),
    ("PUSH4", "1.0", ("6.2-push",)), ("LOG2", "1.0", ("6.10-logn",)), ("ROTR", "1.0", ("6.5-rotate",)),
    ("MULHS", "1.1", ("6.3-mulhs",)), ("TSTORE", "1.1", ("6.13-tstore",)),
    ("CALL", "1.0", ("6.11-cost", "6.11-start", "6.11-cannot-run", "6.11-frame", "6.11-outcome", "6.11-continue")),
])
def test_the_clauses_that_define_an_instruction(mnemonic, version, expected):
    assert clauses.defining(mnemonic, version) == expected


@pytest.mark.parametrize("version", spec.names())
def test_every_instruction_is_defined_by_a_clause(version):
    assert all(clauses.defining(i.mnemonic, version) for i in spec.load(version).instructions)
