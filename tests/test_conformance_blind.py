"""Blinding (spec chapter 11.8.4): no request of a run is a published input, the reference's
results for what was sent are the expectations, and implementations written to pass — a
corpus lookup in front of an engine with one narrow bug, as real adapter processes — fail
every blinded run, while the reference passes them."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.run import blind
from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.corpus.selection import select
from conformance.corpus.vector import parse_word

ROOT = Path(__file__).resolve().parent.parent
LOOKUP = ROOT / "tests" / "conformance_fixtures" / "lookup_adapter.py"
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"
SEEDS = (11, 12, 13)


@pytest.fixture(scope="module")
def vectors():
    return store.load(corpus_dir("1.0"))


def lookup(bug: str, match: str = "exact") -> str:
    return shlex.join([sys.executable, str(LOOKUP), "--bug", bug, "--match", match])


def run(tmp_path: Path, *args: str, timeout: float = 600) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "out"
    # Version 1.0's corpus: the lookup adapter is written for it (the others implement both).
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "run", "--out", str(out),
                           "--spec-version", "1.0", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert done.returncode in (0, 1), done.stdout[-3000:] + done.stderr[-3000:]
    return done, json.loads((out / "1.0" / "report.json").read_text())


def failed(doc: dict) -> list[str]:
    (impl,) = doc["implementations"]
    return impl["failed_ids"]


# ---- the blinded requests ----------------------------------------------------------------------

def test_no_request_of_a_blinded_run_is_a_published_input(vectors):
    published = {json.dumps(v["input"], sort_keys=True) for v in vectors}
    blinded, summary = blind.blind_all(vectors, 11, "1.0")
    sent = [json.dumps(b["input"], sort_keys=True) for b in blinded]
    assert [b["id"] for b in blinded] == [v["id"] for v in vectors]
    assert not published & set(sent), "a published input was sent"
    assert summary.verdicts[blind.UNBLINDED] == 0 and summary.vectors == len(vectors)
    # Each vector gets several transformations: a lookup must undo all of them.
    assert all(len(b["blinding"]["transformations"]) >= 3 for b in blinded)


def test_the_codes_the_transformations_make_decode_as_they_say(vectors):
    """The transformations remember the instructions of the containers they make (to spare a
    second decoding); a fresh validation must find exactly those."""
    from conformance.corpus.vector import parse_bytes
    from reference_vm.rules import rules
    from reference_vm.validate import validate
    made = 0
    newer = store.load(corpus_dir("1.1"))
    for version, chosen in (("1.0", vectors[::9]), ("1.1", newer[::9])):
        for v in chosen:
            facts = blind._facts(v, 13, version)
            blind.transformed(v, facts, 13, blind.ORDER)
            for text, known in facts.known.items():
                assert validate(parse_bytes(text), rules(version)) == known, v["id"]
                made += 1
    assert made > 600


def test_a_transformation_is_kept_only_when_the_result_is_the_vectors():
    stored = {"status": "success", "error": None, "error_pc": None, "output": "0x0100000000000000",
              "state_changes": [{"address": "0x100", "key": "0x1", "before": "0x0", "after": "0x5"}],
              "events": [], "fee": 10,
              "calls": [{"depth": 2, "caller": "0x100", "callee": "0x200", "status": "success", "error": None,
                         "error_pc": None, "compute": 3, "memory_pages": 0, "storage_reads": 0,
                         "storage_writes": 0, "storage_new_slots": 0, "storage_units": 0}],
              "usage": {"compute": 9, "memory_pages": 0, "storage_reads": 0, "storage_writes": 1,
                        "storage_new_slots": 1, "storage_units": 20}}
    sigma = {0x100: 0x1A7, 0x1A7: 0x100, 0x200: 0x2B3, 0x2B3: 0x200}
    moved = json.loads(json.dumps(stored))
    moved["state_changes"][0]["address"] = "0x1a7"
    moved["calls"][0].update(caller="0x1a7", callee="0x2b3")
    assert blind.verdict(stored, moved, sigma) == blind.PRESERVED
    valued = json.loads(json.dumps(moved))
    valued["output"] = "0xa701000000000000"            # SELF returned: a moved value
    assert blind.verdict(stored, valued, sigma) == blind.VALUES
    for change in (("usage", "compute", 10), ("calls", "compute", 4), ("error_pc", None, 3)):
        wrong = json.loads(json.dumps(moved))
        where, key, value = change
        if where == "calls":
            wrong["calls"][0][key] = value
        elif key is None:
            wrong[where] = value
        else:
            wrong[where][key] = value
        assert blind.verdict(stored, wrong, sigma) is None, change
    assert blind.verdict(stored, moved, {}) is None     # addresses not mapped back: not the vector's


def test_addresses_move_into_the_code_and_the_result(vectors):
    """The entry contract 0x100 calls 0x101 (PUSH2 257 at offset 0) and returns what it
    returned; blinded, both move, the push operand with them, and the call record names the
    new addresses while output and usage stay the published ones."""
    (vector,) = [v for v in vectors if v["id"] == "call/CALL/callee_success_with_output"]
    assert sorted(vector["input"]["pre_state"]["contracts"]) == ["0x100", "0x101"]
    b = blind.blind_vector(vector, 11, "1.0")
    assert "addresses" in b["blinding"]["transformations"] and b["blinding"]["verdict"] == blind.PRESERVED
    new_to = parse_word(b["input"]["message"]["to"])
    (record,) = b["expected"]["result"]["calls"]
    new_callee = parse_word(record["callee"])
    assert parse_word(record["caller"]) == new_to
    assert 0x100 <= new_to <= 0xFFFF and 0x100 <= new_callee <= 0xFFFF and new_to != new_callee    # two bytes
    assert {new_to, new_callee}.isdisjoint({0x100, 0x101})
    assert parse_word(b["input"]["message"]["caller"]) != 0xCA11E7
    contracts = b["input"]["pre_state"]["contracts"]
    assert len(contracts) == 3 and hex(new_to) in contracts and hex(new_callee) in contracts   # and a decoy
    entry = bytes.fromhex(contracts[hex(new_to)]["code"][2:])
    assert entry[16 + 1:16 + 3] == new_callee.to_bytes(2, "little")     # PUSH2 <callee> at offset 0
    published = vector["expected"]["result"]
    assert b["expected"]["result"]["output"] == published["output"]
    assert b["expected"]["result"]["usage"] == published["usage"] and record["compute"] == 40


def test_a_vector_at_a_boundary_keeps_its_limit_and_a_caller_read_changes_the_output(vectors):
    at = [v for v in vectors if (v["tags"]["boundary"] or {}).get("limit") in ("compute", "memory_pages", "storage_units")]
    for v, b in zip(at, blind.blind_all(at, 12, "1.0")[0]):
        name = v["tags"]["boundary"]["limit"]
        assert b["input"]["sandbox"]["limits"][name] == v["input"]["sandbox"]["limits"][name], v["id"]
        assert b["expected"]["result"]["status"] == v["expected"]["result"]["status"], v["id"]
    (entry,) = [v for v in vectors if v["id"] == "environment/CALLER/entry"]
    b = blind.blind_vector(entry, 12, "1.0")
    caller = parse_word(b["input"]["message"]["caller"])
    assert caller != parse_word(entry["input"]["message"]["caller"])
    # The program returns CALLER as one little-endian word: the blinded caller's.
    assert b["expected"]["result"]["output"] == "0x" + caller.to_bytes(8, "little").hex()
    assert b["blinding"]["verdict"] == blind.VALUES


# ---- implementations written to pass, as real adapter processes ------------------------------

@pytest.mark.parametrize("seed", SEEDS)
def test_a_lookup_with_a_narrow_bug_fails_every_blinded_run(tmp_path, seed):
    done, doc = run(tmp_path, "--impl", lookup("depth3-compute"), "--filter", "call/*", "--seed", str(seed),
                    "--repeat", "0")
    assert done.returncode == 1 and "RESULT: NOT CONFORMING" in done.stdout
    corpus_failures = [i for i in failed(doc) if not i.startswith("fresh/")]
    # The vectors whose call records reach depth 3 run on the buggy engine: nothing is recognised.
    assert {"call/CALL/depth_limit", "call/CALL/nested_records_in_order"} <= set(corpus_failures)
    assert doc["blinding"]["on"] and doc["blinding"]["verdicts"]["unblinded"] == 0


def test_without_blinding_the_same_lookup_passes_and_the_report_says_so(tmp_path):
    done, doc = run(tmp_path, "--impl", lookup("depth3-compute"), "--filter", "call/*", "--seed", "11",
                    "--repeat", "0", "--fresh", "0", "--no-blind")
    assert done.returncode == 0 and failed(doc) == []
    assert "blinding off: a lookup could pass" in done.stdout
    assert doc["blinding"] == {"on": False, "note": "blinding off: a lookup could pass"}
    import xml.etree.ElementTree as ET
    suites = ET.fromstring((tmp_path / "out" / "1.0" / "junit.xml").read_text())
    props = {p.get("name"): p.get("value") for p in suites.iter("property")}
    assert props["blinding"] == "blinding off: a lookup could pass"


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_passes_every_blinded_run(tmp_path, seed):
    done, doc = run(tmp_path, "--filter", "call/*", "--filter", "control/CALLSUB/*", "--seed", str(seed))
    assert done.returncode == 0 and failed(doc) == [], done.stdout[-2000:]
    assert doc["blinding"]["on"] and doc["blinding"]["vectors"] > 100


@pytest.mark.parametrize("bug,selection", [("depth3-compute", "call/CALL/depth_limit*"),
                                           ("depth-success", "call/CALL/depth_limit*"),
                                           ("rstack-as-stack", "control/CALLSUB/return_stack_limit*")])
def test_a_lookup_that_undoes_the_blinding_is_caught_by_the_fresh_sample(tmp_path, bug, selection):
    """The normalising lookup recognises these blinded corpus vectors (their results keep the
    stored values) and answers them right; the fresh variants across their boundary it cannot
    recognise, and its engine's bug shows there."""
    done, doc = run(tmp_path, "--impl", lookup(bug, "normalised"), "--filter", selection, "--seed", "11",
                    "--repeat", "0")
    ids = failed(doc)
    assert done.returncode == 1 and ids and all(i.startswith("fresh/") for i in ids), ids


