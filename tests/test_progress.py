"""The one progress display: drawn only on a terminal, never into a file or a pipe; the long
commands (``conformance run``, ``vectors strength``) show it without being asked when stderr is
a terminal (a real pseudo-terminal here), and ``--progress``/``--no-progress`` force it."""

import io
import os
import pty
import select
import subprocess
import sys
import time

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from rtwo_vm.progress import Progress, clock, wanted


def test_nothing_is_written_to_a_file_or_pipe():
    stream = io.StringIO()
    with Progress(100, "prove", stream=stream) as bar:
        for _ in range(100):
            bar.advance(status="theorem")
    assert stream.getvalue() == ""


def test_a_terminal_gets_one_line_ended_by_a_newline():
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", closefd=True) as tty:
            with Progress(4, "run", stream=tty) as bar:
                for _ in range(4):
                    bar.advance(failed=True)
        # Read to the end: a pty may hand the last bytes over in another chunk (the slave is
        # closed, so reading raises EIO once it is drained).
        chunks = []
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        output = b"".join(chunks).decode()
    finally:
        os.close(master)
    assert "\r" in output
    assert "4/4" in output and "failed 4" in output
    assert output.endswith("\n") or output.endswith("\r\n")


def test_forced_display_and_open_ended_count():
    stream = io.StringIO()
    bar = Progress(None, "fuzz", stream=stream, enabled=True)
    bar.update(1234, status="buckets 2")
    bar.finish()
    text = stream.getvalue()
    assert "fuzz 1,234" in text and "buckets 2" in text
    assert text.endswith("\n")
    assert bar.line().startswith("fuzz 1,234")


def test_the_first_state_is_drawn_at_once_and_slow_rates_keep_their_decimals():
    stream = io.StringIO()
    with Progress(10, "strength", stream=stream, enabled=True, failed_label="survived") as bar:
        assert "strength [" in stream.getvalue() and "0/10" in stream.getvalue()   # before any item
        bar.done, bar.failed = 5, 2
        bar.started -= 40.0               # 5 items in 40 s: 0.125/s, about 40 s left
        text = bar.line()
    assert "0.1/s" in text and "0:40, ~0:40 left" in text and "survived 2" in text


def test_clock():
    assert [clock(s) for s in (0, 65.9, 600, 3725)] == ["0:00", "1:05", "10:00", "1:02:05"]


@pytest.mark.parametrize("flag, quiet, expected", [
    (None, False, None), (None, True, False), (True, True, True), (False, False, False)])
def test_wanted(flag, quiet, expected):
    assert wanted(flag, quiet) is expected


# -- the commands: a real pseudo-terminal for stderr, or a pipe ---------------------------------

CLI = [sys.executable, "-m", "rtwo_vm.cli"]


def run_with_stderr(args, tmp_path, terminal: bool, timeout: float = 240.0) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``rtwo-vm ARGS`` whose stderr is a pseudo-terminal (read
    from its master side until the child has gone) or a pipe."""
    out = tmp_path / "stdout.txt"
    with open(out, "wb") as stdout:
        if not terminal:
            done = subprocess.run([*CLI, *args], stdin=subprocess.DEVNULL, stdout=stdout,
                                  stderr=subprocess.PIPE, timeout=timeout)
            return done.returncode, out.read_text(), done.stderr.decode()
        master, slave = pty.openpty()
        try:
            child = subprocess.Popen([*CLI, *args], stdin=subprocess.DEVNULL, stdout=stdout, stderr=slave)
            os.close(slave)
            slave = -1
            seen, deadline = b"", time.monotonic() + timeout
            while time.monotonic() < deadline:
                ready, _, _ = select.select([master], [], [], 0.2)
                if ready:
                    try:
                        chunk = os.read(master, 65536)
                    except OSError:           # EIO: every writer has closed the terminal
                        break
                    if not chunk:
                        break
                    seen += chunk
                elif child.poll() is not None:
                    break
            else:
                child.kill()
            code = child.wait(timeout=30)
        finally:
            if slave != -1:
                os.close(slave)
            os.close(master)
    return code, out.read_text(), seen.decode(errors="replace")


def run_args(tmp_path):
    return ["conformance", "run", "--filter", "arithmetic/ADD/*", "--repeat", "0", "--fresh", "0",
            "--out", str(tmp_path / "out"), "--spec-version", "1.0"]


@pytest.mark.parametrize("terminal, extra, shown", [
    (True, [], True),                      # a terminal: on without asking
    (False, [], False),                    # a pipe: quiet
    (True, ["--no-progress"], False),
    (False, ["--progress"], True),
    (True, ["--quiet"], False),            # quiet mode: off unless asked for
    (False, ["--quiet", "--progress"], True),
])
def test_conformance_run_shows_progress_on_a_terminal(tmp_path, terminal, extra, shown):
    code, stdout, stderr = run_with_stderr(run_args(tmp_path) + extra, tmp_path, terminal)
    assert code == 0, stdout + stderr
    total = len([v for v in store.load(corpus_dir("1.0")) if v["id"].startswith("arithmetic/ADD/")])
    assert total > 0
    assert (f"conformance 1.0 [{'#' * 30}] {total}/{total}" in stderr) is shown, stderr
    assert ("\r" in stderr) is shown, stderr
    assert "conformance [" not in stdout


@pytest.mark.parametrize("terminal, extra, shown", [
    (True, [], True), (False, [], False), (True, ["--no-progress"], False), (False, ["--progress"], True)])
def test_vectors_strength_shows_progress_on_a_terminal(tmp_path, terminal, extra, shown):
    args = ["vectors", "strength", "--no-curated", "--limit", "1", "--module", "instructions/arithmetic",
            "--filter", "arithmetic/ADD/*", "--workers", "1"]
    code, stdout, stderr = run_with_stderr(args + extra, tmp_path, terminal)
    assert code in (0, 1), stdout + stderr
    assert "strength" in stdout                         # the report itself
    assert ("strength [..............................] 0/1" in stderr) is shown, stderr   # drawn at once
    assert (f"strength [{'#' * 30}] 1/1" in stderr) is shown, stderr
    assert ("\r" in stderr) is shown, stderr
