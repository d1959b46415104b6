"""VM Event Publisher: in-process bus, durable outbox, sinks and the dispatcher (chapter 10.8).

Every record the runtime writes is described by an event inserted into the ``outbox`` table in
the same SQLite transaction as the record, so the two exist together or not at all. After
the transaction commits, the events go to the in-process :class:`EventBus` subscribers.

Delivery to sinks is separate and durable: :class:`Dispatcher` sends each sink the outbox rows
it has not acknowledged, in ``event_id`` order, and records each success in ``deliveries``.
Delivery is at least once (a crash between sending and recording resends on restart) and in
order per stream (a context, a VM, a policy or a contract): a failing event holds back the
later events of its stream for that sink until a later pass delivers it; other streams go on.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.store import Store


@dataclass(frozen=True)
class VMEvent:
    event_id: int
    stream: str
    type: str
    payload: dict[str, Any]
    created_at: str

    def to_json(self) -> dict[str, Any]:
        return {"eventId": self.event_id, "stream": self.stream, "type": self.type,
                "payload": self.payload, "createdAt": self.created_at}

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> "VMEvent":
        return cls(row["event_id"], row["stream"], row["type"], json.loads(row["payload"]),
                   row["created_at"])


Subscriber = Callable[[VMEvent], None]


class EventBus:
    """In-process publish/subscribe. A subscriber that raises does not stop the others; its
    error is kept in ``errors`` (the durable outbox, not the bus, is the source of truth)."""

    def __init__(self) -> None:
        self._subscribers: list[tuple[Subscriber, frozenset[str] | None]] = []
        self._lock = threading.Lock()
        # The latest subscriber failures (bounded: a broken subscriber must not grow memory).
        self.errors: deque[tuple[VMEvent, BaseException]] = deque(maxlen=100)

    def subscribe(self, callback: Subscriber, types: list[str] | None = None) -> Callable[[], None]:
        entry = (callback, frozenset(types) if types is not None else None)
        with self._lock:
            self._subscribers.append(entry)

        def unsubscribe() -> None:
            with self._lock:
                if entry in self._subscribers:
                    self._subscribers.remove(entry)
        return unsubscribe

    def publish(self, event: VMEvent) -> None:
        with self._lock:
            subscribers = list(self._subscribers)
        for callback, types in subscribers:
            if types is None or event.type in types:
                try:
                    callback(event)
                except Exception as err:  # noqa: BLE001 - isolate subscribers from each other
                    self.errors.append((event, err))


class Outbox:
    """Writes events inside the caller's transaction and remembers them for the bus."""

    def __init__(self) -> None:
        self.pending: list[VMEvent] = []

    def add(self, tx: sqlite3.Connection, stream: str, type_: str, payload: dict[str, Any],
            at: str) -> VMEvent:
        if type_ not in catalog().values("event_type"):
            raise ValueError(f"unknown event type {type_!r}")
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        cursor = tx.execute("INSERT INTO outbox (stream, type, payload, created_at) "
                            "VALUES (?, ?, ?, ?)", (stream, type_, text, at))
        event = VMEvent(cursor.lastrowid, stream, type_, payload, at)
        self.pending.append(event)
        return event

    def publish_to(self, bus: EventBus) -> None:
        """After commit: hand the committed events to the bus, in order."""
        events, self.pending = self.pending, []
        for event in events:
            bus.publish(event)

    def discard(self) -> None:
        """After rollback: the events were never recorded, so they are never published."""
        self.pending = []


class RecordWriter:
    """Writes records and the events describing them in one transaction, then publishes the
    events on the bus once (and only if) the transaction committed."""

    def __init__(self, store: Store, bus: EventBus):
        self.store = store
        self.bus = bus
        self.outbox = Outbox()

    def begin(self) -> sqlite3.Connection:
        self.store.begin()
        return self.store.conn

    def commit(self) -> None:
        try:
            self.store.commit()
        except BaseException:
            self.rollback()
            raise
        self.outbox.publish_to(self.bus)

    def rollback(self) -> None:
        self.store.rollback()
        self.outbox.discard()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        tx = self.begin()
        try:
            yield tx
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def event(self, tx: sqlite3.Connection, stream: str, type_: str, payload: dict[str, Any],
              at: str) -> VMEvent:
        return self.outbox.add(tx, stream, type_, payload, at)


# -- sinks ----------------------------------------------------------------------------------

class Sink(Protocol):
    """A destination for events. ``deliver`` sends one event or raises; a sink may also have
    ``flush()``, called before delivered events are recorded, to make them durable."""

    name: str

    def deliver(self, event: VMEvent) -> None: ...


class JsonLinesSink:
    """Appends one canonical JSON line per event; ``flush`` syncs the file to disk, and the
    dispatcher records a batch as delivered only after it."""

    kind = "jsonl"

    def __init__(self, path: str | Path):
        self.path = Path(path).resolve()
        self.name = f"jsonl:{self.path}"

    def deliver(self, event: VMEvent) -> None:
        line = json.dumps(event.to_json(), sort_keys=True, separators=(",", ":")) + "\n"
        # One write() of the whole line with O_APPEND: a killed process leaves whole lines.
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            data = line.encode()
            if os.write(fd, data) != len(data):
                raise OSError(f"short write to {self.path}")
        finally:
            os.close(fd)

    def flush(self) -> None:
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


