"""The versions on the documentation site: where each version's pages are, the note on each
page saying which version it is of, the navigation of the older versions, and which item of a
version's diff introduced an instruction.

The newest version's spec and reference pages are the site's own (``spec/``, ``reference/``);
every older version's are under ``v<version>/`` with the same relative layout, so that a link
between a version's chapters and its reference pages is the same in every version.
"""

from __future__ import annotations

import re
import unicodedata

import spec


def version_root(version: str) -> str:
    """The folder of ``version``'s spec and reference pages, from the site's root: the newest
    version's are the site's own (spec/, reference/), an older one's are under v<version>/."""
    return "" if version == spec.latest() else f"v{version}/"


def chapter_target(section: str, version: str) -> str:
    """``spec/<chapter>.md#<slug>`` of section ``section`` in ``version``'s chapters."""
    chapter = int(section.split(".")[0])
    chapters = spec.chapters(version)
    name = next(n for n in chapters if n.startswith(f"{chapter:02d}-"))
    heading = next(line for line in chapters[name].splitlines()
                   if line.startswith("#") and (line.lstrip("#").strip() + " ").startswith(section + " "))
    return f"spec/{name}#{slug(heading.lstrip('#').strip())}"


def slug(title: str) -> str:
    # Python-Markdown's toc slugify: lowercase, drop what is not a word, space or hyphen,
    # spaces to hyphens.
    value = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    value = re.sub(r"[^\w\s-]", "", value).strip().lower()
    return re.sub(r"[-\s]+", "-", value)


def changes_path(version: str) -> str:
    """The site path of the "What changed" page of ``version``."""
    return f"changes/{version}.md"


def version_nav() -> list[dict]:
    """Navigation entries of the pages pages() adds for versions: the "What changed" page of
    every version with a base, then the chapters and reference pages of every older version,
    newest first (the newest version's are in mkdocs.yml's own sections)."""
    out: list[dict] = []
    for version in reversed(spec.names()):
        if spec.version(version).base is not None:
            out.append({f"What changed in {version}": changes_path(version)})
    for version in reversed(spec.names()[:-1]):
        root = version_root(version)
        out.append({f"Spec {version}": [f"{root}spec/{name}" for name in spec.chapters(version)]
                    + [{"Instructions": f"{root}reference/instructions.md"},
                       {"Outcome codes": f"{root}reference/errors.md"},
                       {"Spec coverage": f"{root}reference/spec-coverage.md"}]})
    return out


def banner(page: str, version: str, path: str) -> str:
    """``page`` (a version's page at ``path`` below its version's folder) with a note under
    its title saying which version it is of and linking the same page of every other one."""
    up = "../" * path.count("/") + "../" * version_root(version).count("/")
    others = []
    for other in spec.names():
        if other != version:
            target = path
            if path.startswith("spec/") and path[5:] not in spec.chapters(other):
                target = f"spec/{next(iter(spec.chapters(other)))}"
            elif path.startswith("reference/instructions/") and path.rsplit("/", 1)[1][:-3] not in {
                    i.mnemonic.lower() for i in spec.load(other).instructions}:
                target = "reference/instructions.md"    # an instruction the other version lacks: its index
            others.append(f"[{other}]({up}{version_root(other)}{target})")
    row = spec.version(version)
    state = "the newest version" if version == spec.latest() else "an older version"
    changes = (f"; [what changed in {version}]({up}changes/{version}.md)" if row.base else "")
    note = (f'!!! info "Spec {version}"\n    This page is of spec {version} (release {row.release}), '
            f"{state}. The same page of spec {', '.join(others)}{changes}.\n")
    title, _, rest = page.partition("\n")
    return f"{title}\n\n{note}{rest}" if title.startswith("# ") else f"{note}\n{page}"


def introduced(version: str) -> dict[str, str]:
    """Mnemonic -> the id of the item of ``version``'s diff that adds it (none for the base)."""
    if spec.version(version).base is None:
        return {}
    from spec import versioning
    return {op["row"]["mnemonic"]: item["id"] for item in versioning.diff_document(version)["item"]
            for op in versioning.operations(item) if op["op"] == "add" and op["file"] == "instructions"}
