"""spec/files.py: the one bounded reader and atomic writer every command uses."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from spec.files import (
    FileRefused, atomic_write, atomic_writer, check_int, output_dir, read_bounded, read_json,
)


def test_reads_a_regular_file_up_to_its_cap(tmp_path: Path) -> None:
    f = tmp_path / "a.json"
    f.write_bytes(b"x" * 10)
    assert read_bounded(f, 10) == b"x" * 10
    with pytest.raises(FileRefused, match="larger than the 9 bytes"):
        read_bounded(f, 9)


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    fifo = tmp_path / "bundle.json"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="not a regular file"):
        read_bounded(fifo, 1 << 20)


@pytest.mark.parametrize("special", ["/dev/zero", "/proc/self/status", "/dev/null"])
def test_devices_and_proc_are_refused(special: str, tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="not a regular file"):
        read_bounded(special, 1 << 20)
    link = tmp_path / "looks-like-a-report.json"
    link.symlink_to(special)
    with pytest.raises(FileRefused, match="not a regular file"):
        read_bounded(link, 1 << 20)


def test_json_depth_and_constants(tmp_path: Path) -> None:
    f = tmp_path / "deep.json"
    f.write_text("[" * 65 + "]" * 65)
    with pytest.raises(FileRefused, match="nested too deeply"):
        read_json(f, 1 << 20, max_depth=64)
    f.write_text("[" * 100000 + "]" * 100000)
    with pytest.raises(FileRefused, match="nested too deeply"):
        read_json(f, 1 << 20, max_depth=64)
    f.write_text('{"fresh_requested": NaN}')
    with pytest.raises(FileRefused, match="not a JSON"):
        read_json(f, 1 << 20)
    f.write_text('{"a": [1, {"b": 2}]}')
    assert read_json(f, 1 << 20, max_depth=3) == {"a": [1, {"b": 2}]}


def test_check_int_ranges() -> None:
    assert check_int(5, 0, 5, "passes") == 5
    for bad in (True, 1.0, "5", None, [5]):
        with pytest.raises(FileRefused, match="must be an integer"):
            check_int(bad, 0, 5, "passes")
    with pytest.raises(FileRefused, match="between 0 and 5, not 6"):
        check_int(6, 0, 5, "passes")


def test_writes_never_follow_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    out = tmp_path / "out"
    out.mkdir()
    (out / "report.txt").symlink_to(victim)
    with pytest.raises(FileRefused, match="symbolic link"):
        atomic_write(out / "report.txt", "overwritten")
    assert victim.read_text() == "keep me"
    (out / "findings").symlink_to(tmp_path)
    with pytest.raises(FileRefused, match="symbolic link"):
        output_dir(out / "findings")


def test_atomic_write_replaces_whole_and_leaves_nothing_behind(tmp_path: Path) -> None:
    f = tmp_path / "report.json"
    atomic_write(f, "old")
    with pytest.raises(RuntimeError):
        with atomic_writer(f) as w:
            w.write(b"half of the new")
            raise RuntimeError("killed mid-write")
    assert f.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
    atomic_write(f, "new")
    assert f.read_text() == "new"
    assert (f.stat().st_mode & 0o777) == 0o666 & ~_umask()


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def test_a_full_disk_keeps_the_previous_file(tmp_path: Path) -> None:
    """A real write failure: the file-size limit (EFBIG) stands in for a full disk (ENOSPC)."""
    f = tmp_path / "junit.xml"
    f.write_text("<previous/>")
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from spec.files import atomic_write
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        try:
            atomic_write({str(f)!r}, b"x" * 100000)
        except OSError as err:
            print("refused", err.errno)
            sys.exit(0)
        sys.exit("written past the limit")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused")
    assert f.read_text() == "<previous/>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml"]


def test_atomic_write_never_replaces_a_device_or_a_fifo(tmp_path: Path) -> None:
    # As root, renaming a temporary file over /dev/null would replace the device itself.
    for target in ("/dev/null", "/dev/full"):
        with pytest.raises(FileRefused, match="not a regular file"):
            atomic_write(target, "x")
        assert not Path(target).is_file()
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="not a regular file"):
        atomic_write(fifo, "x")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]
