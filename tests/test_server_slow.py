"""Clients that hold the server's resources, over real sockets against a real ``rtwo-vm
serve`` (issue 33, findings 3 and 8): headers or a body sent too slowly are cut off at their
deadline, connections past the limit are refused while the server keeps answering the others,
unauthenticated requests declaring big bodies cost no memory, and ``/live`` resumes at most
api.toml ``bounds.live_replay_events`` events back. The deadlines and the limit are made
small with the command's options so that each test takes seconds."""

from __future__ import annotations

import json
import sqlite3
import threading
import time

import httpx

import spec
from reference_vm import assemble
from rtwo_vm.runtime import Runtime
from server_support import (
    VERSION,
    STOPS, TOKEN, ask, closed_by_server, code_hex, connect, port_of, read_answer, request_bytes,
    rss_kib, serving,
)

API = "/api/v1"
BOUNDS = spec.raw("api", VERSION)["bounds"]
REFUSALS = {r["code"]: r["status"] for r in spec.raw("api", VERSION)["refusal"]}
OUTCOME = spec.raw("api", VERSION)["outcome_status"]["default"]   # the status of an errors.toml code
DEADLINE = 1          # seconds, given to the server with --header-timeout / --body-timeout
MARGIN = 2.5          # seconds past the deadline a cut-off may take on a loaded machine


def _refused(answer: tuple[int, dict[str, str], bytes], code: str) -> None:
    status, _, body = answer
    assert status == REFUSALS.get(code, OUTCOME), (status, body)
    assert json.loads(body)["error"] == code


def _trickle(sock, data: bytes, every: float) -> threading.Thread:
    """Send ``data`` one byte every ``every`` seconds, until it is sent or the server closes."""
    def run() -> None:
        for byte in data:
            try:
                sock.send(bytes([byte]))
            except OSError:
                return
            time.sleep(every)
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_slow_headers_are_cut_off_at_the_deadline(tmp_path):
    with serving(tmp_path, extra=("--header-timeout", str(DEADLINE))) as srv:
        host = f"127.0.0.1:{port_of(srv)}"
        started = time.monotonic()
        half_sent = []
        for _ in range(20):   # request line and Host, never the blank line that ends the header
            sock = connect(srv, timeout=DEADLINE + MARGIN)
            sock.sendall(f"GET {API}/vms HTTP/1.1\r\nHost: {host}\r\n".encode())
            half_sent.append(sock)
        silent = connect(srv, timeout=DEADLINE + MARGIN)          # sends nothing at all
        trickling = connect(srv, timeout=DEADLINE + MARGIN)       # a header byte every 0.2 s
        _trickle(trickling, f"GET {API}/vms HTTP/1.1\r\nHost: {host}\r\nX-Slow: {'a' * 100}\r\n\r\n"
                 .encode(), 0.2)
        for sock in [*half_sent, silent, trickling]:
            _refused(read_answer(sock), "REQUEST_TIMEOUT")
            assert closed_by_server(sock, MARGIN)
            sock.close()
        took = time.monotonic() - started
        assert DEADLINE * 0.9 <= took <= DEADLINE + MARGIN, took
        # On a kept-alive connection the next request's header has the same deadline, counted
        # from its first byte; a header sent in pieces within it is answered.
        with connect(srv, timeout=DEADLINE + MARGIN) as sock:
            request = request_bytes("GET", f"{API}/vms", host)
            for piece in (request[:10], request[10:30], request[30:]):
                sock.sendall(piece)
                time.sleep(DEADLINE / 4)
            assert read_answer(sock)[0] == 200
            time.sleep(DEADLINE * 1.5)                 # idle between requests: kept alive
            sock.sendall(request[:20])
            piece_sent = time.monotonic()
            _refused(read_answer(sock), "REQUEST_TIMEOUT")
            assert DEADLINE * 0.9 <= time.monotonic() - piece_sent <= DEADLINE + MARGIN
        assert ask(srv, request_bytes("GET", f"{API}/vms", host))[0] == 200


