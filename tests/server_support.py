"""Shared helpers for the server tests (no tests here): a real ``rtwo-vm serve`` process on
127.0.0.1 over a database in the test's temporary directory, killed when the test ends."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import httpx

from reference_vm import assemble

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "test-token-0123456789abcdef"       # 27 printable characters, as --token-file wants
AUTH = {"Authorization": f"Bearer {TOKEN}"}

# Programs the tests deploy (their outcomes are known from the spec, chapter 6).
STOPS = "stop"                                        # success, no output
TRAPS = "trap"                                        # fault TRAP_EXECUTED: a violation
STORES = "push 3\npush 1\nsstore\nstop"               # writes slot 3 := 1


def code_hex(source: str) -> str:
    return assemble(source).hex()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, db: Path):
        self.proc, self.url, self.db = proc, url, db

    def client(self, **kwargs) -> httpx.Client:
        return httpx.Client(base_url=self.url, timeout=60, **kwargs)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)


def spawn(tmp_path: Path, *, db: Path | None = None, token: str | None = TOKEN,
          extra: tuple[str, ...] = ()) -> Server:
    """Start ``rtwo-vm serve`` (this checkout's code) and wait until it answers."""
    db = db or tmp_path / "rtwo-vm.db"
    args = [sys.executable, "-m", "rtwo_vm.cli", "serve", "--db", str(db)]
    if token is not None:
        token_file = tmp_path / "token"
        token_file.write_text(token + "\n")
        args += ["--token-file", str(token_file)]
    port = free_port()
    args += ["--port", str(port), *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    server = Server(proc, f"http://127.0.0.1:{port}", db)
    deadline = time.monotonic() + 60
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
