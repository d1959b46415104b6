"""VM Event Publisher: bus, transactional outbox, sinks, ordered at-least-once delivery."""

from __future__ import annotations

import hashlib
import json
import time

import pytest

from events_support import HttpReceiver
from rtwo_vm.runtime import InvalidInput, UnknownRecord
from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.sinks import send_each
from rtwo_vm.runtime.sinks.jsonl import JsonLinesSink
from test_runtime_support import example, program, runtime


@pytest.fixture
def rt(tmp_path):
    r = runtime(tmp_path / "vm.db")
    yield r
    r.close()


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_the_bus_gets_each_committed_event_in_order(rt):
    seen, only_results = [], []
    rt.events.subscribe(seen.append)
    unsubscribe = rt.events.subscribe(only_results.append, types=["result.recorded"])
    rt.events.subscribe(lambda e: 1 / 0)  # a broken subscriber does not stop the others
    rt.deploy(example("counter"), 0x100)
    rec = rt.call(to=0x100)
    assert [e.event_id for e in seen] == [e.event_id for e in rt.events.list()]
    assert [e.type for e in only_results] == ["result.recorded"]
    assert rec.events == [e for e in seen if e.stream == rec.context.context_id]
    assert len(rt.bus.errors) == len(seen)
    unsubscribe()
    rt.call(to=0x100)
    assert len(only_results) == 1


def test_nothing_is_published_or_stored_when_the_transaction_fails(rt):
    rt.deploy(example("counter"), 0x100)
    seen = []
    rt.events.subscribe(seen.append)
    before = len(rt.events.list())
    with pytest.raises(InvalidInput, match="already holds"):
        rt.deploy(example("counter"), 0x100)
    assert seen == [] and len(rt.events.list()) == before


def test_a_failure_while_recording_leaves_no_part_of_the_execution(rt, monkeypatch):
    rt.deploy(example("counter"), 0x100)
    rt.call(to=0x100)  # the VM and default policy exist now
    tables = ("contexts", "stage_history", "sandboxes", "accounting", "results", "outbox", "storage")
    before = {t: rt.store.one(f"SELECT count(*) FROM {t}")[0] for t in tables}
    root_before = rt.state_root
    original = rt.writer.event

    def failing(tx, stream, type_, payload, at):
        if type_ == "result.recorded":
            raise OSError("disk on fire")
        return original(tx, stream, type_, payload, at)
    monkeypatch.setattr(rt.writer, "event", failing)
    with pytest.raises(OSError):
        rt.call(to=0x100)
    assert {t: rt.store.one(f"SELECT count(*) FROM {t}")[0] for t in tables} == before
    assert rt.state_root == root_before and rt.contract(0x100)["storage"] == {"0x0": "0x1"}
    monkeypatch.undo()
    assert int(rt.call(to=0x100).result.output[2:4], 16) == 2  # the lock was released


def test_jsonl_sink_receives_everything_once_in_order(rt, tmp_path):
    out = tmp_path / "events.jsonl"
    rt.events.add_sink("jsonl", str(out))
    rt.deploy(example("counter"), 0x100)
    rt.call(to=0x100)
    first = rt.events.deliver()
    assert first[f"jsonl:{out.resolve()}"].delivered == len(rt.events.list())
    assert rt.events.deliver()[f"jsonl:{out.resolve()}"].delivered == 0
    rt.call(to=0x100)
    rt.events.deliver()
    lines = _lines(out)
    assert [d["eventId"] for d in lines] == [e.event_id for e in rt.events.list()]
    assert rt.events.undelivered_counts() == {f"jsonl:{out.resolve()}": 0}


def test_a_sink_added_from_now_skips_the_past_and_sinks_can_be_removed(rt, tmp_path):
    rt.deploy(example("counter"), 0x100)
    rt.call(to=0x100)
    sink = rt.events.add_sink("jsonl", str(tmp_path / "late.jsonl"), replay=False)
    with pytest.raises(InvalidInput, match="already registered"):
        rt.events.add_sink("jsonl", str(tmp_path / "late.jsonl"))
    with pytest.raises(InvalidInput, match="unknown sink kind"):
        rt.events.add_sink("carrier-pigeon", "x")
    rec = rt.call(to=0x100)
    rt.events.deliver()
    assert {d["stream"] for d in _lines(tmp_path / "late.jsonl")} == {rec.context.context_id}
    rt.events.remove_sink(sink["name"])
    assert rt.events.sinks() == []
    with pytest.raises(UnknownRecord):
        rt.events.remove_sink(sink["name"])


