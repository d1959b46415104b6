"""Values of the committed corpus and spec that documentation pages quote (the corpus digest,
its vector count, the spec release), filled in at build time (docs/hooks/corpus_values.py).

A page writes ``{{ corpus.NAME }}``; an unknown NAME is an error, so a typo fails the build.
"""

from __future__ import annotations

import functools
import json
import re

PLACEHOLDER = re.compile(r"\{\{\s*corpus\.([a-z0-9_]+)\s*\}\}")


@functools.cache
def values() -> dict[str, str]:
    import spec
    from conformance.constants import VECTORS_DIR
    manifest = json.loads((VECTORS_DIR / "manifest.json").read_text(encoding="utf-8"))
    digest = manifest["digest"]
    return {"digest": digest, "digest12": digest[:12], "digest16": digest[:16],
            "vectors": str(manifest["vector_count"]), "spec_release": spec.SPEC_RELEASE}


def fill(text: str) -> str:
    known = values()

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name not in known:
            raise ValueError(f"unknown documentation value corpus.{name} (known: {', '.join(sorted(known))})")
        return known[name]
    return PLACEHOLDER.sub(one, text)
