"""The stored corpus: one JSON-lines file per id group under conformance/vectors, each line
one vector in canonical JSON, lines sorted by id; and manifest.json naming every file with its
vector count and SHA-256, and the corpus digest (spec chapter 11.3).

The digest is the SHA-256 of the lines "<id> <content_hash>\\n" of every vector in id order:
it changes exactly when some vector's content does.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.constants import GENERATOR, GENERATOR_VERSION, PROTOCOL, SPEC_VERSION, VECTORS_DIR
from conformance.vector import SOURCES, vector_line

MANIFEST = "manifest.json"


def group_of(vector_id: str) -> str:
    return vector_id.split("/", 1)[0]


def digest(vectors: Iterable[Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    for v in sorted(vectors, key=lambda v: v["id"]):
        h.update(f"{v['id']} {v['_meta']['content_hash']}\n".encode())
    return h.hexdigest()


def render(vectors: list[Mapping[str, Any]], extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """File name -> exact file text for a corpus: the group files and the manifest."""
    groups: dict[str, list[str]] = {}
    for v in sorted(vectors, key=lambda v: v["id"]):
        groups.setdefault(group_of(v["id"]), []).append(vector_line(v))
    files = {f"{g}.jsonl": "".join(line + "\n" for line in lines) for g, lines in sorted(groups.items())}
    sources = Counter(v["tags"]["source"] for v in vectors)
    manifest = {
        "corpus": "RTWO VM conformance vectors",
        "spec_version": SPEC_VERSION,
        "generator": f"{GENERATOR} {GENERATOR_VERSION}",
        "protocol": PROTOCOL,
        "vector_count": len(vectors),
        "digest": digest(vectors),
        "sources": {s: sources.get(s, 0) for s in SOURCES},
        **(extra or {}),
        "files": [{"path": name, "vectors": text.count("\n"),
                   "sha256": hashlib.sha256(text.encode()).hexdigest()} for name, text in files.items()],
    }
    files[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def write(vectors: list[Mapping[str, Any]], directory: Path = VECTORS_DIR,
          extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Replace the corpus in ``directory`` (stale group files are removed); return the manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    files = render(vectors, extra)
    for stale in directory.glob("*.jsonl"):
        if stale.name not in files:
            stale.unlink()
    for name, text in files.items():
        path = directory / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
    return json.loads(files[MANIFEST])


def read_manifest(directory: Path = VECTORS_DIR) -> dict[str, Any]:
    path = directory / MANIFEST
    if not path.exists():
        raise FileNotFoundError(f"no corpus in {directory} (run: rtwo-vm vectors fill)")
    return json.loads(path.read_text(encoding="utf-8"))


class DuplicateId(ValueError):
    """Two vectors of a corpus share an id."""


def load(directory: Path = VECTORS_DIR) -> list[dict[str, Any]]:
    """Every vector of the corpus, in id order. ValueError for a line that is not a bounded
    JSON object (conformance.protocol.loads_bounded), DuplicateId for an id seen twice."""
    from conformance.protocol import loads_bounded
    manifest = read_manifest(directory)
    out: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    for entry in manifest["files"]:
        with open(directory / entry["path"], encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                vector = loads_bounded(line, 64)
                vid = vector.get("id") if isinstance(vector, dict) else None
                if not isinstance(vid, str):
                    raise ValueError(f"{entry['path']}:{number}: not a vector (no string id)")
                where = f"{entry['path']}:{number}"
                if vid in seen:
                    raise DuplicateId(f"duplicate vector id {vid!r} ({seen[vid]} and {where})")
                seen[vid] = where
                out.append(vector)
    out.sort(key=lambda v: v["id"])
    return out


def problems(directory: Path = VECTORS_DIR, vectors: list[Mapping[str, Any]] | None = None) -> list[str]:
    """Everything wrong with a stored corpus: manifest against files, digest, each vector."""
    from conformance.schema import corpus_problems, schema_problems

    manifest = read_manifest(directory)
    found = schema_problems("vector-manifest", manifest)
    listed = {e["path"] for e in manifest["files"]}
    for path in sorted(p.name for p in directory.glob("*.jsonl")):
        if path not in listed:
            found.append(f"{path}: not listed in the manifest")
    for entry in manifest["files"]:
        path = directory / entry["path"]
        if not path.exists():
            found.append(f"{entry['path']}: listed but missing")
            continue
        text = path.read_bytes()
        if hashlib.sha256(text).hexdigest() != entry["sha256"]:
            found.append(f"{entry['path']}: SHA-256 differs from the manifest")
        if text.count(b"\n") != entry["vectors"]:
            found.append(f"{entry['path']}: vector count differs from the manifest")
    vectors = load(directory) if vectors is None else vectors
    if digest(vectors) != manifest["digest"]:
        found.append("manifest digest differs from the vectors")
    if len(vectors) != manifest["vector_count"]:
        found.append("manifest vector_count differs from the vectors")
    found.extend(corpus_problems(vectors))
    return found


def differences(fresh: dict[str, str], directory: Path = VECTORS_DIR, limit: int = 20) -> list[str]:
    """How the stored corpus differs from freshly rendered files (empty when byte-identical)."""
    out = []
    stored = {p.name for p in directory.glob("*.jsonl")} | ({MANIFEST} if (directory / MANIFEST).exists() else set())
    for name in sorted(stored | set(fresh)):
        path = directory / name
        if name not in fresh:
            out.append(f"{name}: stored but no longer generated")
        elif not path.exists():
            out.append(f"{name}: generated but not stored")
        elif path.read_text(encoding="utf-8") != fresh[name]:
            out.append(f"{name}: differs" + _changed_ids(path.read_text(encoding="utf-8"), fresh[name], limit))
    return out


def _changed_ids(old: str, new: str, limit: int) -> str:
    def by_id(text: str) -> dict[str, str]:
        return {json.loads(line)["id"]: line for line in text.splitlines() if line.startswith("{\"_meta\"")}
    a, b = by_id(old), by_id(new)
    changed = sorted(i for i in a.keys() | b.keys() if a.get(i) != b.get(i))
    if not changed:
        return ""
    shown = ", ".join(changed[:limit]) + (f" and {len(changed) - limit} more" if len(changed) > limit else "")
    return f" ({len(changed)} vectors: {shown})"


def vectors_per_opcode(directory: Path = VECTORS_DIR) -> dict[str, int]:
    """Mnemonic -> number of vectors tagged with it (used by the documentation pages)."""
    try:
        vectors = load(directory)
    except FileNotFoundError:
        return {}
    counts: Counter[str] = Counter()
    for v in vectors:
        counts.update(v["tags"]["opcodes"])
    return dict(counts)
