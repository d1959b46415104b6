"""The stored scenario corpus of a version (chapter 11.9.4): the folder ``scenarios`` of the
version's corpus (conformance/vectors/<version>/scenarios/), one JSON-lines file per scenario
group (the id's second part, ``scenario/<group>/...``), each line one scenario vector in
canonical JSON, sorted by id; and its manifest.json (the version, the count, the digest of
chapter 11.3 over these vectors, each file with its count and SHA-256).

A scenario folder may come from anywhere (a release, --dir): it is read bounded and each
vector checked (conformance.scenario.schema) before it is used.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.constants import GENERATOR, GENERATOR_VERSION, PROTOCOL
from conformance.corpus.store import MANIFEST, MAX_DEPTH, MAX_GROUP_BYTES, MAX_MANIFEST_BYTES, digest
from conformance.corpus.vector import vector_line
from spec.files import FileRefused, atomic_write, output_dir, read_bounded, read_json, refuse_link

FOLDER = "scenarios"
MAX_SCENARIO_BYTES = 64 << 20


def folder(corpus: Path) -> Path:
    """The scenario folder of the corpus folder ``corpus``."""
    return corpus / FOLDER


def group_of(vector_id: str) -> str:
    return vector_id.split("/")[1]


def render(vectors: Sequence[Mapping[str, Any]], version: str) -> dict[str, str]:
    """File name -> exact text of the scenario corpus of ``version``."""
    groups: dict[str, list[str]] = {}
    for v in sorted(vectors, key=lambda v: v["id"]):
        groups.setdefault(group_of(v["id"]), []).append(vector_line(v))
    files = {f"{g}.jsonl": "".join(line + "\n" for line in lines) for g, lines in sorted(groups.items())}
    manifest = {
        "corpus": "RTWO VM scenario vectors", "spec_version": version,
        "generator": f"{GENERATOR} {GENERATOR_VERSION}", "protocol": PROTOCOL,
        "vector_count": len(vectors), "step_count": sum(len(v["input"]["steps"]) for v in vectors),
        "digest": digest(vectors),
        "files": [{"path": name, "vectors": text.count("\n"),
                   "sha256": hashlib.sha256(text.encode()).hexdigest()} for name, text in files.items()],
    }
    files[MANIFEST] = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
    return files


def write(vectors: Sequence[Mapping[str, Any]], directory: Path, version: str) -> dict[str, Any]:
    """Replace the scenario corpus in ``directory`` (files replaced atomically, the manifest
    after the group files, stale group files removed last); its manifest."""
    output_dir(directory, "scenario folder")
    files = render(vectors, version)
    for name in files:
        refuse_link(directory / name, "scenario file")
    for name, text in files.items():
        atomic_write(directory / name, text)
    for stale in directory.glob("*.jsonl"):
        if stale.name not in files:
            stale.unlink()
    return json.loads(files[MANIFEST])


def differences(vectors: Sequence[Mapping[str, Any]], directory: Path, version: str) -> list[str]:
    """How the stored scenario corpus differs from these vectors (empty when byte-identical)."""
    fresh = render(vectors, version)
    stored = {p.name for p in directory.glob("*.jsonl")} | ({MANIFEST} if (directory / MANIFEST).exists() else set())
    out = []
    for name in sorted(stored | set(fresh)):
        path = directory / name
        if name not in fresh:
            out.append(f"{FOLDER}/{name}: stored but no longer generated")
        elif not path.exists():
            out.append(f"{FOLDER}/{name}: generated but not stored")
        elif read_bounded(path, MAX_GROUP_BYTES, "scenario file").decode("utf-8", "replace") != fresh[name]:
            out.append(f"{FOLDER}/{name}: differs")
    return out


def load(directory: Path, version: str | None = None) -> list[dict[str, Any]]:
    """Every scenario vector of the folder, in id order, each checked; [] when the folder has no
    manifest (a corpus without scenarios). FileRefused for anything malformed."""
    from conformance.protocol import loads_bounded
    from conformance.scenario.schema import vector_problems
    if not (directory / MANIFEST).exists():
        return []
    manifest = read_json(directory / MANIFEST, MAX_MANIFEST_BYTES, MAX_DEPTH, "scenario manifest")
    entries = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("path"), str)
                                                and "/" not in e["path"] and e["path"].endswith(".jsonl")
                                                for e in entries):
        raise FileRefused(f"{directory / MANIFEST}: not a scenario manifest (it needs \"files\", entries "
                          "naming .jsonl files of this folder)")
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    total = 0
    for entry in entries:
        blob = read_bounded(directory / entry["path"], MAX_GROUP_BYTES, "scenario file")
        total += len(blob)
        if total > MAX_SCENARIO_BYTES:
            raise FileRefused(f"{directory}: more than {MAX_SCENARIO_BYTES} bytes of scenarios")
        for number, line in enumerate(blob.decode("utf-8", "replace").split("\n"), 1):
            if not line.strip():
                continue
            where = f"{directory / entry['path']}:{number}"
            try:
                vector = loads_bounded(line, MAX_DEPTH)
            except ValueError as err:
                raise FileRefused(f"{where}: not JSON ({str(err)[:120]})") from None
            problems = vector_problems(vector, version)
            if problems:
                raise FileRefused(f"{where}: not a scenario vector ({problems[0][:200]})")
            if vector["id"] in seen:
                raise FileRefused(f"{where}: duplicate scenario id {vector['id']!r}")
            seen.add(vector["id"])
            out.append(vector)
    if isinstance(manifest.get("digest"), str) and manifest["digest"] != digest(out):
        raise FileRefused(f"{directory / MANIFEST}: its digest does not match the scenario vectors")
    return sorted(out, key=lambda v: v["id"])


def fill_all(versions: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Every scenario definition filled for each of ``versions`` it is valid in (ids unique);
    ExpectationFailed, after all ran, with the problems of every definition whose author
    expectations fail."""
    from conformance.corpus.expect import ExpectationFailed
    from conformance.scenario.definitions import all_cases
    from conformance.scenario.fill import fill_case
    out: dict[str, list[dict[str, Any]]] = {v: [] for v in versions}
    seen: set[str] = set()
    failed: list[str] = []
    for case in all_cases():
        if case.id in seen:
            raise ValueError(f"duplicate scenario definition id {case.id!r}")
        seen.add(case.id)
        for version in case.versions(tuple(versions)):
            if version in out:
                try:
                    out[version].append(fill_case(case, version))
                except ExpectationFailed as err:
                    failed += err.lines
    if failed:
        raise ExpectationFailed(failed)
    return out
