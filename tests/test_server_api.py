"""The JSON API of ``rtwo-vm serve`` over real HTTP: collections, records, filters, pages,
actions with and without the token, refusals in the spec's shape that change nothing, the
command's token-file and loopback rules, and the CLI sharing the server's database."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import spec
from server_support import AUTH, ROOT, STOPS, STORES, TOKEN, TRAPS, VERSION, code_hex, serving
from test_runtime_support import DEFAULT_VMS

API = "/api/v1"
BOUNDS = spec.raw("api", VERSION)["bounds"]
REFUSALS = {r["code"]: r["status"] for r in spec.raw("api", VERSION)["refusal"]}
OUTCOME = spec.raw("api", VERSION)["outcome_status"]["default"]


def violation_type(code: str) -> str:
    return next(name for name, t in spec.raw("sandbox", VERSION)["violation_type"].items()
                if code in t["codes"])


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server with a few records: stop at 0x100 called three times, trap at 0x200 once,
    and one call to the empty address 0x999 (recorded as rejected)."""
    tmp = tmp_path_factory.mktemp("api")
    with serving(tmp) as srv, srv.client(headers=AUTH) as c:
        assert c.post(f"{API}/contracts", json={"code": code_hex(STOPS)}).status_code == 201
        assert c.post(f"{API}/contracts", json={"code": code_hex(TRAPS), "address": "0x200"}
                      ).status_code == 201
        for to in ("0x100", "0x100", "0x100", "0x200", "0x999"):
            assert c.post(f"{API}/calls", json={"to": to, "caller": "0x1"}).status_code == 201
        yield srv


def _all_pages(c: httpx.Client, path: str, limit: int) -> list[dict]:
    items, cursor, totals = [], None, set()
    while True:
        doc = c.get(path, params={"limit": limit, **({"cursor": cursor} if cursor else {})}).json()
        assert len(doc["items"]) <= limit
        items += doc["items"]
        totals.add(doc["total"])
        cursor = doc["next"]
        if cursor is None:
            assert totals == {len(items)}
            return items


def test_collections_records_and_filters(server):
    with server.client() as c:   # reads need no credentials
        contexts = c.get(f"{API}/contexts").json()
        assert contexts["total"] == 5 and contexts["next"] is None
        assert [x["contractId"] for x in contexts["items"]] == ["0x100"] * 3 + ["0x200", "0x999"]
        assert c.get(f"{API}/contexts", params={"executionStatus": "success"}).json()["total"] == 3
        assert c.get(f"{API}/contexts", params={"status": "committed"}).json()["total"] == 3
        assert c.get(f"{API}/contexts", params={"status": "rolled_back"}).json()["total"] == 2
        assert c.get(f"{API}/contexts", params={"contract": "0x200"}).json()["total"] == 1
        assert c.get(f"{API}/results", params={"executionStatus": "rejected"}).json()["total"] == 1

        trap_ctx = contexts["items"][3]["contextId"]
        record = c.get(f"{API}/contexts/{trap_ctx}").json()
        stages = [e["stage"] for e in record["history"]]
        assert stages[0] == "requested" and stages[-1] == "finalized" and "rolled_back" in stages
        assert record["result"]["executionStatus"] == "fault"
        assert record["result"]["error"] == "TRAP_EXECUTED"
        violations = c.get(f"{API}/violations").json()
        assert violations["total"] == 1
        assert violations["items"][0]["violationType"] == violation_type("TRAP_EXECUTED")
        assert c.get(f"{API}/violations", params={"violationType": violation_type("TRAP_EXECUTED")}
                     ).json()["total"] == 1
        assert c.get(f"{API}/violations", params={"violationType": violation_type("BAD_MAGIC")}
                     ).json()["total"] == 0
        # A record by its id or by its context's id, as the CLI's show takes either.
        result = c.get(f"{API}/results/{trap_ctx}").json()
        assert c.get(f"{API}/results/{result['resultId']}").json() == result
        for name in ("sandboxes", "accounting"):
            assert c.get(f"{API}/{name}/{trap_ctx}").json()["contextId"] == trap_ctx
            assert c.get(f"{API}/{name}").json()["total"] == 5
        assert c.get(f"{API}/contracts/0x200").json()["codeSize"] == len(bytes.fromhex(code_hex(TRAPS)))
        assert c.get(f"{API}/contracts").json()["total"] == 2
        assert c.get(f"{API}/vms").json()["total"] == DEFAULT_VMS   # one per version and mode
        assert c.get(f"{API}/instructions").json()["total"] == len(spec.raw("instructions", VERSION)["instruction"])
        assert c.get(f"{API}/instructions/ADD").json()["opcode"] == spec.load(VERSION).by_mnemonic["ADD"].opcode
        assert c.get(f"{API}/events", params={"type": "contract.deployed"}).json()["total"] == 2
        overview = c.get(f"{API}/overview").json()
        assert overview["models"]["RTWOExecutionContext"] == 5
        assert overview["services"]["contexts"]["lastAt"] == contexts["items"][-1]["createdAt"]


