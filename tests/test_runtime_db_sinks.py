"""Sinks from a database are data (issue 33, chapter 10.8): a ``sinks`` row that someone else
wrote is delivered to only after the operator of this machine confirmed its exact target.

The databases are real SQLite files: made by the real CLI (deploy, call, sink-add), then
written as an attacker would, with the sqlite3 module, into the runtime's own schema. The
deliveries run through the real CLI in its own process and through a real ``rtwo-vm serve``
over HTTP; a real webhook receiver (tests/events_fixtures/http_sink.py) logs every request
it reads, so that "nothing was posted" is what it saw."""

from __future__ import annotations

import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

from events_support import HttpReceiver
from server_support import AUTH, serving
from rtwo_vm.runtime.schema import SCHEMA_VERSION
from test_runtime_support import DEFAULT_VMS, EXAMPLES, ROOT

COUNTER = str(EXAMPLES / "counter.rasm")
AT = "2025-01-01T00:00:00.000000+00:00"
# Events of one deployment and one call (13), and of each VM the call registers (registered,
# status_changed).
EVENTS = 13 + 2 * DEFAULT_VMS


def cli(*args: str, db: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, **(env or {})})


def recorded_db(tmp_path: Path) -> Path:
    """A database with the counter deployed and one recorded call (events 1 to 15)."""
    db = tmp_path / "vm.db"
    assert cli("deploy", COUNTER, db=db).returncode == 0
    assert cli("call", "0x100", db=db).returncode == 0
    return db


def plant_sink(db: Path, kind: str, target: str, *, name: str | None = None,
               config: str = "{}", confirmation: str | None = None) -> str:
    """Insert a sink row as someone else's database holds it."""
    name = name or f"{kind}:{target}"
    row = {"name": name, "kind": kind, "target": target, "created_at": AT, "start_after": 0,
           "config": config, "confirmation": confirmation, "confirmed_by": "op@here"}
    conn = sqlite3.connect(db)
    with conn:   # the columns the file's schema has (an older release's has fewer)
        have = [r[1] for r in conn.execute("PRAGMA table_info(sinks)") if r[1] in row]
        conn.execute(f"INSERT INTO sinks ({', '.join(have)}) VALUES "
                     f"({', '.join('?' for _ in have)})", tuple(row[c] for c in have))
    conn.close()
    return name


def skipped(line: str, name: str) -> bool:
    return (line.startswith(f"{name}: 0 delivered, 0 failed, 0 dead, ") and
            "not confirmed on this machine" in line and
            line.endswith("; skipped: check its target, then rtwo-vm events sink-confirm "
                          + shlex.quote(name)))


def test_a_sink_added_here_is_delivered_to_at_once(tmp_path):
    """The normal path: sink-add then deliver, no other step (the sink key is made on the
    way, readable by its owner only)."""
    db = recorded_db(tmp_path)
    out = tmp_path / "events.jsonl"
    added = cli("events", "sink-add", "jsonl", str(out), db=db)
    assert added.returncode == 0 and json.loads(added.stdout)["confirmed"] is True
    delivered = cli("events", "deliver", db=db)
    assert delivered.returncode == 0
    assert delivered.stdout == f"jsonl:{out}: {EVENTS} delivered, 0 failed, 0 dead, 0 left\n"
    assert len(out.read_text().splitlines()) == EVENTS
    key = Path(os.environ["RTWO_VM_SINK_KEY_FILE"])
    assert key.stat().st_mode & 0o777 == 0o600 and len(key.read_text()) == 65


