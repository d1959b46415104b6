"""Bounded reads the pages need beyond the services' own: newest-first pages and aggregates.

Every query here has a LIMIT or is a count that stops at a bound (records.count_at_most,
records.breakdown): no page loads or counts a whole table. Rows become domain models through the service that owns the table (its ``_from``,
which checks every column as the service's own reads do), so nothing here interprets a
record differently from the runtime. A row that does not decode is its damaged entry
(rtwo_vm/runtime/damaged.py), shown as damaged by the pages; the other rows show as they are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.damaged import DamagedEntry, decoded
from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.models import RTWOExecutionContext
from rtwo_vm.runtime.records import (
    ExecutionContextManager, InvalidInput, breakdown, count_at_most,
)
from rtwo_vm.server.api.codes import bounds


class BadFilter(ValueError):
    """A filter value the page does not know (shown, nothing queried)."""


@dataclass(frozen=True)
class ContextRow:
    context: RTWOExecutionContext
    seq: int | None
    execution_status: str | None
    error: str | None
    ended: str | None        # the stage-9 stage the context went through


@dataclass(frozen=True)
class DamagedContextRow:
    """A contexts row that does not decode, in the listing's order."""

    context: DamagedEntry
    seq: int | None


def contexts_page(rt: Runtime, *, before: int | None, limit: int, stage: str | None,
                  execution_status: str | None, contract: str | None
                  ) -> list[ContextRow | DamagedContextRow]:
    """Contexts newest first (by commit order), at most ``limit``, older than ``before``."""
    # The filters are the context service's own (rt.contexts.list and page use them).
    try:
        filters = ExecutionContextManager.filters(stage, execution_status, False, "c")
    except InvalidInput as err:
        raise BadFilter(str(err).split(";")[0]) from None
    where = [clause for clause, _ in filters]
    args: list[Any] = [arg for _, clause_args in filters for arg in clause_args]
    if contract is not None:
        where.append("c.contract_id = ?")
        args.append(contract)
    if before is not None:
        where.append("c.seq < ?")
        args.append(before)
    sql = "SELECT c.* FROM contexts c"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY c.seq DESC LIMIT ?"
    args.append(max(1, min(limit, bounds().max_page_size)))
    return [_row(rt, r) for r in rt.store.all(sql, tuple(args))]


def context_row(rt: Runtime, context_id: str) -> ContextRow | None:
    """The context (None when there is none, or its row does not decode: the live stream
    passes it by; the contexts page shows it as damaged)."""
    row = rt.store.one("SELECT * FROM contexts WHERE context_id = ?", (context_id,))
    found = None if row is None else _row(rt, row)
    return found if isinstance(found, ContextRow) else None


def _row(rt: Runtime, row) -> ContextRow | DamagedContextRow:
    context = rt.contexts.entry(row)
    seq = row["seq"] if type(row["seq"]) is int else None
    if isinstance(context, DamagedEntry):
        return DamagedContextRow(context, seq)
    roles = catalog().roles
    result = rt.store.one("SELECT execution_status, error FROM results WHERE context_id = ?",
                          (context.context_id,))
    ended = rt.store.one("SELECT stage FROM stage_history WHERE context_id = ? AND stage IN "
                         "(?, ?)", (context.context_id, roles["commit"], roles["rollback"]))
    return ContextRow(context, seq, _text(result["execution_status"]) if result else None,
                      _text(result["error"]) if result else None,
                      _text(ended["stage"]) if ended else None)


def _text(value: Any) -> str | None:
    """A column shown as it is when it is text (a damaged value as its short form)."""
    if value is None or isinstance(value, str):
        return value
    from rtwo_vm.runtime.stored import shown
    return shown(value)


def _event(row) -> VMEvent:
    """An outbox row as an event; a damaged one as a placeholder of type ``damaged`` with its
    number (the outbox's key, an integer SQLite keeps), so that a reader moving through the
    outbox (the live stream) goes past it and nothing else reads it as an event."""
    event = decoded("outbox", row, VMEvent.from_row)
    if isinstance(event, DamagedEntry):
        return VMEvent(row["event_id"], "", "damaged", {"reason": event.reason}, "")
    return event


def grouped(rt: Runtime, table: str, column: str, bound: int) -> tuple[dict[str, tuple[int, bool]], bool]:
    """Counts of ``table`` rows by ``column`` (names are the dashboard's own, never input),
    each (count, exact) counted up to ``bound`` over an index range (records.breakdown), and
    whether all of them are exact."""
    return breakdown(rt.store, table, column, bound)


def charged(rt: Runtime, bound: int) -> tuple[int, bool]:
    """(count, exact) of the charged accounting records, counted up to ``bound`` (an index
    range of accounting_by_status)."""
    return count_at_most(rt.store, "accounting WHERE status = 'charged'", (), bound)


def latest(rt: Runtime, table: str, column: str, order: str) -> str | None:
    row = rt.store.one(f"SELECT {column} FROM {table} ORDER BY {order} DESC LIMIT 1")
    return None if row is None else row[0]


def events_after(rt: Runtime, after: int, limit: int, types: tuple[str, ...] = ()) -> list[VMEvent]:
    """Outbox events with an id above ``after``, oldest first, at most ``limit``."""
    sql = "SELECT * FROM outbox WHERE event_id > ?"
    args: list = [after]
    if types:
        sql += f" AND type IN ({', '.join('?' for _ in types)})"
        args.extend(types)
    sql += " ORDER BY event_id LIMIT ?"
    args.append(limit)
    return [_event(r) for r in rt.store.all(sql, tuple(args))]


def events_page(rt: Runtime, before: int | None, limit: int) -> list[VMEvent]:
    """Outbox events newest first, below ``before``."""
    if before is None:
        rows = rt.store.all("SELECT * FROM outbox ORDER BY event_id DESC LIMIT ?", (limit,))
    else:
        rows = rt.store.all("SELECT * FROM outbox WHERE event_id < ? ORDER BY event_id DESC "
                            "LIMIT ?", (before, limit))
    return [_event(r) for r in rows]


def last_event_id(rt: Runtime) -> int:
    row = rt.store.one("SELECT max(event_id) FROM outbox")
    return int(row[0]) if row is not None and row[0] is not None else 0


def delivered(rt: Runtime, event_ids: list[int]) -> dict[tuple[str, int], str]:
    """(sink, event id) -> delivery time, for these events."""
    if not event_ids:
        return {}
    marks = ", ".join("?" for _ in event_ids)
    rows = rt.store.all(f"SELECT sink, event_id, delivered_at FROM deliveries WHERE event_id "
                        f"IN ({marks})", tuple(event_ids))
    return {(r[0], r[1]): _text(r[2]) or "" for r in rows if type(r[1]) is int}


def failures_for(rt: Runtime, event_ids: list[int]) -> dict[tuple[str, int], tuple[int, str, str | None]]:
    """(sink, event id) -> (attempts, last error, dead at), for these events."""
    if not event_ids:
        return {}
    marks = ", ".join("?" for _ in event_ids)
    rows = rt.store.all(f"SELECT sink, event_id, attempts, last_error, dead_at FROM "
                        f"delivery_failures WHERE event_id IN ({marks})", tuple(event_ids))
    return {(r[0], r[1]): (r[2] if type(r[2]) is int else -1, _text(r[3]) or "", _text(r[4]))
            for r in rows if type(r[1]) is int}
