"""``rtwo-vm vectors release``: a versioned, reproducible tarball of the corpus.

The tarball holds, under one top directory ``rtwo-vm-vectors-<spec release>/``:

- the corpus exactly as stored: ``manifest.json`` and the group files ``*.jsonl`` (so the
  unpacked directory is itself a corpus directory: ``rtwo-vm conformance run --dir DIR``);
- ``schemas/``: the JSON Schemas of chapter 11 (vector, manifest, adapter and runner
  messages, known-failure lists);
- ``protocol.md``: spec chapter 11 (vectors, corpus, adapter protocol), and ``CHANGELOG.md``,
  the changes of each spec release;
- ``README.md``: spec release, vector count and corpus digest, and how to use the files
  without Python.

The archive is byte-identical on every build from the same corpus: members in sorted order,
mtime 0, uid/gid 0, no user or group names, modes 0644/0755, a gzip header without a file
name or time (PAX/USTAR, no extended attributes).

The corpus (``--dir`` may name any folder) is read bounded and validated before anything is
written; the tarball is written atomically (spec.files.atomic_writer: a fresh temporary name in
the output folder, synced and renamed), never through a symbolic link.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import tarfile
from pathlib import Path

import spec
from conformance.constants import PROTOCOL, VECTORS_DIR
from conformance.schema import SCHEMAS
from spec.files import FileRefused, atomic_writer, output_dir

SCHEMA_DIR = Path(spec.__file__).resolve().parent / "schemas"
CHAPTER = Path(spec.__file__).resolve().parent / "chapters" / "11-conformance.md"
CHANGELOG = Path(spec.__file__).resolve().parent / "CHANGELOG.md"


class ReleaseError(ValueError):
    """The corpus cannot be released (the message says why)."""


def top_dir() -> str:
    return f"rtwo-vm-vectors-{spec.SPEC_RELEASE}"


def readme(manifest: dict) -> str:
    return f"""# RTWO VM conformance vectors {spec.SPEC_RELEASE}

- Specification release: {spec.SPEC_RELEASE} (vectors and adapters name spec version
  `{spec.SPEC_VERSION}`; patch releases only clarify the text)
- Adapter protocol: `{PROTOCOL}`
- Vectors: {manifest['vector_count']}
- Corpus digest: `{manifest['digest']}`

## Files

- `manifest.json`: every group file with its vector count and SHA-256, the vector count and
  the corpus digest (spec chapter 11.3).
- `*.jsonl`: the vectors, one canonical JSON object per line, lines sorted by id (11.2).
- `schemas/`: the JSON Schemas (Draft 2020-12) of vectors, the manifest, the adapter and
  runner messages and known-failure lists.
- `protocol.md`: spec chapter 11, the normative vector format and adapter protocol.
- `CHANGELOG.md`: what each release of the specification changed.

## Using the vectors without Python

1. Check each group file: `sha256sum FILE` equals its `sha256` in `manifest.json`.
2. The digest is the SHA-256 of the lines `<id> <_meta.content_hash>\\n` of all vectors in id
   order; it must equal `digest` above.
3. For each vector, run `input` (11.2.3) on your implementation and compare your result with
   `expected.result` member by member (11.2.7); `expected.error_stage` is the lifecycle stage
   of its outcome code.
4. Or speak the adapter protocol (`protocol.md`, 11.5) and let a runner drive you; the
   reference runner reads this directory as it is: `rtwo-vm conformance run --dir .`.
"""


def members(directory: Path = VECTORS_DIR) -> dict[str, bytes]:
    """Archive path -> bytes of every member (before the top directory is prefixed)."""
    from conformance import corpus
    try:
        manifest = corpus.read_manifest(directory)
        problems = corpus.problems(directory)
        out = {corpus.MANIFEST: corpus.read_group(directory, corpus.MANIFEST)}
        for entry in manifest["files"]:
            out[entry["path"]] = corpus.read_group(directory, entry["path"])
    except (ValueError, KeyError, OSError) as err:   # FileNotFoundError, FileRefused, a malformed vector
        detail = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise ReleaseError(f"cannot read the corpus in {directory}: {detail}") from None
    if problems:
        raise ReleaseError(f"the corpus in {directory} is not valid ({len(problems)} problems; "
                           f"first: {problems[0]}); run rtwo-vm vectors check")
    for name in SCHEMAS:
        out[f"schemas/{name}.schema.json"] = (SCHEMA_DIR / f"{name}.schema.json").read_bytes()
    out["protocol.md"] = CHAPTER.read_bytes()
    out["CHANGELOG.md"] = CHANGELOG.read_bytes()
    out["README.md"] = readme(manifest).encode()
    return out


def tarball(files: dict[str, bytes]) -> bytes:
    """The reproducible .tar.gz of the given members under top_dir()."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({top_dir()} | {f"{top_dir()}/{name.rsplit('/', 1)[0]}" for name in files if "/" in name})
        for name in dirs:
            tar.addfile(_info(name, tarfile.DIRTYPE, 0o755, 0))
        for name in sorted(files):
            data = files[name]
            tar.addfile(_info(f"{top_dir()}/{name}", tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
    packed = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
        gz.write(raw.getvalue())
    return packed.getvalue()


def _info(name: str, kind: bytes, mode: int, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.mtime = kind, mode, size, 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def build(out_dir: Path, directory: Path = VECTORS_DIR) -> tuple[Path, str]:
    """Write the release tarball into out_dir; return its path and SHA-256. The file is written
    under a fresh temporary name and renamed (spec.files.atomic_writer), so a failure leaves
    no partial tarball and the previous one whole."""
    data = tarball(members(directory))
    try:
        path = output_dir(out_dir, "release folder") / f"{top_dir()}.tar.gz"
        with atomic_writer(path) as f:
            f.write(data)
    except FileRefused as err:
        raise ReleaseError(str(err)) from None
    return path, hashlib.sha256(data).hexdigest()