def test_a_planted_jsonl_sink_writes_nothing_anywhere(tmp_path):
    """A row naming a file outside, with a confirmation made up or copied from another row:
    neither deliver nor call --deliver writes it, and each says so in one line."""
    db = recorded_db(tmp_path)
    outside = tmp_path / "elsewhere" / "loot.jsonl"
    outside.parent.mkdir()
    own = tmp_path / "own.jsonl"
    assert cli("events", "sink-add", "jsonl", str(own), db=db).returncode == 0
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    own_row = conn.execute("SELECT * FROM sinks").fetchone()
    copied = own_row["confirmation"] if "confirmation" in own_row.keys() else None
    conn.close()
    names = [plant_sink(db, "jsonl", str(outside)),
             plant_sink(db, "jsonl", str(outside) + ".2", confirmation="0" * 64),
             plant_sink(db, "jsonl", str(outside) + ".3", confirmation=copied)]
    done = cli("events", "deliver", db=db)
    assert done.returncode == 1, done.stderr
    lines = {line.split(": ")[0]: line for line in done.stdout.splitlines()}
    assert lines.pop(f"jsonl:{own}") == f"jsonl:{own}: {EVENTS} delivered, 0 failed, 0 dead, 0 left"
    assert sorted(lines) == sorted(names) and all(skipped(lines[n], n) for n in names), lines
    called = cli("call", "0x100", "--deliver", db=db)
    assert called.returncode == 3 and sum("not confirmed" in line for line in
                                           called.stdout.splitlines()) == 3
    assert list(outside.parent.iterdir()) == []
    assert len(own.read_text().splitlines()) == EVENTS + 11   # the own sink got the second call's (11) too


def test_a_planted_webhook_sink_posts_nothing_from_the_cli_or_the_server(tmp_path):
    db = recorded_db(tmp_path)
    with HttpReceiver(tmp_path / "hook.log", "ok") as hook:
        name = plant_sink(db, "webhook", hook.url + "?token=attacker", name="webhook:harmless")
        done = cli("events", "deliver", db=db)
        assert done.returncode == 1 and skipped(done.stdout.rstrip("\n"), name), done.stdout
        with serving(tmp_path, db=db) as server, server.client() as http:
            answer = http.post("/api/v1/events/deliver", headers=AUTH, json={})
            listed = http.get("/api/v1/events/sinks").json()
        assert answer.status_code == 200, answer.text
        report = answer.json()
        assert report["complete"] is False and report["delivery"][name]["delivered"] == 0
        assert "not confirmed on this machine" in report["delivery"][name]["error"]
        assert listed["sinks"][0]["confirmed"] is False
        assert hook.requests() == []          # the receiver read no request at all


def test_a_confirmed_sink_changed_afterwards_is_not_delivered_to(tmp_path):
    """The confirmation binds the row's target and options: a row edited after sink-add (its
    target moved, a signing secret's variable named) is skipped again."""
    db = recorded_db(tmp_path)
    own = tmp_path / "own.jsonl"
    assert cli("events", "sink-add", "jsonl", str(own), db=db).returncode == 0
    moved = tmp_path / "moved.jsonl"
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sinks SET target = ?", (str(moved),))
    conn.close()
    done = cli("events", "deliver", db=db)
    assert done.returncode == 1 and skipped(done.stdout.rstrip("\n"), f"jsonl:{own}")
    assert not moved.exists() and not own.exists()
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sinks SET target = ?, config = '{\"timeout\": 9}'", (str(own),))
    conn.close()
    done = cli("events", "deliver", db=db)
    assert done.returncode == 1 and "not confirmed" in done.stdout and not own.exists()


def test_sink_confirm_makes_a_planted_sink_deliverable_after_showing_its_target(tmp_path):
    db = recorded_db(tmp_path)
    target = tmp_path / "theirs.jsonl"
    name = plant_sink(db, "jsonl", str(target), name="jsonl:somewhere-nice")
    listed = cli("events", "sinks", db=db)
    assert listed.returncode == 0
    (sink,) = json.loads(listed.stdout)["sinks"]
    assert sink["confirmed"] is False and sink["confirmedBy"] is None   # the row says op@here
    assert listed.stderr == (f"sink {name} is not confirmed on this machine, so nothing is "
                             f"delivered to it: check its target ({target}), then rtwo-vm "
                             f"events sink-confirm {name}\n")
    confirmed = cli("events", "sink-confirm", name, db=db)
    assert confirmed.returncode == 0 and json.loads(confirmed.stdout)["confirmed"] is True
    assert confirmed.stderr == (f"confirmed sink {name} on this machine: events go to the jsonl "
                                f"target {target}\n")
    done = cli("events", "deliver", db=db)
    assert done.returncode == 0 and done.stdout == f"{name}: {EVENTS} delivered, 0 failed, 0 dead, 0 left\n"
    assert len(target.read_text().splitlines()) == EVENTS


