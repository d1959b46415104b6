"""Running code a user wrote (a theorems file, a properties file) in a confined child process.

The caller never runs the user's code itself: ``run(produce, limits)`` forks a *reaper*, which
starts a session of its own, becomes the subreaper of its descendants
(``prctl(PR_SET_CHILD_SUBREAPER)``: an orphan anywhere below it — a grandchild that forked
twice and called ``setsid`` included — is re-parented to it, never to init) and forks the
*child*, which calls ``produce()`` and writes the JSON object it returns to a pipe. Before the
user's code runs, the child:

- gets a process group of its own, stdin from ``/dev/null``, stdout and stderr into a pipe
  that the caller relays to its own stderr (at most ``Limits.output`` bytes: a report on
  stdout is never mixed with what the user's code prints), and no other open file;
- moves into an empty temporary folder (removed afterwards);
- is bounded by resource limits: address space (``RLIMIT_AS``: what the child *adds* to the
  address space it inherits, so a parent that has grown does not starve it), CPU time,
  file size (``RLIMIT_FSIZE``, 0 by default), open files, core dumps (none) and, for a user
  other than root, processes;
- loses every capability and the right to gain one (``PR_SET_NO_NEW_PRIVS``), and is
  Landlocked (spec/landlock.py): it can change no file outside ``Limits.writable`` (none by
  default), open no TCP connection, and signal or trace no process outside its own tree.

The reaper ends the whole tree when the child ends, when the caller asks it to (the wall-clock
deadline ``Limits.seconds`` passed, the report grew too large) or when the caller goes away:
it SIGKILLs every process re-parented to it until none is left, reports how the child ended
and exits. ``run`` returns only after the reaper has exited, so no process of the user's
survives it. The deadline is a safety net: hitting it is :class:`ChildLate`, never an
answer. A child that ends without a whole report is :class:`ChildEnded` (the message says
how: its exit status or the signal that killed it). The report is data: JSON of bounded
size and depth, which the caller must check like any input from outside.

What is not guaranteed: without Landlock (a kernel before 5.13, or one that leaves it out:
:func:`guarantees` says so) the child can write files and signal processes of the same user;
before Landlock ABI 6 (Linux 6.12) it can signal such processes, the reaper included; a
machine without ``/proc`` gets process groups only. The memory bound is per process: a
child that forks many processes can use more in total (``RLIMIT_NPROC`` bounds how many for
users other than root).
"""

from __future__ import annotations

import json
import math
import os
import resource
import select
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

from spec import landlock

GRACE_SECONDS = 10.0      # how long the reaper may take to end the tree once asked
_REPORT_FD = 3
_WARNED: list = []        # whether the missing guarantees were printed (once a process)


@dataclass(frozen=True)
class Limits:
    seconds: float = 300.0            # wall clock (a safety net): the whole tree is killed then
    memory: int = 4 << 30             # bytes of address space the child may add to its own
    file_size: int = 0                # bytes a regular file may grow to (RLIMIT_FSIZE)
    open_files: int = 256
    processes: int = 64               # processes it may add (RLIMIT_NPROC; not enforced for root)
    report: int = 64 << 20            # bytes of the JSON report
    output: int = 64 << 10            # bytes of its stdout and stderr relayed to our stderr
    writable: tuple[str, ...] = ()    # folders it may change files beneath (none by default)


class ChildFailed(Exception):
    """The child gave no report; the message (one line) says why."""


class ChildLate(ChildFailed):
    """The child did not report within ``Limits.seconds`` (its whole tree was killed)."""


class ChildEnded(ChildFailed):
    """The child ended (or was ended) without a whole report."""


def guarantees() -> list[str]:
    """What this machine does not enforce, one phrase each (empty: everything above holds)."""
    version = landlock.abi()
    out = []
    if version < 1:
        out.append("no Landlock on this kernel: the file can write files and signal processes "
                   "of the same user")
    elif version < 6:
        out.append(f"Landlock ABI {version} (before 6): the file can signal processes of the "
                   "same user")
    if not os.path.isdir("/proc"):
        out.append("no /proc: descendants that leave the child's process group are not found")
    return out


