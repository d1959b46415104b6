"""The VM Event Publisher service (chapter 10.7, 10.8): the bus, the outbox's read side, the
durably registered sinks, delivery passes and the dead events."""

from __future__ import annotations

import builtins
import json
from typing import Any, Callable, Iterable

from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.delivery import BackgroundDispatcher, DeliveryReport, Dispatcher
from rtwo_vm.runtime.events import EventBus, RecordWriter, VMEvent
from rtwo_vm.runtime.records import InvalidInput, Page, UnknownRecord, count_at_most, keyset
from rtwo_vm.runtime import stored
from rtwo_vm.runtime.sinks import Sink, redact
from rtwo_vm.runtime.sinks.kinds import make_sink, sink_from_row
from rtwo_vm.runtime.store import Store


def _camel_row(row) -> dict[str, Any]:
    from rtwo_vm.runtime.models import camel
    return {camel(k): row[k] for k in row.keys()}


class VMEventPublisher:
    """The event bus, the outbox's read side and delivery to sinks (durably registered)."""

    def __init__(self, store: Store, bus: EventBus, writer: RecordWriter, clock: Callable[[], str]):
        self.store, self.bus, self.writer, self._clock = store, bus, writer, clock
        self.dispatcher = Dispatcher(store, clock)

    def subscribe(self, callback: Callable[[VMEvent], None], types: list[str] | None = None):
        return self.bus.subscribe(callback, types)

    def list(self, *, stream: str | None = None, type: str | None = None,
             limit: int | None = None, undelivered_to: str | None = None) -> builtins.list[VMEvent]:
        if type is not None and type not in catalog().values("event_type"):
            raise InvalidInput(f"unknown event type {type!r}; use one of "
                               f"{', '.join(catalog().values('event_type'))}")
        if undelivered_to is not None:
            sink = self._sink_row(undelivered_to)
            events = self.dispatcher.undelivered(sink["name"], sink["startAfter"])
            return [e for e in events if (stream is None or e.stream == stream)
                    and (type is None or e.type == type)][:limit]
        where, args = [], []
        for column, value in (("stream", stream), ("type", type)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM outbox" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY event_id" + (f" LIMIT {int(limit)}" if limit is not None else "")
        return [VMEvent.from_row(r) for r in self.store.all(sql, tuple(args))]

    def page(self, *, limit: int, after: tuple | None = None, stream: str | None = None,
             type: str | None = None, count_bound: int | None = None) -> Page:
        """A page of the outbox in event order after the event number ``after`` (a 1-tuple),
        with the number of events matching ``stream`` and ``type`` in all (counted up to
        ``count_bound``: see records.count_at_most)."""
        if type is not None and type not in catalog().values("event_type"):
            raise InvalidInput(f"unknown event type {type!r}; use one of "
                               f"{', '.join(catalog().values('event_type'))}")
        where, args = [], []
        for column, value in (("stream", stream), ("type", type)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        total, exact = count_at_most(self.store, "outbox" + (
            " WHERE " + " AND ".join(where) if where else ""), tuple(args), count_bound)
        after_sql, after_args = keyset(("event_id",), after)
        if after_sql:
            where.append(after_sql)
            args.extend(after_args)
        rows = self.store.all("SELECT * FROM outbox" + (" WHERE " + " AND ".join(where) if where
                                                        else "") + " ORDER BY event_id LIMIT ?",
                              (*args, limit + 1))
        items = [VMEvent.from_row(r) for r in rows[:limit]]
        return Page(items, (items[-1].event_id,) if len(rows) > limit else None, total, exact)

    def count(self) -> int:
        return self.store.single("SELECT count(*) FROM outbox")[0]

    def count_at_most(self, bound: int) -> tuple[int, bool]:
        """(count, exact): the events, counted up to ``bound`` (records.count_at_most)."""
        return count_at_most(self.store, "outbox", (), bound)

    def last_at(self) -> str | None:
        row = self.store.one("SELECT created_at FROM outbox ORDER BY event_id DESC LIMIT 1")
        return None if row is None or builtins.type(row[0]) is not str else row[0]

    def get(self, event_id: int) -> VMEvent:
        if not (type(event_id) is int and 0 <= event_id < 1 << 63):  # SQLite's integer range
            raise UnknownRecord(f"no event {event_id}")
        row = self.store.one("SELECT * FROM outbox WHERE event_id = ?", (event_id,))
        if row is None:
            raise UnknownRecord(f"no event {event_id}")
        return VMEvent.from_row(row)

    # -- sinks ------------------------------------------------------------------------------

    def add_sink(self, kind: str, target: str, *, replay: bool = True,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Register a sink; it receives every event (``replay``) or only those after now."""
        given = {k: v for k, v in (options or {}).items() if v is not None}
        try:
            sink = make_sink(kind, target, given)
        except ValueError as err:
            raise InvalidInput(str(err)) from None
        with self.writer.transaction() as tx:
            if tx.execute("SELECT 1 FROM sinks WHERE name = ?", (sink.name,)).fetchone():
                raise InvalidInput(f"sink {sink.name} is already registered")
            start = 0 if replay else tx.execute(
                "SELECT coalesce(max(event_id), 0) FROM outbox").fetchone()[0]
            tx.execute("INSERT INTO sinks (name, kind, target, created_at, start_after, config) "
                       "VALUES (?, ?, ?, ?, ?, ?)",
                       (sink.name, kind, sink.target, self._clock(), start,
                        json.dumps(given, sort_keys=True)))
        return self._sink_row(sink.name)

    def remove_sink(self, name: str) -> None:
        name = self._sink_row(name)["name"]
        with self.writer.transaction() as tx:
            tx.execute("DELETE FROM deliveries WHERE sink = ?", (name,))
            tx.execute("DELETE FROM delivery_failures WHERE sink = ?", (name,))
            tx.execute("DELETE FROM sinks WHERE name = ?", (name,))

    def sinks(self) -> builtins.list[dict[str, Any]]:
        return [self._shown(row, sink_from_row(row).options)
                for row in self.store.all("SELECT * FROM sinks ORDER BY name")]

    def _sink_row(self, name: str) -> dict[str, Any]:
        """A registered sink by its name, or by the name as listings show it (credentials
        in a URL redacted), when that names one sink."""
        row = self.store.one("SELECT * FROM sinks WHERE name = ?", (name,))
        if row is None:
            rows = [r for r in self.store.all("SELECT * FROM sinks ORDER BY name")
                    if redact(r["name"]) == name]
            row = rows[0] if len(rows) == 1 else None
        if row is None:
            raise UnknownRecord(f"no sink {redact(name)!r}")
        sink_from_row(row)  # checks the row
        doc = self._shown(row, json.loads(row["config"]))  # the options as given
        doc["name"] = row["name"]  # the identity, for the callers here
        return doc

    @staticmethod
    def _shown(row, options: dict[str, Any]) -> dict[str, Any]:
        """A sink row as listings show it: no credentials in its name or target."""
        doc = _camel_row(row)
        doc.update(name=redact(row["name"]), target=redact(row["target"]), config=options)
        return doc

    @staticmethod
    def registered(store: Store) -> builtins.list[tuple[Sink, int]]:
        return [(sink_from_row(r), r["start_after"])
                for r in store.all("SELECT * FROM sinks ORDER BY name")]

    # -- delivery ---------------------------------------------------------------------------

    def deliver(self, extra: Iterable[Sink] = (), *,
                deadline: float | None = None) -> dict[str, DeliveryReport]:
        """One delivery pass to every registered sink (and ``extra`` ones, from the start);
        ``deadline`` bounds each sink's pass (default: the dispatcher's)."""
        reports = {}
        sinks = self.registered(self.store) + [(s, 0) for s in extra]
        for sink, start_after in sinks:
            reports[redact(sink.name)] = self.dispatcher.deliver(sink, start_after, deadline)
        return reports

    def undelivered_counts(self) -> dict[str, int]:
        return {redact(sink.name): self.dispatcher.undelivered_count(sink.name, start)
                for sink, start in self.registered(self.store)}

    def failures(self) -> builtins.list[dict[str, Any]]:
        out = []
        for r in self.store.all("SELECT * FROM delivery_failures ORDER BY sink, event_id"):
            doc = _camel_row(stored.check_row("delivery_failures", r))
            out.append({**doc, "sink": redact(r["sink"]), "lastError": redact(r["last_error"])})
        return out

    def dead(self, sink: str | None = None) -> builtins.list[dict[str, Any]]:
        if sink is not None:
            sink = self._sink_row(sink)["name"]
        return self.dispatcher.dead(sink)

    def requeue(self, event_ids: Iterable[int] | None = None, sink: str | None = None) -> int:
        if sink is not None:
            sink = self._sink_row(sink)["name"]
        return self.dispatcher.requeue(event_ids, sink)

    def background(self, interval: float = 0.5) -> BackgroundDispatcher:
        return BackgroundDispatcher(self.store.path, self.registered, self._clock, interval,
                                    self.dispatcher.deadline).start()
