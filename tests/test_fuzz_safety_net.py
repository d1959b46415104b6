"""rtwo-vm fuzz: the wall-clock limit is a safety net, never a verdict; response bounds follow
the expected result; a damaged campaign state is refused in one line."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.corpus import store
from conformance.fuzz.generate import generate
from conformance.fuzz.program import Code, default_limits, default_policy
from conformance.run.process import DEFAULT_MAX_LINE
from conformance.run.requests import SLACK

ROOT = Path(__file__).resolve().parents[1]
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"


def cli(*args, timeout=240):
    if args[:1] == ("fuzz",) and "--spec-version" not in args and "--resume" not in args:
        args = (*args, "--spec-version", "1.0")      # the campaigns of before 1.1, request for request
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def adapter(*args: str) -> str:
    return shlex.join([sys.executable, str(FAULTY), *args])


@pytest.fixture(scope="module")
def hang_campaign(tmp_path_factory):
    """A campaign against an adapter that hangs on request 5 (and on nothing else), which asks
    to stop at the first finding."""
    out = tmp_path_factory.mktemp("fuzz") / "hang"
    done = cli("fuzz", "--impl", adapter("--fault", "hang", "--request-id", "fuzz/5"), "--runs", "64",
               "--timeout", "1.5", "--stop-on-finding", "--seed", "2", "--out", str(out), "--json")
    return out, done


def test_a_hang_is_a_safety_net_entry_not_a_divergence(hang_campaign):
    out, done = hang_campaign
    assert done.returncode == 0, done.stdout + done.stderr        # not counted in the exit status
    report = json.loads(done.stdout)
    assert report["buckets"] == [] and report["divergent_requests"] == 0
    assert report["executions"] == 64 and report["stopped"] == "--runs 64"     # the campaign went on
    net = report["safety_net"]
    assert net["count"] == 1
    [entry] = net["entries"]
    assert entry["index"] == 5 and entry["run"] == "main run"
    assert entry["seconds"] == [1.5, 6.0]                  # the limit, then the retry with 4 times it
    assert store.load(out / "findings") == []            # nothing shrunk into a finding
    [vector] = store.load(out / "safety-net")
    assert vector["id"] == "fuzz/s2/000000005" and "class_safety_net_timeout" in vector["tags"]["categories"]
    assert "Safety-net entry, not a divergence" in vector["description"]


def test_a_safety_net_entry_reproduces_and_is_refused_by_promote(hang_campaign, tmp_path):
    out, _ = hang_campaign
    # the entry is a corpus directory as it is: the reference passes it
    ok = cli("conformance", "run", "--dir", str(out / "safety-net"), "--out", str(tmp_path / "c"), "--quiet",
             "--repeat", "0", "--fresh", "0")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    promoted, target = tmp_path / "promoted.jsonl", tmp_path / "corpus"
    done = cli("vectors", "promote", str(out / "safety-net"), "--promoted", str(promoted), "--dir", str(target))
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "fuzz/s2/000000005" in lines[0] and "safety-net" in lines[0]
    assert not promoted.exists() and not target.exists()


def test_the_text_report_lists_the_safety_net_apart(hang_campaign):
    out, _ = hang_campaign
    text = (out / "report.txt").read_text()
    assert "no divergence" in text
    assert "safety net (wall clock, not a verdict): 1 request(s)" in text and "request 5 on" in text


def test_a_resumed_campaign_keeps_its_safety_net(hang_campaign, tmp_path):
    import shutil
    out, _ = hang_campaign
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    done = cli("fuzz", "--resume", str(copy), "--impl", adapter("--fault", "hang", "--request-id", "fuzz/5"),
               "--runs", "96", "--timeout", "1.5", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["executions"] == 96 and report["safety_net"]["count"] == 1


def test_a_hang_that_the_retry_clears_is_judged_like_any_answer(tmp_path):
    """The adapter hangs the first time it meets request 5 and answers it right on the retry:
    nothing is reported, neither a divergence nor a safety-net entry."""
    markers = tmp_path / "markers"
    markers.mkdir()
    impl = shlex.join([sys.executable, str(ROOT / "tests" / "fuzz_fixtures" / "hang_once_adapter.py"),
                       "--request-id", "fuzz/5", "--marker-dir", str(markers)])
    done = cli("fuzz", "--impl", impl, "--runs", "32", "--timeout", "1.5", "--seed", "2",
               "--out", str(tmp_path / "out"), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert [p.name for p in markers.iterdir()] == ["fuzz_5"]          # it did hang once
    assert report["buckets"] == [] and report["safety_net"]["count"] == 0
    assert report["executions"] == 32


def test_shrinking_stops_after_candidates_that_hang(tmp_path):
    """Request 3 diverges (fee); every shrink candidate hangs: the shrinker gives up after
    SHRINK_TIMEOUTS of them and the finding keeps the request as it is, with its real diff."""
    from conformance.fuzz.worker import SHRINK_TIMEOUTS
    markers = tmp_path / "markers"
    markers.mkdir()
    impl = shlex.join([sys.executable, str(ROOT / "tests" / "fuzz_fixtures" / "hang_once_adapter.py"),
                       "--request-id", "fuzz/shrink", "--always", "--wrong-fee", "fuzz/3",
                       "--marker-dir", str(markers)])
    done = cli("fuzz", "--impl", impl, "--runs", "32", "--timeout", "1", "--seed", "2",
               "--out", str(tmp_path / "out"), "--json")
    assert done.returncode == 1, done.stdout + done.stderr
    [bucket] = json.loads(done.stdout)["buckets"]
    assert bucket["class"] == "fee" and bucket["first_index"] == 3
    finding = bucket["finding"]
    assert finding["tests"] == SHRINK_TIMEOUTS and finding["size"] == finding["original_size"]
    assert finding["diff"][0].startswith("fee:")


# -- response bounds ---------------------------------------------------------------------------
def _recursive_input(compute: int):
    """A contract that calls itself twice per frame: a binary call tree bounded by the compute
    limit, so one request makes thousands of call records."""
    inp = generate(1, 0).copy()
    call = [("PUSH2", 0x100), ("PUSH4", 0xFFFFFFFF), ("PUSH1", 0), ("PUSH1", 0), ("CALL", 0), ("POP", 0)]
    inp.contracts = {0x100: (Code(rows=call * 2 + [("STOP", 0)], data=b""), {})}
    inp.to, inp.call_data, inp.isolation = 0x100, b"", "standard"
    inp.limits = {**default_limits(), "compute": compute}
    inp.policy = default_policy()
    return inp


def test_a_large_correct_answer_is_accepted():
    """Its expected result needs a line longer than the default bound; the reference adapter's
    answer is then within the request's own bound (twice the expected result plus 8 KiB)."""
    from conformance.fuzz.worker import Worker
    from conformance.run.suite import reference_command
    from conformance.corpus.vector import expected_of, run_reference
    inp = _recursive_input(2_000_000)
    expected = expected_of(run_reference(inp.vector_input(), "1.0"), "1.0")
    size = len(json.dumps(expected["result"], separators=(",", ":")))
    assert size > DEFAULT_MAX_LINE            # the default bound alone would refuse the right answer
    worker = Worker(0, {"seed": 1, "impls": [reference_command()]})
    try:
        assert worker._bound(expected["result"]) == 2 * size + SLACK
        assert worker.check(0, inp, "") is None
    finally:
        worker.close()