def run(produce: Callable[[], dict], limits: Limits = Limits()) -> dict:
    """The object ``produce()`` returns in a confined child, or ``{"error": its exception's
    first line}``; ChildLate or ChildEnded when there is no such report."""
    ((_, outcome),) = run_many([(None, produce)], limits, 1)
    if isinstance(outcome, ChildFailed):
        raise outcome
    return outcome


def run_many(jobs: Iterable[tuple[Any, Callable[[], dict]]], limits: Limits,
             at_once: int) -> Iterator[tuple[Any, dict | ChildFailed]]:
    """(key, report or ChildFailed) of each (key, produce), ``at_once`` children at a time,
    as they finish. Leaving the iteration early ends every child still running."""
    pending = list(jobs)[::-1]
    running: list[_Child] = []
    if not _WARNED:
        _WARNED.append(True)
        for missing in guarantees():
            sys.stderr.write(f"rtwo-vm: warning: a user's file runs confined, but {missing}\n")
    try:
        while pending or running:
            while pending and len(running) < at_once:
                key, produce = pending.pop()
                running.append(_Child(key, produce, limits))
            now = time.monotonic()
            wait = max(0.0, min(c.next_event() for c in running) - now)
            fds = [fd for c in running for fd in c.fds()]
            ready = set(select.select(fds, [], [], wait)[0]) if fds else set()
            for child in list(running):
                if child.step(ready):
                    running.remove(child)
                    yield child.key, child.outcome()
    finally:
        for child in running:
            child.close()


