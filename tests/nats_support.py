"""A real nats-server with JetStream for the tests and the benchmark (no tests here).

Started on 127.0.0.1 with a temporary store directory; ``kill()`` is SIGKILL (a crash),
``restart()`` starts it again on the same port and store; ``stop()`` ends it and waits.
"""

from __future__ import annotations

import random
import re
import shutil
import signal
import socket
import subprocess
import threading
from pathlib import Path

READY = re.compile(rb"Listening for client connections on [0-9.]+:(\d+)")


def unused_port() -> int:
    """A port nothing listens on, for a refused connection or a server started on it later.
    Picked at random between Ray's worker ports (up to 19999) and the kernel's ephemeral range
    (/proc/sys/net/ipv4/ip_local_port_range), which every port-0 bind (``-p -1``, another xdist
    worker's servers) and every outgoing connection draws from: only a bind naming the same
    port could take it meanwhile. Checked free by binding it."""
    ephemeral = Path("/proc/sys/net/ipv4/ip_local_port_range")
    first = int(ephemeral.read_text().split()[0]) if ephemeral.exists() else 32768
    pick = random.SystemRandom()
    for _ in range(100):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", pick.randrange(20000, first) if first > 20001 else 0))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError("no free port below the ephemeral range")


def available() -> bool:
    return shutil.which("nats-server") is not None


class NatsServer:
    def __init__(self, store: Path, port: int = -1):
        self.store, self.port = Path(store), port
        self.process: subprocess.Popen | None = None
        self.log: list[bytes] = []

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> "NatsServer":
        self.store.mkdir(parents=True, exist_ok=True)
        self.process = subprocess.Popen(
            ["nats-server", "-js", "-a", "127.0.0.1", "-p", str(self.port), "-sd",
             str(self.store)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        ready = threading.Event()
        found: list[int] = []

        def read(stream) -> None:  # the log until the server is ready, then drained
            for line in stream:
                self.log.append(line)
                match = READY.search(line)
                if match and not found:
                    found.append(int(match.group(1)))
                if b"Server is ready" in line:
                    ready.set()
            ready.set()
        threading.Thread(target=read, args=(self.process.stderr,), daemon=True).start()
        if not ready.wait(timeout) or not found or self.process.poll() is not None:
            self.stop()
            raise RuntimeError("nats-server did not start: " + b"".join(self.log[-5:]).decode())
        self.port = found[0]
        return self

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        if self.process is not None and self.process.stderr is not None:
            self.process.stderr.close()

    def restart(self) -> "NatsServer":
        self.stop()
        return self.start()

    def __enter__(self) -> "NatsServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
