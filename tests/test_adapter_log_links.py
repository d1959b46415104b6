"""Adapter logs are never written through a link (issue 20 follow-up): a real run with
``--keep-logs DIR`` of an adapter process that plants links to a victim file at the names of
the logs the runner will write, or swaps the log folder for a link to another folder."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLANTER = ROOT / "tests" / "conformance_fixtures" / "link_planting_adapter.py"


def run(tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    logs, victim = tmp_path / "logs", tmp_path / "victim"
    victim.write_text("keep me")
    impl = shlex.join([sys.executable, str(PLANTER), "--logs", str(logs), "--victim", str(victim), *options])
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--impl", impl,
                           "--filter", "hash/SHA256/length_*", "--repeat", "0", "--fresh", "0", "--no-progress",
                           "--out", str(tmp_path / "out"), "--keep-logs", str(logs)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    return done, logs, victim


def test_a_link_planted_at_a_log_name_is_replaced_never_followed(tmp_path):
    done, logs, victim = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert victim.read_text() == "keep me"
    written = sorted(p.name for p in logs.iterdir() if not p.is_symlink())
    # The main pass's processes and the trace check's one have names the adapter planted
    # links at (the version discovery's and each version's probe are named after the
    # command); each is now a regular file with the adapter's stderr, and no temporary file
    # is left.
    planted = [n for n in written if n.startswith("link-planter__")]
    assert any("__main-" in n for n in planted) and any("__traces-" in n for n in planted), written
    named = [n for n in written if "__probe-" in n or "__versions-" in n]
    assert len([n for n in named if "__versions-" in n]) == 1, written
    assert len(planted) + len(named) == len(written), written
    assert not [n for n in written if not n.endswith(".adapter.log")], written
    for name in written:
        assert (logs / name).read_text() == "stderr of the link planter\n", name


def test_a_log_folder_swapped_for_a_link_gets_no_log(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done, logs, victim = run(tmp_path, "--swap", str(elsewhere))
    assert done.returncode == 0, done.stdout + done.stderr
    # The first adapter (the probe) swapped the folder before any log was written: no log
    # goes through the link (the later adapters' own links land in ELSEWHERE, no file of
    # the runner's), and the folder moved aside got none either.
    assert logs.is_symlink() and victim.read_text() == "keep me"
    assert [n for n in os.listdir(elsewhere) if not (elsewhere / n).is_symlink()] == []
    assert not [p for p in Path(f"{logs}.moved").iterdir() if not p.is_symlink()]


def test_replay_reads_a_kept_log_bounded(tmp_path):
    # A replay prints the end of each pass's log: a link the adapter put there to /dev/zero,
    # or a FIFO, is read as no log (at once, no hang, no unbounded read); a log is its last lines.
    from conformance.run.replay import _tail
    (tmp_path / "zero.adapter.log").symlink_to("/dev/zero")
    os.mkfifo(tmp_path / "fifo.adapter.log")
    (tmp_path / "real.adapter.log").write_text("".join(f"line {i}\n" for i in range(100)))
    assert _tail(tmp_path / "zero.adapter.log") == "" and _tail(tmp_path / "fifo.adapter.log") == ""
    assert _tail(tmp_path / "real.adapter.log", 2) == "line 98\nline 99"