class _Child:
    """One reaper and its child, seen from the caller: pipes to read, a deadline."""

    def __init__(self, key, produce: Callable[[], dict], limits: Limits):
        self.key, self.limits = key, limits
        self.report, self.relayed, self.dropped = bytearray(), 0, 0
        self.status: dict = {}
        self.status_text = b""
        self.late = self.too_big = False
        self.deadline = time.monotonic() + limits.seconds
        self.asked_at: float | None = None
        self.home = tempfile.mkdtemp(prefix="rtwo-user-file-")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()      # nothing buffered here is written again by the child
        stop_r, self.stop = os.pipe()
        self.status_r, status_w = os.pipe()
        self.report_r, report_w = os.pipe()
        self.output_r, output_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            for fd in (self.stop, self.status_r, self.report_r, self.output_r):
                os.close(fd)
            _reaper(produce, limits, self.home, stop_r, status_w, report_w, output_w)
        for fd in (stop_r, status_w, report_w, output_w):
            os.close(fd)
        self.open = {self.status_r, self.report_r, self.output_r}

    def fds(self) -> list[int]:
        return sorted(self.open)

    def next_event(self) -> float:
        return self.asked_at + GRACE_SECONDS if self.asked_at is not None else self.deadline

    def _ask_to_end(self) -> None:
        if self.asked_at is None:
            self.asked_at = time.monotonic()
            try:
                os.write(self.stop, b"x")
            except OSError:
                pass

    def step(self, ready: set) -> bool:
        """Read what is ready; True when the reaper has exited (the tree is gone)."""
        for fd in [fd for fd in self.fds() if fd in ready]:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.open.discard(fd)
                if fd == self.status_r:
                    self._reaped()
            elif fd == self.status_r:
                self.status_text += chunk
            elif fd == self.report_r:
                if len(self.report) + len(chunk) > self.limits.report:
                    self.too_big = True
                    self._ask_to_end()
                else:
                    self.report += chunk
            else:
                self._relay(chunk)
        now = time.monotonic()
        if self.asked_at is None and now >= self.deadline:
            self.late = True
            self._ask_to_end()
        if self.asked_at is not None and now >= self.asked_at + GRACE_SECONDS and self.pid:
            _kill(self.pid)         # the reaper itself did not end: it was stopped or stuck
            self._reaped()
        if self.status_r not in self.open and self.pid == 0:
            self._drain()
            return True
        return False

    def _relay(self, chunk: bytes) -> None:
        room = self.limits.output - self.relayed
        if room > 0:
            sys.stderr.write(chunk[:room].decode("utf-8", "replace"))
            sys.stderr.flush()
            self.relayed += min(room, len(chunk))
        self.dropped += max(0, len(chunk) - max(room, 0))

    def _reaped(self) -> None:
        if self.pid:
            os.waitpid(self.pid, 0)
            self.pid = 0
        self.open.discard(self.status_r)
        try:
            status = json.loads(self.status_text or b"{}")
            self.status = status if isinstance(status, dict) else {}
        except ValueError:
            self.status = {}

    def _drain(self) -> None:
        """The rest of the report and output: every writer is dead once the reaper exited
        (a writer that escaped it, when the reaper was killed, is waited for briefly)."""
        until = time.monotonic() + 1.0
        while self.open and time.monotonic() < until:
            ready = select.select(self.fds(), [], [], max(0.0, until - time.monotonic()))[0]
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    self.open.discard(fd)
                elif fd == self.report_r and not self.too_big:
                    if len(self.report) + len(chunk) > self.limits.report:
                        self.too_big = True
                    else:
                        self.report += chunk
                elif fd == self.output_r:
                    self._relay(chunk)
        self.close()

    def close(self) -> None:
        """End the tree (if still running), wait for the reaper, close every pipe."""
        if self.pid:
            self._ask_to_end()
            end = time.monotonic() + GRACE_SECONDS
            while self.pid and time.monotonic() < end:
                if os.waitpid(self.pid, os.WNOHANG)[0]:
                    self.pid = 0
                else:
                    time.sleep(0.01)
            if self.pid:
                _kill(self.pid)
                os.waitpid(self.pid, 0)
                self.pid = 0
        for fd in (self.stop, self.status_r, self.report_r, self.output_r):
            try:
                os.close(fd)
            except OSError:
                pass
        self.open = set()
        shutil.rmtree(self.home, ignore_errors=True)
        if self.dropped:
            sys.stderr.write(f"\n[{self.dropped} more bytes of the file's output dropped]\n")
            self.dropped = 0

    def outcome(self) -> dict | ChildFailed:
        if self.late:
            return ChildLate(f"took more than {self.limits.seconds:g} s (the wall-clock safety "
                             "net; its processes were killed)")
        if self.too_big:
            return ChildEnded(f"reported more than {self.limits.report} bytes")
        try:
            from spec.files import loads_json
            doc = loads_json(bytes(self.report), 64, "the report", "report") if self.report else None
        except ValueError:
            doc = None
        if isinstance(doc, dict):
            return doc
        return ChildEnded(_how(self.status.get("status")))


def _how(status) -> str:
    if not isinstance(status, int):
        return "ended by its reaper"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = {int(signal.SIGXCPU): " (its CPU time limit)",
                int(signal.SIGXFSZ): " (its file size limit)"}
        return f"killed by signal {sig}{name.get(sig, '')}"
    return f"exit status {os.waitstatus_to_exitcode(status)}"


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


# -- the reaper and the child (forked processes: they end with os._exit) -------------------

def _reaper(produce, limits: Limits, home: str, stop_r: int, status_w: int, report_w: int,
            output_w: int) -> None:
    code = 1
    try:
        os.setsid()
        landlock.subreaper()
        version = landlock.abi()
        child = os.fork()
        if child == 0:
            os.close(stop_r)
            os.close(status_w)
            _child(produce, limits, home, report_w, output_w, version)
        os.close(report_w)
        os.close(output_w)
        status = _wait(child, stop_r)
        status = _end_tree(child, status)
        shutil.rmtree(home, ignore_errors=True)     # here too: the caller may be gone
        os.write(status_w, json.dumps({"status": status}).encode())
        code = 0
    finally:
        os._exit(code)


