"""Values read back from the database are checked before the runtime uses them.

The schema check (trust.py) keeps a file's triggers and views out; the rows it holds are
still someone else's writing. Every row the runtime reads goes through :func:`check_row`
(each column's value has the type its table declares, from the DDL: TEXT a string, INTEGER
an integer from 0 to SQLite's largest, REAL a finite non-negative number, BLOB bytes; NULL
only where the column allows it), and the values with more structure through the functions
below (decimal counters, hex digests and words, JSON columns with a nesting cap). A value
that fails is a :class:`DamagedRecord`: one line naming the table, the row's key and the
column (exit 2 on the command line), never an internal error.
"""

from __future__ import annotations

import math
import re
from typing import Any, Iterable

from rtwo_vm.runtime.schema import columns
from rtwo_vm.runtime.trust import DamagedRecord
from spec.files import FileRefused, loads_json

SQLITE_MAX = (1 << 63) - 1
WORD_MASK = (1 << 64) - 1
JSON_DEPTH = 16  # deeper than anything the runtime writes (a result: 4 levels)
_DECIMAL = re.compile(r"(0|[1-9][0-9]{0,18})\Z")
_DIGEST = re.compile(r"[0-9a-f]{64}\Z")


def shown(value: Any) -> str:
    if isinstance(value, (bytes, bytearray)):
        return f"a blob of {len(value)} bytes"
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def damaged(table: str, key: Any, column: str, value: Any, wanted: str) -> DamagedRecord:
    name = key if isinstance(key, str) and len(key) <= 300 else shown(key)
    return DamagedRecord(f"{table} {name}: {column} holds {shown(value)}, not {wanted} "
                         "(the database was changed outside the runtime)")


def row_key(table: str, row: Any) -> str:
    """The row's primary key as text (the columns of the key that the row holds)."""
    keys = row.keys()
    parts = [row[c.name] for c in sorted(columns(table).values(), key=lambda c: c.key)
             if c.key and c.name in keys]
    return "/".join(p if isinstance(p, str) else shown(p) for p in parts) or "?"


def check_value(table: str, key: str, column: str, value: Any) -> Any:
    col = columns(table)[column]
    if value is None:
        if col.not_null or col.key:
            raise damaged(table, key, column, value, "a value (the column is NOT NULL)")
        return value
    if col.type == "TEXT":
        ok, wanted = type(value) is str, "text"
    elif col.type == "INTEGER":
        ok = type(value) is int and 0 <= value <= SQLITE_MAX
        wanted = "a non-negative integer"
    elif col.type == "REAL":
        ok = type(value) in (int, float) and math.isfinite(value) and value >= 0
        wanted = "a finite non-negative number"
    elif col.type == "BLOB":
        ok, wanted = type(value) is bytes, "a blob"
    else:  # an untyped column of SQLite's own (sqlite_sequence): anything
        ok, wanted = True, ""
    if not ok:
        raise damaged(table, key, column, value, wanted)
    return value


def check_row(table: str, row: Any, only: Iterable[str] | None = None) -> Any:
    """``row`` (a sqlite3.Row) when each of its columns of ``table`` (or those in ``only``)
    holds a value of the declared type; DamagedRecord otherwise."""
    key = row_key(table, row)
    declared = columns(table)
    for name in row.keys() if only is None else only:
        if name in declared:
            check_value(table, key, name, row[name])
    return row


def decimal(text: Any, low: int, high: int, table: str, key: str, column: str) -> int:
    """A counter stored as decimal text: canonical digits, from ``low`` to ``high``."""
    if type(text) is str and _DECIMAL.match(text) and low <= int(text) <= high:
        return int(text)
    raise damaged(table, key, column, text, f"a decimal from {low} to {high}")


def hex_digest(text: Any, table: str, key: str, column: str) -> str:
    if type(text) is str and _DIGEST.match(text):
        return text
    raise damaged(table, key, column, text, "64 lowercase hex digits")


def word(text: Any, table: str, key: str, column: str) -> int:
    """A 64-bit word stored as its canonical hex text (chapter 7.5.2)."""
    if type(text) is str and text.startswith("0x"):
        try:
            value = int(text, 16)
        except ValueError:
            value = -1
        if 0 <= value <= WORD_MASK and hex(value) == text:
            return value
    raise damaged(table, key, column, text, "a word in canonical hex")


def json_value(text: Any, table: str, key: str, column: str, kind: type | None = None,
               *, nullable: bool = False) -> Any:
    """A JSON column, parsed with a nesting cap; ``kind`` (dict or list) its top-level type."""
    if text is None and nullable:
        return None
    if type(text) is not str:
        raise damaged(table, key, column, text, "JSON text")
    try:
        value = loads_json(text.encode(), JSON_DEPTH, f"{table} {key}", column)
    except FileRefused:
        raise damaged(table, key, column, text, f"JSON (at most {JSON_DEPTH} levels)") from None
    if kind is not None and not isinstance(value, kind):
        wanted = "a JSON object" if kind is dict else "a JSON array" if kind is list else kind.__name__
        raise damaged(table, key, column, text, wanted)
    return value


def one_of(value: Any, allowed: Iterable[str], table: str, key: str, column: str,
           *, nullable: bool = False) -> Any:
    if value is None and nullable:
        return value
    names = tuple(allowed)
    if value in names and isinstance(value, str):
        return value
    raise damaged(table, key, column, value, "one of " + ", ".join(names))
