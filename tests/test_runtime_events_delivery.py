"""Delivery under hostile receivers (real processes on 127.0.0.1): a pass deadline, capped
exponential backoff, dead events that hold back their stream and can be requeued, one
keep-alive connection per pass, HMAC signatures."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys

import pytest

from events_support import HttpReceiver
from test_runtime_support import EXAMPLES, ROOT, example, runtime, shown_url


@pytest.fixture
def rt(tmp_path):
    r = runtime(tmp_path / "vm.db")
    r.deploy(example("counter"), 0x100)
    yield r
    r.close()


def _ids(requests):
    return [r["eventId"] for r in requests]


def _first_seen(requests):
    """Event ids in the order the receiver first saw them (resends after a timeout dropped)."""
    seen: list[int] = []
    for event_id in _ids(requests):
        if event_id not in seen:
            seen.append(event_id)
    return seen


def test_a_receiver_that_never_answers_costs_one_timeout_per_pass(rt, tmp_path):
    with HttpReceiver(tmp_path / "hang.log", "hang") as hook:
        rt.events.add_sink("webhook", hook.url, options={"timeout": 0.3, "backoff": 0})
        for _ in range(5):
            rt.call(to=0x100)
        total = len(rt.events.list())
        (report,) = rt.events.deliver(deadline=3).values()
        requests = hook.requests()
    assert report.delivered == 0 and report.failed == 1 and report.left == total
    assert report.error == f"{shown_url(hook.url)}: no answer in time"
    assert _ids(requests) == [1] and {r["conn"] for r in requests} == {1}  # not one per stream
    (failure,) = rt.events.failures()
    assert failure["attempts"] == 1 and failure["deadAt"] is None


def test_the_pass_deadline_ends_a_pass_to_a_slow_receiver_and_later_passes_finish(rt, tmp_path):
    with HttpReceiver(tmp_path / "slow.log", "slow", "0.1") as hook:
        rt.events.add_sink("webhook", hook.url, options={"timeout": 2})
        for _ in range(3):
            rt.call(to=0x100)
        total = len(rt.events.list())
        (first,) = rt.events.deliver(deadline=0.5).values()
        assert 0 < first.left < total  # the deadline ended the pass, not the answers and first.error is not None
        passes = 1
        while rt.events.undelivered_counts()[f"webhook:{shown_url(hook.url)}"] and passes < 50:
            rt.events.deliver(deadline=0.5)
            passes += 1
        requests = hook.requests()
    assert passes > 1 and rt.events.undelivered_counts() == {f"webhook:{shown_url(hook.url)}": 0}
    assert _first_seen(requests) == [e.event_id for e in rt.events.list()]


def test_backoff_doubles_up_to_its_cap_and_the_event_dies_after_max_attempts(rt, tmp_path):
    clock = [1000.0]
    rt.events.dispatcher.now = lambda: clock[0]
    rt.events.dispatcher.retry_in_pass = False
    with HttpReceiver(tmp_path / "fail.log", "fail") as hook:
        rt.events.add_sink("webhook", hook.url,
                           options={"backoff": 1, "backoff_cap": 3, "max_attempts": 4})
        delays, next_in = [], []
        for _ in range(12):  # passes: most find the failed event not yet due
            (report,) = rt.events.deliver().values()
            failure = rt.events.failures()[0]
            if report.failed:
                delays.append(failure["nextAt"] - clock[0])
                next_in.append(report.next_in)
            clock[0] += 1.0
        requests = hook.requests()
    assert delays == [1, 2, 3, 3]  # 1, 2, then capped at 3 (the fourth attempt is the last)
    assert next_in == [1, 2, 3, None]  # reported by the pass; a dead event is never due
    assert _ids(requests) == [1, 1, 1, 1]  # retries stopped at max_attempts
    (dead,) = rt.events.dead()
    assert dead["eventId"] == 1 and dead["attempts"] == 4 and dead["reason"] == "OSError: HTTP 503"
    assert dead["stream"] == "contract:0x100" and dead["heldBack"] == 0


def test_a_dead_event_holds_back_its_stream_until_requeued_other_streams_go_on(rt, tmp_path):
    a = rt.call(to=0x100)
    b = rt.call(to=0x100)
    poison = a.events[2].event_id
    with HttpReceiver(tmp_path / "poison.log", "fail-event", str(poison), "3") as hook:
        rt.events.add_sink("webhook", hook.url, options={"backoff": 0, "max_attempts": 2})
        (report,) = rt.events.deliver().values()
        assert report.dead == 1 and report.failed == 2
        (dead,) = rt.events.dead()
        assert dead["eventId"] == poison and dead["heldBack"] == len(a.events) - 3
        assert dead["reason"] == "OSError: HTTP 503"
        delivered = set(_ids(hook.requests()))
        assert {e.event_id for e in b.events} <= delivered  # the other context went on
        assert not {e.event_id for e in a.events[3:]} & delivered
        (again,) = rt.events.deliver().values()  # still blocked: a dead event is not retried
        assert again.delivered == again.failed == 0 and again.left == len(a.events) - 2
        assert rt.events.requeue([poison]) == 1 and rt.events.dead() == []
        (last,) = rt.events.deliver().values()  # third 503, then accepted
        requests = hook.requests()
    assert last.complete and last.failed == 1
    ctx = [r["eventId"] for r in requests if r["eventId"] in {e.event_id for e in a.events}]
    assert _first_seen([{"eventId": i} for i in ctx]) == [e.event_id for e in a.events]
    assert ctx.count(poison) == 4


def test_hmac_signature_header(rt, tmp_path, monkeypatch):
    monkeypatch.setenv("RTWO_TEST_HOOK_SECRET", "s3cret")
    with HttpReceiver(tmp_path / "signed.log", "ok") as hook:
        rt.events.add_sink("webhook", hook.url,
                           options={"hmac_secret_env": "RTWO_TEST_HOOK_SECRET"})
        rt.call(to=0x100)
        (report,) = rt.events.deliver().values()
        requests = hook.requests()
    assert report.complete and len(requests) == len(rt.events.list())
    for r in requests:
        expected = hmac.new(b"s3cret", r["body"].encode(), hashlib.sha256).hexdigest()
        assert r["signature"] == f"sha256={expected}"
    monkeypatch.delenv("RTWO_TEST_HOOK_SECRET")
    rt.call(to=0x100)
    (report,) = rt.events.deliver().values()
    assert report.error == ("environment variable RTWO_TEST_HOOK_SECRET (the webhook's HMAC "
                            "secret) is not set") and report.delivered == 0


def _cli(*args, db):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)


def test_cli_dead_and_requeue(tmp_path):
    db = tmp_path / "vm.db"
    with HttpReceiver(tmp_path / "cli.log", "fail-event", "1", "1") as hook:
        assert _cli("deploy", str(EXAMPLES / "counter.rasm"), db=db).returncode == 0
        added = _cli("events", "sink-add", "webhook", hook.url, "--max-attempts", "1", db=db)
        assert added.returncode == 0 and json.loads(added.stdout)["config"] == {"max_attempts": 1}
        first = _cli("events", "deliver", db=db)
        assert first.returncode == 1
        assert first.stdout == (f"webhook:{shown_url(hook.url)}: 0 delivered, 1 failed, 1 dead, 1 left; "
                                "event 1: OSError: HTTP 503\n")
        dead = _cli("events", "dead", "--json", db=db)
        listed = [(d["eventId"], d["reason"]) for d in json.loads(dead.stdout)]
        assert listed == [(1, "OSError: HTTP 503")]
        not_dead = _cli("events", "requeue", "2", db=db)
        assert not_dead.stderr == "rtwo-vm: error: event 2 is not dead\n"
        requeue = _cli("events", "requeue", "--all", db=db)
        assert requeue.stdout == "requeued 1 dead event\n"
        last = _cli("events", "deliver", db=db)
        assert last.returncode == 0 and "1 delivered, 0 failed, 0 dead, 0 left" in last.stdout
    for bad in (["events", "deliver", "--deadline", "nan"], ["events", "requeue"],
                ["events", "sink-add", "webhook", "http://x", "--max-attempts", "0"],
                ["events", "sink-add", "jsonl", str(tmp_path / "f"), "--stream", "S"],
                ["events", "show", "18446744073709551616"],
                ["events", "list", "--deadline", "3"], ["events", "deliver", "--all"]):
        out = _cli(*bad, db=db)
        assert out.returncode == 2 and out.stderr.count("\n") == 1, bad
    assert not (tmp_path / "f").exists()
