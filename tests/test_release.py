"""``rtwo-vm vectors release``: the tarball is byte-identical on every build, holds the corpus,
its manifest, the schemas, the protocol chapter and a README naming the digest and release,
and an unpacked release is a corpus directory ``conformance run --dir`` accepts.

One version names one corpus: under the checkout's spec release only the committed corpus is
packed (a real git repository made here: the corpus committed, then edited), a new
``--version`` packs an edited one, and the tarball's name carries the corpus digest. Each spec
version's corpus is released on its own, under its own release (1.0.2 for 1.0, 1.1.0 for 1.1);
most tests work on 1.0's."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import spec
from conformance.constants import VECTORS_DIR, corpus_dir, project_packages

CLI = [sys.executable, "-m", "rtwo_vm.cli"]
SCHEMAS = {"vector", "vector-manifest", "adapter-message", "runner-message", "known-failures", "scenario-vector"}
V = "1.0"                                          # the spec version most tests release
STORED = json.loads((corpus_dir(V) / "manifest.json").read_text())
RELEASE = spec.load(V).release
NAME = f"rtwo-vm-vectors-{RELEASE}-{STORED['digest'][:12]}"
_MAJOR, _MINOR, _PATCH = (int(n) for n in RELEASE.split("-")[0].split("."))
NEXT = f"{_MAJOR}.{_MINOR}.{_PATCH + 1}"          # a later version than this checkout's release


def release(out, *extra, cwd=None, version: str | None = V):
    chosen = ["--spec-version", version] if version else []
    return subprocess.run([*CLI, "vectors", "release", "-o", str(out), *chosen, *extra],
                          capture_output=True, text=True, timeout=300, cwd=cwd)


def refused(proc, fragment):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.startswith("rtwo-vm: error: ") and proc.stderr.count("\n") == 1, proc.stderr
    assert fragment in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr


def unpack(path: Path, into: Path) -> Path:
    with tarfile.open(path) as tar:
        names = tar.getnames()
        assert len(names) == len(set(names))
        assert all(n == names[0] or n.startswith(names[0] + "/") for n in names)
        tar.extractall(into, filter="data")
    return into / names[0]


def test_release_is_reproducible_and_usable(tmp_path):
    first, second = release(tmp_path / "a"), release(tmp_path / "b")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    a = next((tmp_path / "a").glob("*.tar.gz")).read_bytes()
    b = next((tmp_path / "b").glob("*.tar.gz")).read_bytes()
    assert a == b
    # nothing but the tarball is left (no temporary file), readable by everyone; its name
    # carries the release and the first 12 hex digits of the committed manifest's digest
    assert [p.name for p in (tmp_path / "a").iterdir()] == [f"{NAME}.tar.gz"]
    assert (tmp_path / "a" / f"{NAME}.tar.gz").stat().st_mode & 0o777 == 0o644
    assert hashlib.sha256(a).hexdigest() in first.stdout
    with tarfile.open(tmp_path / "a" / f"{NAME}.tar.gz") as tar:
        names = tar.getnames()
        assert names[0] == NAME and len(names) == len(set(names))
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tar.getmembers())
    top = unpack(tmp_path / "a" / f"{NAME}.tar.gz", tmp_path / "x")
    manifest = json.loads((top / "manifest.json").read_text())
    assert manifest == STORED
    for entry in manifest["files"]:
        assert hashlib.sha256((top / entry["path"]).read_bytes()).hexdigest() == entry["sha256"]
    assert {p.name.removesuffix(".schema.json") for p in (top / "schemas").iterdir()} == SCHEMAS
    from conformance.scenario import store as scenarios   # the scenario folder travels with it, whole
    shipped = scenarios.load(top / "scenarios", V)
    assert [v["id"] for v in shipped] == [v["id"] for v in scenarios.load(scenarios.folder(corpus_dir(V)), V)]
    assert (top / "protocol.md").read_text() == spec.chapters(V)["11-conformance.md"]
    text = (top / "README.md").read_text()
    assert text.startswith(f"# RTWO VM conformance vectors {RELEASE}\n")
    assert manifest["digest"] in text and f"{NAME}.tar.gz" in text and str(manifest["vector_count"]) in text
    run = subprocess.run([*CLI, "conformance", "run", "--dir", str(top), "--filter", "arithmetic/ADD/*",
                          "--repeat", "0", "--quiet", "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads((tmp_path / "out" / V / "report.json").read_text())
    assert json.dumps(report).count(manifest["digest"]) >= 1


def test_every_version_is_released_under_its_own_release(tmp_path):
    done = release(tmp_path / "all", version=None)
    assert done.returncode == 0, done.stderr
    names = sorted(p.name for p in (tmp_path / "all").iterdir())
    expected = []
    for version in spec.names():
        digest = json.loads((corpus_dir(version) / "manifest.json").read_text())["digest"]
        expected.append(f"rtwo-vm-vectors-{spec.load(version).release}-{digest[:12]}.tar.gz")
    assert names == sorted(expected) and len(names) == len(spec.names()) >= 2
    newest = spec.latest()
    (tarball,) = [tmp_path / "all" / n for n in names if n.startswith(f"rtwo-vm-vectors-{spec.load(newest).release}-")]
    top = unpack(tarball, tmp_path / "x")
    manifest = json.loads((top / "manifest.json").read_text())
    assert manifest["spec_version"] == newest
    assert (top / "protocol.md").read_text() == spec.chapters(newest)["11-conformance.md"]
    assert f"Specification release: {spec.load(newest).release}" in (top / "README.md").read_text()
    # --version names one corpus's release: with two corpora it needs --spec-version
    refused(release(tmp_path / "out", "--version", NEXT, version=None), "give --spec-version too")
    # a release of another spec version's numbering is refused
    refused(release(tmp_path / "out", "--version", "1.1.0"), "not a release of spec 1.0")


@pytest.mark.parametrize("version", [[], ["--version", NEXT]])
def test_invalid_corpus_is_refused_and_leaves_nothing(tmp_path, version):
    # A vector edited by hand: the manifest no longer names the files (their SHA-256, the
    # digest). No version, new or not, packs it.
    corpus = tmp_path / "corpus"
    shutil.copytree(corpus_dir(V), corpus)
    path = corpus / "hash.jsonl"
    path.write_text(path.read_text().replace('"0x', '"0X', 1))
    proc = release(tmp_path / "out", "--dir", str(corpus), *version)
    refused(proc, "is not valid")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("version, fragment", [
    ("1.0.0", "earlier than this checkout's release"),
    (f"{RELEASE}-rc1", "earlier than this checkout's release"),   # a pre-release comes before it
    ("1.0", "not a version"),
    (f"../../{NEXT}", "not a version"),
    (f"{NEXT}/x", "not a version"),
])
def test_a_version_that_is_not_new_or_not_a_version_is_refused(tmp_path, version, fragment):
    refused(release(tmp_path / "out", "--version", version), fragment)
    assert not (tmp_path / "out").exists()


# -- a real git repository: the corpus committed, then edited ----------------------------------

GIT_ENV = {"PATH": os.environ["PATH"], "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.org", "LC_ALL": "C"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          env={**GIT_ENV, "HOME": str(repo)}, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def committed_repo(tmp_path: Path) -> Path:
    """A repository holding every version's corpus; the folder of 1.0's."""
    repo = tmp_path / "repo"
    shutil.copytree(VECTORS_DIR, repo / "conformance" / "vectors")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "corpus")
    return corpus_dir(V, repo / "conformance" / "vectors")


def edit_a_vector(folder: Path) -> str:
    """Change one vector's description and store the corpus consistently (content hash, group
    file SHA-256, manifest digest), as an author's tool would; return the new digest, computed
    here from the lines as spec chapter 11.3 defines it."""
    lines = (folder / "hash.jsonl").read_text().splitlines()
    vector = json.loads(lines[0])
    vector["description"] += " (edited)"
    body = {k: v for k, v in vector.items() if k != "_meta"}
    vector["_meta"]["content_hash"] = hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()).hexdigest()
    lines[0] = json.dumps(vector, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = "".join(line + "\n" for line in lines)
    (folder / "hash.jsonl").write_text(text)
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["path"] == "hash.jsonl":
            entry["sha256"] = hashlib.sha256(text.encode()).hexdigest()
    pairs = sorted((v["id"], v["_meta"]["content_hash"]) for path in sorted(folder.glob("*.jsonl"))
                   for v in map(json.loads, path.read_text().splitlines()))
    manifest["digest"] = hashlib.sha256("".join(f"{i} {h}\n" for i, h in pairs).encode()).hexdigest()
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest["digest"]


def test_an_untouched_committed_corpus_packs_as_before(tmp_path):
    folder = committed_repo(tmp_path)
    done = release(tmp_path / "out", "--dir", str(folder), cwd=folder.parent.parent)
    assert done.returncode == 0, done.stderr
    made = tmp_path / "out" / f"{NAME}.tar.gz"
    # the same bytes as the release of the checkout's own corpus, which is the same corpus
    checkout = release(tmp_path / "own")
    assert checkout.returncode == 0, checkout.stderr
    assert made.read_bytes() == (tmp_path / "own" / f"{NAME}.tar.gz").read_bytes()


def test_an_edited_corpus_is_refused_under_the_old_version_and_packed_under_a_new_one(tmp_path):
    folder = committed_repo(tmp_path)
    digest = edit_a_vector(folder)
    assert digest != STORED["digest"]
    out = tmp_path / "out"
    done = release(out, "--dir", str(folder))
    refused(done, "not the committed one")
    assert "hash.jsonl, manifest.json differ from the last commit" in done.stderr
    assert f"digest {digest[:12]}, committed {STORED['digest'][:12]}" in done.stderr
    assert "--version" in done.stderr
    assert not out.exists()
    # staged is not committed
    git(folder.parent.parent.parent, "add", "-A")
    refused(release(out, "--dir", str(folder)), "not the committed one")
    # ... and "--version" with the release it already has is not a new version
    refused(release(out, "--dir", str(folder), "--version", RELEASE), "not the committed one")
    # a new version packs it, and its name, README and manifest carry the new digest
    done = release(out, "--dir", str(folder), "--version", NEXT)
    assert done.returncode == 0, done.stderr
    name = f"rtwo-vm-vectors-{NEXT}-{digest[:12]}"
    assert [p.name for p in out.iterdir()] == [f"{name}.tar.gz"]
    top = unpack(out / f"{name}.tar.gz", tmp_path / "x")
    assert top.name == name
    assert json.loads((top / "manifest.json").read_text())["digest"] == digest
    readme = (top / "README.md").read_text()
    assert readme.startswith(f"# RTWO VM conformance vectors {NEXT}\n") and digest in readme
    assert f"Specification release: {RELEASE}" in readme
    assert (top / "hash.jsonl").read_bytes() == (folder / "hash.jsonl").read_bytes()


def test_once_committed_the_edit_is_the_release_but_one_folder_never_holds_two_of_a_version(tmp_path):
    folder = committed_repo(tmp_path)
    out = tmp_path / "out"
    assert release(out, "--dir", str(folder)).returncode == 0
    digest = edit_a_vector(folder)
    git(folder.parent.parent.parent, "commit", "-q", "-am", "edit a vector")
    # committed: the release of this checkout's version, but not beside the other of that version
    refused(release(out, "--dir", str(folder)), f"already holds {NAME}.tar.gz")
    assert [p.name for p in out.iterdir()] == [f"{NAME}.tar.gz"]
    done = release(tmp_path / "fresh", "--dir", str(folder))
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "fresh").iterdir()] == [f"rtwo-vm-vectors-{RELEASE}-{digest[:12]}.tar.gz"]


def test_a_repository_handed_over_runs_none_of_its_commands(tmp_path):
    # Its configuration names an fsmonitor hook and a clean filter that would leave a marker:
    # the check asks git only for HEAD's tree and blobs, which runs neither.
    folder = committed_repo(tmp_path)
    repo = folder.parent.parent.parent
    marker = tmp_path / "ran"
    hook = tmp_path / "hook.sh"
    hook.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    hook.chmod(0o755)
    git(repo, "config", "core.fsmonitor", str(hook))
    git(repo, "config", "filter.evil.clean", str(hook))
    (repo / ".gitattributes").write_text("*.jsonl filter=evil\n*.json filter=evil\n")
    edit_a_vector(folder)
    refused(release(tmp_path / "out", "--dir", str(folder)), "not the committed one")
    assert not marker.exists()


def test_a_corpus_never_committed_is_refused(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(corpus_dir(V), repo / "vectors")
    git(repo, "init", "-q")
    refused(release(tmp_path / "out", "--dir", str(repo / "vectors")), "no corpus is committed in that folder")


def test_outside_git_only_the_installed_corpus_is_the_committed_one(tmp_path):
    # tmp_path is in no git repository: a copy of the corpus the running package holds (itself
    # committed in this checkout) is released; an edited copy needs a new version.
    copy = tmp_path / "copy"
    shutil.copytree(corpus_dir(V), copy)
    assert not any((d / ".git").exists() for d in (copy, *copy.parents))
    done = release(tmp_path / "out", "--dir", str(copy))
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"{NAME}.tar.gz"]
    digest = edit_a_vector(copy)
    done = release(tmp_path / "out2", "--dir", str(copy))
    refused(done, "is not in a git repository and is not the corpus installed with rtwo-vm")
    done = release(tmp_path / "out2", "--dir", str(copy), "--version", f"{NEXT}-rc.1")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "out2").iterdir()] == [f"rtwo-vm-vectors-{NEXT}-rc.1-{digest[:12]}.tar.gz"]


def test_an_installed_copy_in_a_folder_a_checkout_ignores_releases_its_own_corpus(tmp_path):
    # pip install . into a virtual environment inside a git checkout: the installed corpus
    # sits in the work tree, ignored; it is the installed package's, not the checkout's.
    root = Path(__file__).resolve().parent.parent
    repo = tmp_path / "checkout"
    site = repo / ".venv" / "site-packages"
    for name in project_packages(root) or ():
        shutil.copytree(root / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", repo / "pyproject.toml")
    shutil.copytree(root / "conformance" / "corpus" / "definitions", repo / "conformance" / "corpus" / "definitions",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (repo / ".gitignore").write_text(".venv/\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a checkout")
    done = subprocess.run([sys.executable, "-P", "-c",
                           "import sys; from rtwo_vm.cli import main; sys.exit(main(sys.argv[1:]))",
                           "vectors", "release", "-o", str(tmp_path / "out"), "--spec-version", V],
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(site)},
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert str(site / "conformance" / "vectors") not in done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"{NAME}.tar.gz"]


def test_a_checkout_without_git_cannot_tell_what_was_committed(tmp_path):
    root = Path(__file__).resolve().parent.parent
    checkout = tmp_path / "checkout"
    for name in project_packages(root) or ():
        shutil.copytree(root / name, checkout / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "pyproject.toml", checkout / "pyproject.toml")
    command = [sys.executable, "-P", "-c", "import sys; from rtwo_vm.cli import main; sys.exit(main(sys.argv[1:]))",
               "vectors", "release", "-o", str(tmp_path / "out"), "--spec-version", V]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    refused(done, "is in a checkout without git")
    done = subprocess.run([*command, "--version", NEXT], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == [f"rtwo-vm-vectors-{NEXT}-{STORED['digest'][:12]}.tar.gz"]
