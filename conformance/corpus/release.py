"""``rtwo-vm vectors release``: a versioned, reproducible tarball of one spec version's corpus.

Each spec version's corpus is released on its own, under that version's release
(``spec.load(version).release``: 1.0.2 for 1.0, 1.1.0 for 1.1). One release names one corpus.
The release is the version's specification release unless ``--version`` names a later one:

- under the checkout's version the corpus must be the committed one (conformance/corpus/committed.py:
  in a git work tree, every corpus file exactly as in ``HEAD``; outside git, the corpus
  installed with the running package); an edited corpus is refused, so that no second,
  different ``1.0.1`` can exist;
- a later version (``--version 1.0.2``, ``--version 1.1.0-rc1``) packs any valid corpus; an
  earlier version, or a pre-release of the current one, is refused (it names a past release);
- under every version the manifest must name the files exactly (their SHA-256, counts and
  the corpus digest: conformance.corpus.store.problems), and the output folder must not already
  hold a tarball of the same version with another digest.

The tarball ``rtwo-vm-vectors-<version>-<first 12 hex of the corpus digest>.tar.gz`` holds,
under one top directory of the same name:

- the corpus exactly as stored: ``manifest.json`` (naming the digest) and the group files
  ``*.jsonl`` (so the unpacked directory is itself a corpus directory:
  ``rtwo-vm conformance run --dir DIR``), and its folder ``scenarios/`` of scenario vectors
  (chapter 11.9.5) when it has one;
- ``schemas/``: the JSON Schemas of chapter 11 (vector, scenario vector, manifest, adapter and
  runner messages, known-failure lists);
- ``protocol.md``: the version's spec chapter 11 (vectors, corpus, adapter protocol), and
  ``CHANGELOG.md``, the changes of each spec release;
- ``README.md``: release version, spec release, vector count and corpus digest, and how to use
  the files without Python.

The archive is byte-identical on every build from the same corpus and version: members in
sorted order, mtime 0, uid/gid 0, no user or group names, modes 0644/0755, a gzip header
without a file name or time (PAX/USTAR, no extended attributes).

The corpus (``--dir`` may name any folder) is read bounded and validated before anything is
written; the tarball is written atomically (spec.files.atomic_writer: a fresh temporary name in
the output folder, synced and renamed), never through a symbolic link.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import re
import tarfile
from dataclasses import dataclass
from pathlib import Path

import spec
from conformance.constants import PROTOCOL
from conformance.corpus.schema import SCHEMAS
from spec.files import FileRefused, atomic_writer, output_dir

SCHEMA_DIR = Path(spec.__file__).resolve().parent / "schemas"
CHAPTER = "11-conformance.md"                 # of the version's chapters (spec.chapters)
CHANGELOG = Path(spec.__file__).resolve().parent / "CHANGELOG.md"
# MAJOR.MINOR.PATCH with an optional pre-release (dot-separated letters and digits): it goes
# into a file name and a README, so nothing else is accepted.
VERSION = re.compile(r"(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})\.(0|[1-9][0-9]{0,5})"
                     r"(?:-([0-9A-Za-z]{1,16}(?:\.[0-9A-Za-z]{1,16}){0,3}))?")
DIGEST_CHARS = 12


class ReleaseError(ValueError):
    """The corpus cannot be released (the message says why)."""


@dataclass(frozen=True)
class Release:
    """What a release is called: its version and the corpus digest it carries."""

    version: str
    digest: str

    @property
    def name(self) -> str:
        """The tarball's stem and its top directory."""
        return f"rtwo-vm-vectors-{self.version}-{self.digest[:DIGEST_CHARS]}"


def _order(version: str) -> tuple:
    match = VERSION.fullmatch(version)
    assert match is not None
    numbers = tuple(int(match.group(i)) for i in (1, 2, 3))
    pre = match.group(4)     # a pre-release comes before its version (semantic versioning)
    return numbers + ((1,) if pre is None else (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p)
                                                          for p in pre.split("."))))


def check_version(version: str | None, spec_version: str) -> tuple[str, bool]:
    """(release, new): the checkout's release of ``spec_version`` when ``version`` is None;
    ``new`` when it is later than that one. An earlier version, a malformed one, or one of
    another spec version (1.1.0 for the corpus of 1.0), is refused."""
    current = spec.load(spec_version).release
    if version is None or version == current:
        return current, False
    if VERSION.fullmatch(version) is None:
        raise ReleaseError(f"--version {version[:40]!r}: not a version (MAJOR.MINOR.PATCH, optionally "
                           "-PRERELEASE of letters, digits and dots)")
    if _order(version) < _order(current):
        raise ReleaseError(f"--version {version}: earlier than this checkout's release {current} of spec "
                           f"{spec_version}, so it would name a past release; give a later version")
    if version.split(".")[:2] != spec_version.split("."):
        raise ReleaseError(f"--version {version}: not a release of spec {spec_version} (its releases are "
                           f"{spec_version}.N): a corpus is released under its own version's releases")
    return version, True