def test_a_full_default_run_fails_a_lookup_with_a_narrow_bug(tmp_path):
    done, doc = run(tmp_path, "--impl", lookup("depth3-compute"), "--seed", "11")
    assert done.returncode == 1
    assert len([i for i in failed(doc) if not i.startswith("fresh/")]) >= 2
    assert doc["blinding"]["vectors"] == store.read_manifest(corpus_dir("1.0"))["vector_count"] + doc["fresh"]


def test_a_bundle_holds_the_blinded_vector_and_replays_as_it_failed(tmp_path, vectors):
    impl = shlex.join([sys.executable, str(FAULTY), "--fault", "wrong-result", "--target", "arithmetic/ADD/one__one"])
    done, doc = run(tmp_path, "--impl", impl, "--filter", "arithmetic/ADD/*", "--seed", "13", "--fresh", "0",
                    "--repeat", "0")
    assert done.returncode == 1 and failed(doc) == ["arithmetic/ADD/one__one"]
    (bundle_path,) = (tmp_path / "out" / "1.0" / "bundles").glob("*.json")
    bundle = json.loads(bundle_path.read_text())
    (published,) = select(vectors, ["arithmetic/ADD/one__one"])
    sent = bundle["vector"]
    assert sent["input"] != published["input"] and sent["blinding"]["seed"] == 13
    # The stack result of ADD one one is 2, whatever was blinded: the expected output still says so.
    assert sent["expected"]["result"]["output"] == published["expected"]["result"]["output"]
    # Replay runs only the adapter the user names (a bundle's command is never run): the same one.
    again = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "replay", str(bundle_path),
                            "--impl", impl], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert again.returncode == 1, again.stdout + again.stderr
    fixed = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "conformance", "replay", str(bundle_path),
                            "--impl", shlex.join([sys.executable, "-m", "conformance.adapter"])],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr


# ---- the fresh sample, aimed at the boundary classes ------------------------------------------

def test_the_fresh_sample_visits_every_boundary_class(vectors):
    from collections import Counter

    from conformance.corpus import fresh
    sample = fresh.sample(11, 100, vectors, False, "1.0")
    variants = [v for v in sample if v["description"].startswith("Fresh variant of ")]
    assert len(sample) == 100 and len(variants) == 50
    classes = Counter((v["tags"]["boundary"] or {}).get("limit", "") for v in variants)
    present = {v["tags"]["boundary"]["limit"] for v in vectors if v["tags"]["boundary"]}
    assert present <= set(classes), present - set(classes)
    assert all(classes[c] >= 3 for c in fresh.PRIORITY), classes
    published = {json.dumps(v["input"], sort_keys=True) for v in vectors}
    assert not published & {json.dumps(v["input"], sort_keys=True) for v in sample}


def test_a_call_depth_variant_moves_the_depth_across_the_limit(vectors):
    """call/CALL/depth_limit* recurse as many times as their call data word says: with the
    word w there are min(w, call_depth) call records, the last one CALL_DEPTH_EXCEEDED when
    w >= call_depth (the entry frame is depth 1, limits.toml machine call_depth)."""
    import re

    import spec
    from conformance.corpus import fresh
    depth = spec.load("1.0").limits["machine"]["call_depth"]
    selected = select(vectors, ["call/CALL/depth_limit*"])
    moved = [(int(m.group(1)), v) for v in fresh.sample(11, 30, selected, True, "1.0")
             if (m := re.search(r"call data word at 0: \d+ -> (\d+)", v["description"]))]
    assert len(moved) >= 10 and {w >= depth for w, _ in moved} == {True, False}
    for w, v in moved:
        calls = v["expected"]["result"]["calls"]
        assert len(calls) == min(w, depth), (w, len(calls))
        assert (calls[-1]["error"] == "CALL_DEPTH_EXCEEDED") == (w >= depth)
        assert max(c["depth"] for c in calls) == min(w, depth) + 1


