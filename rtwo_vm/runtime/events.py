"""VM events: the event, the in-process bus and the transactional outbox (chapter 10.8).

Every record the runtime writes is described by an event inserted into the ``outbox`` table in
the same SQLite transaction as the record, so the two exist together or not at all. After
the transaction commits, the events go to the in-process :class:`EventBus` subscribers.

Delivery to sinks is separate and durable: :mod:`rtwo_vm.runtime.delivery` (the dispatcher:
deadlines, backoff, dead events), :mod:`rtwo_vm.runtime.sinks` (one module per kind: jsonl,
webhook, nats) and :mod:`rtwo_vm.runtime.publisher` (the VM Event Publisher service).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from rtwo_vm.runtime import stored
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
        """The event of an outbox row, its columns checked (stored.py)."""
        stored.check_row("outbox", row, ("event_id", "stream", "type", "payload", "created_at"))
        key = stored.row_key("outbox", row)
        stored.one_of(row["type"], catalog().values("event_type"), "outbox", key, "type")
        payload = stored.json_value(row["payload"], "outbox", key, "payload", dict)
        return cls(row["event_id"], row["stream"], row["type"], payload, row["created_at"])


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
        assert cursor.lastrowid is not None      # the row just inserted
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