def test_a_slow_body_is_cut_off_at_the_deadline_and_runs_nothing(tmp_path):
    with serving(tmp_path, extra=("--body-timeout", str(DEADLINE))) as srv:
        host = f"127.0.0.1:{port_of(srv)}"
        body = json.dumps({"code": code_hex(STOPS)}).encode()
        action = (("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "application/json"))
        whole = request_bytes("POST", f"{API}/contracts", host, action, body)
        head = whole[:len(whole) - len(body)]
        slow = []
        for _ in range(5):   # the token is right; the body comes a byte every 0.3 s
            sock = connect(srv, timeout=DEADLINE + MARGIN)
            sock.sendall(head + body[:5])
            _trickle(sock, body[5:], 0.3)
            slow.append(sock)
        stalled = connect(srv, timeout=DEADLINE + MARGIN)
        stalled.sendall(head + body[:-1])   # all but its last byte, then nothing
        started = time.monotonic()
        for sock in [*slow, stalled]:
            _refused(read_answer(sock), "REQUEST_TIMEOUT")
            assert closed_by_server(sock, MARGIN)
            sock.close()
        assert time.monotonic() - started <= DEADLINE + MARGIN
        # Without the token the answer does not wait for the body: 401 at once, and closed.
        with connect(srv, timeout=DEADLINE + MARGIN) as sock:
            sock.sendall(request_bytes("POST", f"{API}/contracts", host,
                                       (("Content-Type", "application/json"),), body)[:-len(body) + 5])
            asked = time.monotonic()
            _refused(read_answer(sock), "UNAUTHORIZED")
            assert time.monotonic() - asked < DEADLINE * 0.9
            assert closed_by_server(sock, MARGIN)
        with srv.client() as c:
            assert c.get(f"{API}/contracts").json()["total"] == 0
        assert ask(srv, whole)[0] == 201   # a body sent on time is answered


def test_the_connection_limit_holds_and_the_server_answers_afterwards(tmp_path):
    limit = 8
    with serving(tmp_path, extra=("--max-connections", str(limit))) as srv:
        host = f"127.0.0.1:{port_of(srv)}"
        request = request_bytes("GET", f"{API}/vms", host)
        held = []
        for _ in range(limit):   # open and kept alive: each has had one answer
            sock = connect(srv, timeout=10)
            sock.sendall(request)
            assert read_answer(sock)[0] == 200
            held.append(sock)
        for _ in range(3):
            with connect(srv, timeout=10) as extra:
                extra.sendall(request)
                _refused(read_answer(extra), "TOO_MANY_CONNECTIONS")
                assert closed_by_server(extra, MARGIN)
        for sock in held:         # the connections within the limit are still served
            sock.sendall(request)
            assert read_answer(sock)[0] == 200
        for sock in held[:2]:
            sock.close()
        deadline = time.monotonic() + 10
        while True:   # once the server has seen them closed, new connections are answered
            try:
                status = ask(srv, request)[0]
            except ConnectionError:
                status = 0
            if status == 200 or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert status == 200
        for sock in held[2:]:
            sock.close()


def test_unauthenticated_big_bodies_cost_no_memory(tmp_path):
    """A body declared at max_body_bytes and sent all but its last byte, on 100 connections
    at once, to routes that need no body or refuse the request: the server's resident memory
    grows by less than 10 MiB (about 100 KiB a connection), where a server buffering them
    would hold 100 MiB."""
    size = BOUNDS["max_body_bytes"]
    connections = 100
    with serving(tmp_path) as srv, srv.client() as c:
        deadline = time.monotonic() + 120
        while c.get(f"{API}/readiness").json()["state"] != "computed":   # memory settles
            assert time.monotonic() < deadline
            time.sleep(0.5)
        host = f"127.0.0.1:{port_of(srv)}"
        json_type = (("Content-Type", "application/json"),)
        targets = [("POST", f"{API}/calls", json_type),           # an action without the token
                   ("POST", "/", ()), ("POST", "/live", ()),      # no such route for POST
                   ("GET", f"{API}/vms", ())]                     # a read, with a body
        def head(i: int) -> bytes:
            method, path, headers = targets[i % len(targets)]
            return request_bytes(method, path, host, (*headers, ("Content-Length", str(size))))

        for i in range(len(targets)):   # warm up each path once, with a small body
            with connect(srv) as sock:
                sock.sendall(request_bytes(targets[i][0], targets[i][1], host, targets[i][2], b"{}"))
                read_answer(sock)
        before = rss_kib(srv.proc.pid)
        socks = [connect(srv, timeout=20) for _ in range(connections)]
        sent = []

        def send(i: int) -> None:
            try:
                socks[i].sendall(head(i) + b" " * (size - 1))
                sent.append(i)
            except OSError:
                pass   # the server closed it: it did not want the body
        threads = [threading.Thread(target=send, args=(i,)) for i in range(connections)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        time.sleep(1)
        grown = rss_kib(srv.proc.pid) - before
        assert grown < 10 * 1024, f"the server grew by {grown} KiB ({len(sent)} bodies sent whole)"
        for sock in socks:
            sock.close()
        assert c.get(f"{API}/vms").status_code == 200


def _sse(response: httpx.Response, last: int):
    """The stream's messages as (event, id, data) until the summary after event ``last``."""
    out: list[tuple[str, str | None, str]] = []
    event, ident, data = "message", None, ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("id: "):
            ident = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "":
            if data:
                out.append((event, ident, data))
                if event == "summary" and ident == str(last):
                    return out
            event, ident, data = "message", None, ""
    raise AssertionError(f"the stream ended before the summary after {last}: {out[-3:]}")


def test_live_resumes_at_most_the_bounded_number_of_events_back(tmp_path):
    bound = BOUNDS["live_replay_events"]
    db = tmp_path / "rtwo-vm.db"
    conn = sqlite3.connect(db)
    with Runtime(db) as rt:
        rt.deploy(assemble(STOPS, VERSION), 0x100)
        while conn.execute("SELECT max(event_id) FROM outbox").fetchone()[0] < 3 * bound:
            for _ in range(50):
                rt.call(to=0x100, caller=1)
    last = conn.execute("SELECT max(event_id) FROM outbox").fetchone()[0]
    results = [r[0] for r in conn.execute(
        "SELECT event_id FROM outbox WHERE type = 'result.recorded' ORDER BY event_id")]
    conn.close()
    oldest = last - bound
    assert results[0] < oldest    # the outbox holds more than the bound
    with serving(tmp_path, db=db) as srv:
        for how in ({"params": {"after": "0"}}, {"headers": {"Last-Event-ID": "1"}},
                    {"params": {"after": str(oldest - 1)}}):
            with httpx.stream("GET", srv.url + "/live", timeout=30, **how) as response:
                messages = _sse(response, last)
            missed = [json.loads(d) for e, _, d in messages if e == "missed"]
            assert len(missed) == 1 and missed[0]["resumedAfter"] == oldest, missed
            contexts = [int(i) for e, i, _ in messages if e == "context" and i is not None]
            assert contexts == [r for r in results if r > oldest]
        # A cursor within the bound resumes right after it, with no marker.
        within = results[-3] - 1
        with httpx.stream("GET", srv.url + "/live", params={"after": str(within)},
                          timeout=30) as response:
            messages = _sse(response, last)
        assert [e for e, _, _ in messages if e == "missed"] == []
        assert [int(i) for e, i, _ in messages if e == "context" and i] == results[-3:]


def test_an_oversized_or_broken_header_is_refused_in_the_spec_shape(tmp_path):
    with serving(tmp_path) as srv:
        host = f"127.0.0.1:{port_of(srv)}"
        big = request_bytes("GET", f"{API}/vms", host,
                            (("X-Filler", "a" * BOUNDS["max_header_bytes"]),))
        with connect(srv) as sock:          # at once
            sock.sendall(big)
            _refused(read_answer(sock), "HEADER_TOO_LARGE")
            assert closed_by_server(sock, MARGIN)
        with connect(srv) as sock:          # in pieces, the header never ending
            for start in range(0, len(big) - 4, 4096):
                sock.sendall(big[start:min(start + 4096, len(big) - 4)])
                time.sleep(0.05)
            _refused(read_answer(sock), "HEADER_TOO_LARGE")
            assert closed_by_server(sock, MARGIN)
        _refused(ask(srv, b"NOT HTTP AT ALL\r\n\r\n"), "INVALID_REQUEST")
        _refused(ask(srv, request_bytes("GET", f"{API}/vms", host, (("Content-Length", "1"),
                                                                  ("Content-Length", "2")))),
                 "INVALID_REQUEST")   # two lengths: h11 refuses them before any route
        assert ask(srv, request_bytes("GET", f"{API}/vms", host))[0] == 200
