"""``/live``: server-sent events fed from the outbox, so new executions appear without a reload.

The outbox is the only source: a stream polls it for events above the last id it sent
(``POLL`` seconds apart, at most ``BATCH`` events a query), so it sees what any process
writes to the database, the CLI included. For each ``result.recorded`` event it sends the
context's row (``event: context``), after each batch the overview's figures
(``event: summary``), and after a batch with ``vm.*`` events ``event: vm`` (the overview then
fetches its VM section). An ``EventSource`` that reconnects sends ``Last-Event-ID`` and resumes
after it, at most api.toml ``bounds.live_replay_events`` events back: from an older cursor
(``?after=0`` included) the stream first sends ``event: missed`` (``{"after": the cursor,
"resumedAfter": where it resumes}``) and resumes there, so that a client costs the same at
any size of the outbox. A cursor past the newest event resumes after the newest. Readiness is not in the outbox: the stream watches the server's readiness cache
(rtwo_vm/server/background.py) and sends ``event: readiness`` when a computation starts or
ends (the overview then fetches its readiness section).

At most ``bounds.live_max_streams`` streams are open at once (more are answered 503). A
stream ends when the client goes away (a heartbeat comment is written when nothing else
was, and a failed write ends it), after ``bounds.live_lifetime_seconds`` (the browser
reconnects), and
when the server shuts down: :class:`Streams` is told by the SIGINT/SIGTERM handler chained
in front of uvicorn's, because uvicorn waits for open responses to finish before it runs
the application's shutdown, so a stream waiting for that would hang the server.
"""

from __future__ import annotations

import asyncio
import json
import signal
import threading
import time
from typing import Any, AsyncIterator, Callable

from fastapi import Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from rtwo_vm.server.api.codes import bounds
from rtwo_vm.server.dashboard import queries
from rtwo_vm.server.runtimes import Runtimes

POLL = 0.5          # seconds between outbox queries
BATCH = 500         # events read per query
HEARTBEAT = 5.0     # seconds of silence before a comment line (finds closed clients)


class Streams:
    """The open live streams and the server's closing flag."""

    def __init__(self) -> None:
        self.closing = threading.Event()
        self._lock = threading.Lock()
        self.open = 0
        self._previous: dict[int, Any] = {}

    def enter(self) -> bool:
        with self._lock:
            if self.open >= bounds().live_max_streams or self.closing.is_set():
                return False
            self.open += 1
            return True

    def leave(self) -> None:
        with self._lock:
            self.open -= 1

    def watch_signals(self) -> None:
        """Chain a handler in front of the current SIGINT and SIGTERM handlers (uvicorn's,
        when it serves us) that sets the closing flag; only from the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous = signal.getsignal(sig)
            self._previous[sig] = previous

            def handler(signum, frame, previous=previous):
                self.closing.set()
                if callable(previous):
                    previous(signum, frame)
                elif previous == signal.SIG_DFL and signum == signal.SIGINT:
                    raise KeyboardInterrupt
            signal.signal(sig, handler)

    def restore_signals(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        for sig, previous in self._previous.items():
            signal.signal(sig, previous)
        self._previous.clear()


def _start(request: Request, runtimes: Runtimes) -> tuple[int, int | None] | None:
    """Where a stream starts: (the event id it resumes after, the cursor given when it was
    older than the replay bound, else None); None for a cursor that is not an event id.
    Without a cursor (Last-Event-ID, else ?after=) it starts after the newest event."""
    given = request.headers.get("last-event-id") or request.query_params.get("after")
    cursor = None
    if given:
        try:
            cursor = int(given)
        except ValueError:
            return None
        if not 0 <= cursor < 1 << 63:
            return None
    rt = runtimes.take()
    try:
        newest = queries.last_event_id(rt)
    finally:
        runtimes.give(rt)
    if cursor is None:
        return newest, None
    oldest = max(newest - bounds().live_replay_events, 0)
    if cursor < oldest:
        return oldest, cursor
    return min(cursor, newest), None


def _poll(runtimes: Runtimes, after: int, summary
          ) -> tuple[int, list[tuple[int, dict]], dict | None, bool, bool]:
    """New contexts above ``after``: (the last event id read, [(event id, row)], the summary
    when there were events, whether the batch was full, whether it had ``vm.*`` events)."""
    rt = runtimes.take()
    try:
        events = queries.events_after(rt, after, BATCH)
        rows = []
        for event in events:
            if event.type != "result.recorded":
                continue
            found = queries.context_row(rt, str(event.payload.get("contextId")))
            if found is not None:
                c = found.context
                rows.append((event.event_id, {
                    "contextId": c.context_id, "seq": found.seq, "contractId": c.contract_id,
                    "depth": c.depth, "ended": found.ended, "executionStatus": found.execution_status,
                    "error": found.error, "createdAt": c.created_at}))
        last = events[-1].event_id if events else after
        vms = any(event.type.startswith("vm.") for event in events)
        return last, rows, summary(rt) if events else None, len(events) == BATCH, vms
    finally:
        runtimes.give(rt)


def _message(event: str, data: Any, event_id: int | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n"


def stream(request: Request, runtimes: Runtimes, streams: Streams, summary,
           readiness_version: Callable[[], int]):
    where = _start(request, runtimes)
    if where is None:
        return StreamingResponse(iter(["event: error\ndata: \"bad Last-Event-ID\"\n\n"]),
                                 status_code=400, media_type="text/event-stream")
    if not streams.enter():
        return StreamingResponse(iter(["retry: 10000\n\n"]), status_code=503,
                                 media_type="text/event-stream")

    start, missed = where

    async def body() -> AsyncIterator[str]:
        after = start
        seen = readiness_version()
        try:
            yield f"retry: 2000\nid: {after}\n\n"
            if missed is not None:
                yield _message("missed", {"after": missed, "resumedAfter": start}, start)
            ends = time.monotonic() + bounds().live_lifetime_seconds
            quiet_since = time.monotonic()
            while not streams.closing.is_set() and time.monotonic() < ends:
                last, rows, figures, full, vms = await run_in_threadpool(
                    _poll, runtimes, after, summary)
                for event_id, row in rows:
                    yield _message("context", row, event_id)
                if figures is not None:
                    yield _message("summary", figures, last)
                    quiet_since = time.monotonic()
                if vms:
                    yield _message("vm", {"after": last})
                if readiness_version() != seen:
                    seen = readiness_version()
                    yield _message("readiness", {"version": seen})
                    quiet_since = time.monotonic()
                after = last
                if time.monotonic() - quiet_since > HEARTBEAT:
                    yield ": heartbeat\n\n"
                    quiet_since = time.monotonic()
                if not full:
                    await asyncio.sleep(POLL)
        except RuntimeError:   # the pool closed under us: the server is shutting down
            return
        finally:
            streams.leave()

    return StreamingResponse(body(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})