def test_a_vector_the_transformations_cannot_read_is_sent_as_published_and_counted(vectors):
    (good,) = select(vectors, ["arithmetic/ADD/one__one"])
    broken = dict(good, id="broken/one", expected={"result": {"status": "success"}, "error_stage": None})
    out, summary = blind.blind_all([good, broken], 11, "1.0")
    assert out[0]["input"] != good["input"] and out[1]["input"] == good["input"]
    assert out[1]["blinding"]["verdict"] == blind.UNBLINDED and "_meta" not in out[1]
    assert summary.unblinded == ["broken/one"] and summary.verdicts[blind.UNBLINDED] == 1
    assert "1 sent as published" in blind.line(summary.to_json())


def test_a_request_that_uses_transient_storage_keeps_its_addresses():
    """Transient storage is per address and must start at 0 in every execution (2.3.3): only
    requests that keep their addresses can show an implementation that carries it over."""
    vectors = {v["id"]: v for v in store.load(corpus_dir("1.1"))}
    kept = blind.blind_vector(vectors["transient/TSTORE/then_tload"], 11, "1.1")
    assert "addresses" not in kept["blinding"]["transformations"] and kept["blinding"]["transformations"]
    assert kept["input"]["message"]["to"] == "0x100" and kept["input"] != vectors["transient/TSTORE/then_tload"]["input"]
    moved = blind.blind_vector(vectors["arithmetic/MULHS/one__one"], 11, "1.1")
    assert "addresses" in moved["blinding"]["transformations"] and moved["input"]["message"]["to"] != "0x100"
    # A container a transformation rewrites keeps its version (1.0 or 1.1).
    for vid in ("arithmetic/ADD/one__one", "arithmetic/MULHS/one__one"):
        b = blind.blind_vector(vectors[vid], 11, "1.1")
        assert "code_tail" in b["blinding"]["transformations"]
        header = vectors[vid]["input"]["pre_state"]["contracts"]["0x100"]["code"][10:14]
        entry = b["input"]["pre_state"]["contracts"][b["input"]["message"]["to"]]
        assert entry["code"][10:14] == header and len(entry["code"]) > 10 + len(header)
