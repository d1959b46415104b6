"""The runtime trusts only its own schema (issue 20): hostile --db files, crafted here with
the sqlite3 module, are refused in one line with exit 2 before any of their triggers runs; a
dropped enforcement trigger is created again and enforces; values read back are checked."""

from __future__ import annotations

import io
import os
import shutil
import sqlite3
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest

from rtwo_vm.cli import main
from rtwo_vm.runtime import Runtime, StoreError
from rtwo_vm.runtime import trust
from rtwo_vm.runtime.schema import SCHEMA_VERSION, columns, expected_objects
from test_runtime_support import EXAMPLES, ROOT, dump

COUNTER = str(EXAMPLES / "counter.rasm")


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def refused(*args: str, fragment: str = "") -> str:
    code, out, err = run_cli(*args)
    assert code == 2, (args, code, out[:300], err[:300])
    assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and fragment in err, (fragment, err)
    return err


# Commands that only show records: a row that does not decode is shown as damaged in its
# place (exit status 1), never refused (issue 33); those that use it refuse it (exit 2).
SHOWING = {("results", "list"), ("contexts", "list"), ("contexts", "show"), ("policy", "list"),
           ("policy", "show"), ("contracts", "list"), ("contracts", "show"), ("vm", "list"),
           ("sandboxes", "list"), ("accounting", "list"), ("accounting", "totals"),
           ("violations", "list"), ("events", "list"), ("events", "show"), ("events", "sinks")}


JSON_SHOWING = {("contexts", "show"), ("policy", "show"), ("contracts", "show"),
                ("accounting", "totals"), ("events", "show"), ("events", "sinks")}


def shown_damaged(*args: str, fragment: str = "") -> str:
    """The command shows the records with the damaged one as damaged, exit status 1."""
    code, out, err = run_cli(*args)
    assert code == 1, (args, code, out[:300], err[:300])
    assert "Traceback" not in out + err and ('"damaged": true' in out or "\ndamaged " in out), out
    text = out + "".join(f"damaged {d['table']} {d['id']}: {d['reason']}\n"
                         for d in damaged_entries(out))
    assert fragment in text, (fragment, text[-2000:])
    return text


def damaged_entries(out: str) -> list:
    """The damaged entries a command printed as JSON (none when it printed a table)."""
    import json
    try:
        doc = json.loads(out)
    except ValueError:
        return []
    found: list = []

    def walk(value) -> None:
        if isinstance(value, dict):
            if value.get("damaged") is True:
                found.append(value)
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
    walk(doc)
    return found


def refused_or_shown(*args: str, fragment: str = "") -> str:
    if tuple(args[:2]) in SHOWING:
        return shown_damaged(*args, fragment=fragment)
    return refused(*args, fragment=fragment)


