"""Documentation per spec version (issue 34, item 8): every version's chapters and instruction
reference, the generated "What changed in 1.1" page and the upgrade guide.

Expectations come from spec/versions/1.1/diff.toml and the section files read here with tomllib
and plain file reads (not through spec.diff or the docs code), from the committed corpus read
line by line, or are written by hand from the changelog (opcodes, the repricing)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

import spec
from rtwo_vm.site import changes as docchanges, pages as docgen

ROOT = Path(__file__).resolve().parent.parent
DIFF = tomllib.loads((ROOT / "spec" / "versions" / "1.1" / "diff.toml").read_text(encoding="utf-8"))
SECTIONS = ROOT / "spec" / "versions" / "1.1" / "sections"
GUIDE = ROOT / "docs" / "guides" / "upgrading.md"
# Written from spec/CHANGELOG.md's 1.1 items: the instructions 1.1 adds, with their opcodes.
NEW_IN_1_1 = {"MULHU": 0x47, "MULHS": 0x48, "CLZ": 0x69, "CTZ": 0x6A, "POPCNT": 0x6B,
              "STATICCALL": 0xC1, "TLOAD": 0x84, "TSTORE": 0x85}
ITEMS = ["C1", "N1", "N2", "F1", "T1", "P1", "X1"]


def _headings(page: str, level: str) -> list[str]:
    return [line[len(level) + 1:] for line in page.splitlines() if line.startswith(level + " ")]


def _item_blocks(page: str) -> dict[str, str]:
    parts = re.split(r"^## ", page, flags=re.M)[1:]
    return {p.split(":", 1)[0]: p for p in parts if re.match(r"[A-Z][0-9]+:", p)}


def test_the_diff_read_here_is_the_one_expected():
    assert [item["id"] for item in DIFF["item"]] == ITEMS
    added = {op["row"]["mnemonic"]: op["row"]["opcode"] for item in DIFF["item"]
             for op in item.get("add", []) if op["file"] == "instructions"}
    assert added == NEW_IN_1_1


def test_the_changes_page_has_exactly_the_items_of_the_diff_in_order():
    page = docgen.pages()["changes/1.1.md"]
    assert [h.split(":")[0] for h in _headings(page, "##") if re.match(r"[A-Z][0-9]+:", h)] == ITEMS
    for item in DIFF["item"]:
        assert f"## {item['id']}: {item['title']} {{#{item['id'].lower()}}}" in page
        assert f"| [{item['id']}](#{item['id'].lower()}) |" in page
    # V1 of the changelog (the corpus) has no data or prose operations: listed apart
    assert "## Changelog items without data or prose changes" in page
    assert "| V1 | 11.3 (vectors) |" in page


def test_every_added_instruction_and_the_repricing_are_under_their_item():
    blocks = _item_blocks(docgen.pages()["changes/1.1.md"])
    owner = {op["row"]["mnemonic"]: item["id"] for item in DIFF["item"]
             for op in item.get("add", []) if op["file"] == "instructions"}
    for mnemonic, opcode in NEW_IN_1_1.items():
        row = next(line for line in blocks[owner[mnemonic]].splitlines()
                   if line.startswith(f"| `instructions instruction {mnemonic}` | added |"))
        assert f'"opcode": {opcode}' in row, row
        for other, block in blocks.items():
            if other != owner[mnemonic]:
                assert f"instructions instruction {mnemonic}`" not in block, (mnemonic, other)
    assert "| `schedule hash.block_cost` | changed | `6` | `3` |" in blocks["P1"]
    for code, item in (("READ_ONLY_WRITE", "F1"), ("TRANSIENT_STORAGE_FULL", "T1")):
        assert f"| `errors error {code}` | added |" in blocks[item]


def test_every_replaced_section_is_listed_under_each_item_it_names():
    blocks = _item_blocks(docgen.pages()["changes/1.1.md"])
    files = sorted(SECTIONS.glob("*.md"))
    assert files
    for path in files:
        first = path.read_text(encoding="utf-8").splitlines()[0]
        named = re.fullmatch(r"<!-- items: ([A-Z0-9, ]+) -->", first).group(1).split(", ")
        number = path.name[:-3]
        for item in ITEMS:
            listed = re.search(rf"^\| {re.escape(number)} \| (changed|added|removed) \|", blocks[item], re.M)
            assert bool(listed) == (item in named), (number, item)
            assert (f'??? note "Diff of section {number}"' in blocks[item]) == (item in named)


def _item_rows(page: str) -> dict[str, str]:
    rows = [line for line in page.splitlines() if re.match(r"\| \[[A-Z][0-9]+\]", line)]
    return {line.split("]", 1)[0][3:]: line for line in rows}


def test_each_item_shows_its_proof_status_and_witness():
    page = docgen.pages()["changes/1.1.md"]
    assert "| proof status | witness vector |" in page
    rows = _item_rows(page)
    assert set(rows) == set(ITEMS)
    # CHANGELOG 1.1: P1 reprices SHA256 (a single-frame witness), F1 and T1 change existing
    # instructions in frames only 1.1 has, N1 and N2 only add, C1 and X1 name no instruction.
    assert rows["P1"].endswith("| proved as declared | `diff/1.0-1.1/SHA256` |")
    for item in ("F1", "T1"):
        assert "| proved as declared | replayed on the interpreter: " in rows[item]
    assert "| adds 2 (their theorems" in rows["N1"] and "| adds 3 (their theorems" in rows["N2"]
    for item in ("C1", "X1"):
        assert "| no instruction (checked by the version's vectors) | — |" in rows[item]
    block = _item_blocks(page)["P1"]
    assert "| SHA256 | changed as declared | outcome, compute |" in block
    assert '??? example "Witness vector diff/1.0-1.1/SHA256 (1.0 and 1.1)"' in block


@pytest.fixture
def fresh_proof():
    """The page's proof made again (it is cached per process), and no planted one left after."""
    from rtwo_vm.site import changes
    changes._proof.cache_clear()
    yield
    changes._proof.cache_clear()


