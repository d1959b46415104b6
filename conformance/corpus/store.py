"""The stored corpus of a version: one JSON-lines file per id group under
conformance/vectors/<version>, each line one vector in canonical JSON, lines sorted by id; and
manifest.json naming the version, every file with its vector count and SHA-256, and the corpus
digest (spec chapter 11.3).

The digest is the SHA-256 of the lines "<id> <content_hash>\\n" of every vector in id order:
it changes exactly when some vector's content does.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from conformance.constants import GENERATOR, GENERATOR_VERSION, MANIFEST_NAME, PROTOCOL, VECTORS_DIR, corpus_dir
from conformance.corpus.vector import SOURCES, VERSIONS, vector_line
from spec.files import FileRefused, atomic_write, output_dir, read_bounded, read_json, refuse_link

MANIFEST = MANIFEST_NAME
# A corpus directory may come from anywhere (--dir, a findings folder, an unpacked release):
# what is read of it is bounded. The committed corpus is far below these (a 3 KiB manifest,
# group files of at most about 1 MiB, 6 MiB in all).
MAX_MANIFEST_BYTES = 1 << 20
MAX_GROUP_BYTES = 32 << 20
MAX_CORPUS_BYTES = 64 << 20
MAX_DEPTH = 64               # JSON nesting of a manifest or a vector line


def group_of(vector_id: str) -> str:
    return vector_id.split("/", 1)[0]


def digest(vectors: Iterable[Mapping[str, Any]]) -> str:
    h = hashlib.sha256()
    for v in sorted(vectors, key=lambda v: v["id"]):
        h.update(f"{v['id']} {v['_meta']['content_hash']}\n".encode())
    return h.hexdigest()


def render(vectors: Sequence[Mapping[str, Any]], version: str,
           extra: Mapping[str, Any] | None = None) -> dict[str, str]:
    """File name -> exact file text for the corpus of spec version ``version``: the group files
    and the manifest."""
    groups: dict[str, list[str]] = {}
    for v in sorted(vectors, key=lambda v: v["id"]):
        groups.setdefault(group_of(v["id"]), []).append(vector_line(v))
    files = {f"{g}.jsonl": "".join(line + "\n" for line in lines) for g, lines in sorted(groups.items())}
    sources = Counter(v["tags"]["source"] for v in vectors)
    manifest = {
        "corpus": "RTWO VM conformance vectors",
        "spec_version": version,
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


def write(vectors: Sequence[Mapping[str, Any]], directory: Path, version: str,
          extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Replace the corpus of ``version`` in ``directory``; return the manifest. Each file is replaced
    atomically (spec.files.atomic_write; never through a symbolic link), the group files
    before the manifest, and stale group files are removed last, so that an interrupted
    write leaves every file whole."""
    output_dir(directory, "corpus folder")
    files = render(vectors, version, extra)
    for name in files:                 # every output checked before the first is written
        refuse_link(directory / name, "corpus file")
    for name, text in files.items():
        path = directory / name
        if not path.is_file() or _stored(path) != text.encode():
            atomic_write(path, text)
    for stale in directory.glob("*.jsonl"):
        if stale.name not in files:
            stale.unlink()
    return json.loads(files[MANIFEST])


def _stored(path: Path) -> bytes | None:
    try:
        return read_bounded(path, MAX_GROUP_BYTES, "corpus file")
    except FileRefused:
        return None


def read_manifest(directory: Path) -> dict[str, Any]:
    """The manifest of the corpus in ``directory``, read bounded (spec.files.read_json), with
    the shape reading the corpus needs: "files", a list of entries whose "path" names a file
    in the folder. FileNotFoundError when there is none; FileRefused (a ValueError, one line)
    otherwise. :func:`checked_manifest` checks the whole schema."""
    path = directory / MANIFEST
    if not path.exists() and not path.is_symlink():
        raise FileNotFoundError(f"no corpus in {directory} (run: rtwo-vm vectors fill)")
    manifest = read_json(path, MAX_MANIFEST_BYTES, MAX_DEPTH, "corpus manifest")
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(files, list) or not all(isinstance(e, dict) and _plain(e.get("path")) for e in files):
        raise FileRefused(f"{path}: not a corpus manifest (it needs \"files\", a list of entries whose "
                          "\"path\" names a file in its folder)")
    return manifest


def _plain(name: Any) -> bool:
    return isinstance(name, str) and name not in ("", ".", "..") and Path(name).name == name


def checked_manifest(directory: Path) -> dict[str, Any]:
    """read_manifest, and the manifest checked against its schema (vector-manifest)."""
    from conformance.corpus.schema import schema_problems
    manifest = read_manifest(directory)
    found = schema_problems("vector-manifest", manifest)
    if found:
        raise FileRefused(f"{directory / MANIFEST}: not a corpus manifest ({found[0]})")
    return manifest


def read_group(directory: Path, name: str) -> bytes:
    """The bytes of one group file of a corpus, read bounded."""
    return read_bounded(directory / name, MAX_GROUP_BYTES, "corpus file")


