"""Damaged rows are shown as damaged, never a whole page's failure (issue 33).

One real database, written by the real CLI (a deployment, four calls and one that runs out
of compute), then damaged with the sqlite3 module as someone else's file could be: a JSON
column that does not parse, a number stored as text, a NULL where a charged record needs a
value, huge values whose sum leaves SQLite's integers, a result pointing to a context that
does not exist, an unknown lifecycle stage, a sink's options that are not an object and an
event whose payload does not parse. The real CLI (its own process) and a real ``rtwo-vm
serve`` (HTTP over a socket) then show every record: the damaged ones as damaged entries
naming their id and why, the others as they are."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from server_support import serving
from test_runtime_support import EXAMPLES, ROOT

SQLITE_MAX = (1 << 63) - 1


def cli(*args: str, db: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT, env=env)


def ids(db: Path) -> dict:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT c.context_id, r.result_id, a.accounting_id, a.fee FROM contexts c "
                        "JOIN results r USING (context_id) JOIN accounting a USING (context_id) "
                        "ORDER BY c.seq").fetchall()
    conn.close()
    return {"contexts": [r[0] for r in rows], "results": [r[1] for r in rows],
            "accounting": [r[2] for r in rows], "fees": [r[3] for r in rows]}


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    """(database, ids, the environment of the processes, the serving server)."""
    folder = tmp_path_factory.mktemp("damaged")
    env = {**os.environ, "RTWO_VM_SINK_KEY_FILE": str(folder / "key" / "sink.key")}
    db = folder / "vm.db"
    for args in (("deploy", str(EXAMPLES / "counter.rasm")), ("call", "0x100"), ("call", "0x100"),
                 ("call", "0x100"), ("call", "0x100"), ("call", "0x100", "--compute", "10"),
                 ("events", "sink-add", "jsonl", str(folder / "e.jsonl"))):
        assert cli(*args, db=db, env=env).returncode in (0, 1), args
    found = ids(db)
    a, b, c, d, e = found["contexts"]
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("DROP TRIGGER stage_history_is_append_only")   # made again on opening
        for statement, args in (
                ("UPDATE results SET compared = '{bad' WHERE context_id = ?", (a,)),
                ("UPDATE accounting SET compute_units = 'lots' WHERE context_id = ?", (b,)),
                ("UPDATE accounting SET fee = NULL WHERE context_id = ?", (c,)),
                ("UPDATE accounting SET fee = ? WHERE context_id IN (?, ?)", (SQLITE_MAX, a, e)),
                ("UPDATE results SET context_id = 'ctx_nowhere' WHERE context_id = ?", (d,)),
                ("UPDATE stage_history SET stage = 'nowhere' WHERE context_id = ? AND seq = 3",
                 (e,)),
                ("UPDATE sinks SET config = '[]'", ()),
                ("UPDATE outbox SET payload = '[1' WHERE event_id = 2", ())):
            conn.execute(statement, args)
    conn.close()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RTWO_VM_SINK_KEY_FILE", env["RTWO_VM_SINK_KEY_FILE"])
        with serving(folder, db=db) as server:
            yield db, found, env, server


def entry(items: list, table: str, id_: str) -> dict:
    (found,) = [i for i in items if i.get("damaged") and i["table"] == table and i["id"] == id_]
    return found


def test_the_api_collections_show_damaged_rows_in_place(damaged):
    db, found, _, server = damaged
    with server.client() as http:
        results = http.get("/api/v1/results")
        accounting = http.get("/api/v1/accounting")
        events = http.get("/api/v1/events?limit=5")
        sinks = http.get("/api/v1/events/sinks")
        overview = http.get("/api/v1/overview")
    assert [r.status_code for r in (results, accounting, events, sinks, overview)] == [200] * 5
    items = results.json()["items"]
    bad = entry(items, "results", found["results"][0])
    assert bad["reason"] == ("compared holds '{bad', not JSON (at most 16 levels) (the database "
                             "was changed outside the runtime)")
    # d's result points to no context: not on a page read in its context's order
    assert [i["resultId"] for i in items if not i.get("damaged")] == [found["results"][i]
                                                                      for i in (1, 2, 4)]
    items = accounting.json()["items"]
    assert entry(items, "accounting", found["accounting"][1])["reason"].startswith(
        "compute_units holds 'lots', not a non-negative integer")
    assert entry(items, "accounting", found["accounting"][2])["reason"].startswith(
        "RTWOResourceAccounting.fee and every unit must be set for status charged")
    assert [i["fee"] for i in items if not i.get("damaged")] == [SQLITE_MAX, found["fees"][3],
                                                                 SQLITE_MAX]
    assert entry(events.json()["items"], "outbox", "2")["reason"].startswith(
        "payload holds '[1', not JSON")
    (sink,) = sinks.json()["sinks"]
    assert sink["damaged"] and sink["reason"].startswith("config holds '[]', not a JSON object")


def test_a_context_with_damaged_parts_shows_the_others(damaged):
    db, found, _, server = damaged
    a, b, c, d, e = found["contexts"]
    with server.client() as http:
        answers = {ctx: http.get(f"/api/v1/contexts/{ctx}") for ctx in (a, d, e)}
    assert {k: r.status_code for k, r in answers.items()} == {a: 200, d: 200, e: 200}
    record = answers[d].json()
    assert record["context"]["contextId"] == d and record["accounting"]["contextId"] == d
    assert record["result"] == {"damaged": True, "table": "results", "id": d, "reason":
                                f"the result of context {d} is missing (the database was "
                                "changed outside the runtime)"}
    history = answers[e].json()["history"]
    assert [h.get("stage") for h in history[:3]] == ["requested", "validated", "policy_bound"]
    assert history[3]["damaged"] and history[3]["id"] == f"{e}/3"
    assert history[3]["reason"].startswith("stage holds 'nowhere', not one of requested")
    assert answers[a].json()["result"]["id"] == found["results"][0]


def test_the_dashboard_pages_name_the_damaged_rows(damaged):
    db, found, _, server = damaged
    a, b, c, d, e = found["contexts"]
    pages = ["/", "/contexts", "/violations", "/events", "/events?before=3"] + [f"/contexts/{x}" for x in (a, d, e)] \
        + [f"/results/{found['results'][0]}", f"/results/{found['results'][3]}",
           f"/accounting/{b}", f"/accounting/{c}"]
    with server.client() as http:
        answers = {p: http.get(p) for p in pages}
    assert {p: r.status_code for p, r in answers.items()} == {p: 200 for p in pages}
    fee = f"{2 * SQLITE_MAX + found['fees'][3]:,}"   # the sum past SQLite's integers
    assert f"fee {fee}; damaged records left out: {found['accounting'][1]}" in answers["/"].text
    assert "1 damaged sink row" in answers["/"].text
    assert f"damaged</span> results {found['results'][0]}: compared holds" in \
        answers[f"/results/{found['results'][0]}"].text
    assert "damaged</span> contexts ctx_nowhere: the context of result " \
        f"{found['results'][3]} is missing" in answers[f"/results/{found['results'][3]}"].text
    assert f"damaged</span> accounting {found['accounting'][1]}: compute_units holds" in \
        answers[f"/accounting/{b}"].text
    assert f"damaged</span> stage_history {e}/3: stage holds" in answers[f"/contexts/{e}"].text
    assert "damaged</span> outbox 2: payload holds" in answers["/events?before=3"].text


def test_the_cli_shows_damaged_rows_in_place_and_exits_1(damaged):
    db, found, env, _ = damaged
    a, b, c, d, e = found["contexts"]
    listed = cli("results", "list", db=db, env=env)
    assert listed.returncode == 1 and listed.stderr == ""
    lines = listed.stdout.splitlines()
    assert lines[-1] == (f"damaged results {found['results'][0]}: compared holds '{{bad', not "
                         "JSON (at most 16 levels) (the database was changed outside the runtime)")
    assert lines[-2] == "5 shown" and all(r in listed.stdout for r in found["results"])
    totals = cli("accounting", "totals", db=db, env=env)
    assert totals.returncode == 1
    doc = json.loads(totals.stdout)
    assert (doc["contexts"], doc["fee"]) == (3, 2 * SQLITE_MAX + found["fees"][3])
    assert [x["id"] for x in doc["damaged"]] == found["accounting"][1:3]
    shown = cli("contexts", "show", d, db=db, env=env)
    assert shown.returncode == 1 and json.loads(shown.stdout)["result"]["damaged"] is True
    contexts = cli("contexts", "list", db=db, env=env)   # the contexts are whole
    assert contexts.returncode == 0 and all(x in contexts.stdout for x in found["contexts"])
    events = cli("events", "list", "--limit", "3", db=db, env=env)
    assert events.returncode == 1 and "damaged outbox 2: payload holds '[1'" in events.stdout
    ready = cli("readiness", "--only", "database", db=db, env=env)
    assert ready.returncode == 1 and "1 damaged sink row (sinks jsonl:" in ready.stdout
