"""`rtwo-vm events tail` in follow mode against a real nats-server (tests/nats_support.py):
it survives every kind of fetch timeout (a tiny fetch deadline, set with the hidden
--fetch-wait, provokes both the client's TimeoutError and the plain asyncio one many times a
second), ends with exit 0 and no warning on Ctrl-C (SIGINT), and with exit 3 and one line when
the server is gone after the bounded reconnect attempts. `events sink-add nats` refuses
(exit 2, one line, nothing recorded) when the nats-py client cannot be imported."""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import subprocess
import sys
import threading
import time

import pytest

from nats_support import NatsServer, available
from test_runtime_support import ROOT, example, runtime

try:
    import nats
except ImportError:  # the [nats] extra; CI installs it
    nats = None  # type: ignore[assignment]  # an optional module: None when the extra is missing

pytestmark = pytest.mark.skipif(
    nats is None or not available(),
    reason="needs nats-server (scripts/install-nats.sh) and the [nats] extra")

TINY = "0.0001"  # seconds: every pull request of the tail runs out of time at once
RECONNECT_ATTEMPTS, RECONNECT_WAIT = 5, 0.5  # rtwo_vm.runtime.sinks.nats, as documented


@pytest.fixture
def server(tmp_path):
    with NatsServer(tmp_path / "js") as s:
        yield s


@pytest.fixture
def rt(tmp_path):
    r = runtime(tmp_path / "vm.db")
    r.deploy(example("counter"), 0x100)
    yield r
    r.close()


class Tail:
    """`rtwo-vm events tail --nats URL` as a real process; its stdout read by a thread."""

    def __init__(self, url: str, *extra: str):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "rtwo_vm.cli", "events", "tail", "--nats", url, *extra],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self.lines: queue.Queue[str] = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def line(self, timeout: float = 20.0) -> dict:
        return json.loads(self.lines.get(timeout=timeout))

    def finish(self, timeout: float) -> tuple[int, str]:
        rc = self.process.wait(timeout)
        assert self.process.stderr is not None
        return rc, self.process.stderr.read()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(10)
        self.reader.join(10)
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


def test_tail_survives_fetch_timeouts_prints_what_comes_and_ends_cleanly_on_ctrl_c(rt, server):
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()
    tail = Tail(server.url, "--fetch-wait", TINY, "--type", "result.recorded")
    try:
        assert tail.line()["eventId"] == rt.events.list(type="result.recorded")[0].event_id
        # 8 s of nothing but timed-out fetches (thousands of them): it keeps running ...
        end, published = time.monotonic() + 8, None
        while time.monotonic() < end:
            assert tail.process.poll() is None, tail.finish(1)
            if published is None and time.monotonic() > end - 4:
                published = rt.call(to=0x100)  # ... and a message published meanwhile
                rt.events.deliver()
            time.sleep(0.2)
        assert tail.line()["stream"] == published.context.context_id  # ... is printed
        assert tail.process.poll() is None
        tail.process.send_signal(signal.SIGINT)
        rc, err = tail.finish(20)
        assert (rc, err) == (0, "")  # no "RuntimeWarning: coroutine ... never awaited"
    finally:
        tail.close()


def test_tail_ends_with_exit_3_and_one_line_when_the_server_is_gone(rt, server):
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()
    tail = Tail(server.url, "--fetch-wait", TINY)
    try:
        assert tail.line()["eventId"] == 1
        server.kill()
        killed = time.monotonic()
        rc, err = tail.finish(60)
        took = time.monotonic() - killed
        assert (rc, err) == (3, f"rtwo-vm: error: lost the connection to {server.url} "
                                f"({RECONNECT_ATTEMPTS} reconnect attempts failed)\n")
        # refused connections: the attempts and their waits, and no more (bounded retry)
        assert RECONNECT_ATTEMPTS * RECONNECT_WAIT * 0.5 <= took < 20, took
    finally:
        tail.close()


