"""Durable records in SQLite: schema migrations, transactions and the world state.

One file (or ``:memory:``) holds deployed contracts and their storage, VMs, policies, contexts
with their stage history, sandboxes, accounting, results, violations and the event outbox
with its delivery log. The schema version is SQLite's ``user_version``; :data:`MIGRATIONS`
(schema.py) upgrades any older file in order, each step in its own transaction. A file is
used only when its schema is exactly the runtime's (trust.py), and the values read back are
checked (stored.py).

Words (addresses, keys, values) are 64-bit unsigned and SQLite integers are signed, so they
are stored as the canonical hex text of chapter 7.5.2.

The lifecycle is enforced by the database too: ``lifecycle_transitions`` holds the allowed
moves of lifecycle.toml and a trigger refuses any stage-history row that does not follow one,
so no writer, however buggy, can record an illegal transition.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import spec
from reference_vm import Contract, StateView, WorldState
from reference_vm.errors import InternalInvariantError
from reference_vm.result import canonical
from rtwo_vm.runtime import stored, trust
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.schema import MIGRATIONS, SCHEMA_VERSION, statements
from rtwo_vm.runtime.trust import DamagedRecord, StoreError

__all__ = ["DamagedRecord", "GENESIS_STATE", "MIGRATIONS", "SCHEMA_VERSION", "Store",
           "StoreError", "word_text"]

GENESIS_STATE = "0" * 64
SQLITE_MAX = (1 << 63) - 1



def word_text(value: int) -> str:
    return hex(value)


class Store:
    """A connection to one database, with explicit transactions (autocommit otherwise)."""

    timeout = 30.0  # seconds to wait for a busy database before giving up

    def __init__(self, path: str | Path, *, create: bool = True, timeout: float = 30.0):
        self.path = str(path)
        self.timeout = timeout
        trust.check_file(self.path, create=create)
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=timeout,
                                        check_same_thread=False)
        except (sqlite3.Error, ValueError) as err:
            raise StoreError(f"cannot open {self.path}: {err}") from None
        self._held: tuple[int, int] | None = None
        try:
            _retry_busy(self._open, timeout)
            self._held = trust.hold(self.path)
        except sqlite3.DatabaseError as err:
            # Not a database, a truncated or corrupt one, a full disk, a device file...
            self.conn.close()
            raise StoreError(f"{self.path}: cannot use the database: {err}") from None
        except BaseException:
            self.conn.close()
            raise

    def _open(self) -> None:
        self.conn.row_factory = sqlite3.Row
        # Before any statement that could run what the file holds (trust.py).
        self.conn.execute("PRAGMA trusted_schema = OFF")
        self.conn.execute("PRAGMA cell_size_check = ON")
        self.conn.execute("PRAGMA foreign_keys = ON")
        trust.verify(self.conn, self.path)  # refuses a foreign schema before anything runs
        if self.path != ":memory:":
            # WAL: readers never block the writer; FULL: a commit is on disk when it returns.
            self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.migrate()
        missing = trust.verify(self.conn, self.path)
        if missing:
            with self.transaction() as tx:
                trust.repair(tx, missing)
        self._sync_lifecycle()

    def close(self) -> None:
        self.conn.close()
        held, self._held = self._held, None
        trust.release(held)

    # -- schema ---------------------------------------------------------------------------

    @property
    def schema_version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self, target: int = SCHEMA_VERSION) -> None:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema {version}, newer than this runtime's "
                             f"{SCHEMA_VERSION}")
        for number in range(version + 1, target + 1):
            with self.transaction() as tx:
                # Read again under the write lock: concurrent first openers of a fresh file
                # migrate it once, the others find it done.
                current = self.schema_version
                if current >= number:
                    continue
                if current == 0 and self._has_foreign_tables():
                    raise StoreError(f"{self.path} is not an RTWO VM database")
                for statement in statements(MIGRATIONS[number - 1]):
                    tx.execute(statement)
                if number == 1:
                    self._seed_lifecycle(tx)
                tx.execute(f"PRAGMA user_version = {number}")

    def _has_foreign_tables(self) -> bool:
        return self.conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0

    @staticmethod
    def _seed_lifecycle(tx: sqlite3.Connection) -> None:
        tx.execute("INSERT INTO meta VALUES ('initial_stage', ?)", (catalog().roles["initial"],))
        tx.execute("INSERT INTO meta VALUES ('state_root', ?)", (GENESIS_STATE,))
        tx.execute("INSERT INTO meta VALUES ('context_seq', '0')")

    def _sync_lifecycle(self) -> None:
        """Make the trigger's transition table the loaded lifecycle.toml's (written only when
        the spec data changed since the file was last opened)."""
        cat = catalog()
        wanted = {(a, b) for a, targets in cat.transitions.items() for b in targets}
        if self._lifecycle_synced(wanted, cat.roles["initial"]):
            return
        with self.transaction() as tx:
            if self._lifecycle_synced(wanted, cat.roles["initial"]):
                return
            tx.execute("DELETE FROM lifecycle_transitions")
            tx.executemany("INSERT INTO lifecycle_transitions VALUES (?, ?)", sorted(wanted))
            tx.execute("INSERT INTO meta VALUES ('initial_stage', ?) ON CONFLICT(key) "
                       "DO UPDATE SET value = excluded.value", (cat.roles["initial"],))

    def _lifecycle_synced(self, wanted: set[tuple[str, str]], initial: str) -> bool:
        present = {(r[0], r[1]) for r in self.all("SELECT * FROM lifecycle_transitions")}
        row = self.one("SELECT value FROM meta WHERE key = 'initial_stage'")
        return present == wanted and row is not None and row[0] == initial

    # -- transactions ---------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception: all of it or none of it."""
        self.begin()
        try:
            yield self.conn
        except BaseException:
            self.rollback()
            raise
        self.commit()

    def begin(self) -> None:
        if self.conn.in_transaction:
            raise StoreError("a transaction is already open on this connection")
        try:
            _retry_busy(lambda: self.conn.execute("BEGIN IMMEDIATE"), self.timeout)
        except sqlite3.OperationalError as err:
            raise StoreError(f"{self.path}: {err}") from None

    def commit(self) -> None:
        self.conn.execute("COMMIT")

    def rollback(self) -> None:
        if self.conn.in_transaction:
            self.conn.execute("ROLLBACK")

    # -- reading --------------------------------------------------------------------------

    def one(self, sql: str, args: tuple = ()) -> sqlite3.Row | None:
        return self.conn.execute(sql, args).fetchone()

    def single(self, sql: str, args: tuple = ()) -> sqlite3.Row:
        """The row of a query that always has one (an aggregate, PRAGMA integrity_check)."""
        row = self.one(sql, args)
        if row is None:
            raise StoreError(f"no row from {sql.split()[0]} query")
        return row

    def all(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, args).fetchall()

    def meta(self, key: str) -> str:
        row = self.one("SELECT * FROM meta WHERE key = ?", (key,))
        if row is None:
            raise DamagedRecord(f"meta {key}: missing")
        return stored.check_row("meta", row)["value"]

    def state_root(self) -> str:
        """The state reference: 64 hex digits (chained by advance_state_root)."""
        return stored.hex_digest(self.meta("state_root"), "meta", "state_root", "value")

    def set_meta(self, tx: sqlite3.Connection, key: str, value: str) -> None:
        tx.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))

    def next_context_seq(self, tx: sqlite3.Connection) -> int:
        """A number ordering contexts by commit (ids are random; this is not)."""
        seq = stored.decimal(self.meta("context_seq"), 0, SQLITE_MAX - 1, "meta",
                             "context_seq", "value") + 1
        self.set_meta(tx, "context_seq", str(seq))
        return seq

    def contract_code(self, address: int) -> bytes | None:
        row = self.one("SELECT * FROM contracts WHERE address = ?", (word_text(address),))
        return None if row is None else stored.check_row("contracts", row)["code"]

    def contract_version(self, address: int) -> str | None:
        """The spec version the contract at ``address`` was deployed under (None: no contract
        there); a value that names no version is a damaged record."""
        addr = word_text(address)
        row = self.one("SELECT spec_version FROM contracts WHERE address = ?", (addr,))
        if row is None:
            return None
        return stored.one_of(row[0], spec.names(), "contracts", addr, "spec_version")

    def world_state(self) -> WorldState:
        """The world state as a view over the database: a CALL may name any address (chapter
        8.1), so every contract is reachable, but only what the execution touches is read,
        each contract's code and each storage slot by its primary key. Read it inside the
        transaction that holds the state still (execution.py does)."""
        return WorldState(_Contracts(self.conn))

    # -- writing --------------------------------------------------------------------------

    def advance_state_root(self, tx: sqlite3.Connection, change: Any) -> str:
        """Chain the state reference: SHA-256(previous root || canonical change)."""
        root = hashlib.sha256((self.state_root() + canonical(change)).encode()).hexdigest()
        self.set_meta(tx, "state_root", root)
        return root

    def apply_state_changes(self, tx: sqlite3.Connection, changes: list[dict]) -> None:
        for change in changes:
            if int(change["after"], 16) == 0:
                tx.execute("DELETE FROM storage WHERE address = ? AND key = ?",
                           (change["address"], change["key"]))
            else:
                tx.execute("INSERT INTO storage VALUES (?, ?, ?) ON CONFLICT(address, key) "
                           "DO UPDATE SET value = excluded.value",
                           (change["address"], change["key"], change["after"]))

    def insert(self, tx: sqlite3.Connection, table: str, row: dict[str, Any]) -> None:
        names = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        tx.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})",
                   tuple(_column(v) for v in row.values()))


