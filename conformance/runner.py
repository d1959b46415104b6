"""Driving adapter processes: start and handshake, pipelined requests over several processes,
timeouts, and restarts after a crash, a hang, garbage or a wrong answer.

One thread runs every process through a selector with non-blocking pipes, so a slow or stuck
adapter never blocks the others and large requests never deadlock against large responses.
Responses come back in request order per process; the oldest unanswered request of a process
is its *head*, and a process-level failure is charged to the head: the vector the adapter was
working on. The other requests in flight go back to the queue for a fresh process.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import selectors
import signal
import subprocess
import tempfile
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

from conformance.protocol import SHUTDOWN, ProtocolError, decode, encode, hello_problems, hello_request

READ_SIZE = 1 << 16
EXIT_GRACE = 1.0          # seconds to wait for a process that closed its stdout to exit
LOG_SUFFIX = ".adapter.log"
_LOG_SEQUENCE = itertools.count(1)


@dataclass(frozen=True)
class Job:
    vector_id: str
    line: bytes               # the encoded execute request


@dataclass
class Reply:
    """What came back for one job: a protocol message, or a process-level failure."""

    vector_id: str
    message: dict[str, Any] | None
    failure: str | None = None       # crash, timeout, garbage, wrong_id, extra_output, protocol, unavailable
    detail: str = ""
    history: list[str] | None = field(default=None, repr=False)   # ids sent to the same process
    position: int = 0                # this vector's index in ``history``
    log_path: str | None = None      # the stderr log of the process that answered (when kept)

    def preceded_by(self, limit: int = 64) -> tuple[list[str], int]:
        """The last ``limit`` vectors the same process received before this one, and how many
        it received in all: what an order-dependent fault depends on."""
        if not self.history:
            return [], 0
        return self.history[max(0, self.position - limit):self.position], self.position


class StartError(Exception):
    """The adapter did not start or did not complete the handshake."""


@dataclass
class Settings:
    timeout: float = 10.0             # seconds a vector may take once the adapter is on it
    handshake_timeout: float = 20.0
    window: int = 32                  # requests in flight per process
    workers: int = 2
    max_start_failures: int = 3       # consecutive failed starts before giving up on a process
    env: Mapping[str, str] | None = None
    cwd: str | None = None            # working directory of the adapter (default: the runner's)
    log_dir: Path | None = None       # keep each process's stderr here (default: a temporary directory)
    log_label: str = "adapter"        # prefix of the log file names


def signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def describe_exit(code: int | None) -> str:
    """An exit status as a reader wants it: "exit status 70", "killed by SIGSEGV (signal 11)"."""
    if code is None:
        return "still running"
    if code < 0:
        return f"killed by {signal_name(-code)} (signal {-code})"
    return f"exit status {code}"


class AdapterProcess:
    """One running adapter: pipes, buffers, the requests in flight."""

    def __init__(self, argv: list[str], settings: Settings, log_dir: Path, index: int):
        self.argv, self.settings = argv, settings
        self.log_path = log_dir / f"{settings.log_label}-w{index}-{next(_LOG_SEQUENCE):04d}{LOG_SUFFIX}"
        if settings.cwd is not None and not Path(settings.cwd).is_dir():
            raise StartError(f"cannot start {argv[0]!r}: working directory {settings.cwd} does not exist")
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log = open(self.log_path, "wb")
        try:
            self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self.log, env=dict(settings.env) if settings.env else None,
                                         cwd=settings.cwd, start_new_session=True)
        except OSError as err:
            self.log.close()
            where = f" (in {settings.cwd})" if settings.cwd else ""
            raise StartError(f"cannot start {argv[0]!r}{where}: {err.strerror or err}") from None
        self.out_fd, self.in_fd = self.proc.stdout.fileno(), self.proc.stdin.fileno()
        os.set_blocking(self.out_fd, False)
        os.set_blocking(self.in_fd, False)
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.in_flight: deque[Job] = deque()
        self.sent: list[str] = []            # every vector id sent, in order
        self.head_since = time.monotonic()
        self.answered: deque[str] = deque(maxlen=256)
        self.eof = False
        self.hello: dict[str, Any] | None = None

    # -- raw I/O -----------------------------------------------------------------------------
    def read_available(self) -> None:
        while True:
            try:
                chunk = os.read(self.out_fd, READ_SIZE)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                return
            self.inbuf += chunk

    def lines(self) -> Iterable[bytes]:
        while True:
            end = self.inbuf.find(b"\n")
            if end < 0:
                return
            line = bytes(self.inbuf[:end + 1])
            del self.inbuf[:end + 1]
            if line.strip():
                yield line

    def flush(self) -> bool:
        """Write what the pipe takes now; False when the adapter closed its stdin."""
        while self.outbuf:
            try:
                written = os.write(self.in_fd, self.outbuf)
            except BlockingIOError:
                return True
            except (BrokenPipeError, OSError):
                self.outbuf.clear()
                return False
            del self.outbuf[:written]
        return True

    def send(self, data: bytes) -> None:
        self.outbuf += data

    # -- lifecycle ---------------------------------------------------------------------------
    def wait_line(self, deadline: float) -> bytes | None:
        """Block (with the selector) until one line arrives, or None at EOF or the deadline."""
        with selectors.DefaultSelector() as sel:
            sel.register(self.out_fd, selectors.EVENT_READ)
            while True:
                for line in self.lines():
                    return line
                if self.eof:
                    return None
                self.flush()
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                if sel.select(min(left, 0.05)):
                    self.read_available()

    def handshake(self) -> dict[str, Any]:
        self.send(encode(hello_request()))
        self.flush()
        line = self.wait_line(time.monotonic() + self.settings.handshake_timeout)
        if line is None:
            why = (f"exited ({self.exit_description()})" if self.eof
                   else f"did not answer within {self.settings.handshake_timeout:g} s")
            raise StartError(f"no hello: the adapter {why}{self.stderr_tail()}")
        try:
            hello = decode(line)
        except ProtocolError as err:
            raise StartError(f"bad hello: {err}") from None
        problems = hello_problems(hello)
        if problems:
            raise StartError("bad hello: " + "; ".join(problems))
        self.hello = hello
        self.head_since = time.monotonic()
        return hello

    def exit_code(self) -> int | None:
        return self.proc.poll()

    def exit_description(self, grace: float = EXIT_GRACE) -> str:
        """How the process ended, after waiting up to ``grace`` seconds for it to exit: a
        process usually closes its stdout a moment before the kernel reports its exit."""
        try:
            code = self.proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return f"closed its stdout but was still running after {grace:g} s"
        return describe_exit(code)

    def take_head(self, message: dict[str, Any] | None, failure: str | None = None, detail: str = "") -> Reply:
        """Remove the oldest request in flight and make the reply to it."""
        position = len(self.sent) - len(self.in_flight)
        job = self.in_flight.popleft()
        kept = str(self.log_path) if self.settings.log_dir is not None else None
        return Reply(job.vector_id, message, failure, detail, self.sent, position, kept)

    def stderr_tail(self, lines: int = 5) -> str:
        try:
            if not self.log.closed:
                self.log.flush()
            text = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except (OSError, ValueError):
            return ""
        return ("; stderr: " + " | ".join(text[-lines:])) if text else ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
        self._reap()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.log.close()

    def shutdown(self, timeout: float) -> tuple[list[bytes], str | None]:
        """Ask the adapter to stop; returns stray lines before its bye and an exit problem."""
        self.send(encode(SHUTDOWN))
        self.flush()
        deadline = time.monotonic() + timeout
        stray, problem = [], None
        while True:
            line = self.wait_line(deadline)
            if line is None:
                problem = "no bye after shutdown" + ("" if self.eof else f" within {timeout:g} s")
                break
            try:
                if decode(line).get("type") == "bye":
                    break
            except ProtocolError:
                pass
            stray.append(line)
        try:
            code = self.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            if code != 0 and problem is None:
                problem = f"{describe_exit(code)} after shutdown (must be exit status 0)"
        except subprocess.TimeoutExpired:
            problem = problem or f"did not exit within {timeout:g} s of its bye"
        self.kill()
        return stray, problem


@dataclass
class PoolReport:
    replies: dict[str, Reply] = field(default_factory=dict)
    hello: dict[str, Any] | None = None
    restarts: int = 0
    issues: list[str] = field(default_factory=list)   # run-level protocol problems

    def note(self, issue: str) -> None:
        self.issues.append(issue)

    def collapse(self) -> None:
        """One line per distinct issue, with how often it happened (a command that cannot
        start fails every attempt the same way)."""
        counts: dict[str, int] = {}
        for issue in self.issues:
            counts[issue] = counts.get(issue, 0) + 1
        self.issues = [i if n == 1 else f"{i} ({n} times)" for i, n in counts.items()]


class Pool:
    """Runs jobs through ``settings.workers`` processes of one adapter command."""

    def __init__(self, argv: list[str], settings: Settings):
        self.argv, self.settings = argv, settings

    def run(self, jobs: Iterable[Job], on_reply: Callable[[Reply], None] | None = None) -> PoolReport:
        report = PoolReport()
        queue = deque(jobs)
        on_reply = on_reply or (lambda r: None)
        keep = self.settings.log_dir
        if keep is not None:
            Path(keep).mkdir(parents=True, exist_ok=True)
        with (contextlib.nullcontext(str(keep)) if keep is not None
              else tempfile.TemporaryDirectory(prefix="rtwo-conformance-")) as logs:
            slots: list[AdapterProcess | None] = [None] * max(1, min(self.settings.workers, len(queue) or 1))
            failures = [0] * len(slots)
            sel = selectors.DefaultSelector()

            def deliver(reply: Reply) -> None:
                report.replies[reply.vector_id] = reply
                on_reply(reply)

            def retire(i: int, requeue: bool = True) -> None:
                proc = slots[i]
                if proc is None:
                    return
                for fd in (proc.out_fd, proc.in_fd):
                    try:
                        sel.unregister(fd)
                    except (KeyError, ValueError):
                        pass
                proc.kill()
                if requeue:
                    queue.extendleft(reversed(proc.in_flight))
                proc.in_flight.clear()
                slots[i] = None

            def restart(i: int) -> None:
                report.restarts += 1
                retire(i)

            def fail_head(i: int, failure: str, detail: str) -> None:
                proc = slots[i]
                if proc.in_flight:
                    deliver(proc.take_head(None, failure, detail))
                report.restarts += 1
                retire(i)

            while queue or any(p is not None and p.in_flight for p in slots):
                for i in range(len(slots)):
                    if slots[i] is None and queue and failures[i] < self.settings.max_start_failures:
                        try:
                            proc = AdapterProcess(self.argv, self.settings, Path(logs), i)
                            slots[i] = proc
                            hello = proc.handshake()
                            report.hello = report.hello or hello
                            failures[i] = 0
                            sel.register(proc.out_fd, selectors.EVENT_READ, i)
                        except StartError as err:
                            failures[i] += 1
                            report.note(f"adapter start failed: {err}")
                            retire(i, requeue=False)
                    proc = slots[i]
                    if proc is None:
                        continue
                    while queue and len(proc.in_flight) < self.settings.window:
                        job = queue.popleft()
                        if not proc.in_flight:
                            proc.head_since = time.monotonic()
                        proc.in_flight.append(job)
                        proc.sent.append(job.vector_id)
                        proc.send(job.line)
                    if not proc.flush():
                        proc.eof = True
                    self._watch_writes(sel, proc, i)
                if all(p is None for p in slots) and all(f >= self.settings.max_start_failures for f in failures):
                    detail = report.issues[-1] if report.issues else "adapter unavailable"
                    while queue:
                        deliver(Reply(queue.popleft().vector_id, None, "unavailable", detail))
                    break
                for key, events in sel.select(timeout=0.05):
                    proc = slots[key.data]
                    if proc is None:
                        continue
                    if events & selectors.EVENT_READ and key.fd == proc.out_fd:
                        proc.read_available()
                    if events & selectors.EVENT_WRITE and key.fd == proc.in_fd:
                        if not proc.flush():
                            proc.eof = True
                        self._watch_writes(sel, proc, key.data)
                now = time.monotonic()
                for i, proc in enumerate(slots):
                    if proc is None:
                        continue
                    self._consume(i, proc, slots, deliver, fail_head, restart, report.note)
                    proc = slots[i]
                    if proc is None:
                        continue
                    if proc.eof and proc.in_flight:
                        status = proc.exit_description()
                        fail_head(i, "crash", f"adapter crashed ({status}){proc.stderr_tail()}")
                    elif proc.eof:
                        report.note(f"adapter exited while idle ({proc.exit_description()}){proc.stderr_tail()}")
                        report.restarts += 1
                        retire(i)
                    elif proc.in_flight and now - proc.head_since > self.settings.timeout:
                        fail_head(i, "timeout", f"no answer within {self.settings.timeout:g} s (hang); adapter killed")
            for i, proc in enumerate(slots):
                if proc is None:
                    continue
                stray, problem = proc.shutdown(timeout=min(5.0, self.settings.timeout))
                if stray and proc.answered:
                    last = proc.answered[-1]
                    deliver(Reply(last, None, "extra_output",
                                  f"{len(stray)} extra line(s) after the last response: {stray[0][:120]!r}"))
                if problem:
                    report.note(f"adapter exit behaviour: {problem}")
                slots[i] = None
            sel.close()
        report.collapse()
        return report

    @staticmethod
    def _watch_writes(sel, proc: AdapterProcess, index: int) -> None:
        """Wait for the adapter's stdin to drain only while there is something to write."""
        try:
            sel.get_key(proc.in_fd)
            watched = True
        except KeyError:
            watched = False
        if proc.outbuf and not watched:
            sel.register(proc.in_fd, selectors.EVENT_WRITE, index)
        elif not proc.outbuf and watched:
            sel.unregister(proc.in_fd)

    @staticmethod
    def _consume(i, proc, slots, deliver, fail_head, restart, note) -> None:
        for line in proc.lines():
            if slots[i] is not proc:
                return
            try:
                message = decode(line)
            except ProtocolError as err:
                fail_head(i, "garbage", f"garbage on stdout: {err}")
                return
            kind, rid = message.get("type"), message.get("id")
            head = proc.in_flight[0] if proc.in_flight else None
            if kind not in ("result", "error"):
                if head is not None:
                    fail_head(i, "protocol", f"unexpected {kind!r} message instead of a response")
                else:
                    note(f"unsolicited {kind!r} message while no request was pending")
                    restart(i)
                return
            if head is not None and (rid == head.vector_id or (kind == "error" and rid is None)):
                reply = proc.take_head(message)
                proc.head_since = time.monotonic()
                proc.answered.append(head.vector_id)
                deliver(reply)
                continue
            if rid in proc.answered:
                # The fault is the earlier vector's; the head is innocent and goes back in the queue.
                deliver(Reply(rid, None, "extra_output", "a second response line for this vector"))
                restart(i)
                return
            if head is None:
                note(f"unsolicited response for id {rid!r} while no request was pending")
                restart(i)
                return
            fail_head(i, "wrong_id", f"answered id {rid!r} while {head.vector_id!r} was expected")
            return
