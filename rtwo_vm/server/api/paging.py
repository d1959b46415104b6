"""Pagination and filters of the collections: keyset cursors, bounded page sizes, time ranges.

A page is read after the order key of the previous page's last record (the runtime's
``page`` methods: contexts by ``seq``, a context's records by their context's ``seq``, events
by number), never by offset, so a page costs the same at the millionth record as at the
first and stays stable while records are added. The cursor handed out is that key, encoded
(base64url of its JSON); it is opaque to clients. A page's ``total`` is counted up to api.toml
``bounds.max_counted`` records: exact below it, "more than max_counted" above it
(``totalExact`` false), so that counting does not grow with the tables either.
"""

from __future__ import annotations

import base64
import binascii
import json
from datetime import datetime, timezone
from typing import Annotated, Any, Sequence

from fastapi import Query

from rtwo_vm.runtime.records import Page
from rtwo_vm.server.api.codes import ApiError, bounds

SQLITE_MAX = (1 << 63) - 1
CURSOR_PATTERN = "^[A-Za-z0-9_-]*$"


def encode(key: tuple | None) -> str | None:
    if key is None:
        return None
    text = json.dumps(list(key), separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def decode(cursor: str | None, width: int) -> tuple | None:
    """The order key of a cursor of a collection whose key has ``width`` parts."""
    if cursor is None or cursor == "":
        return None
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        key = json.loads(raw.decode("utf-8"))
    except (ValueError, binascii.Error, UnicodeDecodeError):
        raise ApiError("INVALID_REQUEST", "cursor: not a cursor this server gave") from None
    ok = isinstance(key, list) and len(key) == width and all(
        (type(k) is int and 0 <= k <= SQLITE_MAX) or (type(k) is str and len(k) <= 2 * bounds().max_text_chars)
        for k in key)
    if not ok:
        raise ApiError("INVALID_REQUEST", "cursor: not a cursor of this collection")
    return tuple(key)


class PageParams:
    """The ``limit`` and ``cursor`` query parameters of every collection."""

    def __init__(self,
                 limit: Annotated[int, Query(ge=1, le=bounds().max_page_size,
                                             description="records per page")
                                  ] = bounds().default_page_size,
                 cursor: Annotated[str | None, Query(max_length=2 * bounds().max_text_chars,
                                                     pattern=CURSOR_PATTERN,
                                                     description="the `next` of the previous page")
                                   ] = None):
        self.limit = limit
        self.cursor = cursor

    def after(self, width: int) -> tuple | None:
        return decode(self.cursor, width)

    def window(self, width: int) -> dict[str, Any]:
        """The arguments of a runtime ``page`` call: the page size, the order key after which
        it starts and the bound of its count (api.toml ``bounds.max_counted``)."""
        return {"limit": self.limit, "after": self.after(width),
                "count_bound": bounds().max_counted}

    def answer(self, page: Page, items: Sequence[Any] | None = None) -> dict[str, Any]:
        shown = [i.to_json() if hasattr(i, "to_json") else i for i in page.items] \
            if items is None else list(items)
        return {"items": shown, "next": encode(page.next), "total": page.total,
                "totalExact": page.exact, "limit": self.limit}


def moment(text: str | None, name: str) -> str | None:
    """A time given in a query, as the runtime writes times (UTC ISO 8601, microseconds), so
    that comparing the text compares the times."""
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise ApiError("INVALID_REQUEST", f"{name}: not an ISO 8601 time") from None
    if value.utcoffset() is None:
        raise ApiError("INVALID_REQUEST", f"{name}: the time needs a UTC offset (e.g. Z)")
    try:
        return value.astimezone(timezone.utc).isoformat(timespec="microseconds")
    except (OverflowError, ValueError):
        raise ApiError("INVALID_REQUEST", f"{name}: the time is out of range") from None


TimeQuery = Annotated[str | None, Query(max_length=64, description="ISO 8601 with an offset")]
TextQuery = Annotated[str | None, Query(max_length=bounds().max_text_chars)]


def enum_query(values: Sequence[str], description: str) -> Any:
    return Query(None, description=description, json_schema_extra={"enum": list(values)})
