"""No adapter process survives, whatever it does to its environment, session or process group.

The adapter (tests/conformance_fixtures/daemon_adapter.py) is correct in every answer but, at
start, double-forks a daemon that calls setsid, re-executes itself with an empty environment,
ignores SIGTERM/SIGHUP/SIGINT and writes a heartbeat file every 20 ms. Every test runs it for
real (in this pytest process as the runner, through ``conformance run --workers 2``, through
``fuzz --workers 2``, and with the runner SIGKILLed mid-run), then checks by the pid files the
daemons wrote that none of them is alive (nor a zombie) and that no heartbeat moves any more.
"""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.run.process import AdapterProcess, Settings, StartError
from conformance.corpus.selection import select
from conformance.run.suite import Options, run_suite

ROOT = Path(__file__).resolve().parent.parent
DAEMON = ROOT / "tests" / "conformance_fixtures" / "daemon_adapter.py"
SIX = "arithmetic/ADD/one__*"


def command(folder: Path) -> str:
    return shlex.join([sys.executable, str(DAEMON), str(folder)])


def daemons(folder: Path) -> list[int]:
    # The pid is in the name: a daemon killed as it writes its file leaves it empty.
    return sorted(int(p.name[len("daemon-"):-len(".pid")]) for p in folder.glob("daemon-*.pid"))


def alive(pid: int, folder: Path) -> bool:
    """A process ``pid`` that is the daemon (its command line names ``folder``), not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return stat[stat.rfind(b")") + 2:][:1] != b"Z" and str(folder).encode() in cmdline


def zombie_or_alive(pid: int) -> bool:
    return Path(f"/proc/{pid}").exists()


def beats(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.glob("heartbeat-*")}


def assert_none_survive(folder: Path, started: int, wait: float = 0.0) -> None:
    pids = daemons(folder)
    assert len(pids) >= started, f"the adapter left {len(pids)} daemons, expected at least {started}"
    deadline = time.monotonic() + wait
    while any(zombie_or_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if alive(p, folder)] == [], "a daemon survived the run"
    assert [p for p in pids if zombie_or_alive(p)] == [], "a daemon was left as a zombie"
    before = beats(folder)
    time.sleep(0.3)
    assert beats(folder) == before, "a heartbeat still moves"


def test_the_pytest_process_as_runner_leaves_no_daemon(tmp_path):
    vectors = select(store.load(corpus_dir("1.0")), [SIX])
    options = Options(repeat=1, settings=Settings("1.0", timeout=10.0, workers=2))
    result = run_suite([command(tmp_path)], vectors, [], options)
    (run,) = result.runs
    assert run.count("pass") == len(vectors) == 6, {k: o.status for k, o in run.outcomes.items()}
    # Two workers in the main pass, fresh processes for the perturbed passes: several daemons.
    assert_none_survive(tmp_path, started=3)


def rtwo_vm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


def test_conformance_run_with_two_workers_leaves_no_daemon(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    done = rtwo_vm("conformance", "run", "--impl", command(folder), "--out", str(tmp_path / "out"),
                   "--filter", SIX, "--workers", "2", "--repeat", "1", "--no-progress", "--spec-version", "1.0")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert_none_survive(folder, started=3)


def test_fuzz_workers_leave_no_daemon(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    done = rtwo_vm("fuzz", "--impl", command(folder), "--runs", "64", "--workers", "2",
                   "--out", str(tmp_path / "campaign"), "--no-progress")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert_none_survive(folder, started=2)


def test_a_runner_killed_with_sigkill_leaves_no_daemon(tmp_path):
    folder = tmp_path / "d"
    folder.mkdir()
    runner = subprocess.Popen([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--impl",
                               command(folder), "--out", str(tmp_path / "out"), "--workers", "2",
                               "--no-progress"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while len(daemons(folder)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(daemons(folder)) >= 2, "the adapters did not start"
    finally:
        runner.send_signal(signal.SIGKILL)   # no handler, no atexit: only the keepers are left
        runner.wait()
    # Each keeper sees its lifeline end with the runner and kills its adapter's tree.
    assert_none_survive(folder, started=2, wait=15)


def test_the_daemon_escapes_without_its_keeper(tmp_path):
    """The fixture's daemon is real: started directly (no keeper), it outlives its adapter,
    which is what every test above would see without the keeper."""
    adapter = subprocess.Popen([sys.executable, str(DAEMON), str(tmp_path)], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not daemons(tmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        adapter.kill()
        adapter.wait()
        (pid,) = daemons(tmp_path)
        time.sleep(0.2)
        assert alive(pid, tmp_path), "the daemon did not survive its adapter's group"
        before = beats(tmp_path)
        time.sleep(0.2)
        assert beats(tmp_path) != before, "the daemon's heartbeat does not move"
    finally:
        for pid in daemons(tmp_path):
            if alive(pid, tmp_path):
                os.kill(pid, signal.SIGKILL)


def test_a_command_that_cannot_start_is_a_start_error_and_leaves_no_keeper(tmp_path):
    missing = tmp_path / "no-such-adapter"
    with pytest.raises(StartError, match=r"cannot start '.*no-such-adapter': No such file or directory"):
        AdapterProcess([str(missing)], Settings("1.0"), None, 0)
    left = []
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and str(missing).encode() in Path(f"/proc/{name}/cmdline").read_bytes():
                left.append(int(name))
        except OSError:
            pass
    assert left == [], "the keeper of a command that could not start survived"