_WORD_MASK = (1 << 64) - 1


def _stored_word(text: Any, what: str) -> int:
    """A word stored as canonical hex text; anything else is a host failure (INTERNAL_ERROR)."""
    if type(text) is str and text.startswith("0x"):
        try:
            value = int(text, 16)
        except ValueError:
            value = -1
        if 0 <= value <= _WORD_MASK and hex(value) == text:
            return value
    raise InternalInvariantError(f"{what} holds {str(text)[:40]!r}, not a word")


class _Storage(StateView):
    """One contract's storage, read slot by slot (the primary key (address, key))."""

    def __init__(self, conn: sqlite3.Connection, address: str):
        self._conn, self._address = conn, address
        self._read: dict[int, int | None] = {}

    def __getitem__(self, key: int) -> int:
        if key not in self._read:
            value = None
            if type(key) is int and 0 <= key <= _WORD_MASK:
                row = self._conn.execute("SELECT value FROM storage WHERE address = ? AND key = ?",
                                         (self._address, word_text(key))).fetchone()
                if row is not None:
                    value = _stored_word(row[0], f"storage {self._address}[{key:#x}]") or None
            self._read[key] = value
        value = self._read[key]
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[int]:
        rows = self._conn.execute("SELECT key FROM storage WHERE address = ?", (self._address,))
        return iter([_stored_word(r[0], f"a storage key of {self._address}") for r in rows])

    def __len__(self) -> int:
        return self._conn.execute("SELECT count(*) FROM storage WHERE address = ?",
                                  (self._address,)).fetchone()[0]