def test_pages_follow_the_cursor_in_a_stable_order(server):
    with server.client() as c:
        whole = c.get(f"{API}/contexts").json()["items"]
        assert _all_pages(c, f"{API}/contexts", 2) == whole
        assert _all_pages(c, f"{API}/results", 2) == c.get(f"{API}/results").json()["items"]
        assert len(_all_pages(c, f"{API}/events", 3)) == c.get(f"{API}/events").json()["total"]
        assert len(_all_pages(c, f"{API}/instructions", 40)) == len(spec.raw("instructions", VERSION)["instruction"])
        first, last = whole[0]["createdAt"], whole[-1]["createdAt"]
        between = c.get(f"{API}/contexts", params={"createdFrom": first, "createdTo": last}).json()
        assert between["total"] == 5
        assert c.get(f"{API}/contexts", params={"createdFrom": last}).json()["total"] == 1
        assert c.get(f"{API}/contexts", params={"createdTo": "2000-01-01T00:00:00Z"}).json()["total"] == 0
        too_many = c.get(f"{API}/contexts", params={"limit": BOUNDS["max_page_size"] + 1})
        assert too_many.status_code == OUTCOME and too_many.json()["error"] == "INVALID_REQUEST"


def test_the_served_openapi_document_is_the_committed_one(server):
    with server.client() as c:
        served = c.get("/openapi.json").json()
    assert served == json.loads((ROOT / "docs" / "api" / "openapi.json").read_text())


def _state(db: Path) -> dict:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables} | {
            "meta": conn.execute("SELECT * FROM meta ORDER BY key").fetchall()}
    finally:
        conn.close()


def _refused(answer: httpx.Response, code: str) -> None:
    assert answer.status_code == REFUSALS.get(code, OUTCOME), answer.text
    doc = answer.json()
    assert doc["error"] == code and "\n" not in doc["message"] and doc["message"]


