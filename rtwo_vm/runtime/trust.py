"""The runtime trusts only its own schema: what a database file must be before it is used.

A ``--db`` file is input like any other: someone else may have written it. SQLite runs the
triggers and views a file holds inside the runtime's own statements, so a file with one
more trigger could rewrite a result after the runtime recorded it, recurse without end or
grow the file by gigabytes in one call. Before the runtime runs a single statement that
could fire one, :func:`verify` compares the file's ``sqlite_master`` (tables, indexes,
triggers, views: type, name, table and normalised SQL) with what the runtime's own DDL
creates (:func:`rtwo_vm.runtime.schema.expected_objects`, derived from the migrations, not a
second list):

- an object the runtime does not create, or one of its own with other SQL, is refused in
  one line (:class:`StoreError`, exit 2 on the command line), and so is a missing table;
- a missing trigger or index (the lifecycle enforcement dropped, say) is created again from
  the DDL, when everything else is intact (:func:`repair`);
- a schema version newer than this runtime's, or not one of its versions at all, is refused.

:func:`check_file` guards the path before SQLite opens it: only a regular file that is empty
or starts with SQLite's header; a FIFO, a device or a folder is refused without being read
(opening one never waits). A symbolic link to a regular file is used (SQLite resolves it and
keeps its journal beside the target, and the schema check applies to whatever it holds); a
link to nothing is refused rather than creating a file wherever it points. The journal files
beside the database (``-wal``, ``-shm``, ``-journal``) must be regular files, not links.

Connections are opened with ``trusted_schema`` off (no SQL function of the schema runs
outside the runtime's own statements) and ``cell_size_check`` on (a damaged page is an error
when read, not a crash).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
from pathlib import Path

from rtwo_vm.runtime.schema import (
    SCHEMA_VERSION, SchemaObject, expected_objects, read_objects,
)
from spec.files import FileRefused, read_prefix

HEADER = b"SQLite format 3\x00"
JOURNALS = ("-wal", "-shm", "-journal")
REPAIRABLE = ("trigger", "index")  # created again from the DDL when missing


class StoreError(Exception):
    """The database cannot be used (newer schema, not an RTWO VM database, locked...)."""


class DamagedRecord(StoreError):
    """A value read back from the database is not one the runtime writes."""


# Database files this process has open through a Store, by (device, inode), with how many
# connections. SQLite locks with POSIX advisory locks, which belong to the process and are
# all released when the process closes ANY descriptor of the file: reading the header with a
# plain open()/close() while another connection of this process (a server's pool) has the
# file open dropped that connection's locks, so another process closing its connection
# believed itself the last one, checkpointed and deleted the -wal and -shm files under the
# open connections, which then read stale or empty states (found by the dashboard's browser
# test: a server stopped seeing the CLI's calls). A file this process already has open was
# checked when it was first opened; its header is not read again.
_OPEN: dict[tuple[int, int], int] = {}
_OPEN_LOCK = threading.Lock()


def file_key(path: str) -> tuple[int, int] | None:
    if path == ":memory:":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def opened(key: tuple[int, int] | None) -> None:
    if key is not None:
        with _OPEN_LOCK:
            _OPEN[key] = _OPEN.get(key, 0) + 1


def closed(key: tuple[int, int] | None) -> None:
    if key is not None:
        with _OPEN_LOCK:
            left = _OPEN.get(key, 0) - 1
            if left > 0:
                _OPEN[key] = left
            else:
                _OPEN.pop(key, None)


def check_file(path: str, *, create: bool) -> None:
    """Refuse a path that is not (or cannot become) a database file, without reading or
    waiting on anything else than a regular file."""
    if path == ":memory:":
        return
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            raise StoreError(f"{path}: is a symbolic link to nothing; no database is "
                             "created through it") from None
        if not create:
            raise StoreError(f"no database at {path}") from None
        mode = None
    except (OSError, ValueError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise StoreError(f"cannot open {path}: {reason}") from None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise StoreError(f"{path}: not a regular file (a database is a regular file)")
        with _OPEN_LOCK:
            already_open = file_key(path) in _OPEN
        try:
            head = HEADER if already_open else read_prefix(path, len(HEADER), "database")
        except FileRefused as err:
            raise StoreError(str(err)) from None
        if head and head != HEADER:
            raise StoreError(f"{path}: not an SQLite database")
    real = os.path.realpath(path)
    for suffix in JOURNALS:
        side = Path(real + suffix)
        if side.is_symlink() or (side.exists() and not side.is_file()):
            raise StoreError(f"{side}: the database's journal is not a regular file")


def _describe(obj: SchemaObject) -> str:
    return f"{obj.type} {obj.name!r}" + (f" on {obj.table}" if obj.table != obj.name else "")


def verify(conn: sqlite3.Connection, path: str) -> list[SchemaObject]:
    """Check the file's schema against the runtime's for its version (read in one read
    transaction, so version and objects agree). Returns the missing triggers and indexes,
    to create again; raises StoreError for anything else that differs."""
    conn.execute("BEGIN")
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        found = read_objects(conn)
    finally:
        conn.execute("COMMIT")
    if version > SCHEMA_VERSION:
        raise StoreError(f"{path} has schema {version}, newer than this runtime's "
                         f"{SCHEMA_VERSION}")
    if version < 0:
        raise StoreError(f"{path} has schema {version}, not one of this runtime's (1 to "
                         f"{SCHEMA_VERSION})")
    if version == 0:
        if found:
            raise StoreError(f"{path} is not an RTWO VM database")
        return []
    expected = expected_objects(version)
    for key, obj in sorted(found.items()):
        if key not in expected:
            raise StoreError(f"{path}: unknown {_describe(obj)}: the runtime uses only the "
                             f"schema it creates (schema {version})")
        if obj != expected[key]:
            raise StoreError(f"{path}: altered {_describe(obj)}: it is not the runtime's "
                             f"schema {version}")
    missing = [obj for key, obj in sorted(expected.items()) if key not in found]
    for obj in missing:
        if obj.type not in REPAIRABLE or obj.raw is None:
            raise StoreError(f"{path}: {_describe(obj)} is missing (schema {version})")
    return missing


def repair(conn: sqlite3.Connection, missing: list[SchemaObject]) -> None:
    """Create the missing triggers and indexes again from the DDL, inside the caller's write
    transaction (those another connection created meanwhile are left alone)."""
    found = read_objects(conn)
    for obj in missing:
        if (obj.type, obj.name) not in found:
            assert obj.raw is not None  # verify refuses a missing object without its DDL
            conn.execute(obj.raw)
