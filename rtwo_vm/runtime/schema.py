"""The runtime's schema: the DDL of every migration, and what it creates.

The schema version is SQLite's ``user_version``; :data:`MIGRATIONS` upgrades any older file
in order (store.py runs them, each in its own transaction). Everything else the runtime knows
about its own schema is derived from this DDL, never written a second time:
:func:`expected_objects` runs the migrations into a private in-memory database and reads back
its ``sqlite_master`` (tables, indexes, triggers, automatic indexes), and :func:`columns`
reads the declared type, nullability and primary key of each column from it. trust.py
compares a file's schema with the first; stored.py checks the values read back with the
second.
"""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping

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

# Indexes that keep the server's pages flat as the records grow (issue 26): violations in
# their own order (creation time, then id) instead of their context's seq across a join, and
# the columns the overview breaks its figures down by, so that a breakdown or a capped count
# reads an index range instead of the table.
_SCHEMA_4_PAGES = """
CREATE INDEX violations_by_time ON violations(created_at, violation_id);
CREATE INDEX violations_by_severity ON violations(severity);
CREATE INDEX results_by_status ON results(execution_status);
CREATE INDEX sandboxes_by_status ON sandboxes(status);
CREATE INDEX accounting_by_status ON accounting(status);
"""

# Sinks are data (issue 33, rtwo_vm/runtime/sinks/approval.py): a sink is delivered to only
# when ``confirmation`` holds the HMAC of what its row says under this machine's sink key;
# ``confirmed_by`` notes who confirmed it (user@host, shown, never trusted). Sinks of older
# files have neither and are confirmed again (events sink-confirm).
_SCHEMA_5_SINK_CONFIRMATION = """
ALTER TABLE sinks ADD COLUMN confirmation TEXT;
ALTER TABLE sinks ADD COLUMN confirmed_by TEXT;
"""

# Spec versions are data (chapter 1.7 from 1.1): a contract is deployed under a version and its
# calls run under it (chapter 10.7). Contracts of older files were deployed when 1.0 was the
# only version: they are 1.0's.
_SCHEMA_6_SPEC_VERSIONS = """
ALTER TABLE contracts ADD COLUMN spec_version TEXT NOT NULL DEFAULT '1.0';
"""

# The message and context fields of each entry call that no other record holds (the call data,
# the block time and the seed, as hex; chapter 7.3.1), so that the calls recorded can be run
# again: ``rtwo-vm scenario export`` writes them as a scenario vector (chapter 11.9). Contexts
# of older files have no row: they cannot be exported.
_SCHEMA_7_REQUESTS = """
CREATE TABLE call_requests (
    context_id TEXT PRIMARY KEY REFERENCES contexts(context_id), call_data TEXT NOT NULL,
    block_time TEXT NOT NULL, random_seed TEXT NOT NULL) WITHOUT ROWID;
"""

# A violation raised at policy binding names the instruction refused (chapter 10.5): its
# mnemonic here, its offset in error_pc. Violations of older files have none.
_SCHEMA_8_REFUSED_INSTRUCTION = """
ALTER TABLE violations ADD COLUMN instruction TEXT;
"""

MIGRATIONS: tuple[str, ...] = (_SCHEMA_1, _SCHEMA_2, _SCHEMA_3_DELIVERY, _SCHEMA_4_PAGES,
                               _SCHEMA_5_SINK_CONFIRMATION, _SCHEMA_6_SPEC_VERSIONS,
                               _SCHEMA_7_REQUESTS, _SCHEMA_8_REFUSED_INSTRUCTION)
SCHEMA_VERSION = len(MIGRATIONS)


@dataclass(frozen=True)
class SchemaObject:
    """One row of sqlite_master, its SQL normalised (None for automatic indexes)."""

    type: str
    name: str
    table: str
    sql: str | None
    raw: str | None = field(default=None, compare=False)  # as written, to create it again


@dataclass(frozen=True)
class Column:
    name: str
    type: str        # the declared type: TEXT, INTEGER, REAL or BLOB
    not_null: bool
    key: int         # position in the primary key (0: not part of it)


def statements(script: str) -> list[str]:
    """Split a migration into statements (triggers hold ';' inside BEGIN ... END)."""
    out, current = [], []
    for line in script.strip().splitlines():
        current.append(line)
        text = "\n".join(current).strip()
        if text.endswith(";") and sqlite3.complete_statement(text):
            out.append(text)
            current = []
    return out


def normalise(sql: str | None) -> str | None:
    """SQL text with every run of white space outside quotes made one space (SQLite keeps the
    text as written; a reformatted but otherwise identical statement is the same object)."""
    if sql is None:
        return None
    out: list[str] = []
    quote: str | None = None
    space = False
    for char in sql.strip():
        if quote is not None:
            out.append(char)
            if char == quote:
                quote = None
            continue
        if char.isspace():
            space = True
            continue
        if space and out:
            out.append(" ")
        space = False
        out.append(char)
        if char in "'\"`[":
            quote = "]" if char == "[" else char
    return "".join(out)


def read_objects(conn: sqlite3.Connection) -> dict[tuple[str, str], SchemaObject]:
    """A database's schema objects by (type, name)."""
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return {(r[0], r[1]): SchemaObject(r[0], r[1], r[2], normalise(r[3]), r[3]) for r in rows}


def _reference(version: int) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for script in MIGRATIONS[:version]:
        for statement in statements(script):
            conn.execute(statement)
    return conn


@functools.cache
def expected_objects(version: int) -> Mapping[tuple[str, str], SchemaObject]:
    """What the migrations up to ``version`` create, read from a database they created."""
    if not 0 <= version <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {version}")
    conn = _reference(version)
    try:
        return MappingProxyType(read_objects(conn))
    finally:
        conn.close()


@functools.cache
def columns(table: str) -> Mapping[str, Column]:
    """The columns of one of the runtime's tables (current version), by name."""
    conn = _reference(SCHEMA_VERSION)
    try:
        rows = conn.execute("SELECT name, type, \"notnull\", pk FROM pragma_table_info(?)",
                            (table,)).fetchall()
    finally:
        conn.close()
    if not rows:
        raise KeyError(f"no table {table}")
    return MappingProxyType({r[0]: Column(r[0], r[1].upper(), bool(r[2]), r[3]) for r in rows})
