"""Shared helpers for the server tests (no tests here): a real ``rtwo-vm serve`` process on
127.0.0.1 over a database in the test's temporary directory, killed when the test ends."""

from __future__ import annotations

import os
import queue
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator
from urllib.parse import urlparse

import httpx

import spec
from reference_vm import assemble

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-token-0123456789abcdef"       # 27 printable characters, as --token-file wants
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# The version the server deploys under when none is given (the newest); its spec data.
VERSION = spec.latest()

# Programs the tests deploy (their outcomes are known from the spec, chapter 6).
STOPS = "stop"                                        # success, no output
TRAPS = "trap"                                        # fault TRAP_EXECUTED: a violation
STORES = "push 3\npush 1\nsstore\nstop"               # writes slot 3 := 1


def code_hex(source: str) -> str:
    return assemble(source, VERSION).hex()


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, db: Path, start_line: str = ""):
        self.proc, self.url, self.db = proc, url, db
        self.start_line = start_line      # the line the server printed when it started

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


START = re.compile(rb"^rtwo-vm serve: http://\S+:(\d+)/ over ")


def bound_port_of(line: str) -> int:
    """The port a start line names."""
    match = START.match(line.encode())
    assert match, line
    return int(match.group(1))


def start_line(proc: subprocess.Popen, deadline: float) -> str:
    """The start line ``rtwo-vm serve`` prints on stdout once it listens. A thread reads
    stdout to its end (nothing else is printed there, but a pipe left full would block)."""
    found: queue.Queue[str | None] = queue.Queue()

    def read(stream) -> None:
        for line in stream:
            if START.match(line):
                found.put(line.decode().rstrip("\n"))
        found.put(None)
    threading.Thread(target=read, args=(proc.stdout,), daemon=True).start()
    try:
        line = found.get(timeout=max(0.0, deadline - time.monotonic()))
    except queue.Empty:
        line = None
    if line is None:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
        assert proc.stderr is not None
        raise AssertionError(f"the server did not start: {proc.stderr.read().decode()[-2000:]}")
    return line


def spawn(tmp_path: Path, *, db: Path | None = None, token: str | None = TOKEN,
          extra: tuple[str, ...] = (), host: str = "127.0.0.1", cwd: Path | None = None,
          env: dict[str, str] | None = None) -> Server:
    """Start ``rtwo-vm serve`` (this checkout's code) on ``host`` and wait until it answers;
    in ``cwd`` (default ``tmp_path``), with ``env`` added to the environment."""
    db = db or tmp_path / "rtwo-vm.db"
    args = [sys.executable, "-m", "rtwo_vm.cli", "serve", "--db", str(db)]
    if token is not None:
        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
        args += ["--token-file", str(token_file)]
    # Port 0: the server binds a free port itself and names it in its start line. A port
    # picked here and bound there could be taken in between (by another xdist worker's server).
    args += ["--host", host, "--port", "0", *extra]
    proc = subprocess.Popen(args, cwd=cwd or tmp_path,
                            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    line = start_line(proc, deadline)
    port = bound_port_of(line)
    server = Server(proc, f"http://{host}:{port}", db, line)
    while True:
        if proc.poll() is not None:
            assert proc.stderr is not None
            raise AssertionError(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(server.url + "/api/v1/vms", timeout=5).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.kill()
            raise AssertionError("the server did not answer within 60 s")
        time.sleep(0.1)


@contextmanager
def serving(tmp_path: Path, **kwargs) -> Iterator[Server]:
    server = spawn(tmp_path, **kwargs)
    try:
        yield server
    finally:
        server.kill()


# -- Raw HTTP over a socket, for the clients that misbehave ------------------------------------

def connect(server: Server, timeout: float = 30) -> socket.socket:
    where = urlparse(server.url)
    return socket.create_connection((where.hostname, where.port), timeout=timeout)


def port_of(server: Server) -> int:
    port = urlparse(server.url).port
    assert port is not None
    return port


def request_bytes(method: str, path: str, host: str, headers: tuple[tuple[str, str], ...] = (),
                  body: bytes = b"") -> bytes:
    """One HTTP/1.1 request, headers exactly as given (repeats kept), Content-Length added
    when there is a body."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}"]
    lines += [f"{name}: {value}" for name, value in headers]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def read_answer(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """The next answer on ``sock`` (status, headers lowercased, body by Content-Length); a
    connection that closes before a whole answer raises ConnectionError."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError(f"closed before an answer: {data[:200]!r}")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in the middle of an answer's body")
        rest += chunk
    return int(status_line.split()[1]), headers, rest[:length]


def ask(server: Server, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` on a new connection and read one answer."""
    with connect(server) as sock:
        sock.sendall(data)
        return read_answer(sock)


def closed_by_server(sock: socket.socket, within: float) -> bool:
    """Whether the server closes ``sock`` within ``within`` seconds (what it sends first is
    read and dropped)."""
    deadline = time.monotonic() + within
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        sock.settimeout(left)
        try:
            if not sock.recv(65536):
                return True
        except socket.timeout:
            return False
        except ConnectionError:
            return True


def rss_kib(pid: int) -> int:
    """The resident memory of process ``pid`` (VmRSS of /proc/PID/status), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")