class FlakySink:
    """Refuses the first ``failures`` attempts at one event; records what it received."""

    kind = "test"

    def __init__(self, failing_event: int, failures: int):
        self.name = "test:flaky"
        self.options = {"max_attempts": 20, "backoff": 0.0, "backoff_cap": 0.0}
        self.failing_event, self.failures = failing_event, failures
        self.received: list[VMEvent] = []

    def open(self, deadline):
        return self

    def send(self, events, deadline):
        return send_each(events, deadline, self._one)

    def _one(self, event: VMEvent) -> None:
        if event.event_id == self.failing_event and self.failures > 0:
            self.failures -= 1
            raise ConnectionError("try again")
        self.received.append(event)

    def flush(self):
        pass

    def close(self):
        pass


def test_a_failing_event_holds_back_its_stream_only_until_it_is_delivered(rt):
    rt.deploy(example("counter"), 0x100)
    a = rt.call(to=0x100)
    b = rt.call(to=0x100)
    stuck = a.events[3].event_id
    sink = FlakySink(stuck, failures=2)
    rt.events.dispatcher.retry_in_pass = False  # one attempt per pass
    report = rt.events.dispatcher.deliver(sink)
    assert report.failed == 1 and report.left == len(a.events) - 3
    received = [e.event_id for e in sink.received]
    of_a = {e.event_id for e in a.events}
    assert [e.event_id for e in a.events[:3]] == [i for i in received if i in of_a]
    assert all(e.event_id in received for e in b.events)  # the other stream went on
    failure = rt.store.one("SELECT * FROM delivery_failures WHERE event_id = ?", (stuck,))
    assert failure["attempts"] == 1 and "try again" in failure["last_error"]
    assert rt.events.dispatcher.deliver(sink).failed == 1  # the second failure
    assert rt.store.one("SELECT attempts FROM delivery_failures")[0] == 2
    third = rt.events.dispatcher.deliver(sink)
    assert third.delivered == len(a.events) - 3 and third.failed == 0 and third.complete
    per_stream = [e.event_id for e in sink.received if e.stream == a.context.context_id]
    assert per_stream == [e.event_id for e in a.events]  # in order, each once
    assert rt.store.one("SELECT count(*) FROM delivery_failures")[0] == 0


def test_within_a_pass_a_failed_event_is_retried_when_due(rt):
    rt.deploy(example("counter"), 0x100)
    a = rt.call(to=0x100)
    sink = FlakySink(a.events[0].event_id, failures=3)
    report = rt.events.dispatcher.deliver(sink)  # backoff 0: due at once, three times
    assert report.failed == 3 and report.complete
    assert [e.event_id for e in sink.received][-len(a.events):] == [e.event_id for e in a.events]


def test_webhook_sink_posts_to_a_real_server_over_one_connection(rt, tmp_path):
    with HttpReceiver(tmp_path / "hook.log", "ok") as hook:
        rt.events.add_sink("webhook", hook.url)
        rt.deploy(example("proxy"), 0x100)
        rt.deploy(example("counter"), 0x101)
        rt.deploy(example("reverter"), 0x102)
        rt.call(to=0x100)
        (report,) = rt.events.deliver().values()
        assert report.failed == 0 and report.delivered == len(rt.events.list())
        requests = hook.requests()
    assert [r["eventId"] for r in requests] == [e.event_id for e in rt.events.list()]
    assert [json.loads(r["body"])["eventId"] for r in requests] == [r["eventId"] for r in requests]
    assert json.loads(requests[0]["body"])["type"] == "contract.deployed"
    assert {r["conn"] for r in requests} == {1}  # keep-alive: one connection for the pass
    assert all(r["signature"] is None for r in requests)


def test_webhook_to_a_dead_server_fails_once_and_keeps_the_events(rt):
    rt.events.add_sink("webhook", "http://127.0.0.1:9/nowhere")
    rt.deploy(example("counter"), 0x100)
    (report,) = rt.events.deliver().values()
    assert report.delivered == 0 and report.failed == 1
    assert report.error == ("cannot connect to http://127.0.0.1:9/...#" + hashlib.sha256(
        b"http://127.0.0.1:9/nowhere").hexdigest()[:8] + ": connection refused")
    assert list(rt.events.undelivered_counts().values()) == [len(rt.events.list())]
    with pytest.raises(InvalidInput, match="http"):
        rt.events.add_sink("webhook", "ftp://example")