def test_an_oversized_line_is_oversized_not_a_timeout():
    from conformance.fuzz.session import Session
    from conformance.run.process import Settings
    session = Session(adapter("--fault", "huge-line"), Settings("1.0", timeout=60, window=4, workers=1))
    try:
        answer = session.run([("fuzz/0", generate(1, 0).vector_input(), False)])["fuzz/0"]
    finally:
        session.close()
    assert answer.failure == "oversized", answer
    assert f"longer than {DEFAULT_MAX_LINE} bytes" in answer.detail


# -- hostile resume input ----------------------------------------------------------------------
def _damage(state: dict, how: str):
    if how == "pool entry with an unknown mnemonic":
        state["pool"][3]["contracts"][0][1]["rows"] = [["NOSUCH", 0]]
    elif how == "pool entry not an object":
        state["pool"][0] = 7
    elif how == "pool entry with an extra member":
        state["pool"][1]["extra"] = 1
    elif how == "pool entry with an address as a string":
        state["pool"][2]["to"] = str(state["pool"][2]["to"])
    elif how == "pool entry with bad hex":
        state["pool"][2]["call_data"] = "zz"
    elif how == "negative next index":
        state["next_index"] = -256
    elif how == "bucket key and class disagree":
        state["buckets"]["0|output"] = {"impl": 0, "class": "usage.compute", "name": "x", "command": "x",
                                        "count": 1, "first_index": 0, "first_seconds": 0.0, "finding": None}
    elif how == "bucket of no implementation":
        state["buckets"]["4|output"] = {"impl": 4, "class": "output", "name": "x", "command": "x",
                                        "count": 1, "first_index": 0, "first_seconds": 0.0, "finding": None}
    elif how == "safety-net entry with an invalid vector":
        state["safety_net"][0]["vector"]["input"] = "x"
    elif how == "worker not a number":
        state["workers"]["w"] = {"requests": 1, "busy_seconds": 1.0}
    elif how == "seconds not finite":
        state["seconds"] = float("inf")
    elif how == "seed beyond 64 bits":
        state["seed"] = 1 << 64
    elif how == "an unknown member":
        state["command"] = "rm -rf /"
    elif how == "more pool entries than the pool holds":
        from conformance.fuzz.pool import CAPACITY
        state["pool"] = state["pool"][:1] * (CAPACITY + 1)
    elif how == "a pool entry larger than an entry may be":
        from conformance.fuzz.pool import ENTRY_BYTES
        state["pool"][0]["call_data"] = "00" * ENTRY_BYTES
    elif how == "a count beyond 2^53":
        state["executions"] = 1 << 60
    elif how == "a growth curve longer than kept":
        from conformance.fuzz.state import GROWTH_KEEP
        state["growth"] = state["growth"][:1] * (GROWTH_KEEP + 1)
    elif how == "an implementation command too long":
        state["impls"] = ["x" * 5000]
    elif how == "a skipped request that is not an index":
        state["skip"] = ["95077"]
    elif how == "an internal error without its traceback":
        state["internal_errors"] = [{"index": 3, "worker": 0, "exception": "E: x", "input": None, "session": 1}]
    elif how == "a hello whose implementation is not an object":
        state["hellos"] = [{"implementation": "x"}]
    elif how == "a required member missing":
        del state["pool"]
    return state


