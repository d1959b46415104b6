"""The native tier where executions are made from outside: ``rtwo-vm run --engine native`` and
``python -m conformance.adapter --engine native`` over the whole corpus, the protocol self-test
and bounded differential fuzzing campaigns; and the corpus failing through an adapter whose
native code generator has a planted bug."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import spec

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

ROOT = Path(__file__).resolve().parent.parent
ADAPTER = [sys.executable, "-m", "conformance.adapter", "--engine", "native"]
EAGER = [*ADAPTER, "--compile-threshold", "1"]      # every region it can take, native at once


def cli(*args: str, cwd: Path = ROOT, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=timeout)


VERSIONS = [v.version for v in spec.versions()]


def corpus_size(version: str) -> int:
    return sum(1 for path in (ROOT / "conformance" / "vectors" / version).glob("*.jsonl")
               for _ in path.open())


@pytest.mark.slow
@pytest.mark.parametrize("command", [ADAPTER, EAGER], ids=["tiered", "eager"])
def test_the_whole_corpus_passes_through_the_native_adapter(tmp_path, command):
    out = tmp_path / "report"
    done = cli("conformance", "run", "--impl", shlex.join(command), "--out", str(out), "--quiet",
               "--repeat", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    for version in VERSIONS:         # the adapter announces every version: a suite for each
        report = json.loads((out / version / "report.json").read_text())
        (implementation,) = report["implementations"]
        assert implementation["name"] == "rtwo-native"        # the hello named the native engine
        assert report["ok"] and implementation["counts"]["pass"] == corpus_size(version) > 2000
        assert implementation["counts"]["fail"] == 0


def test_a_planted_off_by_one_in_native_subtraction_fails_the_corpus(tmp_path):
    """The same run through an adapter whose native SUB adds one: the corpus notices."""
    planted = ("import sys; from llvmlite import ir; from native_vm import ops; "
               "ops.BINARY['SUB'] = lambda b, x, y: b.add(b.sub(x, y), ir.Constant(x.type, 1)); "
               "from conformance.adapter import main; "
               "sys.exit(main(['--engine', 'native', '--compile-threshold', '1']))")
    out = tmp_path / "report"
    done = cli("conformance", "run", "--impl", shlex.join([sys.executable, "-c", planted]),
               "--out", str(out), "--quiet", "--repeat", "0", "--fresh", "0",
               "--filter", "*arithmetic*", "--max-bundles", "0", "--max-traces", "0")
    assert done.returncode == 1, done.stdout + done.stderr
    for version in VERSIONS:
        (implementation,) = json.loads((out / version / "report.json").read_text())["implementations"]
        assert implementation["counts"]["fail"] > 0, version


def test_run_with_the_native_engine_prints_the_references_result(tmp_path):
    loop = str(ROOT / "benchmarks" / "loop.rasm")
    n = (3000).to_bytes(8, "little").hex()
    for limit in ("100000", "20000"):          # success, then exhausted inside the loop
        args = ("run", loop, "--calldata", "0x" + n, "--compute", limit, "--canonical")
        reference = cli(*args, cwd=tmp_path)
        native = cli(*args, "--engine", "native", cwd=tmp_path)
        assert native.returncode == reference.returncode
        assert native.stdout == reference.stdout and native.stdout
    assert json.loads(native.stdout)["error"] == "COMPUTE_LIMIT_EXCEEDED"


def test_the_native_adapter_passes_the_protocol_selftest():
    done = cli("conformance", "selftest", "--impl", shlex.join(ADAPTER))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks passed" in done.stdout and "FAIL" not in done.stdout


# Eagerly every program is compiled by LLVM (about 85 ms each): half the runs keep CI in its time.
@pytest.mark.parametrize("command,runs", [(ADAPTER, 768), (EAGER, 384)], ids=["tiered", "eager"])
def test_a_fuzz_campaign_finds_nothing_between_the_native_engine_and_the_reference(tmp_path, command, runs):
    """A bounded differential-fuzzing campaign (rtwo-vm fuzz): the native adapter against the
    in-process reference; eagerly, every generated program's regions run as machine code."""
    out = tmp_path / "fuzz"
    done = cli("fuzz", "--impl", shlex.join(command), "--runs", str(runs), "--seed", "27", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["executions"] == runs and report["buckets"] == [] and report["divergent_requests"] == 0