def readme(manifest: dict, version: str) -> str:
    name = Release(version, manifest["digest"]).name
    spec_version = manifest["spec_version"]
    return f"""# RTWO VM conformance vectors {version}

- Release: {version} of corpus `{manifest['digest'][:DIGEST_CHARS]}` (`{name}.tar.gz`)
- Specification release: {spec.load(spec_version).release} (vectors and adapters name spec version
  `{spec_version}`; patch releases only clarify the text)
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


def stored_corpus(directory: Path) -> tuple[dict, dict[str, bytes]]:
    """(manifest, name -> bytes of manifest.json and every group file) of a valid corpus: its
    manifest names the files exactly (SHA-256, counts, digest) and every vector is valid."""
    from conformance.corpus import store
    try:
        manifest = store.read_manifest(directory)
        problems = store.problems(directory)
        out = {store.MANIFEST: store.read_group(directory, store.MANIFEST)}
        for entry in manifest["files"]:
            out[entry["path"]] = store.read_group(directory, entry["path"])
        out.update(_scenario_files(directory, manifest["spec_version"]))
    except (ValueError, KeyError, OSError) as err:   # FileNotFoundError, FileRefused, a malformed vector
        detail = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        raise ReleaseError(f"cannot read the corpus in {directory}: {detail}") from None
    if problems:
        raise ReleaseError(f"the corpus in {directory} is not valid ({len(problems)} problems; "
                           f"first: {problems[0]}); run rtwo-vm vectors check")
    return manifest, out


def _scenario_files(directory: Path, version: str) -> dict[str, bytes]:
    """The scenario folder of the corpus (chapter 11.9.5), every vector checked; none when the
    corpus has no scenario folder."""
    from conformance.corpus import store
    from conformance.scenario import store as scenarios
    folder = scenarios.folder(directory)
    if not scenarios.load(folder, version):
        return {}
    manifest = store.read_group(folder, store.MANIFEST)
    out = {f"{scenarios.FOLDER}/{store.MANIFEST}": manifest}
    for name in sorted(p.name for p in folder.glob("*.jsonl")):
        out[f"{scenarios.FOLDER}/{name}"] = store.read_group(folder, name)
    return out


def members(directory: Path, version: str | None = None) -> dict[str, bytes]:
    """Archive path -> bytes of every member (before the top directory is prefixed), of the
    release ``version`` (default: its spec version's release)."""
    manifest, out = stored_corpus(directory)
    return _with_documents(out, manifest, version or spec.load(manifest["spec_version"]).release)


def _with_documents(files: dict[str, bytes], manifest: dict, version: str) -> dict[str, bytes]:
    out = dict(files)
    for name in SCHEMAS:
        out[f"schemas/{name}.schema.json"] = (SCHEMA_DIR / f"{name}.schema.json").read_bytes()
    out["protocol.md"] = spec.chapters(manifest["spec_version"])[CHAPTER].encode()
    out["CHANGELOG.md"] = CHANGELOG.read_bytes()
    out["README.md"] = readme(manifest, version).encode()
    return out


def tarball(files: dict[str, bytes], top: str) -> bytes:
    """The reproducible .tar.gz of the given members under the directory ``top``."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = sorted({top} | {f"{top}/{name.rsplit('/', 1)[0]}" for name in files if "/" in name})
        for name in dirs:
            tar.addfile(_info(name, tarfile.DIRTYPE, 0o755, 0))
        for name in sorted(files):
            data = files[name]
            tar.addfile(_info(f"{top}/{name}", tarfile.REGTYPE, 0o644, len(data)), io.BytesIO(data))
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


def _earlier_of_other_corpus(folder: Path, release: Release) -> str | None:
    """The name of a tarball in ``folder`` of the same version and another corpus, if any."""
    pattern = re.compile(re.escape(f"rtwo-vm-vectors-{release.version}-") + f"[0-9a-f]{{{DIGEST_CHARS}}}"
                         + re.escape(".tar.gz"))
    for entry in sorted(p.name for p in folder.iterdir()):
        if pattern.fullmatch(entry) and entry != f"{release.name}.tar.gz":
            return entry
    return None


def build(out_dir: Path, directory: Path, version: str | None = None) -> tuple[Path, str]:
    """Write the release tarball of the corpus in ``directory`` (of the spec version its manifest
    names) into out_dir; return its path and SHA-256. Refused (ReleaseError, one line) for a
    malformed version or corpus, an edited corpus under the checkout's release of its version,
    or a folder holding the same release of another corpus. The file is written under a fresh
    temporary name and renamed (spec.files.atomic_writer), so a failure leaves no partial
    tarball and the previous one whole."""
    from conformance.corpus import committed
    manifest, stored = stored_corpus(directory)
    spec_version = manifest["spec_version"]
    version, new = check_version(version, spec_version)
    if not new:
        try:
            committed.check(directory, stored, spec_version)
        except committed.NotCommitted as err:
            raise ReleaseError(f"{err}; release {version} is the committed corpus: commit the change, "
                               f"or give --version with a later version than {version}") from None
    release = Release(version, manifest["digest"])
    data = tarball(_with_documents(stored, manifest, version), release.name)
    try:
        folder = output_dir(out_dir, "release folder")
        other = _earlier_of_other_corpus(folder, release)
        if other is not None:
            raise ReleaseError(f"{folder} already holds {other}, release {version} of another corpus; one "
                               f"version names one corpus: give --version with a later version, or remove it")
        path = folder / f"{release.name}.tar.gz"
        with atomic_writer(path) as f:
            f.write(data)
    except FileRefused as err:
        raise ReleaseError(str(err)) from None
    return path, hashlib.sha256(data).hexdigest()
