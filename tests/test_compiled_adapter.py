"""The compiled engine where executions are made from outside: ``rtwo-vm run --engine`` and
``python -m conformance.adapter --engine compiled``, the latter over the whole corpus."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import spec

ROOT = Path(__file__).resolve().parent.parent
COMPILED_ADAPTER = shlex.join([sys.executable, "-m", "conformance.adapter", "--engine", "compiled"])


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


def test_the_whole_corpus_passes_through_the_compiled_adapter(tmp_path):
    out = tmp_path / "report"
    done = cli("conformance", "run", "--impl", COMPILED_ADAPTER, "--out", str(out), "--quiet",
               "--repeat", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    for version in [v.version for v in spec.versions()]:    # a suite for each version announced
        report = json.loads((out / version / "report.json").read_text())
        (implementation,) = report["implementations"]
        assert implementation["name"] == "rtwo-compiled"      # the hello named the compiled engine
        vectors = sum(1 for path in (ROOT / "conformance" / "vectors" / version).glob("*.jsonl")
                      for _ in path.open())
        assert report["ok"] and implementation["counts"]["pass"] == vectors > 2000
        assert implementation["counts"]["fail"] == 0


def test_the_adapter_refuses_an_unknown_engine():
    done = subprocess.run([sys.executable, "-m", "conformance.adapter", "--engine", "jit"],
                          capture_output=True, text=True, cwd=ROOT, stdin=subprocess.DEVNULL, timeout=60)
    assert done.returncode == 2 and "invalid choice" in done.stderr


def test_run_with_the_compiled_engine_prints_the_references_result(tmp_path):
    loop = str(ROOT / "benchmarks" / "loop.rasm")
    n = (3000).to_bytes(8, "little").hex()
    for limit in ("100000", "20000"):          # success, then exhausted inside the loop
        args = ("run", loop, "--calldata", "0x" + n, "--compute", limit, "--canonical")
        reference = cli(*args, cwd=tmp_path)
        compiled = cli(*args, "--engine", "compiled", cwd=tmp_path)
        assert compiled.returncode == reference.returncode
        assert compiled.stdout == reference.stdout and compiled.stdout
    assert json.loads(compiled.stdout)["error"] == "COMPUTE_LIMIT_EXCEEDED"
    bad = cli("run", loop, "--engine", "fast", cwd=tmp_path)
    assert bad.returncode == 2 and "--engine" in bad.stderr


def test_the_compiled_adapter_passes_the_protocol_selftest():
    done = cli("conformance", "selftest", "--impl", COMPILED_ADAPTER)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks passed" in done.stdout and "FAIL" not in done.stdout


@pytest.mark.parametrize("extra", [[], ["--compile-threshold", "1"]], ids=["tiered", "eager"])
def test_a_fuzz_campaign_finds_nothing_between_the_compiled_engine_and_the_reference(tmp_path, extra):
    """Issue 14: a bounded differential-fuzzing campaign (rtwo-vm fuzz), the compiled adapter
    against the in-process reference; eager compilation puts every generated program through
    compiled code, not only the hot ones."""
    impl = shlex.join([sys.executable, "-m", "conformance.adapter", "--engine", "compiled", *extra])
    out = tmp_path / "fuzz"
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "fuzz", "--impl", impl, "--runs", "768",
                           "--seed", "14", "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["executions"] == 768 and report["buckets"] == [] and report["divergent_requests"] == 0
