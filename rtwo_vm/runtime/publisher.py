"""The VM Event Publisher service (chapter 10.7, 10.8): the bus, the outbox's read side, the
durably registered sinks, delivery passes and the dead events.

Sinks from a database are data (rtwo_vm/runtime/sinks/approval.py): a delivery pass goes
only to the sinks whose row carries this machine's confirmation of exactly what it says; the
others are reported as skipped, in one line saying how to confirm them. Listings show a row
that does not decode as its damaged entry (rtwo_vm/runtime/damaged.py)."""

from __future__ import annotations

import builtins
import json
import shlex
import sqlite3
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.damaged import DamagedEntry, decoded, entry_of, reason_of
from rtwo_vm.runtime.delivery import BackgroundDispatcher, DeliveryReport, Dispatcher
from rtwo_vm.runtime.events import EventBus, RecordWriter, VMEvent
from rtwo_vm.runtime.paging import page_key
from rtwo_vm.runtime.records import InvalidInput, Page, UnknownRecord, count_at_most, keyset
from rtwo_vm.runtime import stored
from rtwo_vm.runtime.sinks import Sink, redact
from rtwo_vm.runtime.sinks.approval import SinkKey, SinkKeyError, who
from rtwo_vm.runtime.sinks.kinds import make_sink, sink_from_row
from rtwo_vm.runtime.store import DamagedRecord, Store

CONFIRM_HINT = "rtwo-vm events sink-confirm"


def confirm_hint(name: str) -> str:
    """The command that confirms the sink ``name`` (quoted for a POSIX shell: a name is
    written by whoever wrote the database)."""
    if not name.isprintable():
        return "remove it: its name holds characters that cannot be shown"
    return f"{CONFIRM_HINT} {shlex.quote(name)}"


@dataclass(frozen=True)
class SinkRow:
    """A ``sinks`` row as the publisher sees it: the sink it makes (or its damaged entry),
    where it starts, and whether this machine confirmed it."""

    name: str              # as shown (redacted)
    sink: Sink | DamagedEntry
    start_after: int
    confirmed: bool


def _camel_row(row) -> dict[str, Any]:
    from rtwo_vm.runtime.models import camel
    return {camel(k): row[k] for k in row.keys()}