def test_a_hostile_sink_name_is_quoted_in_the_hint(tmp_path):
    db = recorded_db(tmp_path)
    plant_sink(db, "jsonl", str(tmp_path / "x.jsonl"), name="x'; touch pwned; '")
    done = cli("events", "deliver", db=db)
    assert done.stdout.rstrip("\n").endswith(
        "rtwo-vm events sink-confirm 'x'\"'\"'; touch pwned; '\"'\"''"), done.stdout


def test_a_database_from_another_machine_is_confirmed_again(tmp_path):
    """Another sink key (another machine, another user): the sinks its owner added are
    skipped here until confirmed here."""
    db = recorded_db(tmp_path)
    out = tmp_path / "events.jsonl"
    assert cli("events", "sink-add", "jsonl", str(out), db=db).returncode == 0
    here = {"RTWO_VM_SINK_KEY_FILE": str(tmp_path / "here" / "sink.key")}
    done = cli("events", "deliver", db=db, env=here)
    assert done.returncode == 1 and skipped(done.stdout.rstrip("\n"), f"jsonl:{out}")
    assert "(no sink key at " in done.stdout and not out.exists()
    assert cli("events", "sink-confirm", f"jsonl:{out}", db=db, env=here).returncode == 0
    done = cli("events", "deliver", db=db, env=here)
    assert done.returncode == 0 and len(out.read_text().splitlines()) == EVENTS


def test_a_sink_key_readable_by_others_is_refused(tmp_path):
    db = recorded_db(tmp_path)
    key = tmp_path / "open" / "sink.key"
    key.parent.mkdir()
    key.write_text("ab" * 32 + "\n")
    key.chmod(0o644)
    env = {"RTWO_VM_SINK_KEY_FILE": str(key)}
    added = cli("events", "sink-add", "jsonl", str(tmp_path / "e.jsonl"), db=db, env=env)
    assert added.returncode == 2 and added.stderr == (
        f"rtwo-vm: error: sink key {key}: readable or writable by others (chmod 600 {key})\n")
    assert json.loads(cli("events", "sinks", "--json", db=db).stdout)["sinks"] == []


def _schema_4_file(path: Path, sink: Path) -> None:
    """A database as the release before sink confirmation wrote it (schema 4), with a sink."""
    from rtwo_vm.runtime.schema import MIGRATIONS, statements
    conn = sqlite3.connect(path)
    with conn:
        for script in MIGRATIONS[:4]:
            for statement in statements(script):
                conn.execute(statement)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("initial_stage", "requested"), ("state_root", "0" * 64), ("context_seq", "0")])
        conn.execute("INSERT INTO sinks (name, kind, target, created_at, start_after, config) "
                     "VALUES (?, 'jsonl', ?, ?, 0, '{}')", (f"jsonl:{sink}", str(sink), AT))
        conn.execute("PRAGMA user_version = 4")
    conn.close()


def test_an_older_file_is_migrated_and_its_sinks_are_confirmed_again(tmp_path):
    db = tmp_path / "old.db"
    out = tmp_path / "old.jsonl"
    _schema_4_file(db, out)
    assert cli("deploy", COUNTER, db=db).returncode == 0     # migrates the file to schema 5
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT confirmation FROM sinks").fetchone()[0] is None
    conn.close()
    done = cli("events", "deliver", db=db)
    assert done.returncode == 1 and skipped(done.stdout.rstrip("\n"), f"jsonl:{out}")
    assert not out.exists()
    assert cli("events", "sink-confirm", f"jsonl:{out}", db=db).returncode == 0
    assert cli("events", "deliver", db=db).returncode == 0
    assert len(out.read_text().splitlines()) == 1             # the deployment's event
