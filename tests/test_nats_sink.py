"""The NATS JetStream sink against a real nats-server on 127.0.0.1 (started here with a
temporary store directory; killed and restarted by the fault tests): each event in the stream
exactly once, in order per context, with its id as Nats-Msg-Id; faults never lose an event
nor store one twice; `events tail`; no thread or event loop left behind."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from events_support import SlowAckProxy
from nats_support import NatsServer, available, unused_port
from test_runtime_support import ROOT, example, runtime

try:
    import nats
except ImportError:  # the [nats] extra; CI installs it
    nats = None  # type: ignore[assignment]  # an optional module: None when the extra is missing

# CI installs nats-server (scripts/install-nats.sh) and the [nats] extra: there these tests
# must run, never be skipped.
pytestmark = pytest.mark.skipif(
    not os.environ.get("CI") and (nats is None or not available()),
    reason="needs nats-server (scripts/install-nats.sh) and the [nats] extra")

STREAM = "RTWO_VM_EVENTS"


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


def stream_messages(url: str, stream: str = STREAM):
    """Every message of the stream, read with the client directly: (subject, msg id, event)."""
    async def read():
        nc = await nats.connect(url)
        try:
            js = nc.jetstream()
            info = await js.stream_info(stream)
            out = []
            for seq in range(info.state.first_seq, info.state.last_seq + 1):
                msg = await js.get_msg(stream, seq)
                out.append((msg.subject, msg.headers.get("Nats-Msg-Id"), json.loads(msg.data)))
            return out, info.config
        finally:
            await nc.close()
    return asyncio.run(read())


def assert_exactly_once_in_order(rt, messages):
    events = rt.events.list()
    ids = [int(m[1]) for m in messages]
    assert sorted(ids) == [e.event_id for e in events]  # each once: none lost, none twice
    assert [m[2]["eventId"] for m in messages] == ids
    for stream in {e.stream for e in events}:
        in_stream = [i for i, m in zip(ids, messages) if m[2]["stream"] == stream]
        assert in_stream == [e.event_id for e in events if e.stream == stream]


def cli(*args, db):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_each_event_is_in_the_stream_once_in_order_with_its_id(rt, server):
    rt.events.add_sink("nats", server.url)
    rt.deploy(example("proxy"), 0x200)
    rt.deploy(example("reverter"), 0x102)
    for _ in range(3):
        rt.call(to=0x100)
    rt.call(to=0x200)
    (report,) = rt.events.deliver().values()
    assert report.complete and report.delivered == len(rt.events.list())
    messages, config = stream_messages(server.url)
    assert_exactly_once_in_order(rt, messages)
    first_call = rt.events.list(type="result.recorded")[0]
    subject = f"rtwo.vm.events.{first_call.stream}.result.recorded"
    assert (subject, str(first_call.event_id)) in {(m[0], m[1]) for m in messages}
    assert messages[0][0] == "rtwo.vm.events.contract:0x100.contract.deployed"
    assert config.storage == "file" and config.subjects == ["rtwo.vm.events.>"]
    assert config.duplicate_window == 600
    # A crash after the acknowledgement, before it was recorded: the events go again and
    # the server drops them as duplicates.
    rt.store.conn.execute("DELETE FROM deliveries WHERE event_id > 5")
    (again,) = rt.events.deliver().values()
    assert again.complete and again.delivered == len(rt.events.list()) - 5
    assert_exactly_once_in_order(rt, stream_messages(server.url)[0])


def test_configured_stream_and_subject_and_a_stream_that_does_not_fit(rt, server):
    rt.events.add_sink("nats", server.url, options={
        "stream": "AUDIT", "subject": "acme.{type}.{context}", "dedup_window": 30})
    rt.call(to=0x100)
    (report,) = rt.events.deliver().values()
    assert report.complete
    messages, config = stream_messages(server.url, "AUDIT")
    result = rt.events.list(type="result.recorded")[0]
    assert (f"acme.result.recorded.{result.stream}", str(result.event_id)) in \
        {(m[0], m[1]) for m in messages}
    assert config.subjects == ["acme.>"] and config.duplicate_window == 30

    async def memory_stream():
        nc = await nats.connect(server.url)
        await nc.jetstream().add_stream(name="VOLATILE", subjects=["volatile.>"],
                                        storage="memory")
        await nc.close()
    asyncio.run(memory_stream())
    rt.events.add_sink("nats", server.url, options={"stream": "VOLATILE",
                                                   "subject": "volatile.{context}.{type}"})
    report = rt.events.deliver()[f"nats:{server.url}/VOLATILE"]
    assert report.delivered == 0
    assert report.error == "stream VOLATILE exists with memory storage; the sink needs file storage"


def test_server_down_at_start_then_started(tmp_path):
    db, port = tmp_path / "vm.db", unused_port()
    url = f"nats://127.0.0.1:{port}"
    assert cli("deploy", "examples/counter.rasm", "--address", "0x100", db=db).returncode == 0
    assert cli("events", "sink-add", "nats", url, db=db).returncode == 0
    line = (f"nats:{url}/{STREAM}: 0 delivered, 1 failed, 0 dead, 1 left; "
            f"cannot connect to {url}: connection refused\n")
    down = cli("events", "deliver", db=db)
    assert (down.returncode, down.stdout, down.stderr) == (1, line, "")
    call = cli("call", "0x100", "--deliver", db=db)
    assert call.returncode == 3 and call.stderr == ""
    assert call.stdout.splitlines()[-1].startswith(f"delivery to nats:{url}/{STREAM}: 0 delivered")
    assert call.stdout.splitlines()[-1].endswith(f"cannot connect to {url}: connection refused")
    with NatsServer(tmp_path / "js", port) as server:
        with runtime(db) as rt:
            rt.events.dispatcher.now = lambda: time.time() + 3600  # past the backoff
            (report,) = rt.events.deliver().values()
            assert report.complete
            assert_exactly_once_in_order(rt, stream_messages(server.url)[0])


def test_server_killed_mid_delivery_and_restarted(rt, server, tmp_path):
    with SlowAckProxy(server.port, tmp_path / "delay") as proxy:
        proxy.hold_after(20)  # the acknowledgements after the 20th wait: killed in the middle
        rt.events.add_sink("nats", proxy.url, options={"backoff": 0, "timeout": 60})
        for _ in range(20):
            rt.call(to=0x100)
        total = len(rt.events.list())
        rt.events.dispatcher.batch = 5
        reports = []
        worker = threading.Thread(target=lambda: reports.append(rt.events.deliver(deadline=60)))
        worker.start()
        watch = sqlite3.connect(rt.store.path)
        count = "SELECT count(*) FROM deliveries"
        while watch.execute(count).fetchone()[0] < 20 and worker.is_alive():
            time.sleep(0.005)
        server.kill()
        worker.join(60)
        watch.close()
        (killed,) = reports[0].values()
        assert 20 <= killed.delivered < total and killed.left == total - killed.delivered
        assert killed.error.startswith(("lost the connection", proxy.url))
        (down,) = rt.events.deliver().values()
        assert down.delivered == 0 and down.left == killed.left
        server.start()
        proxy.delay(0)
        (restarted,) = rt.events.deliver().values()
    assert restarted.complete and killed.delivered + restarted.delivered == total
    assert_exactly_once_in_order(rt, stream_messages(server.url)[0])


def test_slow_acknowledgements_are_retried_and_deduplicated(rt, server, tmp_path):
    with SlowAckProxy(server.port, tmp_path / "delay") as proxy:
        rt.events.add_sink("nats", proxy.url, options={"timeout": 0.3, "backoff": 0})
        for _ in range(3):
            rt.call(to=0x100)
        total = len(rt.events.list())
        proxy.delay(1.0)
        (slow,) = rt.events.deliver().values()
        assert slow.delivered == 0 and slow.left == total
        assert slow.error == f"{proxy.url}: no acknowledgement in 0.3 s"
        proxy.delay(0)
        (fast,) = rt.events.deliver().values()
    assert fast.complete and fast.delivered == total
    assert_exactly_once_in_order(rt, stream_messages(server.url)[0])


def test_events_tail_prints_the_stream_as_json_lines(rt, server, tmp_path):
    rt.events.add_sink("nats", server.url)
    a, b = rt.call(to=0x100), rt.call(to=0x100)
    rt.events.deliver()
    db = rt.store.path
    out = cli("events", "tail", "--nats", server.url, "--no-follow", db=db)
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert out.returncode == 0 and lines == [e.to_json() for e in rt.events.list()]
    ctx = cli("events", "tail", "--nats", server.url, "--no-follow", "--context",
              b.context.context_id, db=db)
    assert [json.loads(x) for x in ctx.stdout.splitlines()] == [e.to_json() for e in b.events]
    kind = cli("events", "tail", "--nats", server.url, "--no-follow", "--type", "result.recorded",
               db=db)
    assert [json.loads(x)["stream"] for x in kind.stdout.splitlines()] == \
        [a.context.context_id, b.context.context_id]
    # Following: it waits for what comes next and stops after --limit.
    follow = subprocess.Popen(
        [sys.executable, "-m", "rtwo_vm.cli", "events", "tail", "--nats", server.url,
         "--type", "result.recorded", "--limit", "3"],
        stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert len([follow.stdout.readline(), follow.stdout.readline()]) == 2
        c = rt.call(to=0x100)
        rt.events.deliver()
        third = json.loads(follow.stdout.readline())
        assert follow.wait(30) == 0 and third["stream"] == c.context.context_id
    finally:
        if follow.poll() is None:
            follow.kill()
        follow.wait(10)
        follow.stdout.close()
    # A durable consumer remembers what it printed.
    firsts = [cli("events", "tail", "--nats", server.url, "--durable", "audit", "--limit", "2",
                  "--no-follow", db=db).stdout for _ in range(2)]
    assert [json.loads(x)["eventId"] for f in firsts for x in f.splitlines()] == \
        [e.event_id for e in rt.events.list()[:4]]
    bad = cli("events", "tail", "--nats", f"nats://127.0.0.1:{unused_port()}", "--no-follow", db=db)
    assert bad.returncode == 2 and bad.stderr.startswith("rtwo-vm: error: cannot connect to")
    assert bad.stderr.count("\n") == 1


def test_no_thread_or_event_loop_is_left_behind(rt, server):
    rt.events.add_sink("nats", server.url)
    before = set(threading.enumerate())
    rt.call(to=0x100)
    rt.events.deliver()
    worker = rt.events.background(interval=0.05)
    try:
        rt.call(to=0x100)
        deadline = time.monotonic() + 30
        while rt.events.undelivered_counts()[f"nats:{server.url}/{STREAM}"] and \
                time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop()
    assert set(threading.enumerate()) == before
    assert_exactly_once_in_order(rt, stream_messages(server.url)[0])
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()  # no loop left running in this thread


def test_tail_skips_a_message_that_is_not_an_event(rt, server):
    """A message published to the stream by someone else (here 100,000 nested arrays, which
    no JSON parser can take recursively) is skipped; the events around it are printed."""
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()

    async def publish():
        nc = await nats.connect(server.url)
        try:
            await nc.jetstream().publish("rtwo.vm.events.x.y", b"[" * 100_000)
        finally:
            await nc.close()
    asyncio.run(publish())
    rt.call(to=0x100)
    rt.events.deliver()
    out = cli("events", "tail", "--nats", server.url, "--no-follow", db=rt.store.path)
    assert out.returncode == 0, out.stderr
    assert [json.loads(line) for line in out.stdout.splitlines()] == \
        [e.to_json() for e in rt.events.list()]


def test_tail_ends_with_one_line_when_the_server_dies(rt, server):
    rt.events.add_sink("nats", server.url)
    rt.call(to=0x100)
    rt.events.deliver()
    follow = subprocess.Popen(
        [sys.executable, "-m", "rtwo_vm.cli", "events", "tail", "--nats", server.url],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert json.loads(follow.stdout.readline())["eventId"] == 1
        server.kill()
        assert follow.wait(30) == 3  # after the bounded reconnect attempts (test_nats_tail)
        assert follow.stderr.read() == (f"rtwo-vm: error: lost the connection to {server.url} "
                                        "(5 reconnect attempts failed)\n")
    finally:
        if follow.poll() is None:
            follow.kill()
        follow.wait(10)
        follow.stdout.close()
        follow.stderr.close()


def test_a_delivering_process_killed_after_publishing_resends_and_the_server_drops_them(
        rt, server, tmp_path):
    async def stored() -> int:
        nc = await nats.connect(server.url)
        try:
            return (await nc.jetstream().stream_info(STREAM)).state.messages
        except nats.js.errors.NotFoundError:
            return 0
        finally:
            await nc.close()
    with SlowAckProxy(server.port, tmp_path / "delay") as proxy:
        proxy.delay(0.2)  # the acknowledgements come late: the child is killed before them
        rt.events.add_sink("nats", proxy.url)
        for _ in range(10):
            rt.call(to=0x100)
        total = len(rt.events.list())
        child = subprocess.Popen([sys.executable, "-m", "rtwo_vm.cli", "events", "deliver",
                                  "--db", rt.store.path], stdout=subprocess.DEVNULL, cwd=ROOT)
        try:
            deadline = time.monotonic() + 30
            while asyncio.run(stored()) == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
        finally:
            child.kill()
            child.wait(10)
        in_doubt = rt.events.undelivered_counts()[f"nats:{proxy.url}/{STREAM}"]
        assert in_doubt > 0 and asyncio.run(stored()) > 0  # published, not recorded
        proxy.delay(0)
        (report,) = rt.events.deliver().values()
    assert report.complete and report.delivered == in_doubt
    assert_exactly_once_in_order(rt, stream_messages(server.url)[0])
    assert len(stream_messages(server.url)[0]) == total
