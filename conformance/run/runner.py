"""Driving adapter processes: start and handshake, pipelined requests over several processes,
timeouts, restarts after a crash, a hang, garbage or a wrong answer, and giving up on an
implementation after ``max_failures`` consecutive crashes, hangs or protocol failures (its remaining vectors
are ``unavailable``, with the reason).

One thread runs every process through a selector with non-blocking pipes, so a slow or stuck
adapter never blocks the others and large requests never deadlock against large responses.
Responses come back in request order per process; the oldest unanswered request of a process
is its *head*, and a process-level failure is charged to the head: the vector the adapter was
working on. The other requests in flight go back to the queue for a fresh process.

The process itself (bounds, process group, stderr tail, ``Job``, ``Reply``, ``Settings``) is
conformance.run.process.
"""

from __future__ import annotations

import selectors
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

from conformance.protocol import ProtocolError, decode
from conformance.run.process import AdapterProcess, Job, Reply, Settings, StartError

GIVE_UP = ("crash", "timeout", "garbage", "oversized", "wrong_id", "protocol")   # count toward max_failures


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
        self._stopping = False

    def stop(self) -> None:
        """End the run after the current reply (from ``on_reply``): what is not answered yet
        is neither delivered nor reported."""
        self._stopping = True

    def run(self, jobs: Iterable[Job], on_reply: Callable[[Reply], None] | None = None,
            keep: bool = True) -> PoolReport:
        """Run every job; each reply goes to ``on_reply`` as it comes and, unless ``keep`` is
        False (to bound memory: the caller consumes them), into the report's replies."""
        report = PoolReport()
        queue = deque(jobs)
        slots: list[AdapterProcess | None] = [None] * max(1, min(self.settings.workers, len(queue) or 1))
        try:
            self._run(queue, slots, report, on_reply or (lambda r: None), keep)
        finally:
            for proc in slots:       # an exception or an interrupt: no process survives
                if proc is not None:
                    proc.kill()
        report.collapse()
        return report

    def _run(self, queue: deque, slots: list, report: PoolReport, on_reply, keep: bool) -> None:
        settings = self.settings
        keep_dir = Path(settings.log_dir) if settings.log_dir is not None else None
        if keep_dir is not None:
            keep_dir.mkdir(parents=True, exist_ok=True)
        failures = [0] * len(slots)
        streak: dict[str, Any] = {"n": 0, "last": ""}    # consecutive crashes/timeouts of this implementation
        started = {"n": 0}
        sel = selectors.DefaultSelector()

        def deliver(reply: Reply) -> None:
            if reply.failure in GIVE_UP:
                streak["n"] += 1
                streak["last"] = reply.detail
            elif reply.failure is None:
                streak["n"] = 0
            if keep:
                report.replies[reply.vector_id] = reply
            on_reply(reply)

        def retire(i: int, requeue: bool = True) -> None:
            proc = slots[i]
            if proc is None:
                return
            for fd in (proc.out_fd, proc.in_fd, proc.err_fd):
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

        def give_up(detail: str) -> None:
            for i in range(len(slots)):
                proc = slots[i]
                if proc is not None:
                    queue.extendleft(reversed(proc.in_flight))
                    proc.in_flight.clear()
                    retire(i, requeue=False)
            while queue:
                deliver(Reply(queue.popleft().vector_id, None, "unavailable", detail))

        try:
            while (queue or any(p is not None and p.in_flight for p in slots)) and not self._stopping:
                if settings.max_failures and streak["n"] >= settings.max_failures:
                    issue = (f"gave up after {streak['n']} consecutive crashes, hangs or protocol failures; the remaining "
                             f"vectors were not run (last: {streak['last'][:200]})")
                    report.note(issue)
                    give_up(issue)
                    break
                # Start every missing process first, then handshake each: they start in parallel.
                fresh = []
                for i in range(len(slots)):
                    if slots[i] is None and queue and failures[i] < settings.max_start_failures:
                        started["n"] += 1
                        try:
                            slots[i] = AdapterProcess(self.argv, settings, keep_dir, i,
                                                      keep_log=started["n"] <= settings.max_logs)
                            slots[i].begin_handshake()
                            fresh.append(i)
                        except StartError as err:
                            failures[i] += 1
                            report.note(f"adapter start failed: {err}")
                            retire(i, requeue=False)
                for i in fresh:
                    proc = slots[i]
                    try:
                        hello = proc.handshake()
                        report.hello = report.hello or hello
                        failures[i] = 0
                        sel.register(proc.out_fd, selectors.EVENT_READ, i)
                        sel.register(proc.err_fd, selectors.EVENT_READ, i)
                    except StartError as err:
                        failures[i] += 1
                        report.note(f"adapter start failed: {err}")
                        retire(i, requeue=False)
                live = [p for p in slots if p is not None]
                # Few jobs left: share them out instead of filling the first window.
                share = -(-(len(queue) + sum(len(p.in_flight) for p in live)) // max(1, len(live)))
                for i in range(len(slots)):
                    proc = slots[i]
                    if proc is None:
                        continue
                    while queue and len(proc.in_flight) < min(settings.window, max(1, share)):
                        job = queue.popleft()
                        if not proc.in_flight:
                            proc.head_since = time.monotonic()
                        proc.in_flight.append(job)
                        proc.sent.append(job.vector_id)
                        proc.send(job.line)
                    if not proc.flush():
                        proc.eof = True
                    self._watch_writes(sel, proc, i)
                if all(p is None for p in slots) and all(f >= settings.max_start_failures for f in failures):
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
                    elif events & selectors.EVENT_READ and key.fd == proc.err_fd:
                        proc.read_stderr()
                        if proc.err_eof:
                            sel.unregister(proc.err_fd)
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
                    if proc is None or self._stopping:
                        continue
                    exited = proc.eof or proc.proc.poll() is not None
                    if exited and not proc.eof:
                        proc.read_available()      # what it wrote before it died
                        self._consume(i, proc, slots, deliver, fail_head, restart, report.note)
                        if slots[i] is not proc:
                            continue
                    if proc.oversized and proc.in_flight:
                        fail_head(i, "oversized", f"a response line longer than {proc.line_limit()} bytes "
                                  "(the largest result the request allows); adapter killed")
                    elif exited and proc.in_flight:
                        status = proc.exit_description()
                        held = "" if proc.eof else "; its stdout is still held open by another process"
                        fail_head(i, "crash", f"adapter crashed ({status}){held}{proc.stderr_tail()}")
                    elif exited or proc.oversized:
                        report.note(f"adapter exited while idle ({proc.exit_description()}){proc.stderr_tail()}")
                        report.restarts += 1
                        retire(i)
                    elif proc.in_flight and now - proc.head_since > settings.timeout:
                        fail_head(i, "timeout", f"no answer within {settings.timeout:g} s (hang); adapter killed")
            for proc in slots:      # ask every process to stop, then wait for each
                if proc is not None and not self._stopping:
                    proc.begin_shutdown()
            for i, proc in enumerate(slots):
                if proc is None:
                    continue
                if self._stopping:
                    retire(i, requeue=False)
                    continue
                stray, problem = proc.shutdown(timeout=min(5.0, settings.timeout))
                if stray and proc.answered_vectors:
                    last = proc.answered_vectors[-1]
                    deliver(Reply(last, None, "extra_output",
                                  f"{len(stray)} extra line(s) after the last response: {stray[0][:120]!r}"))
                if problem:
                    report.note(f"adapter exit behaviour: {problem}")
                slots[i] = None
        finally:
            sel.close()

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
            if kind not in ("result", "error", "scenario_result"):
                if head is not None:
                    fail_head(i, "protocol", f"unexpected {str(kind)[:40]!r} message instead of a response")
                else:
                    note(f"unsolicited {str(kind)[:40]!r} message while no request was pending")
                    restart(i)
                return
            if head is not None and (rid == head.rid or (kind == "error" and rid is None)):
                reply = proc.take_head(message, size=len(line))
                proc.head_since = time.monotonic()
                proc.answered.append(head.rid)
                proc.answered_vectors.append(head.vector_id)
                deliver(reply)
                if slots[i] is not proc:
                    return
                continue
            if isinstance(rid, str) and rid in proc.answered:
                # The fault is the earlier vector's; the head is innocent and goes back in the queue.
                earlier = proc.answered_vectors[list(proc.answered).index(rid)]
                deliver(Reply(earlier, None, "extra_output", "a second response line for this vector"))
                restart(i)
                return
            if head is None:
                note(f"unsolicited response for id {str(rid)[:80]!r} while no request was pending")
                restart(i)
                return
            fail_head(i, "wrong_id", f"answered id {str(rid)[:80]!r} while {head.rid!r} was expected")
            return
