"""Every file the CLI reads from outside goes through spec.files' bounded reader, and every
file it writes for the user goes through its atomic writer (issue 20, the sweep): a FIFO, a
device or a symlinked output is refused in one line with exit 2, without hanging."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COUNTER = str(ROOT / "examples" / "counter.rasm")


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The real CLI in a subprocess: a reader that blocks on a FIFO fails by the timeout."""
    env = {**os.environ, "RTWO_VM_DB": str(cwd / "default.db")}
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd, env=env)


def assert_refused(done: subprocess.CompletedProcess, fragment: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stdout[:200], done.stderr[:400])
    assert done.stderr.startswith("rtwo-vm: error: ") and done.stderr.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and fragment in done.stderr, done.stderr


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)   # no writer: a blocking open() would wait for ever
    return path


# -- inputs: code, --state, --storage-file -----------------------------------------------------

@pytest.mark.parametrize("name", ["pipe", "pipe.rasm"])
def test_run_of_a_fifo_is_refused_without_hanging(tmp_path, name):
    os.mkfifo(tmp_path / name)
    assert_refused(cli("run", str(tmp_path / name), cwd=tmp_path), "not a regular file")


def test_run_of_dev_zero_is_refused(tmp_path):
    assert_refused(cli("run", "/dev/zero", cwd=tmp_path), "not a regular file")


def test_run_state_fifo_is_refused(tmp_path, fifo):
    assert_refused(cli("run", COUNTER, "--state", str(fifo), cwd=tmp_path), "not a regular file")


def test_a_code_file_named_in_a_state_file_is_read_bounded(tmp_path, fifo):
    state = tmp_path / "state.json"
    state.write_text('{"contracts": {"0x200": {"code": "pipe"}}}')
    assert_refused(cli("run", COUNTER, "--state", str(state), cwd=tmp_path), "not a regular file")


def test_deploy_storage_file_dev_zero_is_refused(tmp_path):
    done = cli("deploy", COUNTER, "--storage-file", "/dev/zero", "--db", str(tmp_path / "x.db"),
               cwd=tmp_path)
    assert_refused(done, "not a regular file")


def test_deploy_of_a_fifo_is_refused(tmp_path, fifo):
    assert_refused(cli("deploy", str(fifo), "--db", str(tmp_path / "x.db"), cwd=tmp_path),
                   "not a regular file")
    assert not (tmp_path / "x.db").exists()


def test_a_regular_code_file_still_runs(tmp_path):
    assert cli("run", COUNTER, cwd=tmp_path).returncode == 0


# -- outputs: asm -o, run --trace FILE ---------------------------------------------------------

def _limit_file_size(limit: int):
    def apply():   # a full disk, for this process only: writes past `limit` bytes fail (EFBIG)
        import resource
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("command", [["asm", COUNTER, "-o"], ["run", COUNTER, "--trace"]])
def test_an_output_symlink_is_refused_and_its_target_unchanged(tmp_path, command):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "out").symlink_to(victim)
    assert_refused(cli(*command, str(tmp_path / "out"), cwd=tmp_path), "symbolic link")
    assert victim.read_text() == "keep\n" and (tmp_path / "out").is_symlink()


@pytest.mark.parametrize("command", [["asm", COUNTER, "-o"], ["run", COUNTER, "--trace"]])
def test_an_output_fifo_or_device_is_refused_without_hanging(tmp_path, fifo, command):
    assert_refused(cli(*command, str(fifo), cwd=tmp_path), "not a regular file")
    assert_refused(cli(*command, "/dev/null", cwd=tmp_path), "not a regular file")
    assert Path("/dev/null").is_char_device()


def test_a_trace_that_fills_the_disk_keeps_the_old_trace_whole(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text("old trace\n")
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "run", COUNTER, "--trace", str(trace)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          preexec_fn=_limit_file_size(200))   # the counter's trace is ~1.5 kB
    assert_refused(done, f"cannot write {trace}")
    assert trace.read_text() == "old trace\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trace.jsonl"]   # no temporary left
    done = cli("run", COUNTER, "--trace", str(trace), cwd=tmp_path)
    assert done.returncode == 0 and trace.read_text().count("\n") > 1


def test_asm_output_that_fills_the_disk_keeps_the_old_container_whole(tmp_path):
    out = tmp_path / "c.rtwo"
    out.write_bytes(b"old")
    source = tmp_path / "big.rasm"
    source.write_text(".zero 4000\nstop\n")
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "asm", str(source), "-o", str(out)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          preexec_fn=_limit_file_size(1000))
    assert_refused(done, f"cannot write {out}")
    assert out.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.rasm", "c.rtwo"]


# -- the events jsonl sink (appends by design: its target is checked, never followed) ----------

def test_sink_add_refuses_a_link_a_fifo_or_a_device(tmp_path, fifo):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "link.jsonl").symlink_to(victim)
    db = str(tmp_path / "x.db")
    assert_refused(cli("events", "sink-add", "jsonl", str(tmp_path / "link.jsonl"), "--db", db,
                       cwd=tmp_path), "symbolic link")
    assert_refused(cli("events", "sink-add", "jsonl", str(fifo), "--db", db, cwd=tmp_path),
                   "not a regular file")
    assert_refused(cli("events", "sink-add", "jsonl", "/dev/null", "--db", db, cwd=tmp_path),
                   "not a regular file")
    assert victim.read_text() == "keep\n"


