"""Durable records in SQLite: schema migrations, transactions and the world state.

One file (or ``:memory:``) holds deployed contracts and their storage, VMs, policies, contexts
with their stage history, sandboxes, accounting, results, violations and the event outbox
with its delivery log. The schema version is SQLite's ``user_version``; :data:`MIGRATIONS`
upgrades any older file in order, each step in its own transaction.

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

from reference_vm import Contract, StateView, WorldState
from reference_vm.errors import InternalInvariantError
from reference_vm.result import canonical
from rtwo_vm.runtime.catalog import catalog

GENESIS_STATE = "0" * 64

_SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE contracts (
    address TEXT PRIMARY KEY, code BLOB NOT NULL, code_hash TEXT NOT NULL,
    deployed_at TEXT NOT NULL);
CREATE TABLE storage (
    address TEXT NOT NULL REFERENCES contracts(address), key TEXT NOT NULL,
    value TEXT NOT NULL, PRIMARY KEY (address, key)) WITHOUT ROWID;
CREATE TABLE vms (
    vm_id TEXT PRIMARY KEY, vm_name TEXT NOT NULL, vm_version TEXT NOT NULL,
    runtime_compatibility TEXT NOT NULL, execution_mode TEXT NOT NULL, status TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE policies (
    policy_id TEXT PRIMARY KEY, allowed_operations TEXT, forbidden_operations TEXT NOT NULL,
    time_access_policy TEXT NOT NULL, randomness_policy TEXT NOT NULL,
    external_call_policy TEXT NOT NULL, status TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE contexts (
    context_id TEXT PRIMARY KEY, contract_id TEXT NOT NULL, caller_reference TEXT NOT NULL,
    transaction_reference TEXT NOT NULL, state_reference TEXT NOT NULL,
    resource_policy_id TEXT NOT NULL REFERENCES policies(policy_id), status TEXT NOT NULL,
    created_at TEXT NOT NULL, vm_id TEXT NOT NULL REFERENCES vms(vm_id), depth INTEGER NOT NULL,
    parent_context_id TEXT REFERENCES contexts(context_id), call_index INTEGER,
    seq INTEGER NOT NULL UNIQUE);
CREATE TABLE lifecycle_transitions (
    from_stage TEXT NOT NULL, to_stage TEXT NOT NULL, PRIMARY KEY (from_stage, to_stage));
CREATE TABLE stage_history (
    context_id TEXT NOT NULL REFERENCES contexts(context_id), seq INTEGER NOT NULL,
    stage TEXT NOT NULL, from_stage TEXT, at TEXT NOT NULL, PRIMARY KEY (context_id, seq));
CREATE TABLE sandboxes (
    sandbox_id TEXT PRIMARY KEY, context_id TEXT NOT NULL UNIQUE REFERENCES contexts(context_id),
    isolation_level TEXT NOT NULL, memory_limit_reference INTEGER,
    compute_limit_reference INTEGER, storage_access_policy TEXT NOT NULL, status TEXT NOT NULL,
    storage_limit_reference INTEGER, parent_sandbox_id TEXT REFERENCES sandboxes(sandbox_id));
CREATE TABLE accounting (
    accounting_id TEXT PRIMARY KEY, context_id TEXT NOT NULL UNIQUE REFERENCES contexts(context_id),
    compute_units INTEGER NOT NULL, memory_units INTEGER, storage_units INTEGER, fee INTEGER,
    status TEXT NOT NULL, storage_reads INTEGER, storage_writes INTEGER, storage_new_slots INTEGER);
CREATE TABLE results (
    result_id TEXT PRIMARY KEY, context_id TEXT NOT NULL UNIQUE REFERENCES contexts(context_id),
    output TEXT, state_changes TEXT, emitted_events TEXT, execution_status TEXT NOT NULL,
    created_at TEXT NOT NULL, error TEXT, error_pc INTEGER, compared TEXT NOT NULL,
    digest TEXT NOT NULL);
CREATE TABLE violations (
    violation_id TEXT PRIMARY KEY, context_id TEXT NOT NULL REFERENCES contexts(context_id),
    violation_type TEXT NOT NULL, severity TEXT NOT NULL, action_taken TEXT NOT NULL,
    status TEXT NOT NULL, created_at TEXT NOT NULL, code TEXT NOT NULL, error_pc INTEGER);
CREATE TABLE outbox (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT, stream TEXT NOT NULL, type TEXT NOT NULL,
    payload TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE sinks (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, target TEXT NOT NULL, created_at TEXT NOT NULL,
    start_after INTEGER NOT NULL DEFAULT 0);
CREATE TABLE deliveries (
    sink TEXT NOT NULL, event_id INTEGER NOT NULL REFERENCES outbox(event_id),
    delivered_at TEXT NOT NULL, PRIMARY KEY (sink, event_id)) WITHOUT ROWID;
CREATE TABLE delivery_failures (
    sink TEXT NOT NULL, event_id INTEGER NOT NULL, attempts INTEGER NOT NULL,
    last_error TEXT NOT NULL, last_at TEXT NOT NULL, PRIMARY KEY (sink, event_id)) WITHOUT ROWID;
CREATE TRIGGER stage_history_follows_lifecycle BEFORE INSERT ON stage_history
WHEN NOT (
    (NEW.seq = 0 AND NEW.from_stage IS NULL
     AND NEW.stage = (SELECT value FROM meta WHERE key = 'initial_stage'))
    OR (NEW.from_stage = (SELECT stage FROM stage_history
                          WHERE context_id = NEW.context_id AND seq = NEW.seq - 1)
        AND EXISTS (SELECT 1 FROM lifecycle_transitions
                    WHERE from_stage = NEW.from_stage AND to_stage = NEW.stage)))
BEGIN SELECT RAISE(ABORT, 'illegal lifecycle transition'); END;
CREATE TRIGGER stage_history_is_append_only BEFORE UPDATE ON stage_history
BEGIN SELECT RAISE(ABORT, 'stage history is append-only'); END;
"""

