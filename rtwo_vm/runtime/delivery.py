"""Delivery of outbox events to sinks (chapter 10.8): bounded passes, backoff, dead events.

:class:`Dispatcher` sends each sink the outbox rows it has not acknowledged, in ``event_id``
order, over one session (one connection) per pass, and records each acknowledged event in
``deliveries``. Delivery is **at least once** (a crash between the sink's acknowledgement and
the record resends at most one batch) and **in order per stream** (a context, a VM, a policy
or a contract): an event that failed holds back the later events of its stream for that sink.

Bounds, per sink (its options, see :mod:`rtwo_vm.runtime.sinks`):

- a pass ends at its *deadline* (default 10 s), whatever the sink does; each request waits at
  most ``timeout`` and never past the deadline. A sink that cannot be reached or does not
  answer ends its pass at once (one connection attempt per pass, not one per event);
- each failed attempt at an event is recorded; the event is due again after ``backoff`` *
  2^(attempts-1) seconds, at most ``backoff_cap``; within a pass it is retried when that falls
  before the deadline (``retry_in_pass``), otherwise in a later pass;
- after ``max_attempts`` failed attempts the event is parked as **dead** with its last error.
  A dead event keeps holding back the later events of its stream (a consumer never sees a
  stream with a gap); ``requeue`` puts it back, with a fresh count of attempts.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from rtwo_vm.runtime import stored
from rtwo_vm.runtime.damaged import entry_of
from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.sinks import (
    NOT_SENT, DeadlineReached, Session, Sink, SinkUnavailable, one_line, redact, remaining,
)
from rtwo_vm.runtime.store import Store
from rtwo_vm.runtime.trust import DamagedRecord

DEFAULT_DEADLINE = 10.0
_LOG = logging.getLogger("rtwo_vm.delivery")


@dataclass
class DeliveryReport:
    """One pass to one sink. ``failed``: failed attempts in the pass; ``dead``: events parked
    as dead for this sink after the pass; ``left``: events still undelivered to it (the dead
    ones and those they hold back included); ``error``: why the pass ended early, if it did."""

    delivered: int = 0
    failed: int = 0
    dead: int = 0
    left: int = 0
    error: str | None = None
    errors: dict[int, str] = field(default_factory=dict)
    next_in: float | None = None  # seconds until a held-back failed event is due again

    @property
    def complete(self) -> bool:
        """Everything is delivered to this sink (failed attempts on the way included)."""
        return self.left == 0 and self.error is None

    def to_json(self) -> dict[str, Any]:
        return {"delivered": self.delivered, "failed": self.failed, "dead": self.dead,
                "left": self.left, "error": self.error, "nextIn": self.next_in,
                "errors": [{"eventId": k, "error": v} for k, v in self.errors.items()]}

    def summary(self) -> str:
        text = (f"{self.delivered} delivered, {self.failed} failed, {self.dead} dead, "
                f"{self.left} left")
        if self.error:
            return f"{text}; {self.error}"
        if self.next_in is not None:
            text += f"; next attempt due in {self.next_in:.1f} s"
        return text + "".join(f"; event {k}: {v}" for k, v in list(self.errors.items())[:3])


class Dispatcher:
    """Delivers undelivered outbox rows to sinks, at least once and in order per stream."""

    def __init__(self, store: Store, clock: Callable[[], str], *,
                 deadline: float = DEFAULT_DEADLINE, batch: int = 500,
                 retry_in_pass: bool = True, now: Callable[[], float] = time.time):
        self.store, self.clock, self.now = store, clock, now
        self.deadline, self.batch, self.retry_in_pass = deadline, batch, retry_in_pass

    # -- reading --------------------------------------------------------------------------

    def undelivered(self, sink_name: str, start_after: int = 0) -> list[VMEvent]:
        return [VMEvent.from_row(r) for r in self._rows(sink_name, start_after, None)]

    def undelivered_count(self, sink_name: str, start_after: int = 0) -> int:
        return self._count(
            "SELECT count(*) FROM outbox o WHERE o.event_id > ? AND NOT EXISTS "
            "(SELECT 1 FROM deliveries d WHERE d.sink = ? AND d.event_id = o.event_id)",
            (start_after, sink_name))

    def _count(self, sql: str, args: tuple) -> int:
        row = self.store.one(sql, args)
        return 0 if row is None else int(row[0])

    def _rows(self, sink_name: str, after: int, limit: int | None) -> list:
        return self.store.all(
            "SELECT o.*, f.attempts, f.next_at, f.dead_at FROM outbox o "
            "LEFT JOIN delivery_failures f ON f.sink = ? AND f.event_id = o.event_id "
            "WHERE o.event_id > ? AND NOT EXISTS "
            "(SELECT 1 FROM deliveries d WHERE d.sink = ? AND d.event_id = o.event_id) "
            "ORDER BY o.event_id" + ("" if limit is None else f" LIMIT {int(limit)}"),
            (sink_name, after, sink_name))

    # -- one pass -------------------------------------------------------------------------

    def deliver(self, sink: Sink, start_after: int = 0,
                deadline: float | None = None) -> DeliveryReport:
        end = time.monotonic() + (self.deadline if deadline is None else deadline)
        report = DeliveryReport()
        session: Session | None = None
        try:
            while True:
                due, session = self._scan(sink, start_after, end, report, session)
                if report.error is not None or due is None:
                    break
                if not self.retry_in_pass:
                    report.next_in = round(max(0.0, due - self.now()), 3)
                    break
                wait = due - self.now()
                if wait >= remaining(end):
                    report.next_in = round(wait, 3)
                    break
                if wait > 0:
                    time.sleep(wait)
        finally:
            if session is not None:
                session.close()
        report.left = self.undelivered_count(sink.name, start_after)
        report.dead = self._count("SELECT count(*) FROM delivery_failures WHERE sink = ? AND "
                                  "dead_at IS NOT NULL", (sink.name,))
        return report

    def _scan(self, sink: Sink, start_after: int, end: float, report: DeliveryReport,
              session: Session | None) -> tuple[float | None, Session | None]:
        """Go once through the undelivered events; returns when the earliest held-back
        failure is due again (None: nothing to retry) and the session."""
        blocked: set[str] = set()
        due: float | None = None
        cursor = start_after
        while True:
            rows = self._rows(sink.name, cursor, self.batch)
            if not rows:
                return due, session
            cursor = rows[-1]["event_id"]
            now = self.now()
            batch, attempts = [], {}
            for row in rows:
                _check_failure(row, sink.name)
                stream = row["stream"]
                if stream in blocked:
                    continue
                if row["dead_at"] is not None or (row["next_at"] or 0) > now:
                    blocked.add(stream)
                    if row["dead_at"] is None:
                        due = row["next_at"] if due is None else min(due, row["next_at"])
                    continue
                batch.append(VMEvent.from_row(row))
                attempts[row["event_id"]] = row["attempts"] or 0
            if not batch:
                continue
            if remaining(end) <= 0:
                report.error = report.error or "delivery pass deadline reached"
                return None, session
            if session is None:
                try:
                    session = sink.open(end)
                except DeadlineReached as err:
                    report.error = str(err)
                    return None, None
                except Exception as err:  # noqa: BLE001 - SinkUnavailable, or any other
                    if not isinstance(err, SinkUnavailable):
                        err = SinkUnavailable(f"{redact(sink.name)}: {one_line(err)}")
                    self._failed(sink, batch[0], attempts[batch[0].event_id], err, report)
                    return None, None
            try:
                results = session.send(batch, end)
            except Exception as err:  # noqa: BLE001 - a sink must not break the pass
                results = [SinkUnavailable(f"{redact(sink.name)}: {one_line(err)}")]
                results += [NOT_SENT] * (len(batch) - 1)
            acked = [e.event_id for e, r in zip(batch, results) if r is None]
            if acked:
                try:
                    session.flush()  # durable at the sink before it is recorded
                except SinkUnavailable as err:
                    report.error = str(err)
                    return None, session
                self._acknowledge(sink, acked)
                report.delivered += len(acked)
            unavailable = False
            for event, result in zip(batch, results):
                if result is None:
                    continue
                blocked.add(event.stream)
                if result is NOT_SENT:
                    continue
                if isinstance(result, DeadlineReached):
                    report.error = str(result)
                    unavailable = True
                    continue
                next_at = self._failed(sink, event, attempts[event.event_id], result, report)
                if next_at is not None:
                    due = next_at if due is None else min(due, next_at)
                unavailable = unavailable or isinstance(result, SinkUnavailable)
            if unavailable:
                return None, session

    def _failed(self, sink: Sink, event: VMEvent, attempts: int, err: BaseException,
                report: DeliveryReport) -> float | None:
        """Record a failed attempt; returns when the event is due again (None: now dead)."""
        options = sink.options
        count = attempts + 1
        reason = redact(str(err))[:500] if isinstance(err, SinkUnavailable) else one_line(err)
        dead = count >= options.get("max_attempts", 20)
        delay = min(options.get("backoff_cap", 300.0),
                    options.get("backoff", 0.5) * (2 ** min(count - 1, 60)))
        next_at = self.now() + delay
        at = self.clock()
        with self.store.transaction() as tx:
            tx.execute(
                "INSERT INTO delivery_failures (sink, event_id, attempts, last_error, last_at, "
                "next_at, dead_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(sink, event_id) DO "
                "UPDATE SET attempts = excluded.attempts, last_error = excluded.last_error, "
                "last_at = excluded.last_at, next_at = excluded.next_at, "
                "dead_at = excluded.dead_at",
                (sink.name, event.event_id, count, reason, at, next_at, at if dead else None))
        report.failed += 1
        report.errors[event.event_id] = reason
        if isinstance(err, SinkUnavailable):
            report.error = reason
        return None if dead else next_at

    def _acknowledge(self, sink: Sink, sent: list[int]) -> None:
        """Record what the sink has (after it made it durable)."""
        at = self.clock()
        with self.store.transaction() as tx:
            tx.executemany("INSERT OR IGNORE INTO deliveries VALUES (?, ?, ?)",
                           [(sink.name, event_id, at) for event_id in sent])
            tx.executemany("DELETE FROM delivery_failures WHERE sink = ? AND event_id = ?",
                           [(sink.name, event_id) for event_id in sent])

    # -- dead events ------------------------------------------------------------------------

    def dead(self, sink_name: str | None = None) -> list[dict[str, Any]]:
        rows = self.store.all(
            "SELECT f.sink, f.event_id, f.attempts, f.last_error, f.last_at, f.dead_at, "
            "o.stream, o.type, (SELECT count(*) FROM outbox l WHERE l.stream = o.stream AND "
            "l.event_id > o.event_id AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE "
            "d.sink = f.sink AND d.event_id = l.event_id)) AS held_back "
            "FROM delivery_failures f JOIN outbox o ON o.event_id = f.event_id "
            "WHERE f.dead_at IS NOT NULL AND (? IS NULL OR f.sink = ?) "
            "ORDER BY f.sink, f.event_id", (sink_name, sink_name))
        out: list[dict[str, Any]] = []
        for r in rows:
            try:
                _failure_doc(r)
            except DamagedRecord as err:   # shown as damaged, the others as they are
                entry = entry_of("delivery_failures", r, err)
                out.append({**entry.to_json(), "id": redact(entry.id),
                            "reason": redact(entry.reason)})
                continue
            out.append({"sink": redact(r["sink"]), "eventId": r["event_id"],
                        "stream": r["stream"], "type": r["type"], "attempts": r["attempts"],
                        "reason": redact(r["last_error"]), "lastAt": r["last_at"],
                        "deadAt": r["dead_at"], "heldBack": r["held_back"]})
        return out

    def requeue(self, event_ids: Iterable[int] | None = None,
                sink_name: str | None = None) -> int:
        """Put dead events back (all, or these ids), due now with a fresh count of attempts."""
        ids = None if event_ids is None else sorted(set(event_ids))
        with self.store.transaction() as tx:
            if ids is None:
                cursor = tx.execute("DELETE FROM delivery_failures WHERE dead_at IS NOT NULL "
                                    "AND (? IS NULL OR sink = ?)", (sink_name, sink_name))
                return cursor.rowcount
            count = 0
            for event_id in ids:
                count += tx.execute("DELETE FROM delivery_failures WHERE dead_at IS NOT NULL "
                                    "AND event_id = ? AND (? IS NULL OR sink = ?)",
                                    (event_id, sink_name, sink_name)).rowcount
            return count


def _check_failure(row, sink: str) -> None:
    """The failure columns of a joined outbox row (NULL when the event never failed)."""
    if row["attempts"] is not None:
        key = f"{redact(sink)}/{row['event_id']}"
        for column in ("attempts", "next_at", "dead_at"):
            stored.check_value("delivery_failures", key, column, row[column])


def _failure_doc(row: Any) -> Any:
    stored.check_row("delivery_failures", row)
    stored.check_row("outbox", row, ("stream", "type"))
    return row


class BackgroundDispatcher:
    """Runs Dispatcher passes every ``interval`` seconds on its own connection until stopped
    (no waiting inside a pass: a failed event is tried again by a later pass when due).

    A pass that raises (a damaged sink row, a database error) does not end the thread: the
    error is kept in :attr:`errors` (the last :data:`KEPT_ERRORS`, one line each, with
    :attr:`failed_passes` counting all of them), logged, and the next pass comes after the
    interval doubled per consecutive failure, up to :data:`MAX_BACKOFF` seconds."""

    KEPT_ERRORS = 20
    MAX_BACKOFF = 30.0

    def __init__(self, path: str, sinks_of: Callable[[Store], list[tuple[Sink, int]]],
                 clock: Callable[[], str], interval: float = 0.5,
                 deadline: float = DEFAULT_DEADLINE):
        if path == ":memory:":
            raise ValueError("background delivery needs a database file")
        self._path, self._sinks_of, self._clock, self._interval = path, sinks_of, clock, interval
        self._deadline = deadline
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rtwo-vm-dispatcher", daemon=True)
        self.passes = 0
        self.failed_passes = 0
        self.errors: list[str] = []

    def start(self) -> "BackgroundDispatcher":
        self._thread.start()
        return self

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout: float = 30.0) -> None:
        self._stop.set()
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the dispatcher did not stop within {timeout:g} s")

    def _loop(self) -> None:
        store: Store | None = None
        failures = 0
        try:
            while not self._stop.is_set():
                try:
                    if store is None:
                        store = Store(self._path)
                    dispatcher = Dispatcher(store, self._clock, deadline=self._deadline,
                                            retry_in_pass=False)
                    for sink, start_after in self._sinks_of(store):
                        dispatcher.deliver(sink, start_after)
                    self.passes += 1
                    failures = 0
                except Exception as err:  # noqa: BLE001 - kept and retried, never fatal
                    failures += 1
                    self.failed_passes += 1
                    self.errors = (self.errors + [one_line(err)])[-self.KEPT_ERRORS:]
                    _LOG.warning("delivery pass failed (%d in a row): %s", failures,
                                 one_line(err))
                    if store is not None:
                        store.close()
                        store = None
                wait = self._interval * (2 ** min(failures, 16)) if failures else self._interval
                self._stop.wait(min(wait, max(self._interval, self.MAX_BACKOFF)))
        finally:
            if store is not None:
                store.close()