def test_a_link_or_fifo_planted_after_sink_add_is_not_followed_and_does_not_hang(tmp_path):
    db, log = str(tmp_path / "x.db"), tmp_path / "e.jsonl"
    assert cli("events", "sink-add", "jsonl", str(log), "--db", db, cwd=tmp_path).returncode == 0
    assert cli("deploy", COUNTER, "--db", db, cwd=tmp_path).returncode == 0
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    log.symlink_to(victim)
    done = cli("events", "deliver", "--db", db, cwd=tmp_path)
    assert done.returncode == 1 and "0 delivered" in done.stdout, (done.stdout, done.stderr)
    assert victim.read_text() == "keep\n"
    log.unlink()
    os.mkfifo(log)   # no reader: an O_APPEND open without O_NONBLOCK would wait for ever
    done = cli("events", "deliver", "--db", db, cwd=tmp_path)
    assert done.returncode == 1 and "0 delivered" in done.stdout, (done.stdout, done.stderr)
    reader = os.open(log, os.O_RDONLY | os.O_NONBLOCK)   # with a reader, the open succeeds:
    try:                                                 # the fstat check refuses it
        done = cli("events", "deliver", "--jsonl", str(log), "--db", db, cwd=tmp_path)
        assert done.returncode == 1 and "not a regular file" in done.stdout, done.stdout
        assert os.read(reader, 100) == b""
    finally:
        os.close(reader)
    log.unlink()
    done = cli("events", "deliver", "--db", db, cwd=tmp_path)
    assert done.returncode == 0 and len(log.read_text().splitlines()) >= 1


# -- prove --report, prove --budgets, readiness --proofs-report --------------------------------

def test_prove_report_through_a_symlink_is_refused_and_its_target_unchanged(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    (tmp_path / "link").symlink_to(victim)
    done = cli("prove", "--opcode", "ADD", "--width", "8", "--report", str(tmp_path / "link"),
               cwd=tmp_path)
    assert_refused(done, "symbolic link")
    assert victim.read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "victim"]   # no .tmp left


@pytest.mark.parametrize("budgets", ["fifo", "/dev/zero"])
def test_prove_budgets_fifo_or_device_is_refused(tmp_path, fifo, budgets):
    done = cli("prove", "--opcode", "ADD", "--budgets", str(fifo) if budgets == "fifo" else budgets,
               cwd=tmp_path)
    assert_refused(done, "not a regular file")


def test_readiness_proofs_report_fifo_or_device_does_not_hang(tmp_path, fifo):
    for report in (str(fifo), "/dev/zero"):
        done = cli("readiness", "--proofs-report", report, cwd=tmp_path)
        assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
        assert "proof_results" in done.stdout and f"no proof report at {report}" in done.stdout


# -- vectors strength --json, conformance run --known-failures --------------------------------

def test_strength_json_to_a_fifo_or_device_is_refused_before_any_work(tmp_path, fifo):
    for target in (str(fifo), "/dev/null"):
        assert_refused(cli("vectors", "strength", "--json", target, cwd=tmp_path), "not a regular file")
    assert Path("/dev/null").is_char_device()


@pytest.mark.parametrize("which", ["fifo", "/dev/zero"])
def test_known_failures_fifo_or_device_is_refused(tmp_path, fifo, which):
    target = str(fifo) if which == "fifo" else which
    assert_refused(cli("conformance", "run", "--known-failures", target, cwd=tmp_path),
                   "not a regular file")


def test_prove_export_smt2_to_a_symlinked_folder_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    done = cli("prove", "--opcode", "ADD", "--export-smt2", str(tmp_path / "link"), cwd=tmp_path)
    assert_refused(done, "symbolic link")
    assert list((tmp_path / "elsewhere").iterdir()) == []


@pytest.mark.parametrize("name", ["/etc/hostname", "../outside.rasm", "link.rasm"])
def test_a_code_file_named_in_a_state_file_stays_in_its_folder(tmp_path, name):
    folder = tmp_path / "state"
    folder.mkdir()
    (tmp_path / "outside.rasm").write_text("stop\n")
    (folder / "link.rasm").symlink_to(tmp_path / "outside.rasm")
    (folder / "inside.rasm").write_text("stop\n")
    state = folder / "state.json"
    state.write_text(json.dumps({"contracts": {"0x200": {"code": name}}}))
    assert_refused(cli("run", COUNTER, "--state", str(state), cwd=tmp_path), "is not a file inside")
    state.write_text(json.dumps({"contracts": {"0x200": {"code": "inside.rasm"}}}))
    assert cli("run", COUNTER, "--state", str(state), cwd=tmp_path).returncode == 0


def test_strength_module_names_a_file_of_the_reference_package_only(tmp_path):
    # reference_vm/../spec/files.py exists: a name that climbs out is refused all the same
    assert (ROOT / "reference_vm" / ".." / "spec" / "files.py").is_file()
    assert_refused(cli("vectors", "strength", "--module", "../spec/files", cwd=tmp_path), "no module")