class VMEventPublisher:
    """The event bus, the outbox's read side and delivery to sinks (durably registered)."""

    def __init__(self, store: Store, bus: EventBus, writer: RecordWriter, clock: Callable[[], str],
                 key: SinkKey | None = None):
        self.store, self.bus, self.writer, self._clock = store, bus, writer, clock
        self.key = key or SinkKey()
        self.dispatcher = Dispatcher(store, clock)

    def subscribe(self, callback: Callable[[VMEvent], None], types: list[str] | None = None):
        return self.bus.subscribe(callback, types)

    def list(self, *, stream: str | None = None, type: str | None = None,
             limit: int | None = None, undelivered_to: str | None = None
             ) -> builtins.list[VMEvent | DamagedEntry]:
        if type is not None and type not in catalog().values("event_type"):
            raise InvalidInput(f"unknown event type {type!r}; use one of "
                               f"{', '.join(catalog().values('event_type'))}")
        if undelivered_to is not None:
            sink = self._sink_row(undelivered_to)
            rows = self.dispatcher._rows(sink["name"], sink["startAfter"], None)
            return [e for e in (self._event(r) for r in rows)
                    if isinstance(e, DamagedEntry) or ((stream is None or e.stream == stream)
                                                       and (type is None or e.type == type))
                    ][:limit]
        where, args = [], []
        for column, value in (("stream", stream), ("type", type)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM outbox" + (" WHERE " + " AND ".join(where) if where else "")
        sql += " ORDER BY event_id" + (f" LIMIT {int(limit)}" if limit is not None else "")
        return [self._event(r) for r in self.store.all(sql, tuple(args))]

    @staticmethod
    def _event(row: sqlite3.Row) -> VMEvent | DamagedEntry:
        return decoded("outbox", row, VMEvent.from_row)

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
        items = [self._event(r) for r in rows[:limit]]
        return Page(items, page_key((rows[limit - 1]["event_id"],)) if len(rows) > limit
                    else None, total, exact)

    def count(self) -> int:
        return self.store.single("SELECT count(*) FROM outbox")[0]

    def count_at_most(self, bound: int) -> tuple[int, bool]:
        """(count, exact): the events, counted up to ``bound`` (records.count_at_most)."""
        return count_at_most(self.store, "outbox", (), bound)

    def last_at(self) -> str | None:
        row = self.store.one("SELECT created_at FROM outbox ORDER BY event_id DESC LIMIT 1")
        return None if row is None or builtins.type(row[0]) is not str else row[0]

    def get(self, event_id: int) -> VMEvent | DamagedEntry:
        if not (type(event_id) is int and 0 <= event_id < 1 << 63):  # SQLite's integer range
            raise UnknownRecord(f"no event {event_id}")
        row = self.store.one("SELECT * FROM outbox WHERE event_id = ?", (event_id,))
        if row is None:
            raise UnknownRecord(f"no event {event_id}")
        return self._event(row)

    # -- sinks ------------------------------------------------------------------------------

    def _confirm_key(self) -> bytes:
        """The sink key, created when missing (only the commands that confirm call this)."""
        try:
            key = self.key.load(create=True)
        except SinkKeyError as err:
            raise InvalidInput(str(err)) from None
        assert key is not None
        return key

    def _read_key(self) -> tuple[bytes | None, str | None]:
        """(the sink key or None, why there is none usable)."""
        try:
            key = self.key.load()
        except SinkKeyError as err:
            return None, str(err)
        return key, None if key is not None else f"no sink key at {self.key.path}"

    def add_sink(self, kind: str, target: str, *, replay: bool = True,
                 options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Register a sink, confirmed on this machine (it receives every event, ``replay``,
        or only those after now)."""
        given = {k: v for k, v in (options or {}).items() if v is not None}
        try:
            sink = make_sink(kind, target, given)
        except ValueError as err:
            raise InvalidInput(str(err)) from None
        config = json.dumps(given, sort_keys=True)
        key = self._confirm_key()   # before anything is written
        with self.writer.transaction() as tx:
            if tx.execute("SELECT 1 FROM sinks WHERE name = ?", (sink.name,)).fetchone():
                raise InvalidInput(f"sink {sink.name} is already registered")
            start = 0 if replay else tx.execute(
                "SELECT coalesce(max(event_id), 0) FROM outbox").fetchone()[0]
            tx.execute("INSERT INTO sinks (name, kind, target, created_at, start_after, config, "
                       "confirmation, confirmed_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       (sink.name, kind, sink.target, self._clock(), start, config,
                        SinkKey.seal(key, sink.name, kind, sink.target, config), who()))
        return self._sink_row(sink.name)

    def confirm_sink(self, name: str) -> dict[str, Any]:
        """Confirm on this machine the sink ``name`` (as registered or as shown) with the
        target and options its row holds now: from then on delivery passes go to it."""
        row = self._sink_row(name)
        key = self._confirm_key()
        with self.writer.transaction() as tx:
            current = tx.execute("SELECT * FROM sinks WHERE name = ?", (row["name"],)).fetchone()
            if current is None:
                raise UnknownRecord(f"no sink {redact(name)!r}")
            tx.execute("UPDATE sinks SET confirmation = ?, confirmed_by = ? WHERE name = ?",
                       (SinkKey.seal(key, current["name"], current["kind"], current["target"],
                                     current["config"]), who(), current["name"]))
        return self._sink_row(row["name"])

    def remove_sink(self, name: str) -> None:
        name = self._sink_row(name)["name"]
        with self.writer.transaction() as tx:
            tx.execute("DELETE FROM deliveries WHERE sink = ?", (name,))
            tx.execute("DELETE FROM delivery_failures WHERE sink = ?", (name,))
            tx.execute("DELETE FROM sinks WHERE name = ?", (name,))

    def sinks(self) -> builtins.list[dict[str, Any]]:
        """Every registered sink as listings show it (``confirmed``: whether this machine
        confirmed its target; a row that does not decode: its damaged entry)."""
        rows = self.store.all("SELECT * FROM sinks ORDER BY name")
        key = self._read_key()[0] if rows else None   # no key read without a sink
        out = []
        for row in rows:
            try:
                options = sink_from_row(row).options
            except DamagedRecord as err:
                out.append(_redacted_entry(entry_of("sinks", row, err)))
                continue
            out.append(self._shown(row, options, SinkKey.confirms(key, row)))
        return out

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
        key, _ = self._read_key()
        doc = self._shown(row, json.loads(row["config"]), SinkKey.confirms(key, row))
        doc["name"] = row["name"]  # the identity, for the callers here
        return doc

    @staticmethod
    def _shown(row, options: dict[str, Any], confirmed: bool) -> dict[str, Any]:
        """A sink row as listings show it: no secret of a URL in its name or target."""
        doc = _camel_row(row)
        doc.pop("confirmation", None)
        doc.update(name=redact(row["name"]), target=redact(row["target"]), config=options,
                   confirmed=confirmed,
                   # who confirmed, as the row says: shown only when this machine's key agrees
                   confirmedBy=row["confirmed_by"] if confirmed else None)
        return doc

    def sink_rows(self, store: Store | None = None) -> builtins.list[SinkRow]:
        """Every sinks row: its sink (or damaged entry) and whether it is confirmed here."""
        rows = (store or self.store).all("SELECT * FROM sinks ORDER BY name")
        key = self._read_key()[0] if rows else None
        out = []
        for r in rows:
            shown = redact(r["name"]) if isinstance(r["name"], str) else stored.shown(r["name"])
            sink = decoded("sinks", r, sink_from_row)
            if isinstance(sink, DamagedEntry):
                sink = DamagedEntry(sink.table, redact(sink.id), redact(sink.reason))
            start = r["start_after"] if type(r["start_after"]) is int else 0
            ok = not isinstance(sink, DamagedEntry) and SinkKey.confirms(key, r)
            out.append(SinkRow(shown, sink, start, ok))
        return out

    def registered(self, store: Store | None = None) -> builtins.list[tuple[Sink, int]]:
        """The sinks a delivery pass goes to: those confirmed on this machine."""
        return [(r.sink, r.start_after) for r in self.sink_rows(store)
                if r.confirmed and not isinstance(r.sink, DamagedEntry)]

    # -- delivery ---------------------------------------------------------------------------

    def deliver(self, extra: Iterable[Sink] = (), *,
                deadline: float | None = None) -> dict[str, DeliveryReport]:
        """One delivery pass to every registered sink confirmed on this machine (and ``extra``
        ones, given by the caller, from the start); ``deadline`` bounds each sink's pass
        (default: the dispatcher's). An unconfirmed or damaged sink is reported as skipped,
        with nothing sent to it."""
        reports = {}
        rows = self.sink_rows()
        no_key = self._read_key()[1] if any(not r.confirmed for r in rows) else None
        for row in rows:
            if isinstance(row.sink, DamagedEntry):
                reports[row.name] = DeliveryReport(error=f"damaged: {row.sink.reason}; skipped")
            elif not row.confirmed:
                left = self.dispatcher.undelivered_count(row.sink.name, row.start_after)
                reports[row.name] = DeliveryReport(left=left, error=(
                    "not confirmed on this machine" + (f" ({no_key})" if no_key else "")
                    + f"; skipped: check its target, then {confirm_hint(row.name)}"))
            else:
                reports[row.name] = self._pass(row.sink, row.start_after, deadline)
        for sink in extra:
            reports[redact(sink.name)] = self._pass(sink, 0, deadline)
        return reports

    def _pass(self, sink: Sink, start_after: int, deadline: float | None) -> DeliveryReport:
        """One sink's pass; a damaged outbox or failure row it meets ends that sink's pass
        (reported), never the other sinks'."""
        try:
            return self.dispatcher.deliver(sink, start_after, deadline)
        except DamagedRecord as err:
            return DeliveryReport(error=redact(f"damaged: {reason_of(err)}; the pass stopped"))

    def undelivered_counts(self) -> dict[str, int]:
        return {r.name: self.dispatcher.undelivered_count(r.sink.name, r.start_after)
                for r in self.sink_rows() if not isinstance(r.sink, DamagedEntry)}

    def failures(self) -> builtins.list[dict[str, Any]]:
        out = []
        for r in self.store.all("SELECT * FROM delivery_failures ORDER BY sink, event_id"):
            try:
                doc = _camel_row(stored.check_row("delivery_failures", r))
            except DamagedRecord as err:
                out.append(_redacted_entry(entry_of("delivery_failures", r, err)))
                continue
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


def _redacted_entry(entry: DamagedEntry) -> dict[str, Any]:
    """A damaged entry whose id names a sink: shown without the secrets of its URL."""
    return DamagedEntry(entry.table, redact(entry.id), redact(entry.reason)).to_json()


__all__ = ["CONFIRM_HINT", "SinkRow", "VMEventPublisher", "confirm_hint", "reason_of"]
