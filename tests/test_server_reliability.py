"""Reliability of ``rtwo-vm serve``: 50 concurrent calls on a fresh database, ``kill -9`` of
the server during calls, and clients that go away mid-request. The database is checked with
the runtime itself after each (every context whole: ``contexts.incomplete()`` empty)."""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlparse

import httpx

from rtwo_vm.runtime import Runtime
from server_support import AUTH, STORES, code_hex, serving, spawn
from test_runtime_support import DEFAULT_VMS

API = "/api/v1"
CALLERS = 50


def _deploy(c: httpx.Client) -> None:
    assert c.post(f"{API}/contracts", json={"code": code_hex(STORES)}).status_code == 201


def test_fifty_concurrent_calls_on_a_fresh_database(tmp_path):
    with serving(tmp_path) as srv:
        limits = httpx.Limits(max_connections=CALLERS)
        with srv.client(headers=AUTH, limits=limits) as c:
            _deploy(c)
            start = threading.Barrier(CALLERS)

            def one(i: int) -> httpx.Response:
                start.wait()
                return c.post(f"{API}/calls", json={"to": "0x100", "caller": hex(i + 1)})

            with ThreadPoolExecutor(CALLERS) as pool:
                answers = list(pool.map(one, range(CALLERS)))
            assert [a.status_code for a in answers] == [201] * CALLERS, [a.text for a in answers if a.status_code != 201][:3]
            ids = {a.json()["context"]["contextId"] for a in answers}
            assert len(ids) == CALLERS
    with Runtime(srv.db, create=False) as rt:
        assert rt.vms.count() == DEFAULT_VMS        # the first calls made one set between them
        assert rt.contexts.count() == CALLERS and rt.contexts.incomplete() == []
        assert {c.context_id for c in rt.contexts.list()} == ids


def test_kill_9_during_calls_leaves_the_database_consistent(tmp_path):
    srv = spawn(tmp_path)
    acknowledged: list[str] = []
    try:
        with srv.client(headers=AUTH) as c:
            _deploy(c)
            stop = threading.Event()

            def caller(i: int) -> None:
                while not stop.is_set():
                    try:
                        answer = c.post(f"{API}/calls", json={"to": "0x100", "caller": hex(i + 1)})
                    except httpx.TransportError:
                        return   # the server is gone
                    assert answer.status_code == 201
                    acknowledged.append(answer.json()["context"]["contextId"])

            threads = [threading.Thread(target=caller, args=(i,)) for i in range(8)]
            for t in threads:
                t.start()
            deadline = time.monotonic() + 60
            while len(acknowledged) < 20 and time.monotonic() < deadline:
                time.sleep(0.01)
            srv.kill()   # SIGKILL while calls are in flight
            stop.set()
            for t in threads:
                t.join(60)
    finally:
        srv.kill()
    assert len(acknowledged) >= 20
    with Runtime(srv.db, create=False) as rt:   # reopened as the CLI would (recovery on open)
        assert rt.store.single("PRAGMA integrity_check")[0] == "ok"
        assert rt.contexts.incomplete() == []
        recorded = {c.context_id for c in rt.contexts.list()}
        assert set(acknowledged) <= recorded       # every answered call is durable
    with serving(tmp_path, db=srv.db) as again, again.client(headers=AUTH) as c:
        assert c.post(f"{API}/calls", json={"to": "0x100"}).status_code == 201
        assert c.get(f"{API}/contexts").json()["total"] == len(recorded) + 1


def _raw(url: str, data: bytes) -> socket.socket:
    where = urlparse(url)
    sock = socket.create_connection((where.hostname, where.port), timeout=30)
    sock.sendall(data)
    return sock


def _request(url: str, body: bytes, length: int) -> bytes:
    return (f"POST {API}/calls HTTP/1.1\r\nHost: {urlparse(url).netloc}\r\nAuthorization: {AUTH['Authorization']}"
            f"\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n").encode() + body


def test_a_client_that_goes_away_loses_nothing(tmp_path):
    body = b'{"to": "0x100", "caller": "0x7"}'
    with serving(tmp_path) as srv, srv.client(headers=AUTH) as c:
        _deploy(c)
        # Gone before its body is complete: nothing runs.
        _raw(srv.url, _request(srv.url, body[:10], len(body))).close()
        # Gone right after sending a whole request: the call is recorded whole or not at all.
        _raw(srv.url, _request(srv.url, body, len(body))).close()
        deadline = time.monotonic() + 30
        total = -1
        while time.monotonic() < deadline:   # until the server has settled the second request
            now = c.get(f"{API}/contexts").json()["total"]
            if now == total and now >= 1:
                break
            total = now
            time.sleep(0.5)
        assert total in (0, 1)
        with Runtime(srv.db, create=False) as rt:
            assert rt.contexts.incomplete() == []
            assert rt.contexts.count() == total
        # The server keeps serving.
        assert c.post(f"{API}/calls", json={"to": "0x100"}).status_code == 201
        assert c.get(f"{API}/contexts").json()["total"] == total + 1