DAMAGES = ["pool entry with an unknown mnemonic", "pool entry not an object", "pool entry with an extra member",
           "pool entry with an address as a string", "pool entry with bad hex", "negative next index",
           "bucket key and class disagree", "bucket of no implementation", "safety-net entry with an invalid vector",
           "worker not a number", "seconds not finite", "seed beyond 64 bits", "an unknown member",
           "more pool entries than the pool holds", "a pool entry larger than an entry may be", "a count beyond 2^53",
           "a growth curve longer than kept", "an implementation command too long",
           "a skipped request that is not an index", "an internal error without its traceback",
           "a hello whose implementation is not an object", "a required member missing"]


@pytest.mark.parametrize("how", DAMAGES)
def test_a_damaged_state_is_refused_in_one_line(hang_campaign, tmp_path, how):
    from conformance.fuzz.state import StateError, load_state
    out, _ = hang_campaign
    state = json.loads((out / "state.json").read_text())
    load_state(out)                                          # the campaign's own state is accepted
    (tmp_path / "state.json").write_text(json.dumps(_damage(state, how)))
    with pytest.raises(StateError) as err:
        load_state(tmp_path)
    message = str(err.value)
    assert "\n" not in message
    # Infinity is not JSON: refused by the parser before the schema
    assert "damaged state" in message or (how == "seconds not finite" and "not a JSON campaign state" in message)


@pytest.mark.parametrize("content", [b"[" * 100_000, b"\xff\xfe not utf-8", b'{"version": 1}', b"",
                                     b'{"version": 1, "seed": 1, "impls": "x"}'])
def test_hostile_state_files_exit_2_in_one_line(tmp_path, content):
    (tmp_path / "state.json").write_bytes(content)
    done = cli("fuzz", "--resume", str(tmp_path), "--runs", "32")
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rtwo-vm: error: cannot resume from"), lines
    assert not (tmp_path / "findings").exists()


@pytest.mark.parametrize("kind", ["directory", "fifo"])
def test_a_state_that_is_not_a_regular_file_is_refused(tmp_path, kind):
    import os
    path = tmp_path / "state.json"
    os.mkdir(path) if kind == "directory" else os.mkfifo(path)
    done = cli("fuzz", "--resume", str(tmp_path), "--runs", "32", timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (f"rtwo-vm: error: cannot resume from {path}: not a regular file "
                                   "(a campaign state is read only from a regular file)")


def test_a_damaged_pool_entry_exits_2_through_the_cli(hang_campaign, tmp_path):
    out, _ = hang_campaign
    state = _damage(json.loads((out / "state.json").read_text()), "pool entry with an unknown mnemonic")
    (tmp_path / "state.json").write_text(json.dumps(state))
    done = cli("fuzz", "--resume", str(tmp_path), "--runs", "300")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == (f"rtwo-vm: error: cannot resume from {tmp_path / 'state.json'}: damaged state: "
                                   "pool entry 3: KeyError: 'NOSUCH'")
