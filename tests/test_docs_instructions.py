"""A docs page per instruction (issue 39, item 7), checked on the generated Markdown (no site
build; tests/test_docs.py builds the site and checks the pages are built and searchable).

Expectations come from the chapter text read here as a plain file, from the committed corpus
read line by line, and from a hand-made clause coverage report (as tests/test_docs_clauses.py
does), never from the page generator's own helpers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import spec
from rtwo_vm import clause_coverage as cc
from rtwo_vm.site import clauses as docclauses, instructions as docinstructions
from spec.clauses import Link

ROOT = Path(__file__).resolve().parent.parent
NEWEST = spec.latest()
CHAPTER_6 = (ROOT / "spec" / "chapters" / "06-instructions.md").read_text(encoding="utf-8")
# hand-made links: ADD's defining clause checked by two of ADD's vectors and by one theorem of
# ADD and one of PUSH1; SUB's vector checks the same clause (not ADD's); a selector of every
# vector and a theorem of every instruction check a clause of chapter 7 (listed on no page)
LINKS = [Link("vector", "id=*", ("7.5.2-strings",), ("arithmetic/ADD/happy", "arithmetic/SUB/happy")),
         Link("theorem", "cost (every instruction)", ("7.5.2-arrays",), ("ADD cost", "SUB cost")),
         Link("vector", "opcode=ADD", ("6.3-add-sub-mul",), ("arithmetic/ADD/happy", "arithmetic/ADD/compute_limit")),
         Link("vector", "opcode=SUB", ("6.3-add-sub-mul",), ("arithmetic/SUB/happy",)),
         Link("theorem", "stack_effect", ("6.3-add-sub-mul", "6.2-push"), ("ADD stack_effect", "PUSH1 stack_effect"))]


def _corpus(version: str) -> list[dict]:
    folder = ROOT / "conformance" / "vectors" / version
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def both():
    """The instruction pages of the newest version and of 1.0 (with the hand-made links)."""
    made = {v: cc.coverage(v, LINKS, store={}, reasons={}) for v in (NEWEST, "1.0")}
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(docclauses, "report", made.__getitem__)
        yield docinstructions.pages(NEWEST), docinstructions.pages("1.0")


@pytest.fixture(scope="module")
def pages(both):
    return both[0]


def _section(page: str, title: str) -> str:
    return page.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0].strip()


def test_the_page_quotes_the_spec_words_that_define_it(pages):
    add = pages["reference/instructions/add.md"]
    assert add.startswith("# ADD\n")
    # the paragraph of chapter 6 that names ADD in bold, as written there (marker left out)
    paragraph = next(p for p in CHAPTER_6.split("\n\n") if p.startswith("**ADD** pushes"))
    text, marker = re.fullmatch(r"(.*?)\s*\{#([\w.-]+)\}", paragraph, re.S).groups()
    assert marker == "6.3-add-sub-mul"
    assert "\n".join(f"> {line}" for line in text.splitlines()) in add
    assert f"> — clause [{marker}](../../spec/06-instructions.md#{marker})" in add
    assert "| encoding | `0x40` |" in add and "| compute | 1 base |" in add   # instructions.toml
    # an instruction with a cost rule links the rule's section of chapter 5
    sstore = pages["reference/instructions/sstore.md"]
    assert re.search(r"\| compute \| \d+ base \+ rule \[`storage_write`\]\(\.\./\.\./spec/05-resources\.md#5\d*-", sstore)
    assert "**SSTORE**" in _section(sstore, "Encoding and semantics")


def test_the_page_counts_and_names_the_vectors_that_exercise_it(pages):
    vectors = _corpus(NEWEST)
    for mnemonic in ("ADD", "SSTORE", "MULHU"):
        mine = [v for v in vectors if mnemonic in v["tags"]["opcodes"]]
        assert mine, mnemonic
        part = _section(pages[f"reference/instructions/{mnemonic.lower()}.md"], "Conformance vectors")
        assert part.startswith(f"{len(mine)} vectors of the spec {NEWEST} corpus"), part[:200]
        assert f"--filter 'opcode={mnemonic}'" in part
        for v in mine:
            assert f"    - `{v['id']}` ({v['tags']['outcome']})" in part, v["id"]
        outcomes = {v["tags"]["outcome"] for v in mine}
        assert sum(int(n) for n in re.findall(r"^\| `[^`]+` \| (\d+) \|$", part, re.M)) == len(mine)
        assert all(f"| `{o}` |" in part for o in outcomes)


def test_the_page_lists_its_proofs(pages):
    proofs = _section(pages["reference/instructions/add.md"], "Proofs")
    try:
        from proofs import theorems
        registered = [t for t in theorems.registry(version=NEWEST) if t.opcode == "ADD"]
    except Exception as err:   # noqa: BLE001 - a proofs package that cannot serve the version
        assert "No z3 models or theorems are shown" in proofs, err
        return
    assert registered
    for t in registered:
        for width in t.widths:
            assert f"| `{t.name}` | {width} |" in proofs, (t.name, width)
    assert "| `stack_effect` | 64 |" in proofs and "| `halts_exactly` | 64 |" in proofs


def _clause_rows(page: str) -> list[list[str]]:
    return [line.strip("| ").split(" | ") for line in _section(page, "Clauses").splitlines()
            if line.startswith("| [")]


def test_the_page_links_its_clauses_and_their_checks(pages):
    add = _clause_rows(pages["reference/instructions/add.md"])
    # its defining clause first, then the others in text order; counted from LINKS by hand
    assert [row[:4] for row in add] == [
        ["[6.3-add-sub-mul](../../spec/06-instructions.md#6.3-add-sub-mul)", "6.3",
         "defines it, 2 of its vectors, 1 of its proofs",
         "[3 vectors, 2 theorems](../../clauses/06-instructions.md#6.3-add-sub-mul)"],
        ["[6.2-push](../../spec/06-instructions.md#6.2-push)", "6.2", "1 of its proofs",
         "[2 theorems](../../clauses/06-instructions.md#6.2-push)"]]
    whole = ("ADD pushes (*a* + *b*) mod 2^W. SUB pushes (*a* − *b*) mod 2^W. MUL pushes (*a* × *b*) "
             "mod 2^W, the low W bits of the product (identical for signed and unsigned operands).")
    assert add[0][4] == whole[:157] + "..."          # a clause's summary: 160 characters at most
    assert "7.5.2" not in _section(pages["reference/instructions/add.md"], "Clauses")
    push = _clause_rows(pages["reference/instructions/push1.md"])
    assert [row[0].split("]")[0][1:] + ": " + row[2] for row in push] == [
        "6.2-push: defines it, 1 of its proofs", "6.3-add-sub-mul: 1 of its proofs"]
    # SUB: its own vector link counts for it, ADD's do not; its theorem is not linked
    sub = _clause_rows(pages["reference/instructions/sub.md"])
    assert [row[2] for row in sub] == ["defines it, 1 of its vectors"]
    # MUL: defined by the same clause, no check of its own linked
    assert [row[2] for row in _clause_rows(pages["reference/instructions/mul.md"])] == ["defines it"]


def test_the_index_links_every_page_and_versions_keep_their_own(both):
    pages, old = both
    index = pages["reference/instructions.md"]
    table = spec.load(NEWEST)
    linked = re.findall(r"\[`([A-Z0-9]+)`\]\(instructions/([a-z0-9]+)\.md\)", index)
    assert sorted({m for m, _ in linked}) == sorted(i.mnemonic for i in table.instructions)
    assert all(page == m.lower() for m, page in linked)
    assert {p for p in pages if p != "reference/instructions.md"} == {
        f"reference/instructions/{i.mnemonic.lower()}.md" for i in table.instructions}
    assert "v1.0/reference/instructions/add.md" in old and "v1.0/reference/instructions/mulhu.md" not in old
    assert "MULHU" not in old["v1.0/reference/instructions.md"]
