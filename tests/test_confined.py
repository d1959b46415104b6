"""spec/confined.py with real processes: what a confined child can and cannot do, and that no
process of it outlives ``run`` — or the caller, when the caller itself is killed.

Expectations are the limits themselves: a child may add ``memory`` bytes of address space to
what it inherits (the caller first maps 3 GiB it never touches: the child still gets its
256 MiB), write only beneath ``writable`` (and /dev/null), grow a file to ``file_size``
bytes, report at most ``report`` bytes and have ``output`` bytes of what it prints relayed.
"""

from __future__ import annotations

import mmap
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spec import confined, landlock

FAST = confined.Limits(seconds=10)
LANDLOCK = landlock.abi()


def test_the_report_is_what_produce_returns_and_an_exception_is_one_line():
    assert confined.run(lambda: {"pid": os.getpid(), "cwd": os.getcwd()}, FAST)["pid"] != os.getpid()

    def raises():
        raise RuntimeError("boom\nsecond line")
    assert confined.run(raises, FAST) == {"error": "RuntimeError: boom"}


def test_the_child_works_in_an_empty_folder_removed_afterwards():
    doc = confined.run(lambda: {"cwd": os.getcwd(), "files": os.listdir(".")}, FAST)
    assert doc["files"] == [] and doc["cwd"] != os.getcwd()
    assert not Path(doc["cwd"]).exists()


def test_memory_is_bounded_by_what_the_child_adds_not_by_what_it_inherits():
    limits = confined.Limits(seconds=30, memory=512 << 20)
    reserved = mmap.mmap(-1, 3 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        assert confined.run(lambda: {"n": len(bytearray(256 << 20))}, limits) == {"n": 256 << 20}
        assert confined.run(lambda: {"n": len(bytearray(1 << 30))}, limits) == {"error": "MemoryError"}
    finally:
        reserved.close()


@pytest.mark.skipif(LANDLOCK < 1, reason="this kernel has no Landlock")
def test_writes_only_beneath_the_writable_folders_and_to_dev_null(tmp_path):
    inside, outside = tmp_path / "inside", tmp_path / "outside.txt"
    inside.mkdir()

    def write():
        with open(os.devnull, "w") as null:
            null.write("discarded")
        (inside / "ok.txt").write_text("12345")
        try:
            outside.write_text("no")
        except PermissionError as err:
            return {"outside": err.strerror}
        return {"outside": "written"}
    limits = confined.Limits(seconds=10, writable=(str(inside),), file_size=10)
    assert confined.run(write, limits) == {"outside": "Permission denied"}
    assert (inside / "ok.txt").read_text() == "12345" and not outside.exists()

    def grow():
        (inside / "big.txt").write_text("x" * 11)
        return {}
    assert confined.run(grow, limits)["error"].startswith("OSError: [Errno 27] File too large")


@pytest.mark.skipif(LANDLOCK < 6, reason="Landlock before ABI 6 does not scope signals")
def test_the_child_cannot_signal_its_reaper_or_the_caller():
    def kill_ancestors():
        out = {}
        for who, pid in (("reaper", os.getppid()), ("caller", CALLER)):
            try:
                os.kill(pid, signal.SIGKILL)
                out[who] = "killed"
            except PermissionError:
                out[who] = "refused"
        return out
    assert confined.run(kill_ancestors, FAST) == {"reaper": "refused", "caller": "refused"}


CALLER = os.getpid()


def test_a_hang_is_late_and_every_descendant_is_killed(capsys):
    start = time.monotonic()

    def hang():
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.write(1, f"GRANDCHILD {os.getpid()}\n".encode())
                time.sleep(60)
            os._exit(0)
        time.sleep(60)
    with pytest.raises(confined.ChildLate, match=r"took more than 2 s"):
        confined.run(hang, confined.Limits(seconds=2))
    assert time.monotonic() - start < 2 + confined.GRACE_SECONDS
    (grandchild,) = map(int, re.findall(r"GRANDCHILD (\d+)", capsys.readouterr().err))
    assert not _alive(grandchild)


def test_output_is_relayed_to_stderr_up_to_its_bound(capsys):
    def flood():
        print("first line")
        sys.stdout.write("y" * 200_000)
        return {"ok": True}
    assert confined.run(flood, confined.Limits(seconds=10, output=1000)) == {"ok": True}
    err = capsys.readouterr().err
    relayed, _, note = err.partition("\n[")
    assert relayed == "first line\n" + "y" * (1000 - len("first line\n"))
    assert note == f"{200_000 + len('first line') + 1 - 1000} more bytes of the file's output dropped]\n"


def test_a_report_past_its_bound_is_refused():
    with pytest.raises(confined.ChildEnded, match="reported more than 1000 bytes"):
        confined.run(lambda: {"x": "z" * 5000}, confined.Limits(seconds=10, report=1000))


def test_a_child_that_exits_or_dies_without_a_report_says_how():
    with pytest.raises(confined.ChildEnded, match=r"exit status 0"):
        confined.run(lambda: os._exit(0), FAST)
    with pytest.raises(confined.ChildEnded, match=r"killed by signal 9"):
        confined.run(lambda: os.kill(os.getpid(), signal.SIGKILL), FAST)


CALLER_SCRIPT = textwrap.dedent("""
    import os, time
    from spec import confined

    def spawn():
        if os.fork() == 0:
            os.setsid()
            os.write(1, f"SLEEPER {os.getpid()} {os.getcwd()}\\n".encode())
            time.sleep(120)
            os._exit(0)
        time.sleep(120)
    confined.run(spawn, confined.Limits(seconds=300))
""")


def test_killing_the_caller_ends_the_whole_tree():
    """The caller is SIGKILLed mid-run: the reaper sees its pipe close, kills the child and
    the sleeper that left the child's session, and removes the child's folder."""
    caller = subprocess.Popen([sys.executable, "-c", CALLER_SCRIPT], stderr=subprocess.PIPE,
                              text=True)
    assert caller.stderr is not None
    line = caller.stderr.readline()
    match = re.match(r"SLEEPER (\d+) (\S+)", line)
    sleeper = int(match.group(1)) if match else 0
    try:
        assert sleeper, line
        caller.kill()
        caller.wait(30)
        deadline = time.monotonic() + 10
        while _alive(sleeper) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(sleeper)
        assert match is not None
        folder = Path(match.group(2))
        while folder.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert folder.name.startswith("rtwo-user-file-") and not folder.exists()
    finally:
        caller.kill()
        caller.wait(30)
        caller.stderr.close()
        if sleeper and _alive(sleeper):
            os.kill(sleeper, signal.SIGKILL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def test_leaving_run_many_early_ends_the_children_still_running():
    def slow():
        time.sleep(60)
        return {}
    jobs = [("fast", lambda: {"fast": True}), ("slow", slow)]
    start = time.monotonic()
    for key, outcome in confined.run_many(jobs, FAST, 2):
        assert (key, outcome) == ("fast", {"fast": True})
        break
    assert time.monotonic() - start < 1 + confined.GRACE_SECONDS