class WebhookSink:
    """POSTs each event as JSON; any 2xx answer is an acknowledgement, anything else a failure."""

    kind = "webhook"

    def __init__(self, url: str, timeout: float = 5.0):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"webhook URL must start with http:// or https://, got {url!r}")
        self.url = url
        self.timeout = timeout
        self.name = f"webhook:{url}"

    def deliver(self, event: VMEvent) -> None:
        body = json.dumps(event.to_json(), sort_keys=True).encode()
        request = urllib.request.Request(self.url, data=body, method="POST", headers={
            "Content-Type": "application/json", "X-RTWO-Event-Id": str(event.event_id)})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                if not 200 <= answer.status < 300:
                    raise OSError(f"HTTP {answer.status}")
        except urllib.error.HTTPError as err:
            raise OSError(f"HTTP {err.code}") from None


SINK_KINDS: dict[str, Callable[[str], Sink]] = {"jsonl": JsonLinesSink, "webhook": WebhookSink}


def make_sink(kind: str, target: str) -> Sink:
    if kind not in SINK_KINDS:
        raise ValueError(f"unknown sink kind {kind!r}; use one of {', '.join(SINK_KINDS)}")
    return SINK_KINDS[kind](target)


@dataclass
class DeliveryReport:
    """One pass to one sink: counts, and the error of each event that failed (by event id)."""

    delivered: int = 0
    failed: int = 0
    held_back: int = 0
    errors: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"delivered": self.delivered, "failed": self.failed, "heldBack": self.held_back,
                "errors": [{"eventId": k, "error": v} for k, v in self.errors.items()]}

    def summary(self) -> str:
        text = f"{self.delivered} delivered, {self.failed} failed, {self.held_back} held back"
        return text + "".join(f"; event {k}: {v}" for k, v in self.errors.items())


class Dispatcher:
    """Delivers undelivered outbox rows to sinks, at least once and in order per stream."""

    def __init__(self, store: Store, clock: Callable[[], str], *, attempts: int = 3,
                 backoff: float = 0.05, batch: int = 200):
        self.store = store
        self.clock = clock
        self.attempts = attempts
        self.backoff = backoff
        self.batch = batch

    def undelivered(self, sink_name: str, start_after: int = 0) -> list[VMEvent]:
        rows = self.store.all(
            "SELECT o.* FROM outbox o WHERE o.event_id > ? AND NOT EXISTS "
            "(SELECT 1 FROM deliveries d WHERE d.sink = ? AND d.event_id = o.event_id) "
            "ORDER BY o.event_id", (start_after, sink_name))
        return [VMEvent.from_row(r) for r in rows]

    def deliver(self, sink: Sink, start_after: int = 0) -> DeliveryReport:
        report = DeliveryReport()
        blocked: set[str] = set()
        sent: list[int] = []
        for event in self.undelivered(sink.name, start_after):
            if event.stream in blocked:
                report.held_back += 1
                continue
            error = self._try(sink, event)
            if error is None:
                sent.append(event.event_id)
                report.delivered += 1
                if len(sent) >= self.batch:
                    self._acknowledge(sink, sent)
            else:
                self._acknowledge(sink, sent)
                self.store.conn.execute(
                    "INSERT INTO delivery_failures VALUES (?, ?, ?, ?, ?) ON CONFLICT(sink, event_id) "
                    "DO UPDATE SET attempts = attempts + excluded.attempts, "
                    "last_error = excluded.last_error, last_at = excluded.last_at",
                    (sink.name, event.event_id, self.attempts, error, self.clock()))
                report.failed += 1
                report.errors[event.event_id] = error
                blocked.add(event.stream)
        self._acknowledge(sink, sent)
        return report

    def _acknowledge(self, sink: Sink, sent: list[int]) -> None:
        """Record what the sink has (after it made it durable). A crash before this resends
        at most one batch: delivery is at least once."""
        if not sent:
            return
        flush = getattr(sink, "flush", None)
        if callable(flush):
            flush()
        at = self.clock()
        with self.store.transaction() as tx:
            tx.executemany("INSERT OR IGNORE INTO deliveries VALUES (?, ?, ?)",
                           [(sink.name, event_id, at) for event_id in sent])
            tx.executemany("DELETE FROM delivery_failures WHERE sink = ? AND event_id = ?",
                           [(sink.name, event_id) for event_id in sent])
        sent.clear()

    def _try(self, sink: Sink, event: VMEvent) -> str | None:
        error = "not attempted"
        for attempt in range(self.attempts):
            try:
                sink.deliver(event)
                return None
            except Exception as err:  # noqa: BLE001 - any sink failure is retried later
                error = f"{type(err).__name__}: {err}"[:500]
                if attempt + 1 < self.attempts:
                    time.sleep(self.backoff * (2 ** attempt))
        return error


class BackgroundDispatcher:
    """Runs Dispatcher passes every ``interval`` seconds on its own connection until stopped."""

    def __init__(self, path: str, sinks_of: Callable[[Store], list[tuple[Sink, int]]],
                 clock: Callable[[], str], interval: float = 0.5):
        if path == ":memory:":
            raise ValueError("background delivery needs a database file")
        self._path, self._sinks_of, self._clock, self._interval = path, sinks_of, clock, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rtwo-vm-dispatcher", daemon=True)
        self.passes = 0

    def start(self) -> "BackgroundDispatcher":
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _loop(self) -> None:
        store = Store(self._path)
        try:
            dispatcher = Dispatcher(store, self._clock)
            while not self._stop.is_set():
                for sink, start_after in self._sinks_of(store):
                    dispatcher.deliver(sink, start_after)
                self.passes += 1
                self._stop.wait(self._interval)
        finally:
            store.close()