def test_a_restarted_runtime_resumes_delivery(tmp_path):
    db, out = tmp_path / "vm.db", tmp_path / "out.jsonl"
    with runtime(db) as first:
        first.events.add_sink("jsonl", str(out))
        first.deploy(example("counter"), 0x100)
        first.call(to=0x100)
        total = len(first.events.list())
    assert not out.exists()
    with runtime(db, deliver_on_open=True) as second:
        assert second.events.undelivered_counts() == {f"jsonl:{out.resolve()}": 0}
    assert [d["eventId"] for d in _lines(out)] == list(range(1, total + 1))


def test_background_delivery(rt, tmp_path):
    out = tmp_path / "bg.jsonl"
    rt.events.add_sink("jsonl", str(out))
    worker = rt.events.background(interval=0.05)
    try:
        rt.deploy(program("logger"), 0x100)
        rt.call(to=0x100)
        deadline = time.monotonic() + 10
        while len(_lines(out)) < len(rt.events.list()) and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        worker.stop()
    assert [d["eventId"] for d in _lines(out)] == [e.event_id for e in rt.events.list()]


def test_background_delivery_survives_a_failing_pass(rt, tmp_path):
    """A damaged delivery row makes passes fail; the thread keeps the error, stays alive and
    delivers once the row is mended."""
    import sqlite3
    out = tmp_path / "bg.jsonl"
    rt.events.add_sink("jsonl", str(out))
    rt.deploy(program("logger"), 0x100)
    rt.call(to=0x100)
    name = f"jsonl:{out.resolve()}"
    with sqlite3.connect(tmp_path / "vm.db") as db:
        db.execute("INSERT INTO delivery_failures VALUES (?, 1, 'many', 'x', 'now', 0, NULL)",
                   (name,))
    worker = rt.events.background(interval=0.01)
    try:
        deadline = time.monotonic() + 30
        while worker.failed_passes < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert worker.failed_passes >= 2 and worker.passes == 0 and worker.alive
        assert worker.errors[-1].startswith(f"DamagedRecord: delivery_failures {name}/1: "
                                            "attempts holds 'many'")
        assert not out.exists()
        with sqlite3.connect(tmp_path / "vm.db") as db:
            db.execute("DELETE FROM delivery_failures")
        while len(_lines(out)) < len(rt.events.list()) and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        worker.stop()
    assert [d["eventId"] for d in _lines(out)] == [e.event_id for e in rt.events.list()]
    assert worker.passes >= 1 and not worker.alive


def test_jsonl_sink_never_keeps_half_a_line(tmp_path):
    """A real file size limit (RLIMIT_FSIZE) in a child process cuts the second line short;
    the sink undoes the part it wrote, and after the limit is gone the next line is whole."""
    import subprocess
    import sys
    out = tmp_path / "limited.jsonl"
    child = f"""
import resource, signal, sys
from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.sinks import SinkUnavailable
from rtwo_vm.runtime.sinks.jsonl import JsonLinesSink
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
sink = JsonLinesSink({str(out)!r})
sink.deliver(VMEvent(1, "ctx_1", "result.recorded", {{}}, "2025-01-01T00:00:00+00:00"))
size = len(open({str(out)!r}, "rb").read())
resource.setrlimit(resource.RLIMIT_FSIZE, (size + 40, resource.RLIM_INFINITY))
try:
    sink.deliver(VMEvent(2, "ctx_1", "result.recorded", {{"pad": "x" * 200}},
                         "2025-01-01T00:00:00+00:00"))
except SinkUnavailable as err:
    print("refused:", err)
"""
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused:") and "undone" in done.stdout
    lines = out.read_bytes().split(b"\n")
    assert lines[1:] == [b""] and json.loads(lines[0])["eventId"] == 1
    JsonLinesSink(out).deliver(VMEvent(3, "ctx_1", "result.recorded", {},
                                       "2025-01-01T00:00:00+00:00"))
    assert [d["eventId"] for d in _lines(out)] == [1, 3]


def test_jsonl_lines_are_canonical_and_self_describing(tmp_path):
    sink = JsonLinesSink(tmp_path / "x.jsonl")
    sink.deliver(VMEvent(1, "ctx_1", "result.recorded", {"b": 1, "a": 2}, "2025-01-01T00:00:00+00:00"))
    line = (tmp_path / "x.jsonl").read_text()
    assert line == ('{"createdAt":"2025-01-01T00:00:00+00:00","eventId":1,'
                    '"payload":{"a":2,"b":1},"stream":"ctx_1","type":"result.recorded"}\n')
