"""Pages and bounded counts of the record services (records.py, the publisher, the runtime's
contracts): a page is read after the order key of the previous page's last record, never by
offset, and a count stops at a bound, so that a page costs the same at any size of a table."""

from __future__ import annotations

from dataclasses import dataclass

from rtwo_vm.runtime.store import Store


class InvalidInput(ValueError):
    """A request the runtime refuses before recording anything."""


@dataclass(frozen=True)
class Page:
    """One page of a collection in its stable order: the records, the order key of the last
    one when more follow (give it as ``after`` for the next page; None on the last page) and
    how many records match the filters in all."""

    items: list
    next: tuple | None
    total: int
    exact: bool = True   # False: counting stopped at a bound; more than ``total`` match


def count_at_most(store: Store, source: str, args: tuple = (), bound: int | None = None
                  ) -> tuple[int, bool]:
    """(count, exact) of the rows of ``source`` (a FROM ... [WHERE ...] clause, without the
    FROM). With a ``bound``, at most bound + 1 rows are read: past the bound the answer is
    (bound, False), "more than bound", so the cost stays that of ``bound`` rows at any size
    of the table. Without one, an exact count."""
    if bound is None:
        return store.single(f"SELECT count(*) FROM {source}", args)[0], True
    if type(bound) is not int or bound < 1:
        raise ValueError("the count bound must be a positive integer")
    n = store.single(f"SELECT count(*) FROM (SELECT 1 FROM {source} LIMIT ?)",
                     args + (bound + 1,))[0]
    return (n, True) if n <= bound else (bound, False)


def breakdown(store: Store, table: str, column: str, bound: int,
              max_values: int = 32) -> tuple[dict[str, tuple[int, bool]], bool]:
    """Counts of ``table`` rows by the values of ``column`` (names are the caller's own, never
    input), each (count, exact) counted up to ``bound`` (count_at_most), and whether the
    breakdown is complete and exact.
    The distinct values are found by index seeks (``min(column) > previous``), at most
    ``max_values`` of them (more: not exact); with an index on the column, each step reads
    an index range and never the table."""
    out: dict[str, tuple[int, bool]] = {}
    exact = True
    previous = None
    while True:
        if previous is None:
            row = store.single(f"SELECT min({column}) FROM {table}")
        else:
            row = store.single(f"SELECT min({column}) FROM {table} WHERE {column} > ?",
                               (previous,))
        value = row[0]
        if value is None:
            break
        if len(out) == max_values:
            exact = False
            break
        n, whole = count_at_most(store, f"{table} WHERE {column} = ?", (value,), bound)
        out[str(value)] = (n, whole)
        exact = exact and whole
        previous = value
    return out, exact


def keyset(keys: tuple[str, ...], after: tuple | None) -> tuple[str, tuple]:
    """The condition "after this order key" over one or two key expressions (the first
    ascending and indexed, the last unique), so that a page starts with an index seek and
    never reads the records before it."""
    if after is None:
        return "", ()
    if len(after) != len(keys):
        raise InvalidInput("the cursor does not belong to this collection")
    if len(keys) == 1:
        return f"{keys[0]} > ?", (after[0],)
    first, last = keys
    return f"{first} >= ? AND ({first} > ? OR {last} > ?)", (after[0], after[0], after[1])


def page_key(values: tuple) -> tuple | None:
    """The order key a following page starts after, when it can be handed out as a cursor
    (integers and text); a key a damaged row holds (a blob, a real) ends the listing there."""
    if all(type(v) is int or type(v) is str for v in values):
        return values
    return None
