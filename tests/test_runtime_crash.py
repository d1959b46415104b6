"""A child process running calls (or delivering events) is killed with SIGKILL at random points;
the database must hold every execution completely or not at all, and a restarted runtime
delivers every event at least once, in order per stream."""

from __future__ import annotations

import hashlib
import json
import random
import signal
import subprocess
import sys

from reference_vm.result import canonical
from rtwo_vm.runtime.lifecycle import is_legal_path
from test_runtime_support import ROOT, example, program, runtime

CHILD = r"""
import sys
from rtwo_vm.runtime import Runtime, CallRequest
from reference_vm import Limits
db, mode = sys.argv[1], sys.argv[2]
rt = Runtime(db)
requests = [
    CallRequest(to=0x101, caller=1),                      # counter: commits
    CallRequest(to=0x100, caller=2),                      # proxy: callee commits, callee reverts
    CallRequest(to=0x103),                                # trap: fault, violation
    CallRequest(to=0x101, isolation_level="pure"),        # refused by policy binding
    CallRequest(to=0x101, limits=Limits(compute=40)),     # exhausted
]
print("ready", flush=True)
i = 0
while True:
    if mode == "calls":
        rt.call(requests[i % len(requests)])
        i += 1
    else:
        rt.events.deliver()
    print("done", flush=True)  # the parent kills after a chosen number of these
"""


def _spawn(db, mode):
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(db), mode], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
    return proc


def _kill_after(proc, finished):
    """SIGKILL the child once it has reported ``finished`` whole iterations: the kill lands
    somewhere inside the next one (an event, not a chosen delay)."""
    for _ in range(finished):
        assert proc.stdout.readline().strip() == "done", proc.stderr.read()
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()


def test_killed_runs_leave_whole_executions_and_every_event_is_delivered(tmp_path):
    db, out = tmp_path / "crash.db", tmp_path / "events.jsonl"
    with runtime(db) as rt:
        rt.deploy(example("proxy"), 0x100)
        rt.deploy(example("counter"), 0x101)
        rt.deploy(example("reverter"), 0x102)
        deployed_root = rt.deploy(program("trap"), 0x103).state_root
        rt.events.add_sink("jsonl", str(out))
    rng = random.Random(20250101)
    for _ in range(4):
        _kill_after(_spawn(db, "calls"), rng.randint(2, 6))
    for _ in range(3):
        _kill_after(_spawn(db, "deliver"), rng.randint(0, 2))

    with runtime(db) as rt:
        _check_records(rt, deployed_root)
        total = len(rt.events.list())
    with runtime(db, deliver_on_open=True) as rt:
        assert list(rt.events.undelivered_counts().values()) == [0]
        events = {e.event_id: e for e in rt.events.list()}
    _check_delivery(out, events, total)


def _check_records(rt, deployed_root):
    assert rt.store.one("PRAGMA integrity_check")[0] == "ok"
    assert rt.contexts.incomplete() == []
    contexts = rt.contexts.list()
    roots = [c for c in contexts if c.depth == 1]
    assert len(roots) >= 8, "each of the 4 children recorded at least 2 calls before its kill"
    committed_counter = 0
    state_root = deployed_root
    for context in contexts:
        cid = context.context_id
        stages = [e.stage for e in rt.contexts.history(cid)]
        assert is_legal_path(stages) and stages[-1] == "finalized"
        violations = rt.violations.for_context(cid)
        kinds = [e.type for e in rt.events.list(stream=cid)]
        assert kinds == (["lifecycle.transition"] * len(stages) + ["violation.recorded"] * len(violations)
                         + ["result.recorded"])
        result = rt.results.for_context(cid)
        assert result.digest == hashlib.sha256(canonical(result.compared).encode()).hexdigest()
        if context.contract_id == "0x101" and "committed" in stages:
            committed_counter += 1
        if context.depth == 1 and "committed" in stages and result.state_changes:
            state_root = hashlib.sha256((state_root + canonical(
                {"state_changes": list(result.state_changes)})).encode()).hexdigest()
    # Storage holds exactly the committed increments, and the state chain has no gap.
    counter = int(rt.contract(0x101)["storage"].get("0x0", "0x0"), 16)
    assert counter == committed_counter > 0
    assert rt.state_root == state_root
    assert rt.contract(0x102)["storage"] == {}  # the reverter's write never survives


def _check_delivery(out, events, total):
    lines = []
    for text in out.read_text().splitlines():
        lines.append(json.loads(text))  # every line whole: one write per event
    delivered = [d["eventId"] for d in lines]
    assert set(delivered) == set(events) and len(events) == total
    first_seen: dict[str, list[int]] = {}
    seen = set()
    for event_id in delivered:
        if event_id in seen:
            continue  # at least once: a resend after a kill
        seen.add(event_id)
        first_seen.setdefault(events[event_id].stream, []).append(event_id)
    for stream, ids in first_seen.items():
        assert ids == sorted(ids), f"stream {stream} delivered out of order"


PAUSING_CHILD = r"""
import sys, time
from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.store import Store
db, where = sys.argv[1], sys.argv[2]
rt = Runtime(db)
if where == "commit":
    # Stop inside the execution's transaction, after every row is written, before COMMIT.
    def paused_commit(self):
        print("paused", flush=True)
        time.sleep(60)
    Store.commit = paused_commit
    rt.call(to=0x101)
else:
    # Stop after the sink has the events, before the deliveries are recorded.
    def paused_acknowledge(sink, sent):
        print("paused", flush=True)
        time.sleep(60)
    rt.events.dispatcher._acknowledge = paused_acknowledge
    rt.events.deliver()
"""


def _pause_and_kill(db, where):
    proc = subprocess.Popen([sys.executable, "-c", PAUSING_CHILD, str(db), where],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout.readline().strip() == "paused", proc.stderr.read()
    _kill_after(proc, 0)


def test_a_kill_inside_the_transaction_records_nothing_and_a_kill_before_acknowledging_resends(tmp_path):
    db, out = tmp_path / "pause.db", tmp_path / "events.jsonl"
    with runtime(db) as rt:
        rt.deploy(example("counter"), 0x101)
        rt.call(to=0x101)
        rt.events.add_sink("jsonl", str(out))
        before = (rt.contexts.count(), len(rt.events.list()), rt.state_root)
    _pause_and_kill(db, "commit")
    with runtime(db) as rt:
        assert (rt.contexts.count(), len(rt.events.list()), rt.state_root) == before
        assert rt.contract(0x101)["storage"] == {"0x0": "0x1"} and rt.contexts.incomplete() == []
        assert rt.call(to=0x101).result.output.startswith("0x02")  # the lock died with the child
        total = len(rt.events.list())
    _pause_and_kill(db, "deliver")
    assert len(out.read_text().splitlines()) == total  # the sink got everything...
    with runtime(db, deliver_on_open=True) as rt:      # ...but it was not acknowledged: again
        assert list(rt.events.undelivered_counts().values()) == [0]
    ids = [json.loads(line)["eventId"] for line in out.read_text().splitlines()]
    assert ids == list(range(1, total + 1)) * 2
