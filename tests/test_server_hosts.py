"""Requests that come from the wrong place, over real sockets against a real ``rtwo-vm serve``
(issue 33, findings 2 and 8): a Host header of a name rebound to this address (DNS
rebinding), an action sent by a page of another origin, and headers the server decides by
given twice. Each is refused with its api.toml code and changes nothing; the names and
origins the server serves are answered."""

from __future__ import annotations

import json
import socket

import pytest

import spec
from server_support import (
    VERSION,
    AUTH, STOPS, TOKEN, ask, code_hex, port_of, read_answer, request_bytes, serving,
)

API = "/api/v1"
REFUSALS = {r["code"]: r["status"] for r in spec.raw("api", VERSION)["refusal"]}
PROXY = "rtwo.example.org"     # the name a reverse proxy in front of the server sends


def _refused(answer: tuple[int, dict[str, str], bytes], code: str) -> None:
    status, headers, body = answer
    assert status == REFUSALS[code], (status, body)
    assert headers["content-type"] == "application/json"
    doc = json.loads(body)
    assert doc["error"] == code and doc["message"] and "\n" not in doc["message"]


def _deployed(srv) -> int:
    with srv.client() as c:
        return c.get(f"{API}/contracts").json()["total"]


@pytest.fixture(scope="module")
def proxied(tmp_path_factory):
    """A server bound to 127.0.0.2 (a loopback address that is none of the default names)
    with one name allowed for a reverse proxy."""
    tmp = tmp_path_factory.mktemp("hosts")
    with serving(tmp, host="127.0.0.2", extra=("--allow-host", PROXY)) as srv:
        yield srv


def test_a_rebinding_host_is_refused_and_the_served_hosts_answer(proxied):
    port = port_of(proxied)
    served = [f"127.0.0.2:{port}",                         # the bound address, with its port
              f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"LocalHost:{port}",
              PROXY, f"{PROXY}:443", f"{PROXY}:{port}"]     # the allowed name, any port
    for host in served:
        status, _, body = ask(proxied, request_bytes("GET", f"{API}/contracts", host))
        assert status == 200, (host, body)
    foreign = [f"attacker.example:{port}", "attacker.example",  # a name rebound to us
               f"{PROXY}.attacker.example:{port}", f"localhost.attacker.example:{port}",
               "127.0.0.2",                               # no port: port 80, not ours
               f"127.0.0.2:{port + 1}", f"localhost:{port + 1}",
               f"0.0.0.0:{port}", f"[::]:{port}",         # unspecified addresses
               f"127.0.0.3:{port}", f"2130706434:{port}", f"localhost.:{port}",
               f"localhost:{port}@attacker.example", f"{PROXY}:http", f"[::1:{port}", ""]
    for host in foreign:
        _refused(ask(proxied, request_bytes("GET", f"{API}/contracts", host)), "UNKNOWN_HOST")
    for path in ("/", "/live", "/static/dashboard.css", "/openapi.json", f"{API}/readiness"):
        _refused(ask(proxied, request_bytes("GET", path, "attacker.example")), "UNKNOWN_HOST")
    # An action with the right token but a rebound name: refused, nothing deployed.
    body = json.dumps({"code": code_hex(STOPS)}).encode()
    action = (("Authorization", f"Bearer {TOKEN}"), ("Content-Type", "application/json"))
    _refused(ask(proxied, request_bytes("POST", f"{API}/contracts", f"attacker.example:{port}",
                                        action, body)), "UNKNOWN_HOST")
    assert _deployed(proxied) == 0
    status, _, _ = ask(proxied, request_bytes("POST", f"{API}/contracts", PROXY, action, body))
    assert status == 201 and _deployed(proxied) == 1


def test_a_request_without_a_host_is_refused(proxied):
    with socket.create_connection(("127.0.0.2", port_of(proxied)), timeout=30) as s:
        s.sendall(f"GET {API}/contracts HTTP/1.0\r\n\r\n".encode())   # HTTP/1.0: Host optional
        _refused(read_answer(s), "UNKNOWN_HOST")


