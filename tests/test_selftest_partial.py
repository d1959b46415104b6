"""``conformance selftest`` separates the protocol from coverage (issue 23, item 2): a real
half-finished VM's adapter process (PUSH*, ADD, STOP, RETURN) passes every protocol check; the
samples it answers UNSUPPORTED_INPUT are counted, not failed; a wrong answer still fails."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.run.selftest import run_selftest

ROOT = Path(__file__).resolve().parent.parent
PARTIAL = ROOT / "tests" / "conformance_fixtures" / "partial_selftest_adapter.py"
SAMPLES = "executes 12 sample vectors of every outcome kind exactly"
TRACES = "capability trace: step traces equal the reference's (jumps, subroutine calls, nested calls)"


@pytest.fixture(scope="module")
def vectors():
    return {v["id"]: v for v in store.load(corpus_dir("1.0"))}


def partial(*options: str) -> str:
    return shlex.join([sys.executable, str(PARTIAL), *options])


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_a_partial_vm_passes_every_protocol_check_and_its_unsupported_samples_are_counted():
    done = cli("conformance", "selftest", "--impl", partial(), "--timeout", "30")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line.startswith("FAIL")], done.stdout
    # Of the 12 samples only two have code of PUSH*, STOP only (seed_31_bytes: STOP;
    # compute.maximum/limit+1: PUSH1, STOP); of the 6 trace vectors none.
    assert "      samples: 2 answered, 10 unsupported (not failures)" in lines
    assert "        opcode 0x71 (MSTORE) not implemented: control/REVERT/one_word, event/LOG2/order_in_frame" in lines
    assert "      traces: 2 compared, 16 unsupported (not failures)" in lines
    assert lines[-1].endswith(": 23/23 checks passed; samples: 2 answered, 10 unsupported (not failures); "
                              "traces: 2 compared, 16 unsupported (not failures)"), lines[-1]


def test_a_partial_vm_with_one_wrong_answer_fails_the_sample_check_only(vectors):
    checks = run_selftest(partial("--wrong-on", "request/compute.maximum/limit+1"), vectors, "1.0", timeout=30)
    failed = [(c.name, c.detail) for c in checks if not c.ok]
    assert failed == [(SAMPLES, "request/compute.maximum/limit+1: output: expected '0x', got '0x00'")], failed
    assert len(checks) == 23


def test_an_unsupported_answer_without_the_request_id_is_a_wrong_answer(vectors):
    checks = run_selftest(partial("--no-id"), vectors, "1.0", timeout=30)
    failed = {c.name: c.detail for c in checks if not c.ok}
    # The pipelined check, which only checks ids, fails as well.
    assert set(failed) == {"answers 40 pipelined requests in order with their ids", SAMPLES, TRACES}, failed
    # The first sample, arithmetic/ADD/one__one, uses SWAP1: unsupported, answered with "id": null.
    assert failed[SAMPLES].startswith("arithmetic/ADD/one__one: an error UNSUPPORTED_INPUT must echo the request's id")
    assert "got None" in failed[SAMPLES]


def test_the_cli_exit_status_of_a_wrong_partial_vm_is_1():
    done = cli("conformance", "selftest", "--impl", partial("--wrong-on", "request/INVALID_REQUEST/seed_31_bytes"),
               "--timeout", "30")
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL  {SAMPLES}" in done.stdout and ": 22/23 checks passed" in done.stdout
