"""Values of the committed corpora and spec that documentation pages quote (the corpus digest,
its vector count, the spec release), filled in at build time (docs/hooks/corpus_values.py).

A page writes ``{{ corpus.NAME }}`` for the newest spec version's corpus, or
``{{ corpus.v1_0_NAME }}`` for the corpus of a given version (1.0 here); an unknown NAME is an
error, so a typo fails the build.
"""

from __future__ import annotations

import functools
import json
import re

PLACEHOLDER = re.compile(r"\{\{\s*corpus\.([a-z0-9_]+)\s*\}\}")


@functools.cache
def values() -> dict[str, str]:
    import spec
    from conformance.constants import MANIFEST_NAME, corpus_dir
    out: dict[str, str] = {}
    digests: dict[str, str] = {}
    for version in spec.names():
        path = corpus_dir(version) / MANIFEST_NAME
        if not path.exists():
            continue
        manifest = json.loads(path.read_text(encoding="utf-8"))
        digest = digests[version] = manifest["digest"]
        mine = {"digest": digest, "digest12": digest[:12], "digest16": digest[:16],
                "vectors": str(manifest["vector_count"]), "spec_release": spec.load(version).release,
                "spec_version": version,
                **{source: str(n) for source, n in manifest["sources"].items()},
                **{"group_" + f["path"].removesuffix(".jsonl"): str(f["vectors"]) for f in manifest["files"]}}
        out.update({f"v{version.replace('.', '_')}_{k}": v for k, v in mine.items()})
        out.update(mine)                       # unprefixed: the newest version's (the last)
    out.update(_strength(digests))
    return out


def _strength(digests: dict[str, str]) -> dict[str, str]:
    """The last recorded strength run (conformance/strength/score.json, written by
    ``rtwo-vm vectors strength --record``), and whether it was measured on this corpus."""
    from conformance.strength.report import SCORE_FILE
    try:
        score = json.loads(SCORE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"strength": "not measured", "strength_corpus": "none", **{f"strength_{k}": "-" for k in (
            "killed", "judged", "equivalent", "unreachable", "with_unreachable", "survived", "curated")}}
    measured = next((v for v, d in digests.items() if d == score["corpus"]["digest"]), None)
    return {"strength": f"{100 * score['score']:.1f}%" if score.get("score") is not None else "not measured",
            "strength_killed": str(score["totals"].get("killed", 0)),
            "strength_judged": str(score["totals"].get("killed", 0) + score["totals"].get("survived", 0)),
            "strength_equivalent": str(score["totals"].get("equivalent", 0)),
            "strength_survived": str(score["totals"].get("survived", 0)),
            "strength_unreachable": str(score["totals"].get("unreachable", 0)),
            "strength_with_unreachable": (f"{100 * score['score_with_unreachable']:.1f}%"
                                          if score.get("score_with_unreachable") is not None else "-"),
            "strength_curated": f"{score['curated_ok']}/{score['curated_total']}",
            "strength_corpus": (f"the spec {measured} corpus" if measured is not None
                                else f"corpus {score['corpus']['digest'][:12]} (not a current one)")}


def fill(text: str) -> str:
    known = values()

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name not in known:
            raise ValueError(f"unknown documentation value corpus.{name} (known: {', '.join(sorted(known))})")
        return known[name]
    return PLACEHOLDER.sub(one, text)