class DuplicateId(ValueError):
    """Two vectors of a corpus share an id."""


def load(directory: Path) -> list[dict[str, Any]]:
    """Every vector of the corpus, in id order. ValueError for a line that is not a bounded
    JSON object (conformance.protocol.loads_bounded), DuplicateId for an id seen twice; every
    file is read bounded (FileRefused for a device, a FIFO or an oversized file)."""
    from conformance.protocol import loads_bounded
    manifest = read_manifest(directory)
    out: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    total = 0
    for entry in manifest["files"]:
        blob = read_group(directory, entry["path"])
        total += len(blob)
        if total > MAX_CORPUS_BYTES:
            raise FileRefused(f"{directory}: its group files hold more than the {MAX_CORPUS_BYTES} bytes "
                              "a corpus may hold")
        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError as err:
            raise FileRefused(f"{directory / entry['path']}: not UTF-8 text ({err.reason} at byte {err.start})") from None
        for number, line in enumerate(text.split("\n"), 1):
            if not line.strip():
                continue
            try:
                vector = loads_bounded(line, MAX_DEPTH)
            except ValueError as err:
                raise FileRefused(f"{entry['path']}:{number}: not a JSON vector "
                                  f"({str(err).splitlines()[0][:120]})") from None
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


def problems(directory: Path, vectors: Sequence[Mapping[str, Any]] | None = None) -> list[str]:
    """Everything wrong with a stored corpus: manifest against files, digest, each vector (of
    the manifest's version: a vector of another version does not belong in it)."""
    from conformance.corpus.schema import corpus_problems, schema_problems

    manifest = read_manifest(directory)
    found = schema_problems("vector-manifest", manifest)
    if found:                          # the checks below rely on the manifest's shape
        return [f"manifest.json: {p}" for p in found]
    listed = {e["path"] for e in manifest["files"]}
    for path in sorted(p.name for p in directory.glob("*.jsonl")):
        if path not in listed:
            found.append(f"{path}: not listed in the manifest")
    for entry in manifest["files"]:
        path = directory / entry["path"]
        if not path.exists():
            found.append(f"{entry['path']}: listed but missing")
            continue
        text = read_group(directory, entry["path"])
        if hashlib.sha256(text).hexdigest() != entry["sha256"]:
            found.append(f"{entry['path']}: SHA-256 differs from the manifest")
        if text.count(b"\n") != entry["vectors"]:
            found.append(f"{entry['path']}: vector count differs from the manifest")
    vectors = load(directory) if vectors is None else vectors
    if digest(vectors) != manifest["digest"]:
        found.append("manifest digest differs from the vectors")
    if len(vectors) != manifest["vector_count"]:
        found.append("manifest vector_count differs from the vectors")
    found.extend(corpus_problems(vectors, manifest["spec_version"]))
    return found


def differences(fresh: dict[str, str], directory: Path, limit: int = 20) -> list[str]:
    """How the stored corpus differs from freshly rendered files (empty when byte-identical)."""
    out = []
    stored = {p.name for p in directory.glob("*.jsonl")} | ({MANIFEST} if (directory / MANIFEST).exists() else set())
    for name in sorted(stored | set(fresh)):
        path = directory / name
        if name not in fresh:
            out.append(f"{name}: stored but no longer generated")
        elif not path.exists():
            out.append(f"{name}: generated but not stored")
        else:
            stored_text = read_bounded(path, MAX_GROUP_BYTES, "corpus file").decode("utf-8", "replace")
            if stored_text != fresh[name]:
                out.append(f"{name}: differs" + _changed_ids(stored_text, fresh[name], limit))
    return out


def _changed_ids(old: str, new: str, limit: int) -> str:
    from conformance.protocol import loads_bounded

    def by_id(text: str) -> dict[str, str]:
        out = {}
        for line in text.split("\n"):
            try:
                vector = loads_bounded(line, MAX_DEPTH) if line.startswith("{") else None
            except ValueError:
                continue
            if isinstance(vector, dict) and isinstance(vector.get("id"), str):
                out[vector["id"]] = line
        return out
    a, b = by_id(old), by_id(new)
    changed = sorted(i for i in a.keys() | b.keys() if a.get(i) != b.get(i))
    if not changed:
        return ""
    shown = ", ".join(changed[:limit]) + (f" and {len(changed) - limit} more" if len(changed) > limit else "")
    return f" ({len(changed)} vectors: {shown})"


def corpus_versions(root: Path = VECTORS_DIR) -> list[str]:
    """The versions of spec/versions.toml whose corpus folder exists under ``root``, oldest first."""
    return [v for v in VERSIONS if (corpus_dir(v, root) / MANIFEST).exists()]


def vectors_per_opcode(directory: Path) -> dict[str, int]:
    """Mnemonic -> number of vectors tagged with it (used by the documentation pages)."""
    try:
        vectors = load(directory)
    except FileNotFoundError:
        return {}
    counts: Counter[str] = Counter()
    for v in vectors:
        counts.update(v["tags"]["opcodes"])
    return dict(counts)
