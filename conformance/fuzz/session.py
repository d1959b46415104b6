"""A long-lived adapter process for a campaign: batches of requests pipelined through one
process that stays up between batches.

``conformance.run.runner.Pool.run`` starts its processes for one list of jobs and stops them at
the end, which for a campaign of many small batches would mean a process start per batch; so
this module wraps the runner's ``AdapterProcess`` (start, handshake, non-blocking pipes, kill
of the process group, exit descriptions, stderr tail) and adds only the loop a campaign needs:
send a window of requests, read the answers in order, and on a crash, hang, garbage or wrong
id charge the request the adapter was working on, restart, and send the rest again.
"""

from __future__ import annotations

import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from conformance.run.process import Job
from conformance.protocol import ProtocolError, decode, encode, execute_request, reply_problems
from conformance.run.process import AdapterProcess, Settings, StartError


@dataclass
class Answer:
    message: dict[str, Any] | None
    failure: str | None = None        # crash, timeout, oversized, garbage, wrong_id, protocol
    detail: str = ""
    seconds: float = 0.0              # the wall-clock limit it ran under (a timeout is reported with it)


class Session:
    """One adapter command, one process at a time, restarted after any process failure."""

    def __init__(self, command: str, settings: Settings, label: str = "fuzz"):
        self.command = command
        self.argv = shlex.split(command)
        self.settings = settings
        self.label = label
        self.proc: AdapterProcess | None = None
        self.hello: dict[str, Any] | None = None
        self.restarts = 0
        self.starts = 0
        self._limits: dict[str, int | None] = {}
        self._queue: list[str] = []             # the batch's request ids, in order
        self._lines: dict[str, bytes] = {}      # their encoded request lines, by id
        self._traced: dict[str, bool] = {}      # whether each asks for a trace, by id
        self._sent = 0                          # how many of the queue were sent
        self._logs = Path(tempfile.mkdtemp(prefix="rtwo-fuzz-")) if settings.log_dir is None else Path(settings.log_dir)

    @property
    def can_trace(self) -> bool:
        return "trace" in ((self.hello or {}).get("capabilities") or [])

    @property
    def name(self) -> str:
        impl = (self.hello or {}).get("implementation") or {}
        return impl.get("name") or self.command

    def start(self) -> AdapterProcess:
        """A fresh, handshaken process, which becomes ``self.proc`` (StartError after the
        settings' number of failed starts in a row)."""
        failures = 0
        while True:
            self.proc = None
            try:
                self.starts += 1
                proc = self.proc = AdapterProcess(self.argv, self.settings, self._logs, self.starts)
                self.hello = proc.handshake()
                return proc
            except StartError:
                if self.proc is not None:
                    self.proc.kill()
                    self.proc = None
                failures += 1
                if failures >= self.settings.max_start_failures:
                    raise

    def reset(self) -> None:
        """Drop the current process and batch (the next batch starts a fresh process)."""
        if self.proc is not None:
            self.proc.kill()
            self.proc = None
        self._queue, self._lines, self._traced, self._sent = [], {}, {}, 0

    def _restart(self) -> None:
        if self.proc is not None:
            self.proc.kill()
        self.proc = None
        self.restarts += 1

    def run(self, items: Sequence[tuple[str, Mapping[str, Any], bool]], limits: Mapping[str, int] | None = None,
            timeout: float | None = None) -> dict[str, Answer]:
        """Answers to (id, vector input, trace) requests, by id."""
        self.submit(items)
        return self.collect(limits, timeout)

    def submit(self, items: Sequence[tuple[str, Mapping[str, Any], bool]],
               lines: Mapping[str, bytes] | None = None) -> None:
        """Start a batch: the first window of requests goes out now, so the adapter works while
        the caller does something else (the campaign runs the reference meanwhile). ``lines``
        holds request lines already encoded for another session (``untraced_lines``), by id."""
        self._queue = [rid for rid, _, _ in items]
        known = lines or {}
        self._lines = {rid: (None if trace else known.get(rid)) or self.request_line(rid, vi, trace)
                       for rid, vi, trace in items}
        self._traced = {rid: trace for rid, _, trace in items}
        self._sent = 0
        self._limits = {}
        proc = self.proc if self.proc is not None else self.start()
        self._send_up_to(proc, 0)
        proc.flush()

    def request_line(self, rid: str, payload: Mapping[str, Any], trace: bool) -> bytes:
        """The request line of one item (an execute request; a subclass sends other requests)."""
        return encode(execute_request(rid, payload, trace))

    def reply_problems(self, message: Mapping[str, Any], rid: str, traced: bool) -> list[str]:
        """Why a reply does not have the form of an answer to the request (protocol failures)."""
        return reply_problems(message, rid, traced)

    def untraced_lines(self) -> dict[str, bytes]:
        """The request lines of the current batch that ask for no trace, by id."""
        return {rid: line for rid, line in self._lines.items() if not self._traced[rid]}

    def _send_up_to(self, proc: AdapterProcess, head: int) -> None:
        while self._sent < len(self._queue) and self._sent - head < self.settings.window:
            rid = self._queue[self._sent]
            proc.send(self._lines[rid])
            if self._limits:
                proc.in_flight.append(Job(rid, b"", rid, self._limits.get(rid)))
            self._sent += 1

    def collect(self, limits: Mapping[str, int] | None = None, timeout: float | None = None) -> dict[str, Answer]:
        """The answers of the batch, by id. ``limits`` bounds the response line of some requests
        (spec 11.5.1: twice the expected result plus 8 KiB, when that is above the default
        bound); ``timeout`` replaces the settings' wall-clock limit per request (a retry)."""
        answers: dict[str, Answer] = {}
        queue, head = self._queue, 0
        timeout = self.settings.timeout if timeout is None else timeout
        self._limits = dict(limits) if limits else {}
        if self._limits and self.proc is not None:
            self.proc.in_flight.clear()
            self.proc.in_flight.extend(Job(rid, b"", rid, self._limits.get(rid)) for rid in queue[:self._sent])
        while head < len(queue):
            proc = self.proc
            if proc is None:
                proc = self.start()
                self._sent = head
            self._send_up_to(proc, head)
            rid = queue[head]
            line = proc.wait_line(time.monotonic() + timeout)
            failure = None
            if line is None:
                if proc.oversized:
                    failure = Answer(None, "oversized", f"a response line longer than {proc.line_limit()} bytes "
                                                        "(the largest result the request allows)")
                elif proc.eof:
                    failure = Answer(None, "crash", f"adapter crashed ({proc.exit_description()}){proc.stderr_tail()}")
                else:
                    failure = Answer(None, "timeout", f"no answer within {timeout:g} s (wall clock)", timeout)
            else:
                try:
                    message = decode(line)
                except ProtocolError as err:
                    failure = Answer(None, "garbage", f"garbage on stdout: {err}")
                else:
                    if message.get("id") != rid and not (message.get("type") == "error" and message.get("id") is None):
                        failure = Answer(None, "wrong_id", f"answered id {message.get('id')!r}")
            if failure is not None:
                answers[rid] = failure
                head += 1
                self._restart()
                continue
            if self._limits and proc.in_flight:
                proc.in_flight.popleft()
            problems = self.reply_problems(message, rid, self._traced[rid])
            answers[rid] = Answer(message, "protocol" if problems else None, "; ".join(problems))
            head += 1
        self._limits = {}
        return answers

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.shutdown(timeout=min(5.0, self.settings.timeout))
            except OSError:
                self.proc.kill()
            self.proc = None
        if self.settings.log_dir is None:
            shutil.rmtree(self._logs, ignore_errors=True)
