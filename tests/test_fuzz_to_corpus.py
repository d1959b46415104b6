"""From a campaign's findings to the committed corpus (issue 21, item 3; docs/guides/fuzzing.md,
"From a finding to the corpus"): a bounded, deterministic campaign against a seeded-bug adapter
that the corpus misses, its findings promoted with ``vectors promote``, the corpus refilled with
``vectors fill``, and then ``conformance run`` of the new corpus fails the seeded bug on exactly
the promoted vectors while the reference passes them. Everything runs on a copy of the checkout
in tmp_path (the packages, pyproject.toml and the seeded-bug fixture), through the CLI in real
processes, with the copy's own code."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from conformance.corpus import store
from conformance.corpus import fuzz_source
from conformance.fuzz.findings import make_vector, write_findings
from conformance.fuzz.generate import generate
from conformance.fuzz.promote import entry_of
from test_vectors_author import copy_packages, refused

ROOT = Path(__file__).resolve().parent.parent
SEEDED = Path("tests") / "fuzz_fixtures" / "seeded_bug_adapter.py"
# A seeded bug that the committed corpus does not catch (checked below, before the campaign)
# and that campaign seed 7 finds within its first epoch (request 171, shrunk to 9 instructions).
BUG, SEED, RUNS = "storage-refund-reads", "7", "256"
CAUGHT_BY_SCENARIO = "scenario/calls/reentrancy_lock"


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def make_checkout(target: Path) -> Path:
    copy_packages(target)
    shutil.copy(ROOT / "pyproject.toml", target / "pyproject.toml")
    (target / SEEDED).parent.mkdir(parents=True)
    shutil.copy(ROOT / SEEDED, target / SEEDED)
    return target


def rtwo(checkout: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """The CLI of the copy (python -m from the copy's root puts its packages first)."""
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=checkout, env=env,
                          capture_output=True, text=True, timeout=timeout)


def failed_ids(out: Path) -> list[str]:
    [impl] = json.loads((out / "1.0" / "report.json").read_text())["implementations"]
    return impl["failed_ids"]


def test_a_campaign_finding_promoted_and_filled_kills_the_seeded_bug(tmp_path):
    committed = sha(ROOT / "conformance" / "vectors" / "1.0" / "manifest.json")
    checkout = make_checkout(tmp_path / "checkout")
    root = checkout / "conformance" / "vectors"
    vectors, promoted = root / "1.0", checkout / "conformance" / "fuzz" / "promoted.jsonl"
    newer = store.load(root / "1.1")
    buggy = shlex.join([sys.executable, str(checkout / SEEDED), "--bug", BUG])
    run = ("conformance", "run", "--repeat", "0", "--fresh", "0", "--seed", "1", "--quiet", "--spec-version", "1.0")
    before = store.load(vectors)
    earlier = {e["id"] for e in fuzz_source.read(promoted)}

    # 0. the single-call corpus as committed does not catch the bug; only a scenario does: in
    # the re-entrancy lock a refused re-entry reads the lock and reverts, and the bug refunds
    # that read
    done = rtwo(checkout, *run, "--impl", buggy, "--out", str(tmp_path / "c0"))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    assert failed_ids(tmp_path / "c0") == [CAUGHT_BY_SCENARIO], "pick a seeded bug the single-call corpus misses"

    # 1. a bounded campaign finds it, runs to its end and exits 1 with its findings
    campaign = tmp_path / "campaign"
    done = rtwo(checkout, "fuzz", "--impl", buggy, "--runs", RUNS, "--seed", SEED, "--out", str(campaign), "--json",
                "--spec-version", "1.0")
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    report = json.loads(done.stdout)
    assert report["stopped"] == f"--runs {RUNS}" and report["executions"] == int(RUNS)
    assert report["buckets"] and report["internal_errors"] == []
    found = store.load(campaign / "findings")
    assert len(found) == len(report["buckets"])
    ids = sorted(v["id"] for v in found)
    assert all(i.startswith(f"fuzz/s{SEED}/") and i not in earlier for i in ids), ids

    # 2. promote every finding: promoted.jsonl gains their inputs, the corpus their vectors
    done = rtwo(checkout, "vectors", "promote", str(campaign / "findings"))
    assert done.returncode == 0, done.stdout + done.stderr
    entries = {e["id"]: e for e in fuzz_source.read(promoted)}
    assert sorted(entries) == sorted(earlier | set(ids))
    assert all(entries[v["id"]]["input"] == v["input"] and "expected" not in entries[v["id"]] for v in found)
    manifest = json.loads((vectors / "manifest.json").read_text())
    assert manifest["vector_count"] == len(before) + len(ids)
    assert manifest["sources"]["fuzz"] == len(earlier) + len(ids)
    assert f"digest {manifest['digest']}" in done.stdout
    assert store.problems(vectors) == []
    # A finding of a 1.0 campaign is a vector of 1.1 too (same input, 1.1's result).
    assert len(store.load(root / "1.1")) == len(newer) + len(ids) and store.problems(root / "1.1") == []
    stored = {v["id"]: v for v in store.load(vectors)}
    for v in found:       # recomputed by the filler: the reference's result the campaign recorded
        assert stored[v["id"]]["expected"] == v["expected"] and stored[v["id"]]["tags"]["source"] == "fuzz"

    # 3. a plain refill keeps them: the corpus files stay byte for byte what promote wrote
    written = {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    done = rtwo(checkout, "vectors", "fill", "--second-oracle", "off")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"spec 1.0: digest {manifest['digest']}" in done.stdout
    assert {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()} == written

    # 4. the new corpus kills the bug on exactly the promoted vectors; the reference passes them
    done = rtwo(checkout, *run, "--impl", buggy, "--out", str(tmp_path / "c1"))
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr
    assert sorted(failed_ids(tmp_path / "c1")) == sorted([*ids, CAUGHT_BY_SCENARIO])
    done = rtwo(checkout, *run, "--filter", f"fuzz/s{SEED}/*", "--out", str(tmp_path / "c2"))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr
    assert failed_ids(tmp_path / "c2") == []
    assert sha(ROOT / "conformance" / "vectors" / "1.0" / "manifest.json") == committed   # the real checkout untouched


def test_a_finding_of_another_campaign_under_a_promoted_id_is_refused(tmp_path):
    """A finding's id is its campaign's seed and request index: another campaign with the same
    seed (another implementation, another pool) can name another request so. Promoting it must
    not silently replace the vector already promoted under that id."""
    first = make_vector(generate(1, 3), 1, 3, "result:x", "impl-a")
    other = make_vector(generate(2, 5), 1, 3, "result:y", "impl-b")       # same id, another input
    assert first["id"] == other["id"] and first["input"] != other["input"]
    out = tmp_path / "out"
    out.mkdir()
    promoted, target = out / "promoted.jsonl", out / "corpus"
    promoted.write_text(json.dumps(entry_of(first)) + "\n")
    before = promoted.read_bytes()
    findings = tmp_path / "findings"
    write_findings(findings, [other], 1, "1.0")
    refused("vectors", "promote", str(findings), "--promoted", str(promoted), "--dir", str(target),
            fragment=f"{first['id']}: already promoted with another input")
    assert promoted.read_bytes() == before and not target.exists()
