"""``rtwo-vm vectors release``: the tarball is byte-identical on every build, holds the corpus,
its manifest, the schemas, the protocol chapter and a README naming the digest and spec
release, and an unpacked release is a corpus directory ``conformance run --dir`` accepts."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile

from conformance.constants import VECTORS_DIR

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
SCHEMAS = {"vector", "vector-manifest", "adapter-message", "runner-message", "known-failures"}


def release(out, *extra):
    return subprocess.run([*CLI, "vectors", "release", "-o", str(out), *extra],
                          capture_output=True, text=True, timeout=120)


def test_release_is_reproducible_and_usable(tmp_path):
    first, second = release(tmp_path / "a"), release(tmp_path / "b")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a = next((tmp_path / "a").glob("*.tar.gz")).read_bytes()
    b = next((tmp_path / "b").glob("*.tar.gz")).read_bytes()
    assert a == b
    # nothing but the tarball is left (no temporary file), readable by everyone
    assert [p.name for p in (tmp_path / "a").iterdir()] == ["rtwo-vm-vectors-1.0.2.tar.gz"]
    assert (tmp_path / "a" / "rtwo-vm-vectors-1.0.2.tar.gz").stat().st_mode & 0o777 == 0o644
    assert hashlib.sha256(a).hexdigest() in first.stdout
    with tarfile.open(tmp_path / "a" / "rtwo-vm-vectors-1.0.2.tar.gz") as tar:
        names = tar.getnames()
        assert names[0] == "rtwo-vm-vectors-1.0.2" and len(names) == len(set(names))
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tar.getmembers())
        tar.extractall(tmp_path / "x", filter="data")
    top = tmp_path / "x" / "rtwo-vm-vectors-1.0.2"
    manifest = json.loads((top / "manifest.json").read_text())
    stored = json.loads((VECTORS_DIR / "manifest.json").read_text())
    assert manifest == stored
    for entry in manifest["files"]:
        assert hashlib.sha256((top / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]
    assert {p.name.removesuffix(".schema.json") for p in (top / "schemas").iterdir()} == SCHEMAS
    assert (top / "protocol.md").read_text().startswith("# 11 Conformance")
    text = (top / "README.md").read_text()
    assert manifest["digest"] in text and "1.0.2" in text and str(manifest["vector_count"]) in text
    run = subprocess.run([*CLI, "conformance", "run", "--dir", str(top), "--filter", "arithmetic/ADD/*",
                          "--repeat", "0", "--quiet", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert json.dumps(report).count(manifest["digest"]) >= 1


def test_invalid_corpus_is_refused_and_leaves_nothing(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(VECTORS_DIR, corpus)
    path = corpus / "hash.jsonl"
    path.write_text(path.read_text().replace('"0x', '"0X', 1))
    proc = release(tmp_path / "out", "--dir", str(corpus))
    assert proc.returncode == 2 and proc.stderr.startswith("rtwo-vm: error:") and proc.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
