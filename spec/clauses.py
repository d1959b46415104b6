"""The clauses of each version's prose: every normative statement with its stable identifier.

Chapter 1.3 states the rule (as spec text): every paragraph, list item, table and code block of the
chapters ends with a marker ``{#<section>-<name>}``: its *clause identifier*. A paragraph or list
item carries it at the end of its last line; a table or a code block on a line of its own right
after it, unless each row of the table carries its own at the end of its last cell (then each
row is a clause). A paragraph ending in ``:`` directly followed by a list, table or code block
is its *lead-in*: it has no identifier, and its text counts as part of each clause it
introduces. The identifier's number is the section it was written in; it never changes when
text is inserted around it, and a later version keeps the identifier of every clause it keeps
(or rewords), and gives a new one to a new clause.

The *digest* of a clause is the SHA-256 of its normalised text (its lead-in, a table row's
header, and its own text, markers removed, every run of whitespace one space), written as 12
hexadecimal digits: the links of checks to clauses record it (rtwo_vm/clause_coverage.py), so that an
edited sentence shows which checks to review.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from spec import prose

NAME = r"[a-z0-9]+(?:-[a-z0-9]+)*"
CLAUSE_ID = re.compile(rf"(\d+(?:\.\d+)*)-{NAME}")
# A marker is never inside a code span: `{#6.3-divs}` in backticks is an example of one.
MARKER = re.compile(rf"(?<!`)\{{#((\d+(?:\.\d+)*)-{NAME})\}}(?!`)")
_TRAILING = re.compile(rf"[ \t]*\{{#((\d+(?:\.\d+)*)-{NAME})\}}[ \t]*$")
_MARKER_LINE = re.compile(rf"^\{{#((\d+(?:\.\d+)*)-{NAME})\}}[ \t]*$")
_ITEM = re.compile(r"^(?:[-*]|\d+\.)\s")
_INTERRUPT = re.compile(r"^(?:[-*]|1\.)\s")     # a list item that may interrupt a paragraph (CommonMark)
_ROW_END = re.compile(rf"[ \t]*\{{#((\d+(?:\.\d+)*)-{NAME})\}}[ \t]*\|[ \t]*$")
DIGEST_DIGITS = 12


@dataclass(frozen=True, slots=True)
class Clause:
    id: str
    section: str          # the section (unit) that holds it
    chapter: str          # the chapter file
    kind: str             # paragraph, item, table, row or code
    text: str             # its own text, marker removed
    lead: str             # its lead-in (and, for a row, its table's header), "" when none
    digest: str

    @property
    def summary(self) -> str:
        """Its text on one line, markers and Markdown emphasis left out (at most 160 characters)."""
        flat = " ".join(strip_markers(self.text).replace("**", "").split())
        return flat if len(flat) <= 160 else flat[:157] + "..."


@dataclass(frozen=True, slots=True)
class Block:
    kind: str             # paragraph, item, table, code or marker
    lines: tuple[str, ...]


def normalise(text: str) -> str:
    """``text`` without markers, every run of whitespace one space, stripped."""
    return " ".join(strip_markers(text).split())


def digest(lead: str, text: str) -> str:
    body = normalise(lead) + "\n" + normalise(text)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:DIGEST_DIGITS]


def strip_markers(text: str) -> str:
    """``text`` with every clause marker (and the blank it follows) removed."""
    return re.sub(rf"[ \t]*{MARKER.pattern}", "", text)


def blocks(body: str) -> list[Block]:
    """The blocks of a unit's text after its heading: paragraphs, top-level list items (with
    everything indented under them), tables, fenced code blocks and lone marker lines."""
    lines = body.splitlines()
    out: list[Block] = []
    i, n = 0, len(lines)
    while i < n:
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        start = i
        if line.startswith("```"):
            i += 1
            while i < n and not lines[i].startswith("```"):
                i += 1
            i = min(i + 1, n)
            out.append(Block("code", tuple(lines[start:i])))
            continue
        if line.startswith("|"):
            while i < n and lines[i].startswith("|"):
                i += 1
            out.append(Block("table", tuple(lines[start:i])))
            continue
        if _MARKER_LINE.match(line):
            out.append(Block("marker", (line,)))
            i += 1
            continue
        if _ITEM.match(line):
            i += 1
            while i < n:
                nxt = lines[i]
                if not nxt.strip():
                    # a blank line continues the item only when indented text follows
                    j = i
                    while j < n and not lines[j].strip():
                        j += 1
                    if j < n and lines[j].startswith((" ", "\t")):
                        i = j
                        continue
                    break
                if _ITEM.match(nxt) or nxt.startswith(("|", "```")):
                    break
                i += 1
            out.append(Block("item", tuple(lines[start:i])))
            continue
        i += 1
        while i < n and lines[i].strip() and not (_INTERRUPT.match(lines[i]) or lines[i].startswith(("|", "```"))
                                                   or _MARKER_LINE.match(lines[i])):
            i += 1
        out.append(Block("paragraph", tuple(lines[start:i])))
    return out


def _is_lead(block: Block, following: Block | None) -> bool:
    return (block.kind == "paragraph" and block.lines[-1].rstrip().endswith(":")
            and _TRAILING.search(block.lines[-1]) is None
            and following is not None and following.kind in ("item", "table", "code"))


def unit_clauses(chapter: str, number: str, text: str) -> tuple[list[Clause], list[str]]:
    """The clauses of one unit (its heading line and text) and what is wrong with its markers."""
    body = text.split("\n", 1)[1] if "\n" in text else ""
    found: list[Clause] = []
    problems: list[str] = []
    where = f"{chapter} section {number}"
    parts = blocks(body)
    lead, pending, previous = "", "", ""
    for k, block in enumerate(parts):
        following = parts[k + 1] if k + 1 < len(parts) else None
        joined = "\n".join(block.lines)
        if block.kind == "marker":
            if k == 0 or parts[k - 1].kind not in ("table", "code"):
                problems.append(f"{where}: the marker line {block.lines[0].strip()} follows no table or code block")
            continue
        if _is_lead(block, following):
            pending, previous = joined, "lead"
            if MARKER.search(joined):
                problems.append(f"{where}: a marker inside the lead-in {joined[:60]!r}")
            continue
        # a lead-in belongs to the block right after it, or to every item of the list after it
        if previous == "lead":
            lead = pending
        elif not (block.kind == "item" and previous == "item"):
            lead = ""
        previous = block.kind
        if block.kind in ("paragraph", "item"):
            match = _TRAILING.search(block.lines[-1])
            inner = MARKER.findall(joined[:len(joined) - len(match.group(0))] if match else joined)
            if inner:
                problems.append(f"{where}: a marker {inner[0][0]} inside the text of a {block.kind}")
            if match is None:
                problems.append(f"{where}: a {block.kind} without a clause marker: {joined[:70]!r}")
                continue
            found.append(_clause(match.group(1), number, chapter, block.kind, joined, lead))
            continue
        # a table or a code block: a marker line after it, or (tables) one marker per row
        marked_after = following is not None and following.kind == "marker"
        if block.kind == "table":
            rows = [r for r in block.lines[2:]]
            row_ids = [_ROW_END.search(r) for r in rows]
            head = "\n".join(block.lines[:2])
            if any(row_ids) and (marked_after or not all(row_ids)):
                problems.append(f"{where}: a table whose rows are not all marked (or also marked after it)")
            if all(row_ids) and rows:
                for row, match in zip(rows, row_ids):
                    assert match is not None
                    found.append(_clause(match.group(1), number, chapter, "row", row,
                                         (lead + "\n" + head).strip()))
                continue
            if MARKER.search(joined):
                problems.append(f"{where}: a marker inside a table whose rows are not all marked")
        if marked_after:
            assert following is not None
            found.append(_clause(_MARKER_LINE.match(following.lines[0]).group(1),  # type: ignore[union-attr]
                                 number, chapter, block.kind, joined, lead))
        else:
            problems.append(f"{where}: a {block.kind} without a clause marker line after it: {joined[:70]!r}")
    for clause in found:
        if clause.id.split("-", 1)[0] != number:
            problems.append(f"{where}: clause {clause.id} is named for another section")
    return found, problems


def _clause(clause_id: str, number: str, chapter: str, kind: str, text: str, lead: str) -> Clause:
    own = strip_markers(text).rstrip()
    return Clause(clause_id, number, chapter, kind, own, lead, digest(lead, own))


@functools.cache
def _parsed(version_name: str) -> tuple[tuple[Clause, ...], tuple[str, ...]]:
    found: list[Clause] = []
    problems: list[str] = []
    for chapter, units in prose.chapter_units(version_name).items():
        for unit in units:
            got, wrong = unit_clauses(chapter, unit.number, unit.text)
            found += got
            problems += wrong
    seen: dict[str, Clause] = {}
    for clause in found:
        if clause.id in seen:
            problems.append(f"clause {clause.id} is marked twice (sections {seen[clause.id].section} "
                            f"and {clause.section})")
        seen.setdefault(clause.id, clause)
    return tuple(found), tuple(problems)


def clauses(version_name: str) -> tuple[Clause, ...]:
    """Every clause of version ``version_name``, in the order of the text."""
    return _parsed(version_name)[0]


def problems(version_name: str) -> tuple[str, ...]:
    """What is wrong with the markers of version ``version_name`` (empty when nothing)."""
    return _parsed(version_name)[1]


@functools.cache
def by_id(version_name: str) -> dict[str, Clause]:
    out: dict[str, Clause] = {}
    for clause in clauses(version_name):
        out.setdefault(clause.id, clause)
    return out


def in_section(version_name: str, number: str) -> tuple[Clause, ...]:
    """The clauses of section ``number`` itself (not of its subsections)."""
    return tuple(c for c in clauses(version_name) if c.section == number)


def under(version_name: str, number: str) -> tuple[Clause, ...]:
    """The clauses of section ``number`` and of all its subsections."""
    return tuple(c for c in clauses(version_name) if c.section == number or c.section.startswith(number + "."))


@functools.cache
def defining(mnemonic: str, version_name: str) -> tuple[str, ...]:
    """The clauses that define instruction ``mnemonic``: those of its row's section that name it
    in bold at their start (``**DIVS**``, ``**AND**, **OR**``, ``**PUSH1, PUSH2**``, or a family
    such as ``**DUP*n***`` for DUP3 or ``**LOG*n***`` for LOG2)."""
    import spec
    section = spec.load(version_name).by_mnemonic[mnemonic].section
    family = re.sub(r"\d+$", "", mnemonic)
    out = []
    for clause in in_section(version_name, section):
        bold = re.findall(r"\*\*(.+?)\*\*(?!\*)", clause.lead + "\n" + clause.text)
        names = set()
        for span in bold:
            if "*n*" in span.replace("\\", ""):
                names.add(span.replace("*n*", "").strip() + "#")
            names.update(w for w in re.split(r"[^A-Z0-9]+", span) if w)
        if mnemonic in names or (family != mnemonic and family + "#" in names):
            out.append(clause.id)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Link:
    """A declaration that some checks check some clauses: ``kind`` (vector, scenario, theorem,
    agreement, selftest), ``key`` (the declaration, stable: its selector or its name),
    ``clauses`` (ids) and ``checks`` (the names of the checks it selects in one version)."""

    kind: str
    key: str
    clauses: tuple[str, ...]
    checks: tuple[str, ...]


def ids(text: str) -> tuple[str, ...]:
    """Clause ids written space-separated (a declaration's shorthand), each checked for form."""
    out = tuple(text.split())
    for one in out:
        if not CLAUSE_ID.fullmatch(one):
            raise ValueError(f"not a clause id: {one!r}")
    return out


@functools.cache
def rule_section(rule: str, version_name: str) -> str | None:
    """The section of chapter 5.6 that defines cost rule ``rule`` (its heading names it)."""
    for units in prose.chapter_units(version_name).values():
        for unit in units:
            head = unit.text.split("\n", 1)[0]
            if re.fullmatch(rf"#+\s+(5\.6\.\d+)\s+{re.escape(rule)}\s*", head):
                return unit.number
    return None


def summary_table(section: str, version_name: str) -> str | None:
    """The clause of section ``section``'s summary table of instructions (chapter 6), if any."""
    for clause in in_section(version_name, section):
        if clause.kind == "table" and clause.text.startswith("| Opcode | Mnemonic |"):
            return clause.id
    return None
