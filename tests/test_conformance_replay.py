"""Replay bundles and adapter logs: a bundle records the command, its working directory and
the environment and preceding vectors of every pass, and a replay reproduces the passes with
the adapter its user names (--impl; the recorded command is never run), so a determinism
failure fails its replay; adapter stderr can be kept for reading."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.run import replay as rp
from conformance.report.bundles import write_bundles
from conformance.run.process import Settings
from conformance.corpus.selection import select
from conformance.run.suite import Options, reference_command, run_suite

ROOT = Path(__file__).resolve().parent.parent
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
TARGET = "hash/SHA256/length_1"


def faulty(fault: str, target: str = TARGET, python: str = sys.executable,
           script: str = str(FAULTY)) -> str:
    return shlex.join([python, script, "--fault", fault, "--target", target])


def cli(*args: str, cwd: Path = ROOT, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture(scope="module")
def vectors():
    return store.load(corpus_dir("1.0"))


@pytest.fixture(scope="module")
def hashes(vectors):
    return select(vectors, ["hash/*"])


def test_a_determinism_failure_is_recorded_with_its_environment_and_fails_its_replay(hashes, vectors,
                                                                                     tmp_path, monkeypatch):
    monkeypatch.setenv("TZ", "UTC0")   # the main pass in UTC, where the fault hides
    result = run_suite([faulty("nondeterministic")], hashes, [], Options(Settings("1.0"), repeat=1))
    bundles = write_bundles(result, tmp_path)
    path = bundles[(result.runs[0].command, TARGET)]
    bundle = json.loads(path.read_text())
    assert rp.read_bundle(path) == bundle       # what a run writes passes the bundle schema
    main, perturbed = bundle["passes"]
    assert main["name"] == "main pass" and main["environment"]["TZ"] == "UTC0" and not main["differs"]
    assert perturbed["differs"] and perturbed["environment"]["TZ"] == "XST+11"
    assert perturbed["environment"]["PYTHONHASHSEED"] == "1" and perturbed["order_seed"] == 1
    assert perturbed["preceded_count"] == len(perturbed["preceded_by"]) and perturbed["message"]["type"] == "result"
    assert bundle["implementation"]["cwd"] == str(Path.cwd())

    monkeypatch.delenv("TZ")   # the replay sets the recorded values itself
    by_id = {v["id"]: v for v in vectors}
    replayed, _ = rp.replay(rp.plan_bundle(bundle, faulty("nondeterministic")), by_id, Settings("1.0"))
    o = replayed.runs[0].outcomes[TARGET]
    assert not replayed.ok and o.categories == ["nondeterministic"], [str(m) for m in o.failures]
    assert o.failures[0].field == "determinism pass 1 against the main pass: usage.compute"
    assert any("TZ=XST+11" in p for p in replayed.runs[0].passes)
    fixed, _ = rp.replay(rp.plan_bundle(bundle, reference_command()), by_id, Settings("1.0"))
    assert fixed.ok


def test_replaying_a_vector_id_runs_a_perturbed_pass_too(hashes, vectors):
    vector = next(v for v in hashes if v["id"] == TARGET)
    plan = rp.plan_vector(vector, faulty("nondeterministic"))
    assert [p["name"] for p in plan.passes] == ["main pass", "determinism pass 1"]
    plan.passes[0]["environment"]["TZ"] = "UTC0"
    result, _ = rp.replay(plan, {}, Settings("1.0"))
    assert result.runs[0].outcomes[TARGET].categories == ["nondeterministic"]


def test_a_bundle_replays_from_any_directory_and_shows_the_adapter_stderr(tmp_path):
    # A relative script path, as a user types it in the repository; the replay runs elsewhere,
    # with the adapter the user names there.
    impl = faulty("wrong-result", script="tests/conformance_fixtures/faulty_adapter.py")
    done = cli("conformance", "run", "--impl", impl, "--filter", "hash/SHA256/length_*", "--repeat", "0",
               "--fresh", "0", "--out", str(tmp_path / "out"), "--no-progress", "--spec-version", "1.0")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 replay bundle in" in done.stdout and "1 replay bundles" not in done.stdout
    (bundle,) = (tmp_path / "out" / "1.0" / "bundles").glob("*.json")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    refused = cli("conformance", "replay", str(bundle), cwd=elsewhere)
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    assert refused.stderr.count("\n") == 1 and "--impl" in refused.stderr
    assert shlex.quote(impl) in refused.stderr      # the recorded command, to copy
    replayed = cli("conformance", "replay", str(bundle), "--impl", faulty("wrong-result"), cwd=elsewhere)
    assert replayed.returncode == 1 and "output: expected" in replayed.stdout, replayed.stdout + replayed.stderr
    assert "could not start" not in replayed.stdout
    noisy = cli("conformance", "replay", str(bundle), "--impl",
                shlex.join([sys.executable, str(FAULTY), "--fault", "noisy"]))
    # The adapter sees an opaque request id, never the corpus id.
    assert noisy.returncode == 0 and "executing r" in noisy.stdout, noisy.stdout
    assert f"executing {TARGET}" not in noisy.stdout


def test_adapter_stderr_is_kept_on_request(hashes, tmp_path):
    logs = tmp_path / "logs"
    settings = Settings("1.0", log_dir=logs)
    result = run_suite([faulty("noisy")], hashes, [], Options(repeat=1, settings=settings))
    assert result.ok
    kept = sorted(p.name for p in logs.glob("*.adapter.log"))
    assert any("__main-" in n for n in kept) and any("__pass1-" in n for n in kept), kept
    text = "".join(p.read_text() for p in logs.glob("faulty-reference__main-*"))
    assert text.count("executing r") == len(hashes) and not any(v["id"] in text for v in hashes)


def test_cli_keep_logs_defaults_to_the_report_directory(tmp_path):
    impl = shlex.join([sys.executable, str(FAULTY), "--fault", "noisy"])
    out = tmp_path / "out"
    (out / "logs").mkdir(parents=True)
    (out / "logs" / "old.adapter.log").write_text("a log of an earlier run")
    done = cli("conformance", "run", "--impl", impl, "--filter", "hash/SHA256/length_*", "--repeat", "0",
               "--out", str(out), "--keep-logs", "--no-progress", "--spec-version", "1.0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"adapter stderr logs in {out / 'logs'}" in done.stdout
    names = [p.name for p in (out / "logs").glob("*.adapter.log")]
    assert "old.adapter.log" not in names and any("__main-" in n for n in names)
    off = cli("conformance", "run", "--filter", "hash/SHA256/length_0", "--out", str(tmp_path / "o2"), "--no-progress",
              "--spec-version", "1.0")
    assert off.returncode == 0 and not (tmp_path / "o2" / "logs").exists()
