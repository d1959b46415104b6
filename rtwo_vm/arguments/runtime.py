"""What the runtime-service commands share (rtwo_vm/commands/services.py and events.py): the
``--db`` and ``--json`` options (and ``--limit`` of listings), opening the database, the
runtime's refusals turned into one-line errors, and records printed as JSON or a table."""

from __future__ import annotations

import json
import os

from rtwo_vm.arguments.inputs import CliError, parse_count

DB_ENV = "RTWO_VM_DB"
DEFAULT_DB = "rtwo-vm.db"


def print_json(doc) -> None:
    print(json.dumps(doc, indent=2, sort_keys=True))


def open_runtime(args, *, create: bool = False):
    from rtwo_vm.runtime import Runtime, StoreError
    try:
        return Runtime(args.db, create=create)
    except StoreError as err:
        raise CliError(str(err)) from None


def guard(func):
    """Run a command, turning the runtime's refusals into one-line CLI errors."""
    def wrapper(args) -> int:
        import sqlite3
        from rtwo_vm.runtime.sinks import redact  # no credentials of a sink URL in a message
        from rtwo_vm.runtime import InvalidInput, ModelError, RuntimeBusy, StoreError, UnknownRecord
        try:
            return func(args)
        except (InvalidInput, UnknownRecord, ModelError, StoreError, RuntimeBusy) as err:
            text = redact(str(err.args[0] if err.args else err)).splitlines()
            raise CliError(text[0] if text else type(err).__name__) from None
        except sqlite3.DatabaseError as err:  # a full disk, a file corrupted while in use
            raise CliError(f"{args.db}: database error: {err}") from None
    return wrapper


def print_table(rows: list[dict], columns: list[str]) -> None:
    if not rows:
        print("(none)")
        return
    def cell(value) -> str:   # a list (spec versions, operations) as its items
        if value is None:
            return "-"
        return ", ".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    widths = {c: max(len(c), *(len(cell(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    print("  ".join("-" * widths[c] for c in columns))
    for r in rows:
        print("  ".join(cell(r.get(c)).ljust(widths[c]) for c in columns).rstrip())
    print(f"{len(rows)} shown")


def is_damaged(doc) -> bool:
    """A damaged entry (rtwo_vm/runtime/damaged.py): a row that does not decode."""
    return isinstance(doc, dict) and doc.get("damaged") is True


def damaged_in(doc) -> bool:
    """Whether ``doc`` is, or holds anywhere, a damaged entry."""
    if is_damaged(doc):
        return True
    if isinstance(doc, dict):
        return any(damaged_in(v) for v in doc.values())
    if isinstance(doc, list):
        return any(damaged_in(v) for v in doc)
    return False


def print_rows(args, docs: list, columns: list[str]) -> int:
    """Records as JSON or a table; a damaged entry in its place, its id in the first column
    and ``DAMAGED`` in the second, then one line per damaged entry with its reason. Exit
    status 1 when one was damaged, else 0."""
    if args.json:
        print_json(docs)
    else:
        print_table([{columns[0]: d["id"], columns[1]: "DAMAGED"} if is_damaged(d) else d
                     for d in docs], columns)
        for d in docs:
            if is_damaged(d):
                print(f"damaged {d['table']} {d['id']}: {d['reason']}")
    return 1 if any(is_damaged(d) for d in docs) else 0


def print_listing(args, records, columns: list[str]) -> int:
    return print_rows(args, [r.to_json() for r in records], columns)


def print_record(doc) -> int:
    """One record (or a record with its parts) as JSON; exit status 1 when it is, or holds,
    a damaged entry."""
    print_json(doc)
    return 1 if damaged_in(doc) else 0


def need_id(args) -> str:
    if not args.id:
        raise CliError(f"{args.action} needs an id")
    return args.id


def refuse_unread_options(args, command: str, table, shown=None, hints=None) -> None:
    """Refuse an option given to an action of ``command`` that does not read it (it would be
    silently ignored). ``table``: action -> the options it reads; ``shown``: how an option is
    written when not as --NAME; ``hints``: more to say about an option."""
    allowed = set(table.get(args.action, ()))
    for name in sorted({n for names in table.values() for n in names} - allowed):
        value = getattr(args, name, None)
        if value is None or value is False:
            continue
        users = [a for a, names in table.items() if name in names]
        option = (shown or {}).get(name) or "--" + name.replace("_", "-")
        raise CliError(f"{command} {args.action} takes no {option}; it is for {command} "
                       f"{' and '.join(users)}{(hints or {}).get(name, '')}")


def add_options(p, *, listing: bool = False) -> None:
    p.add_argument("--db", default=os.environ.get(DB_ENV, DEFAULT_DB),
                   help=f"SQLite database (default: ${DB_ENV} or {DEFAULT_DB})")
    p.add_argument("--json", action="store_true", help="print JSON")
    if listing:
        p.add_argument("--limit", type=positive_limit, help="show at most N")


def positive_limit(text: str) -> int:
    value = parse_count(text, "--limit")
    if value == 0:
        raise CliError("--limit must be positive")
    return min(value, (1 << 63) - 1)  # SQLite's largest integer: more than any table holds