def run_child(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process, so that a hang fails the test instead of stalling it."""
    return subprocess.run([sys.executable, "-c", "import sys; from rtwo_vm.cli import main; "
                           "sys.exit(main(sys.argv[1:]))", *args], capture_output=True,
                          text=True, timeout=timeout, cwd=ROOT)


def sql(path, *statements: str) -> None:
    conn = sqlite3.connect(str(path))
    try:
        for statement in statements:
            conn.execute(statement)
        conn.commit()
    finally:
        conn.close()


@pytest.fixture
def db(tmp_path):
    """A database with the counter at 0x100 and one recorded call."""
    path = tmp_path / "vm.db"
    assert run_cli("deploy", COUNTER, "--db", str(path))[0] == 0
    assert run_cli("call", "0x100", "--db", str(path))[0] == 0
    return path


# -- hostile triggers ------------------------------------------------------------------------

REWRITER = ("CREATE TRIGGER rewrite AFTER INSERT ON results BEGIN UPDATE results SET "
            "output = '0xdeadbeef' WHERE result_id = NEW.result_id; END")


def test_a_result_rewriting_trigger_is_refused_before_it_runs(db):
    sql(db, REWRITER)
    before = dump(db)
    refused("call", "0x100", "--db", str(db), fragment="unknown trigger 'rewrite' on results")
    refused("results", "list", "--db", str(db), fragment="unknown trigger 'rewrite'")
    assert dump(db) == before  # nothing recorded, nothing rewritten


def test_the_rewriter_is_live_without_the_check(db, monkeypatch):
    """The planted bug: with the schema check disabled, the trigger rewrites the recorded
    output while the call reports the real one, which is what the check prevents."""
    sql(db, REWRITER)
    monkeypatch.setattr(trust, "verify", lambda conn, path: [])
    code, out, _ = run_cli("call", "0x100", "--db", str(db))
    assert code == 0 and "output 0x0200000000000000" in out
    conn = sqlite3.connect(str(db))
    outputs = [r[0] for r in conn.execute("SELECT output FROM results ORDER BY rowid")]
    conn.close()
    assert outputs == ["0x0100000000000000", "0xdeadbeef"]
    # Even then the rewritten row is not shown as if recorded: it differs from its digest.
    monkeypatch.undo()
    sql(db, "DROP TRIGGER rewrite")
    shown_damaged("results", "list", "--db", str(db), fragment="output differs from the compared result")


def test_a_recursive_trigger_is_refused_without_hanging(db):
    sql(db, "CREATE TRIGGER spin AFTER INSERT ON outbox BEGIN SELECT count(*) FROM (WITH "
            "RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT x FROM c); END")
    before = dump(db)
    done = run_child("call", "0x100", "--db", str(db))
    assert done.returncode == 2 and "unknown trigger 'spin' on outbox" in done.stderr
    assert done.stderr.count("\n") == 1 and dump(db) == before


def test_a_blob_inserting_trigger_is_refused_and_the_file_does_not_grow(db):
    sql(db, "CREATE TRIGGER grow AFTER INSERT ON stage_history BEGIN INSERT INTO meta VALUES "
            "('junk' || NEW.seq || NEW.context_id, zeroblob(900000000)); END")
    size = os.path.getsize(db)
    refused("call", "0x100", "--db", str(db), fragment="unknown trigger 'grow' on stage_history")
    assert os.path.getsize(db) == size
    assert not os.path.exists(f"{db}-wal") or os.path.getsize(f"{db}-wal") < 1 << 20


# -- the enforcement trigger -----------------------------------------------------------------

ILLEGAL = ("INSERT INTO stage_history SELECT context_id, 10, 'executing', 'finalized', 'now' "
           "FROM contexts LIMIT 1")


def test_a_dropped_enforcement_trigger_is_created_again_and_enforces(db):
    sql(db, "DROP TRIGGER stage_history_follows_lifecycle", "DROP INDEX outbox_by_stream")
    conn = sqlite3.connect(str(db))
    conn.execute(ILLEGAL)  # without the trigger the database takes an illegal transition
    conn.rollback()
    conn.close()
    code, out, err = run_cli("contexts", "list", "--db", str(db))  # a reader opens it
    assert code == 0, err
    conn = sqlite3.connect(str(db))
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master WHERE name IN "
                            "('stage_history_follows_lifecycle', 'outbox_by_stream')").fetchall()
        assert sorted(r[:2] for r in rows) == [("index", "outbox_by_stream"),
                                               ("trigger", "stage_history_follows_lifecycle")]
        fresh = expected_objects(SCHEMA_VERSION)
        assert all(r[2] == fresh[(r[0], r[1])].raw for r in rows)  # the DDL's own text
        with pytest.raises(sqlite3.IntegrityError, match="illegal lifecycle transition"):
            conn.execute(ILLEGAL)
    finally:
        conn.close()
    code, out, _ = run_cli("call", "0x100", "--db", str(db))  # and the runtime records again
    assert code == 0 and "committed > finalized" in out


def test_a_permissive_copy_of_the_enforcement_trigger_is_refused(db):
    sql(db, "DROP TRIGGER stage_history_follows_lifecycle",
        "CREATE TRIGGER stage_history_follows_lifecycle BEFORE INSERT ON stage_history "
        "WHEN 0 BEGIN SELECT RAISE(ABORT, 'illegal lifecycle transition'); END")
    refused("call", "0x100", "--db", str(db),
            fragment="altered trigger 'stage_history_follows_lifecycle' on stage_history")


def test_white_space_alone_does_not_alter_an_object_but_inside_quotes_it_does(db):
    trigger = expected_objects(SCHEMA_VERSION)[("trigger", "stage_history_is_append_only")].raw
    assert "BEFORE UPDATE ON" in trigger and "'stage history is append-only'" in trigger
    sql(db, "DROP TRIGGER stage_history_is_append_only",
        trigger.replace("BEFORE UPDATE ON", "BEFORE\n\tUPDATE    ON"))
    assert run_cli("contexts", "list", "--db", str(db))[0] == 0
    sql(db, "DROP TRIGGER stage_history_is_append_only",
        trigger.replace("'stage history", "'stage  history"))
    refused("contexts", "list", "--db", str(db), fragment="altered trigger 'stage_history_is_append_only'")


@pytest.mark.parametrize("statement, fragment", [
    ("CREATE VIEW peek AS SELECT * FROM results", "unknown view 'peek': the runtime uses only"),
    ("CREATE TABLE extra (x)", "unknown table 'extra'"),
    ("CREATE INDEX results_by_output ON results(output)", "unknown index 'results_by_output'"),
    ("ANALYZE", "unknown table 'sqlite_stat1'"),
    ("ALTER TABLE results ADD COLUMN note TEXT DEFAULT 'x'", "altered table 'results'"),
    ("DROP TABLE delivery_failures", "table 'delivery_failures' is missing"),
])
def test_an_object_the_runtime_does_not_create_is_refused(db, statement, fragment):
    sql(db, statement)
    before = dump(db)
    refused("contexts", "list", "--db", str(db), fragment=fragment)
    refused("deploy", COUNTER, "--address", "0x200", "--db", str(db), fragment=fragment)
    assert dump(db) == before


def test_the_connection_does_not_trust_the_schema(db):
    with Runtime(db) as rt:
        assert rt.store.one("PRAGMA trusted_schema")[0] == 0
        assert rt.store.one("PRAGMA cell_size_check")[0] == 1


# -- files that are not databases ------------------------------------------------------------

def test_a_fifo_as_database_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "fifo.db"
    os.mkfifo(fifo)
    for args in (("call", "0x100"), ("contexts", "list"), ("deploy", COUNTER)):
        done = run_child(*args, "--db", str(fifo), timeout=60)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert f"{fifo}: not a regular file" in done.stderr


def test_a_fifo_as_the_journal_is_refused_without_hanging(db):
    os.mkfifo(f"{db}-journal")
    done = run_child("contexts", "list", "--db", str(db))
    assert done.returncode == 2 and "journal is not a regular file" in done.stderr


def test_a_folder_a_device_and_a_file_that_is_not_sqlite(tmp_path, db):
    refused("contexts", "list", "--db", str(tmp_path), fragment="not a regular file")
    refused("contexts", "list", "--db", "/dev/null", fragment="not a regular file")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"SQLite format 2\x00" + bytes(200))
    refused("contexts", "list", "--db", str(junk), fragment="junk.db: not an SQLite database")


def test_a_link_to_a_database_is_used_and_a_link_to_nothing_is_refused(tmp_path, db):
    link = tmp_path / "link.db"
    link.symlink_to(db)
    code, out, _ = run_cli("contexts", "list", "--db", str(link))
    assert code == 0 and "1 shown" in out
    dangling = tmp_path / "dangling.db"
    dangling.symlink_to(tmp_path / "elsewhere.db")
    refused("deploy", COUNTER, "--db", str(dangling), fragment="symbolic link to nothing")
    assert not (tmp_path / "elsewhere.db").exists()


def test_schema_versions_of_another_release_are_refused(tmp_path, db):
    sql(db, "DROP TABLE call_requests")  # the schema-7 table: what follows is about older ones
    sql(db, "PRAGMA user_version = 3")  # a version-4 schema claiming to be version 3
    refused("contexts", "list", "--db", str(db), fragment="unknown index 'accounting_by_status'")
    for index in ("violations_by_time", "violations_by_severity", "results_by_status",
                  "sandboxes_by_status", "accounting_by_status"):
        sql(db, f"DROP INDEX {index}")
    sql(db, "PRAGMA user_version = 2")  # a version-3 schema claiming to be version 2
    refused("contexts", "list", "--db", str(db), fragment="altered table 'contracts'")
    sql(db, "PRAGMA user_version = -7")
    refused("contexts", "list", "--db", str(db), fragment="has schema -7, not one of")
    sql(db, f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    refused("contexts", "list", "--db", str(db), fragment="newer than this runtime's")
    with pytest.raises(StoreError, match="newer"):
        Runtime(db)


# -- values read back ------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["abc", str(10 ** 23), "-1", "", " 5", "1e3", "0x10",
                                   str((1 << 63) - 1)])
def test_a_bad_context_counter_is_refused_naming_it(db, value):
    sql(db, f"UPDATE meta SET value = '{value}' WHERE key = 'context_seq'")
    before = dump(db)
    refused("call", "0x100", "--db", str(db), fragment="meta context_seq: value holds")
    assert dump(db) == before


def test_a_context_counter_stored_as_a_blob_is_refused(db):
    sql(db, "UPDATE meta SET value = x'31' WHERE key = 'context_seq'")
    refused("call", "0x100", "--db", str(db),
            fragment="meta context_seq: value holds a blob of 1 bytes, not text")


@pytest.fixture
def policy_db(db):
    code, out, _ = run_cli("policy", "create", "--forbid", "TIME", "--db", str(db))
    assert code == 0
    import json
    return db, json.loads(out)["policyId"]


@pytest.mark.parametrize("column, value, fragment", [
    ("forbidden_operations", "'{bad'", "forbidden_operations holds '{bad', not JSON"),
    ("forbidden_operations", "'" + "[" * 200 + "]" * 200 + "'", "not JSON (at most 16 levels)"),
    ("forbidden_operations", "'[1]'", "forbiddenOperations must be tuple[str, ...]"),
    ("forbidden_operations", "'[\"NOPE\"]'", "names unknown operation 'NOPE'"),
    ("allowed_operations", "'\"ADD\"'", "allowedOperations must be tuple[str, ...]"),
    ("forbidden_operations", "x'5b5d'", "forbidden_operations holds a blob of 2 bytes"),
    ("time_access_policy", "'whenever'", "timeAccessPolicy must be one of"),
    ("status", "'gone'", "status must be one of active, retired, got 'gone'"),
])
def test_bad_policy_values_are_refused_naming_the_policy(policy_db, column, value, fragment):
    db, policy = policy_db
    sql(db, f"UPDATE policies SET {column} = {value} WHERE policy_id = '{policy}'")
    refused("call", "0x100", "--policy", policy, "--db", str(db), fragment=f"policies {policy}: ")
    for args in (("policy", "list"), ("policy", "show", policy)):
        shown_damaged(*args, "--db", str(db), fragment=f"damaged policies {policy}: "
                      if args[1] == "list" else policy)
    shown_damaged("policy", "show", policy, "--db", str(db), fragment=fragment)


@pytest.mark.parametrize("statement, command, fragment", [
    ("UPDATE outbox SET payload = '[1' WHERE event_id = 1", ("events", "list"),
     "outbox 1: payload holds '[1', not JSON"),
    ("UPDATE outbox SET payload = '[]' WHERE event_id = 1", ("events", "show", "1"),
     "outbox 1: payload holds '[]', not a JSON object"),
    ("UPDATE outbox SET type = 'made.up' WHERE event_id = 1", ("events", "list"),
     "outbox 1: type holds 'made.up', not one of"),
    ("UPDATE contracts SET address = 'zzz'", ("contracts", "list"),
     "contracts zzz: address holds 'zzz', not a word"),
    ("UPDATE contracts SET code = 'text'", ("call", "0x100"), "contracts 0x100: code holds 'text', not a blob"),
    ("UPDATE contexts SET depth = -3", ("contexts", "list"), "depth holds -3, not a non-negative integer"),
    ("UPDATE contexts SET status = 'elsewhere'", ("contexts", "list"), "status must be one of"),
    ("UPDATE stage_history SET stage = 'nowhere' WHERE seq = 3", ("contexts", "show", "CTX"),
     "stage holds 'nowhere', not one of"),
    ("UPDATE results SET error = 7", ("contexts", "list"), "error holds '7', not one of"),
    ("UPDATE results SET error_pc = x'00'", ("results", "list"), "error_pc holds a blob of 1 bytes"),
    ("UPDATE results SET compared = '{}'", ("results", "list"), "digest is not the SHA-256"),
    ("UPDATE accounting SET compute_units = 1.5", ("accounting", "totals"),
     "compute_units holds 1.5, not a non-negative integer"),
    ("UPDATE meta SET value = 'no root' WHERE key = 'state_root'", ("call", "0x100"),
     "meta state_root: value holds 'no root', not 64 lowercase hex digits"),
    ("DELETE FROM meta WHERE key = 'context_seq'", ("call", "0x100"), "meta context_seq: missing"),
    ("UPDATE storage SET key = 'k'", ("contracts", "show", "0x100"), "storage 0x100/k: key holds 'k'"),
])
def test_damaged_rows_are_shown_as_damaged_or_refused_naming_the_row(db, statement, command, fragment):
    conn = sqlite3.connect(str(db))
    context = conn.execute("SELECT context_id FROM contexts").fetchone()[0]
    conn.close()
    sql(db, "PRAGMA foreign_keys = OFF", "DROP TRIGGER stage_history_is_append_only", statement)
    args = [context if a == "CTX" else a for a in command]
    refused_or_shown(*args, "--db", str(db), fragment=fragment)


def test_damaged_delivery_rows_are_reported_in_one_line(tmp_path, db):
    out = tmp_path / "events.jsonl"
    assert run_cli("events", "sink-add", "jsonl", str(out), "--db", str(db))[0] == 0
    name = f"jsonl:{out.resolve()}"
    sql(db, f"INSERT INTO delivery_failures VALUES ('{name}', 1, 'many', 'x', 'now', 0, NULL)")
    code, text, _ = run_cli("events", "deliver", "--db", str(db))
    assert code == 1 and text == (f"{name}: 0 delivered, 0 failed, 0 dead, 0 left; damaged: "
                                  f"delivery_failures {name}/1: attempts holds 'many', not a "
                                  "non-negative integer (the database was changed outside the "
                                  "runtime); the pass stopped\n"), text
    shown_damaged("events", "sinks", "--db", str(db), fragment="attempts holds 'many'")
    sql(db, "DELETE FROM delivery_failures", f"UPDATE sinks SET config = '[]' WHERE name = '{name}'")
    code, text, _ = run_cli("events", "deliver", "--db", str(db))
    assert code == 1 and text.startswith(f"{name}: 0 delivered, 0 failed, 0 dead, 0 left; damaged: "
                                         "config holds '[]', not a JSON object"), text
    sql(db, f"UPDATE sinks SET config = '{{\"timeout\": -1}}' WHERE name = '{name}'")
    shown_damaged("events", "sinks", "--db", str(db), fragment="sink option timeout")
    assert not out.exists()


# -- every column the runtime reads, damaged ---------------------------------------------------

# The command that reads each table's rows (lifecycle_transitions is rewritten from the spec
# on opening, deliveries is only looked up by key, sqlite_sequence is SQLite's).
READERS = {"meta": ("call", "0x100"), "contracts": ("contracts", "list"),
           "storage": ("contracts", "show", "0x101"), "vms": ("vm", "list"),
           "policies": ("policy", "list"), "contexts": ("contexts", "list"),
           "stage_history": ("contexts", "show", "CTX"), "sandboxes": ("sandboxes", "list"),
           "accounting": ("accounting", "list"), "results": ("results", "list"),
           "violations": ("violations", "list"), "outbox": ("events", "list"),
           "sinks": ("events", "sinks"), "delivery_failures": ("events", "sinks")}
# Columns a reader selects its rows by (a row with another value there is not one it reads),
# and outbox.event_id, the rowid, which SQLite itself keeps an integer.
LEFT_OUT = {("stage_history", "context_id"), ("storage", "address"), ("outbox", "event_id")}
ONE_ROW = {"storage": "address = '0x101' AND key = '0x0'", "meta": "key = 'context_seq'",
           "delivery_failures": "event_id = (SELECT min(event_id) FROM delivery_failures)"}


@pytest.fixture(scope="module")
def full_db(tmp_path_factory):
    """A database with a row in every table the runtime reads."""
    path = tmp_path_factory.mktemp("full") / "vm.db"
    db = ("--db", str(path))
    for args in (("deploy", str(EXAMPLES / "proxy.rasm"), "--address", "0x100"),
                 ("deploy", COUNTER, "--address", "0x101", "--storage", "0=5"),
                 ("policy", "create", "--forbid", "TIME"), ("call", "0x100", "--caller", "1"),
                 ("call", "0x101", "--compute", "10"),
                 ("events", "sink-add", "webhook", "http://127.0.0.1:9/h", "--max-attempts", "1"),
                 ("events", "deliver", "--deadline", "2")):
        assert run_cli(*args, *db)[0] in (0, 1), args
    conn = sqlite3.connect(str(path))
    counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in READERS}
    context = conn.execute("SELECT context_id FROM contexts WHERE depth = 1").fetchone()[0]
    conn.close()
    assert all(counts.values()), counts
    return path, context


@pytest.mark.parametrize("table, column", [
    (t, c) for t in READERS for c in columns(t) if (t, c) not in LEFT_OUT])
def test_every_column_read_back_is_checked(full_db, tmp_path, table, column):
    """The declared type of each column (from the DDL, so a new column is covered) broken in one row: a blob where text,
    a number or JSON belongs, text where the code's bytes belong; the command reading the
    table refuses it in one line naming the table, never with an internal error."""
    source, context = full_db
    path = tmp_path / "damaged.db"
    shutil.copy(source, path)
    value = "'text'" if column == "code" else "x'00'"
    where = ONE_ROW.get(table, f"rowid = (SELECT min(rowid) FROM {table})")
    sql(path, "PRAGMA foreign_keys = OFF", "DROP TRIGGER stage_history_is_append_only",
        f"UPDATE {table} SET {column} = {value} WHERE {where}")
    args = [context if a == "CTX" else a for a in READERS[table]]
    if tuple(args[:2]) in SHOWING:
        shown_damaged(*args, "--db", str(path), fragment=f'"table": "{table}"'
                      if tuple(args[:2]) in JSON_SHOWING else f"damaged {table} ")
    else:
        refused(*args, "--db", str(path), fragment=f"rtwo-vm: error: {table} ")