def test_tail_rides_out_a_server_restart_within_the_reconnect_bound(rt, server):
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()
    tail = Tail(server.url, "--fetch-wait", TINY, "--durable", "audit", "--type",
                "result.recorded")
    try:
        assert tail.line()["eventId"] == rt.events.list(type="result.recorded")[0].event_id
        server.kill()
        server.start()  # same port and store, well within the reconnect attempts
        later = rt.call(to=0x100)
        rt.events.deliver()
        assert tail.line(30)["stream"] == later.context.context_id
        tail.process.send_signal(signal.SIGINT)
        assert tail.finish(20) == (0, "")
    finally:
        tail.close()


# The CLI with the nats package made unimportable (as if the [nats] extra were missing).
WITHOUT_NATS = ("import sys; sys.modules['nats'] = None; from rtwo_vm.cli import main; "
                "sys.argv[0] = 'rtwo-vm'; sys.exit(main())")


def cli_without_nats(*args: str, hide: bool = True) -> subprocess.CompletedProcess:
    code = WITHOUT_NATS if hide else WITHOUT_NATS.replace("sys.modules['nats'] = None; ", "")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)


def test_sink_add_nats_refuses_without_the_client(rt, tmp_path):
    db = str(rt.store.path)
    out = cli_without_nats("events", "sink-add", "nats", "nats://127.0.0.1:4222", "--db", db)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr == ("rtwo-vm: error: the NATS sink needs the nats-py client: "
                          "pip install 'rtwo-vm[nats]'\n")
    assert rt.events.sinks() == []  # nothing recorded
    fresh = tmp_path / "fresh.db"
    out = cli_without_nats("events", "sink-add", "nats", "nats://127.0.0.1:4222", "--db",
                           str(fresh))
    assert out.returncode == 2 and not fresh.exists()  # refused before a database is made
    # The same wrapper with the client importable registers the sink (it needs no server).
    out = cli_without_nats("events", "sink-add", "nats", "nats://127.0.0.1:4222", "--db", db,
                           hide=False)
    assert out.returncode == 0, out.stderr
    assert [s["kind"] for s in rt.events.sinks()] == ["nats"]


def consumers(url: str, stream: str = "RTWO_VM_EVENTS") -> int:
    async def count() -> int:
        nc = await nats.connect(url)
        try:
            return (await nc.jetstream().stream_info(stream)).state.consumer_count
        finally:
            await nc.close()
    return asyncio.run(count())


def test_tail_outlives_a_stall_longer_than_the_servers_idle_default(rt, server):
    """A loaded machine may not run the tail for seconds (here: SIGSTOP for 8 s, longer than
    the 5 s a server keeps an idle ephemeral consumer by default): it still prints what comes
    next, and deletes its consumer when it ends."""
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()
    tail = Tail(server.url, "--type", "result.recorded")
    try:
        tail.line()
        assert consumers(server.url) == 1
        tail.process.send_signal(signal.SIGSTOP)
        time.sleep(8)
        tail.process.send_signal(signal.SIGCONT)
        later = rt.call(to=0x100)
        rt.events.deliver()
        assert tail.line(30)["stream"] == later.context.context_id
        tail.process.send_signal(signal.SIGINT)
        assert tail.finish(20) == (0, "")
        assert consumers(server.url) == 0
    finally:
        tail.close()


def test_tail_follows_past_its_first_hundred_messages(rt, server):
    # A follow without --limit asks each fetch for a batch of 100: once 100 messages were
    # printed, the next fetch must still ask for a positive batch (measured: after 101 lines
    # the tail exited 2 with "nats: invalid batch size").
    rt.events.add_sink("nats", server.url)
    for _ in range(60):
        rt.call(to=0x100)
    rt.events.deliver()
    events = len(rt.events.list(limit=10_000))
    assert events > 150      # several events per call (10 lifecycle stages, result, ...)
    tail = Tail(server.url)
    try:
        for _ in range(events):
            tail.line()
        rt.call(to=0x100)    # and it still follows
        rt.events.deliver()
        tail.line()
        assert tail.process.poll() is None
        tail.process.send_signal(signal.SIGINT)
        assert tail.finish(20) == (0, "")
    finally:
        tail.close()
