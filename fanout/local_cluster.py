"""A Ray cluster of separate nodes on this machine, for tests and benchmarks.

    with LocalCluster(folder) as cluster:        # a head node (ray start --head) on 127.0.0.1
        cluster.add_node({"RTWO_TEST_NODE": "second"})   # a second raylet joining it
        ... rtwo-vm prove --ray cluster.address ...
        cluster.kill(1)                           # the second node, raylet and workers

Each node is ``ray start --block`` in a process group of its own, with its own ports (free
ones), its own temporary folder and a HOME of its own (so that no ``~/.ray`` of the user
is read); it is stopped by killing that process group — never ``ray stop``, which stops
every Ray process of the machine, other users' included.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class LocalCluster:
    def __init__(self, folder: str | os.PathLike[str], cpus: int = 1, pythonpath: str | None = None):
        self.folder = Path(folder)
        self.cpus = cpus
        self.ray = Path(sys.executable).parent / "ray"
        # Ray's socket paths must stay short: its session folder lives in /tmp/rtN.
        self.short = Path(tempfile.mkdtemp(prefix="rt", dir="/tmp"))
        self.env = {**os.environ, "HOME": str(self.folder), "RAY_USAGE_STATS_ENABLED": "0",
                    "RAY_AUTH_MODE": "disabled"}
        if pythonpath:
            self.env["PYTHONPATH"] = pythonpath
        self.nodes: list[subprocess.Popen] = []
        self.killed: set[int] = set()        # indexes of the nodes kill() ended
        self.gcs = 0
        self.address = ""
        self._base = 20000 + (os.getpid() % 150) * 200

    def _start(self, args: list[str], env: dict, log: Path) -> subprocess.Popen:
        ports = free_ports(5)
        lo = self._base + 50 * len(self.nodes)
        node = subprocess.Popen(
            [str(self.ray), "start", "--block", "--node-ip-address=127.0.0.1",
             f"--num-cpus={self.cpus}", "--disable-usage-stats", *args,
             f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
             f"--dashboard-agent-listen-port={ports[2]}", f"--metrics-export-port={ports[3]}",
             f"--runtime-env-agent-port={ports[4]}", f"--min-worker-port={lo}",
             f"--max-worker-port={lo + 49}"],
            env=env, start_new_session=True, stdout=open(log, "w"), stderr=subprocess.STDOUT)
        self.nodes.append(node)
        return node

    def __enter__(self) -> "LocalCluster":
        try:
            (self.gcs,) = free_ports(1)
            self.address = f"127.0.0.1:{self.gcs}"
            head = self._start(["--head", f"--port={self.gcs}", "--include-dashboard=false",
                                f"--temp-dir={self.short}"], self.env, self.folder / "head.log")
            deadline = time.monotonic() + 90
            while True:
                if head.poll() is not None:
                    raise RuntimeError("the head node did not start: "
                                       + (self.folder / "head.log").read_text()[-500:])
                try:
                    socket.create_connection(("127.0.0.1", self.gcs), timeout=1).close()
                    return self
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("the head node did not start in 90 s") from None
                    time.sleep(0.3)
        except BaseException:
            self.close()
            raise

    def add_node(self, extra_env: dict | None = None, wait: float = 90) -> subprocess.Popen:
        """A node joining the head (its own raylet); returned once the cluster counts it."""
        node = self._start([f"--address={self.address}"], {**self.env, **(extra_env or {})},
                           self.folder / f"node{len(self.nodes)}.log")
        deadline = time.monotonic() + wait
        while self.alive() < len(self.nodes) - len(self.killed):   # killed nodes stay listed
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("a node did not join the cluster")
            time.sleep(1)
        return node

    def alive(self) -> int:
        """How many nodes the cluster counts alive (asked from a fresh driver process)."""
        probe = ("import logging, ray; ray.init(address=%r, log_to_driver=False, "
                 "logging_level=logging.ERROR); print(sum(n['Alive'] for n in ray.nodes()))"
                 % self.address)
        done = subprocess.run([sys.executable, "-c", probe], env=self.env, capture_output=True,
                              text=True, timeout=120)
        lines = done.stdout.strip().splitlines()
        return int(lines[-1]) if lines and lines[-1].isdigit() else 0

    def kill(self, index: int) -> None:
        node = self.nodes[index]
        self.killed.add(index)
        try:
            os.killpg(node.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.wait(timeout=30)

    def close(self) -> None:
        for index in range(len(self.nodes)):
            self.kill(index)
        shutil.rmtree(self.short, ignore_errors=True)

    def __exit__(self, *exc) -> None:
        self.close()
