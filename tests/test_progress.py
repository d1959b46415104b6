"""The one progress display: drawn only on a terminal, never into a file or a pipe."""

import io
import os
import pty

from rtwo_vm.progress import Progress


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
        output = os.read(master, 4096).decode()
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