class _Contracts(StateView):
    """Every deployed contract, read by address when the execution names it."""

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn
        self._read: dict[int, Contract | None] = {}

    def __getitem__(self, address: int) -> Contract:
        if address not in self._read:
            contract = None
            if type(address) is int and 0 <= address <= _WORD_MASK:
                addr = word_text(address)
                row = self._conn.execute("SELECT code FROM contracts WHERE address = ?",
                                         (addr,)).fetchone()
                if row is not None:
                    if not isinstance(row[0], bytes):
                        raise InternalInvariantError(f"code of {addr} is not a byte string")
                    contract = Contract(row[0], _Storage(self._conn, addr))
            self._read[address] = contract
        contract = self._read[address]
        if contract is None:
            raise KeyError(address)
        return contract

    def __iter__(self) -> Iterator[int]:
        rows = self._conn.execute("SELECT address FROM contracts")
        return iter([_stored_word(r[0], "a contract address") for r in rows])

    def __len__(self) -> int:
        return self._conn.execute("SELECT count(*) FROM contracts").fetchone()[0]


def _is_busy(err: sqlite3.Error) -> bool:
    code = getattr(err, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
    return "locked" in str(err) or "busy" in str(err)


def _retry_busy(action: Callable[[], Any], timeout: float) -> Any:
    """Run ``action``, retrying with capped exponential backoff while SQLite reports the
    database busy or locked (SQLite's own busy handler does not cover every case, e.g. the
    journal-mode switch of concurrent first openers), for at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    pause = 0.005
    while True:
        try:
            return action()
        except sqlite3.OperationalError as err:
            if not _is_busy(err) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)  # a backoff between attempts, not a wait for an event
        pause = min(pause * 2, 0.25)


def _column(value: Any) -> Any:
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, sort_keys=True, separators=(",", ":"))
    return value
