"""The prose of each version: the base's chapters, with the sections a later version replaces or adds.

A chapter is cut into *units*: each heading line with the text under it up to the next heading
of any level. A unit is named by its section number (``6.3``; ``1`` for a chapter's heading and
its opening text). A later version holds ``versions/<version>/sections/<number>.md``: a unit
whose number exists in the base replaces it, one whose number is new is inserted before the
first unit of its chapter with a higher number (so ``6.13`` follows 6.12 and its subsections).
The first line of such a file is ``<!-- items: N1, T1 -->``, naming the diff items it belongs
to (``<!-- items: N1; removed -->`` removes the unit). Every heading of the chapters is
numbered, so a unit is never ambiguous.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

from spec.versioning import VersionError, diff_document, version

HEADING = re.compile(r"^(#+)\s+(\d+(?:\.\d+)*)\s")
_MARK = re.compile(r"^<!--\s*items:\s*([A-Z0-9, ]+?)\s*(;\s*removed\s*)?-->\s*$")


@dataclass(frozen=True, slots=True)
class Unit:
    number: str
    text: str            # the heading line and everything up to the next heading


@dataclass(frozen=True, slots=True)
class Patch:
    number: str
    items: tuple[str, ...]
    text: str | None     # None: the unit is removed


def number_key(number: str) -> tuple[int, ...]:
    return tuple(int(p) for p in number.split("."))


def units(text: str) -> list[Unit]:
    """A chapter cut into units; the text before its first heading is refused."""
    out: list[Unit] = []
    current: list[str] = []
    number = None
    for line in text.splitlines(keepends=True):
        match = HEADING.match(line)
        if match:
            if number is not None:
                out.append(Unit(number, "".join(current)))
            number, current = match.group(2), [line]
        elif number is None:
            if line.strip():
                raise VersionError("a chapter must start with a numbered heading")
        else:
            current.append(line)
    if number is not None:
        out.append(Unit(number, "".join(current)))
    return out


def _base_chapters() -> dict[str, str]:
    folder = resources.files("spec").joinpath("chapters")
    names = sorted(p.name for p in folder.iterdir() if p.name.endswith(".md"))
    return {n: folder.joinpath(n).read_text(encoding="utf-8") for n in names}


@functools.cache
def patches(version_name: str) -> tuple[Patch, ...]:
    """The section files of a version with a base, in section order, each checked: a known
    diff item named, a heading of its own number (unless removed)."""
    item_ids = {item["id"] for item in diff_document(version_name)["item"]}
    folder = resources.files("spec").joinpath("versions", version_name, "sections")
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        if not entry.name.endswith(".md"):
            continue
        number = entry.name[:-3]
        where = f"versions/{version_name}/sections/{entry.name}"
        if not re.fullmatch(r"[1-9][0-9]*(\.[0-9]+)*", number):
            raise VersionError(f"{where}: a section file is named by its number")
        first, _, body = entry.read_text(encoding="utf-8").partition("\n")
        mark = _MARK.match(first)
        if mark is None:
            raise VersionError(f"{where}: the first line must be <!-- items: ID, ... -->")
        items = tuple(i.strip() for i in mark.group(1).split(",") if i.strip())
        unknown = [i for i in items if i not in item_ids]
        if not items or unknown:
            raise VersionError(f"{where}: names no item of the diff or an unknown one ({unknown})")
        if mark.group(2):
            found.append(Patch(number, items, None))
            continue
        parsed = units(body)
        if len(parsed) != 1 or parsed[0].number != number:
            raise VersionError(f"{where}: must hold exactly the heading of section {number} and its text")
        found.append(Patch(number, items, parsed[0].text.rstrip("\n") + "\n"))
    return tuple(sorted(found, key=lambda p: number_key(p.number)))


@functools.cache
def chapter_units(version_name: str) -> dict[str, tuple[Unit, ...]]:
    """Chapter file name -> its units, in version ``version_name``."""
    row = version(version_name)
    if row.base is None:
        return {name: tuple(units(text)) for name, text in _base_chapters().items()}
    chapters = {name: list(us) for name, us in chapter_units(row.base).items()}
    for patch in patches(version_name):
        chapter = int(patch.number.split(".")[0])
        name = next((n for n in chapters if n.startswith(f"{chapter:02d}-")), None)
        if name is None:
            raise VersionError(f"versions/{version_name}: section {patch.number} names no chapter")
        existing = chapters[name]
        at = next((i for i, u in enumerate(existing) if u.number == patch.number), None)
        if patch.text is None:
            if at is None:
                raise VersionError(f"versions/{version_name}: removes section {patch.number}, which is not there")
            del existing[at]
        elif at is not None:
            existing[at] = Unit(patch.number, patch.text)
        else:
            key = number_key(patch.number)
            place = next((i for i, u in enumerate(existing) if number_key(u.number) > key), len(existing))
            existing.insert(place, Unit(patch.number, patch.text))
    return {name: tuple(us) for name, us in chapters.items()}


def chapters(version_name: str) -> dict[str, str]:
    """The normative prose chapters of a version, file name -> Markdown, in chapter order. The
    base's are its files byte for byte; a later version's units are joined by one blank line."""
    if version(version_name).base is None:
        return {name: "".join(u.text for u in us) for name, us in chapter_units(version_name).items()}
    return {name: "\n".join(u.text.rstrip("\n") + "\n" for u in us)
            for name, us in chapter_units(version_name).items()}


def section_text(version_name: str, number: str) -> str | None:
    """The own text of one section (heading to the next heading) in a version, or None."""
    for us in chapter_units(version_name).values():
        for unit in us:
            if unit.number == number:
                return unit.text
    return None