def _wait(child: int, stop_r: int) -> int | None:
    """Until the child ends (its wait status) or the caller asks, or goes away (None)."""
    try:
        handle = os.pidfd_open(child)
    except (AttributeError, OSError):
        handle = None
    while True:
        fds = [stop_r] + ([handle] if handle is not None else [])
        ready = select.select(fds, [], [], None if handle is not None else 0.02)[0]
        if stop_r in ready:
            return None
        pid, status = os.waitpid(child, os.WNOHANG)
        if pid:
            return status


def _end_tree(child: int, status: int | None) -> int | None:
    """SIGKILL every descendant (each is, or becomes, a child of this subreaper) and reap
    them all; the child's wait status if it is reaped here."""
    if not os.path.isdir("/proc"):
        try:
            os.killpg(child, signal.SIGKILL)
        except OSError:
            pass
    while True:
        for pid in _children():
            _kill(pid)
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return status
            if pid == 0:
                break
            if pid == child and status is None:
                status = st
        time.sleep(0.002)


def _children() -> list[int]:
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children", encoding="ascii") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    out = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as f:
                if name.isdigit() and int(f.read().rsplit(")", 1)[1].split()[1]) == me:
                    out.append(int(name))
        except (OSError, ValueError, IndexError):
            continue
    return out


def _child(produce, limits: Limits, home: str, report_w: int, output_w: int, version: int) -> None:
    code, me = 1, os.getpid()
    try:
        try:
            _confine(limits, home, report_w, output_w, version)
        except BaseException as err:  # noqa: BLE001 - nothing of the user's has run
            doc: dict = {"error": f"the child could not be confined: {type(err).__name__}: {err}"}
        else:
            try:
                doc = produce()
            except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
                text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                doc = {"error": text.splitlines()[0][:500] if text else "error"}
        if os.getpid() != me:       # a process the user's code forked, returning through here
            return
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:  # noqa: BLE001 - a closed or replaced stream
                pass
        try:
            data = json.dumps(doc).encode()
        except (TypeError, ValueError) as err:
            data = json.dumps({"error": f"the report is not JSON: {err}"[:500]}).encode()
        while data:
            data = data[os.write(_REPORT_FD, data):]
        code = 0
    finally:
        os._exit(code)


def _confine(limits: Limits, home: str, report_w: int, output_w: int, version: int) -> None:
    os.setpgid(0, 0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(output_w, 1)
    os.dup2(output_w, 2)
    os.dup2(report_w, _REPORT_FD)
    os.closerange(_REPORT_FD + 1, max(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1 << 16))
    sys.stdout = os.fdopen(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = os.fdopen(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    os.chdir(home)
    added = _address_space() + limits.memory
    cpu = max(1, math.ceil(limits.seconds))
    bounds = [(resource.RLIMIT_AS, added), (resource.RLIMIT_FSIZE, limits.file_size),
              (resource.RLIMIT_NOFILE, limits.open_files), (resource.RLIMIT_CORE, 0)]
    for which, value in bounds:
        resource.setrlimit(which, (value, value))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    if os.geteuid() != 0 and hasattr(resource, "RLIMIT_NPROC"):
        mine = _processes_of(os.getuid())
        if mine:
            resource.setrlimit(resource.RLIMIT_NPROC, (mine + limits.processes,) * 2)
    landlock.drop_privileges()
    if version >= 1:
        landlock.restrict(tuple(limits.writable), version)


def _address_space() -> int:
    """Bytes of address space this process has mapped (its parent's, after a fork)."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, IndexError):
        return 0


def _processes_of(uid: int) -> int:
    count = 0
    for name in os.listdir("/proc") if os.path.isdir("/proc") else ():
        if name.isdigit():
            try:
                if os.stat(f"/proc/{name}").st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count