def test_a_failed_proof_is_shown_failed_not_proved(monkeypatch, fresh_proof):
    # P1 planted without its affects list: the SHA256 change is then undeclared.
    import dataclasses

    from proofs.diff import declared as declared_mod, run
    real = declared_mod.declared
    monkeypatch.setattr(run, "declared", lambda old, new: dataclasses.replace(
        real(old, new), items=tuple(dataclasses.replace(i, changed=()) if i.id == "1.1/P1" else i
                                    for i in real(old, new).items)))
    page = docgen.pages()["changes/1.1.md"]
    rows = _item_rows(page)
    assert "| no instruction" in rows["P1"]     # P1 then names no instruction at all
    assert '!!! danger "rtwo-vm prove --diff 1.0 1.1 fails"' in page
    assert "    - SHA256: undeclared change (differs in outcome, compute): no item" in page
    assert "**Proof:** 8 added, 7 changed as declared, 87 unchanged, 1 undeclared change" in page


def _corpus_1_1() -> list[dict]:
    folder = ROOT / "conformance" / "vectors" / "1.1"
    return [json.loads(line) for path in sorted(folder.glob("*.jsonl"))
            for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_vector_counts_are_those_of_the_committed_corpus():
    vectors = _corpus_1_1()
    page = docgen.pages()["changes/1.1.md"]
    for item, opcodes, outcome in (("N1", {"MULHU", "MULHS"}, None), ("N2", {"CLZ", "CTZ", "POPCNT"}, None),
                                   ("F1", {"STATICCALL"}, "READ_ONLY_WRITE"), ("P1", {"SHA256"}, None),
                                   ("T1", {"TLOAD", "TSTORE"}, "TRANSIENT_STORAGE_FULL")):
        count = sum(1 for v in vectors
                    if opcodes & set(v["tags"]["opcodes"]) or v["tags"]["outcome"] == outcome)
        assert count > 0
        row = next(line for line in page.splitlines() if line.startswith(f"| [{item}]"))
        assert row.split(" | ")[5] == str(count), (item, row)


def test_the_1_0_reference_lists_no_1_1_instruction_and_the_1_1_reference_all():
    pages = docgen.pages()
    old, new = pages["v1.0/reference/instructions.md"], pages["reference/instructions.md"]
    for mnemonic, opcode in NEW_IN_1_1.items():
        assert f"`{mnemonic}`" not in old, mnemonic
        assert f"v1.0/reference/instructions/{mnemonic.lower()}.md" not in pages, mnemonic
        entry = pages[f"reference/instructions/{mnemonic.lower()}.md"]
        assert f"| encoding | `0x{opcode:02x}`" in entry
        assert "| since | spec 1.1 ([item " in entry
        # its page in 1.1 points at 1.0's index, which has no page of it
        assert "[1.0](../../v1.0/reference/instructions.md)" in entry
    assert sum(1 for p in pages if p.startswith("v1.0/reference/instructions/")) == len(spec.load("1.0").instructions)
    assert "| `0x47` |" not in old and "| `0x47` | [`MULHU`](instructions/mulhu.md) |" in new
    assert "[1.1](../../../reference/instructions/add.md)" in pages["v1.0/reference/instructions/add.md"]


def test_every_version_page_says_which_version_it_is():
    pages = docgen.pages()
    for path, page in pages.items():
        if path.startswith(("spec/", "reference/instructions", "reference/errors")):
            assert '!!! info "Spec 1.1"' in page and "(release 1.1.0), the newest version" in page, path
            old = f"v1.0/{path}"
            if path.removeprefix("reference/instructions/").removesuffix(".md").upper() in NEW_IN_1_1:
                assert old not in pages, old
                continue
            assert old in pages, old
            assert '!!! info "Spec 1.0"' in pages[old] and "(release 1.0.2), an older version" in pages[old]
    assert "errors error READ_ONLY_WRITE" not in pages["v1.0/reference/errors.md"]
    assert "`READ_ONLY_WRITE`" not in pages["v1.0/reference/errors.md"]
    assert "`READ_ONLY_WRITE`" in pages["reference/errors.md"]


def test_the_1_0_chapters_are_the_base_text_and_the_1_1_chapters_the_replaced_ones():
    pages = docgen.pages()
    base = (ROOT / "spec" / "chapters" / "06-instructions.md").read_text(encoding="utf-8")
    assert "MULHU" not in pages["v1.0/spec/06-instructions.md"]

    # A clause's identifier {#6.3-divs} is shown on the page as its badge (a link to its checks).
    def text(page: str) -> str:
        page = re.sub(r'[ \t]*<a class="clause[^"]*"[^>]*>[^<]*</a>', "", page)
        return re.sub(r"[ \t]*\{#[\w.-]+\}", "", page)

    assert text(base.split("\n", 1)[1]) in text(pages["v1.0/spec/06-instructions.md"])
    replaced = (SECTIONS / "6.13.md").read_text(encoding="utf-8").split("\n", 1)[1].strip()
    assert text(replaced) in text(pages["spec/06-instructions.md"])


def test_the_upgrade_guide_walks_every_item_in_order_with_the_right_numbers():
    guide = GUIDE.read_text(encoding="utf-8")
    assert [h.split(":")[0] for h in _headings(guide, "##") if re.match(r"[A-Z][0-9]+:", h)] == ITEMS
    quoted = dict(re.findall(r"\b([A-Z]+)\** \(`(0x[0-9A-F]{2})`", guide))
    assert {m: int(o, 16) for m, o in quoted.items()} == NEW_IN_1_1
    table = spec.load("1.1")
    for block in re.split(r"^## ", guide, flags=re.M):
        named = re.findall(r"\b([A-Z]+)\** \(`0x[0-9A-F]{2}`", block)
        costs = {int(c) for c in re.findall(r"base cost (\d+)", block)}
        if named and costs:      # each base cost stated is that of an instruction introduced there
            assert costs <= {table.by_mnemonic[m].cost for m in named}, (named, costs)
            assert {table.by_mnemonic[m].cost for m in named if m != "STATICCALL"} <= costs, named
    assert "hash.block_cost is 3 in 1.1 (6 in 1.0)" in guide
    assert spec.raw("schedule", "1.1")["hash"]["block_cost"] == 3
    for item in DIFF["item"]:
        for expression in docchanges.item_filters(item, "1.1"):
            assert f"`{expression}`" in guide, (item["id"], expression)
    assert "--spec-version 1.1" in guide


def test_the_changelog_points_at_the_guide_and_the_guide_is_in_the_navigation():
    changelog = (ROOT / "spec" / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "`docs/guides/upgrading.md`" in changelog and GUIDE.exists()
    assert "guides/upgrading.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