def test_bad_requests_get_the_spec_code_and_change_nothing(server):
    before = _state(server.db)
    big = BOUNDS["max_body_bytes"]
    with server.client(headers=AUTH) as c:
        _refused(c.post(f"{API}/contracts", json={"code": "00" * 20}), "BAD_MAGIC")
        _refused(c.post(f"{API}/contracts", json={"code": "zz"}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/contracts", json={"code": code_hex(STOPS), "address": "0x100"}),
                 "INVALID_REQUEST")   # the address holds a contract
        _refused(c.post(f"{API}/contracts", json={"code": code_hex(STOPS),
                                                  "storage": {"0x1": "0x1" + "0" * 16}}),
                 "INVALID_REQUEST")   # 2^64: not a word
        maximum = spec.raw("limits", VERSION)["maximum"]["compute"]
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "limits": {"compute": maximum + 1}}),
                 "INVALID_LIMITS")
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "limits": {"fuel": 1}}), "INVALID_LIMITS")
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "surprise": 1}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "isolation": "none"}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "isolation": "pure",
                                              "storageAccess": "read_write"}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/calls", json={"to": "0x100", "policy": "pol_none"}), "UNKNOWN_RECORD")
        _refused(c.post(f"{API}/calls", content=b"{", headers={"content-type": "application/json"}),
                 "INVALID_REQUEST")
        _refused(c.post(f"{API}/calls", content=b"to=1", headers={"content-type": "text/plain"}),
                 "UNSUPPORTED_MEDIA_TYPE")
        _refused(c.post(f"{API}/calls", content=b" " * (big + 1),
                        headers={"content-type": "application/json"}), "BODY_TOO_LARGE")
        chunks = (b" " * 65536 for _ in range(big // 65536 + 2))   # no Content-Length: chunked
        _refused(c.post(f"{API}/calls", content=chunks, headers={"content-type": "application/json"}),
                 "BODY_TOO_LARGE")
        _refused(c.post(f"{API}/policies", json={"forbiddenOperations": ["NOT_AN_OP"]}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/events/requeue", json={}), "INVALID_REQUEST")
        _refused(c.post(f"{API}/events/requeue", json={"eventId": 1}), "UNKNOWN_RECORD")
        _refused(c.get(f"{API}/contexts", params={"q": "x" * (BOUNDS["max_query_bytes"] + 1)}),
                 "QUERY_TOO_LONG")
        _refused(c.get(f"{API}/contexts/ctx_none"), "UNKNOWN_RECORD")
        _refused(c.get(f"{API}/events/12345678"), "UNKNOWN_RECORD")
        _refused(c.get(f"{API}/contexts", params={"cursor": "bm90IGpzb24"}), "INVALID_REQUEST")
        _refused(c.get(f"{API}/contexts", params={"status": "nowhere"}), "INVALID_REQUEST")
        _refused(c.get(f"{API}/contexts", params={"createdFrom": "yesterday"}), "INVALID_REQUEST")
        _refused(c.get(f"{API}/no/such/route"), "UNKNOWN_ROUTE")
        _refused(c.delete(f"{API}/contexts"), "METHOD_NOT_ALLOWED")
        _refused(c.get(f"{API}/contracts/..%2F..%2Fetc%2Fpasswd"), "UNKNOWN_ROUTE")
        _refused(c.get(f"{API}/contracts/passwd"), "INVALID_REQUEST")
    assert _state(server.db) == before


def test_actions_need_the_token_and_reads_do_not(tmp_path):
    with serving(tmp_path, token=None) as srv, srv.client() as c:   # read-only server
        _refused(c.post(f"{API}/contracts", json={"code": code_hex(STOPS)}, headers=AUTH), "UNAUTHORIZED")
        _refused(c.post(f"{API}/events/deliver"), "UNAUTHORIZED")
        assert c.get(f"{API}/contracts").json()["total"] == 0
    with serving(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path) as srv, \
            srv.client() as c:
        body = {"code": code_hex(STORES)}
        _refused(c.post(f"{API}/contracts", json=body), "UNAUTHORIZED")
        _refused(c.post(f"{API}/contracts", json=body,
                        headers={"Authorization": f"Bearer {TOKEN}x"}), "UNAUTHORIZED")
        _refused(c.post(f"{API}/contracts", json=body,
                        headers={"Authorization": f"Basic {TOKEN}"}), "UNAUTHORIZED")
        assert c.get(f"{API}/contracts").json()["total"] == 0
        deployed = c.post(f"{API}/contracts", json=body, headers=AUTH)
        assert deployed.status_code == 201 and deployed.json()["address"] == "0x100"
        called = c.post(f"{API}/calls", json={"to": "0x100", "deliver": True}, headers=AUTH)
        assert called.status_code == 201
        changes = called.json()["result"]["stateChanges"]
        assert [(x["key"], x["after"]) for x in changes] == [("0x3", "0x1")]
        assert called.json()["delivery"] == {}   # no sink registered
        policy = c.post(f"{API}/policies", json={"timeAccess": "allowed"}, headers=AUTH)
        assert policy.status_code == 201 and policy.json()["timeAccessPolicy"] == "allowed"
        assert c.post(f"{API}/events/deliver", headers=AUTH).json() == {"delivery": {}, "complete": True}


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    import os
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], capture_output=True,
                          text=True, cwd=cwd, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_the_command_refuses_a_public_address_without_a_token_and_a_bad_token_file(tmp_path):
    refused = _cli("serve", "--host", "0.0.0.0", "--db", str(tmp_path / "a.db"), cwd=tmp_path)
    assert refused.returncode == 2 and "token-file" in refused.stderr
    (tmp_path / "short").write_text("abc\n")
    refused = _cli("serve", "--token-file", str(tmp_path / "short"), "--db", str(tmp_path / "a.db"),
                   cwd=tmp_path)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a.db").exists()


def test_the_cli_and_the_server_share_the_database(tmp_path):
    db = tmp_path / "shared.db"
    (tmp_path / "stop.rasm").write_text(STOPS + "\n")
    with serving(tmp_path, db=db) as srv, srv.client(headers=AUTH) as c:
        deployed = _cli("deploy", "stop.rasm", "--db", str(db), "--address", "0x300", cwd=tmp_path)
        assert deployed.returncode == 0, deployed.stderr
        assert c.get(f"{API}/contracts/0x300").status_code == 200
        context = c.post(f"{API}/calls", json={"to": "0x300"}).json()["context"]["contextId"]
        listed = _cli("contexts", "list", "--json", "--db", str(db), cwd=tmp_path)
        assert [x["contextId"] for x in json.loads(listed.stdout)] == [context]