# Indexes for the list commands and the dispatcher (a second step, so that migrating a
# version-1 file is exercised by the tests).
_SCHEMA_2 = """
CREATE INDEX contexts_by_parent ON contexts(parent_context_id);
CREATE INDEX violations_by_context ON violations(context_id);
CREATE INDEX outbox_by_stream ON outbox(stream, event_id);
"""

# Delivery with retry state (rtwo_vm/runtime/delivery.py): each sink's options as JSON, and
# per failing event when it is due again and whether it was parked as dead.
_SCHEMA_3_DELIVERY = """
ALTER TABLE sinks ADD COLUMN config TEXT NOT NULL DEFAULT '{}';
ALTER TABLE delivery_failures ADD COLUMN next_at REAL NOT NULL DEFAULT 0;
ALTER TABLE delivery_failures ADD COLUMN dead_at TEXT;
"""

MIGRATIONS: tuple[str, ...] = (_SCHEMA_1, _SCHEMA_2, _SCHEMA_3_DELIVERY)
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(Exception):
    """The database cannot be used (newer schema, not an RTWO VM database, locked...)."""


def word_text(value: int) -> str:
    return hex(value)


class Store:
    """A connection to one database, with explicit transactions (autocommit otherwise)."""

    timeout = 30.0  # seconds to wait for a busy database before giving up

    def __init__(self, path: str | Path, *, create: bool = True, timeout: float = 30.0):
        self.path = str(path)
        self.timeout = timeout
        if not create and self.path != ":memory:" and not Path(self.path).exists():
            raise StoreError(f"no database at {self.path}")
        try:
            self.conn = sqlite3.connect(self.path, isolation_level=None, timeout=timeout,
                                        check_same_thread=False)
        except (sqlite3.Error, ValueError) as err:
            raise StoreError(f"cannot open {self.path}: {err}") from None
        try:
            _retry_busy(self._open, timeout)
        except sqlite3.DatabaseError as err:
            # Not a database, a truncated or corrupt one, a full disk, a device file...
            self.conn.close()
            raise StoreError(f"{self.path}: cannot use the database: {err}") from None
        except BaseException:
            self.conn.close()
            raise

    def _open(self) -> None:
        self.conn.row_factory = sqlite3.Row
        self.conn.execute("PRAGMA foreign_keys = ON")
        if self.path != ":memory:":
            # WAL: readers never block the writer; FULL: a commit is on disk when it returns.
            self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = FULL")
        self.migrate()
        self._sync_lifecycle()

    def close(self) -> None:
        self.conn.close()

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
                for statement in _statements(MIGRATIONS[number - 1]):
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
        stored = {(r[0], r[1]) for r in self.all("SELECT * FROM lifecycle_transitions")}
        if stored == wanted and self.meta("initial_stage") == cat.roles["initial"]:
            return
        with self.transaction() as tx:
            stored = {(r[0], r[1]) for r in self.all("SELECT * FROM lifecycle_transitions")}
            if stored == wanted and self.meta("initial_stage") == cat.roles["initial"]:
                return
            tx.execute("DELETE FROM lifecycle_transitions")
            tx.executemany("INSERT INTO lifecycle_transitions VALUES (?, ?)", sorted(wanted))
            self.set_meta(tx, "initial_stage", cat.roles["initial"])

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

    def all(self, sql: str, args: tuple = ()) -> list[sqlite3.Row]:
        return self.conn.execute(sql, args).fetchall()

    def meta(self, key: str) -> str:
        row = self.one("SELECT value FROM meta WHERE key = ?", (key,))
        if row is None:
            raise StoreError(f"meta {key} missing")
        return row[0]

    def set_meta(self, tx: sqlite3.Connection, key: str, value: str) -> None:
        tx.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))

    def next_context_seq(self, tx: sqlite3.Connection) -> int:
        """A number ordering contexts by commit (ids are random; this is not)."""
        seq = int(self.meta("context_seq")) + 1
        self.set_meta(tx, "context_seq", str(seq))
        return seq

    def contract_code(self, address: int) -> bytes | None:
        row = self.one("SELECT code FROM contracts WHERE address = ?", (word_text(address),))
        return None if row is None else bytes(row[0])

    def world_state(self) -> WorldState:
        """The world state as a view over the database: a CALL may name any address (chapter
        8.1), so every contract is reachable, but only what the execution touches is read,
        each contract's code and each storage slot by its primary key. Read it inside the
        transaction that holds the state still (execution.py does)."""
        return WorldState(_Contracts(self.conn))

    # -- writing --------------------------------------------------------------------------

    def advance_state_root(self, tx: sqlite3.Connection, change: Any) -> str:
        """Chain the state reference: SHA-256(previous root || canonical change)."""
        root = hashlib.sha256((self.meta("state_root") + canonical(change)).encode()).hexdigest()
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


def _statements(script: str) -> list[str]:
    """Split a migration into statements (triggers hold ';' inside BEGIN ... END)."""
    out, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        text = "\n".join(current).strip()
        if text.endswith(";") and sqlite3.complete_statement(text):
            out.append(text)
            current = []
    return out
