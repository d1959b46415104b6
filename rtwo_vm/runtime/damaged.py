"""Damaged rows are shown as damaged: one entry with the row's id and a one-line reason.

A row read back that is not one the runtime writes (a JSON column that does not parse, a
number of the wrong type or out of range, an enumerated value the spec does not define, a
reference to a record that does not exist) raises :class:`DamagedRecord` where the runtime
*uses* it (a call, an acknowledgement, a delivery to that sink). Where it only *shows* rows
(a listing, a page, a record and its parts, a count), the row becomes a
:class:`DamagedEntry` in its place and the other rows show as they are: one damaged row
never makes a whole listing, page or answer fail.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from rtwo_vm.runtime import stored
from rtwo_vm.runtime.trust import DamagedRecord

REASON_CHARS = 300   # the most of a reason shown (one line)
ID_CHARS = 120       # an id longer than this is shown cut (stored.shown)
T = TypeVar("T")


@dataclass(frozen=True)
class DamagedEntry:
    """A row that does not decode, in place of its record: ``table``, the row's ``id`` (its
    primary key as text, cut when long) and ``reason`` (one line)."""

    table: str
    id: str
    reason: str
    damaged: bool = True

    def to_json(self) -> dict[str, Any]:
        return {"damaged": True, "table": self.table, "id": self.id, "reason": self.reason}

    def line(self) -> str:
        return f"damaged {self.table} {self.id}: {self.reason}"


def shown_id(value: Any) -> str:
    if isinstance(value, str) and len(value) <= ID_CHARS and value.isprintable():
        return value
    return stored.shown(value)


def reason_of(err: BaseException, table: str = "", key: str = "") -> str:
    """The one-line reason of a refusal, without the ``table key: `` its message opens with."""
    lines = str(err.args[0] if err.args else err).splitlines()
    text = lines[0] if lines else type(err).__name__
    for prefix in (f"{table} {key}: ", f"{table} {shown_id(key)}: "):
        if table and text.startswith(prefix):
            text = text[len(prefix):]
            break
    return text if len(text) <= REASON_CHARS else text[:REASON_CHARS - 3] + "..."


def entry_of(table: str, row: Any, err: BaseException) -> DamagedEntry:
    """The damaged entry of a ``table`` row (a sqlite3.Row) that failed to decode."""
    try:
        key = stored.row_key(table, row)
    except (KeyError, IndexError):
        key = "?"
    return DamagedEntry(table, shown_id(key), reason_of(err, table, key))


def missing(table: str, key: str, what: str) -> DamagedEntry:
    """The entry of a record that its context's other records refer to and that is not
    there (the runtime records them in one transaction: never expected)."""
    return DamagedEntry(table, shown_id(key), f"{what} is missing (the database was changed "
                                               "outside the runtime)")


def decoded(table: str, row: Any, make: Callable[[Any], T]) -> T | DamagedEntry:
    """``make(row)``, or the row's damaged entry when it raises DamagedRecord."""
    try:
        return make(row)
    except DamagedRecord as err:
        return entry_of(table, row, err)


def is_damaged(value: Any) -> bool:
    return isinstance(value, DamagedEntry)
