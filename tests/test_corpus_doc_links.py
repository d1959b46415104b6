"""Every relative link of the documentation resolves on the site as mkdocs builds it (pages in
docs/ plus those rtwo_vm.site.pages generates from spec/), anchors included; and the values the
guides quote from the corpus are filled in from its manifest at build time."""

from __future__ import annotations

import json
import posixpath
import re
from pathlib import Path

import pytest
from markdown.extensions.toc import slugify

import spec
from conformance.constants import corpus_dir
from rtwo_vm.site import pages as docgen, values as docvalues

DOCS = Path(__file__).resolve().parent.parent / "docs"
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)


def site_pages() -> dict[str, str]:
    pages = {str(p.relative_to(DOCS)): p.read_text(encoding="utf-8")
             for p in DOCS.rglob("*.md") if "hooks" not in p.parts}
    pages.update(docgen.pages())
    return pages


def anchors(text: str) -> set[str]:
    out = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        explicit = re.search(r"\{\s*#([\w-]+)\s*\}\s*$", heading)  # attr_list: ### STOP {#stop}
        out.add(explicit.group(1) if explicit else slugify(re.sub(r"[`*]", "", heading), "-"))
    # an element's own id in the page's HTML: a clause's badge (<a class="clause" id="6.3-divs">)
    return out | set(re.findall(r'<[a-z]+ [^>]*\bid="([^"]+)"', FENCE.sub("", text)))


def broken_links(pages: dict[str, str]) -> list[str]:
    broken = []
    for name, text in sorted(pages.items()):
        for target in LINK.findall(FENCE.sub("", text)):
            if re.match(r"[a-z]+:", target):
                continue
            path, _, anchor = target.partition("#")
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(name), path)) if path else name
            if resolved not in pages and not (DOCS / resolved).exists():
                broken.append(f"{name}: {target} (no page {resolved})")
            elif anchor and resolved in pages and anchor not in anchors(pages[resolved]):
                broken.append(f"{name}: {target} (no heading #{anchor} in {resolved})")
    return broken


def test_every_relative_link_resolves_on_the_site():
    broken = broken_links(site_pages())
    assert not broken, "\n".join(broken)


def test_a_broken_link_is_caught():
    pages = {"guides/a.md": "[x](../spec/99-nothing.md) [y](b.md#nowhere) [z](b.md#here) [w](b.md#stop)",
             "guides/b.md": "# Here\n\n### STOP {#stop}\n"}
    assert broken_links(pages) == ["guides/a.md: ../spec/99-nothing.md (no page spec/99-nothing.md)",
                                   "guides/a.md: b.md#nowhere (no heading #nowhere in guides/b.md)"]


def test_guides_quote_the_committed_digest_and_count():
    manifest = json.loads((corpus_dir("1.0") / "manifest.json").read_text())
    newest = json.loads((corpus_dir(spec.latest()) / "manifest.json").read_text())
    guide = (DOCS / "guides" / "implementing.md").read_text()
    filled = docvalues.fill(guide)
    assert "{{" not in filled
    assert f"{manifest['vector_count']} vectors of corpus {manifest['digest'][:12]} (spec 1.0" in filled
    stale = re.findall(r"corpus ([0-9a-f]{12}) \(spec", guide)
    assert stale == [], "write {{ corpus.v1_0_digest12 }} instead of a digest"
    # unprefixed names are the newest version's corpus, v<major>_<minor>_ names a version's
    assert docvalues.fill("{{ corpus.vectors }} {{ corpus.digest }}") == \
        f"{newest['vector_count']} {newest['digest']}"
    vectors = (DOCS / "guides" / "vectors.md").read_text()
    assert f"spec 1.0: {manifest['vector_count']} vectors, digest {manifest['digest'][:16]}: valid" in \
        docvalues.fill(vectors)
    with pytest.raises(ValueError, match="corpus.digset"):
        docvalues.fill("{{ corpus.digset }}")