def test_an_action_from_another_origin_is_refused(tmp_path):
    with serving(tmp_path, extra=("--allow-host", PROXY)) as srv, srv.client(headers=AUTH) as c:
        port = port_of(srv)
        deploy = {"code": code_hex(STOPS)}
        foreign = [{"Origin": "http://attacker.example"}, {"Origin": "null"},
                   {"Origin": f"http://attacker.example:{port}"},
                   {"Origin": f"http://127.0.0.1:{port + 1}"}, {"Origin": "http://127.0.0.1"},
                   {"Origin": f"http://localhost.attacker.example:{port}"},
                   {"Origin": f"ftp://127.0.0.1:{port}"}, {"Origin": f"http://127.0.0.1:{port}/x"},
                   {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                   {"Origin": f"http://127.0.0.1:{port}", "Sec-Fetch-Site": "cross-site"}]
        for headers in foreign:
            answer = c.post(f"{API}/contracts", json=deploy, headers=headers)
            assert answer.status_code == REFUSALS["FORBIDDEN_ORIGIN"], (headers, answer.text)
            assert answer.json()["error"] == "FORBIDDEN_ORIGIN"
            answer = c.post(f"{API}/events/deliver", headers=headers)
            assert answer.json()["error"] == "FORBIDDEN_ORIGIN"
        assert c.get(f"{API}/contracts").json()["total"] == 0
        # Reads answer whatever the Origin (a page of another origin cannot read them: no CORS).
        assert c.get(f"{API}/contracts", headers={"Origin": "http://attacker.example"}
                     ).status_code == 200
        # The served origins, and a client that sends none (curl, httpx, the CLI's scripts).
        served = [{}, {"Origin": f"http://127.0.0.1:{port}"},
                  {"Origin": f"http://localhost:{port}", "Sec-Fetch-Site": "same-origin"},
                  {"Origin": f"https://{PROXY}"}, {"Sec-Fetch-Site": "none"}]
        for i, headers in enumerate(served):
            answer = c.post(f"{API}/contracts", json={**deploy, "address": hex(0x100 + i)},
                            headers=headers)
            assert answer.status_code == 201, (headers, answer.text)
        assert c.get(f"{API}/contracts").json()["total"] == len(served)


def test_a_repeated_security_header_is_refused_whatever_its_values(tmp_path):
    with serving(tmp_path) as srv:
        host = f"127.0.0.1:{port_of(srv)}"
        body = json.dumps({"code": code_hex(STOPS)}).encode()
        right, wrong = ("Authorization", f"Bearer {TOKEN}"), ("Authorization", f"Bearer {TOKEN}x")
        json_type = ("Content-Type", "application/json")
        twice = [(wrong, right, json_type), (right, wrong, json_type), (right, right, json_type),
                 (right, json_type, ("Origin", "http://attacker.example"), ("Origin", f"http://{host}")),
                 (right, json_type, ("Content-Type", "text/plain")),
                 (right, json_type, ("Sec-Fetch-Site", "same-origin"), ("Sec-Fetch-Site", "cross-site"))]
        for headers in twice:
            _refused(ask(srv, request_bytes("POST", f"{API}/contracts", host, headers, body)),
                     "DUPLICATE_HEADER")
        _refused(ask(srv, request_bytes("GET", "/live", host, (("Last-Event-ID", "5"),
                                                               ("Last-Event-ID", "0")))),
                 "DUPLICATE_HEADER")
        assert _deployed(srv) == 0
        # Headers the server does not decide by may repeat.
        status, _, _ = ask(srv, request_bytes("GET", f"{API}/contracts", host,
                                              (("Accept", "application/json"), ("Accept", "*/*"))))
        assert status == 200
        status, _, _ = ask(srv, request_bytes("POST", f"{API}/contracts", host, (right, json_type), body))
        assert status == 201 and _deployed(srv) == 1


@pytest.mark.parametrize("option", [("--allow-host", "*.example.org"), ("--allow-host", "a b"),
                                    ("--allow-host", "name:99999"), ("--allow-host", "u@name"),
                                    ("--header-timeout", "0"), ("--max-connections", "1")])
def test_the_command_refuses_a_bad_option_in_one_line(tmp_path, option):
    import os
    import subprocess
    import sys
    from server_support import ROOT
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "serve", "--db",
                           str(tmp_path / "a.db"), "--port", "0", *option],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert option[0] in done.stderr and "unrecognized" not in done.stderr   # a known option
    assert not (tmp_path / "a.db").exists()
