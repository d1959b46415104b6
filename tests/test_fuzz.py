"""rtwo-vm fuzz: generation, campaigns against real adapter processes, findings, resume, promotion."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.corpus import store
from conformance.fuzz.findings import make_vector
from conformance.fuzz.generate import generate
from conformance.fuzz.program import FuzzInput
from conformance.corpus.schema import vector_problems
import spec

TABLE = spec.load("1.0")

ROOT = Path(__file__).resolve().parents[1]
SEEDED = ROOT / "tests" / "fuzz_fixtures" / "seeded_bug_adapter.py"
FAULTY = ROOT / "tests" / "conformance_fixtures" / "faulty_adapter.py"


def cli(*args, cwd=None, timeout=240, env=None):
    """rtwo-vm ARGS; a new campaign of spec 1.0 unless ARGS name a version (the campaigns of
    these tests are those of before 1.1, request for request: a 1.0 campaign draws the same)."""
    if args[:1] == ("fuzz",) and "--spec-version" not in args and "--resume" not in args:
        args = (*args, "--spec-version", "1.0")
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=cwd or ROOT, capture_output=True,
                          text=True, timeout=timeout, env=env)


def adapter(script: Path, *args: str) -> str:
    return shlex.join([sys.executable, str(script), *args])


def report(out: Path) -> dict:
    return json.loads((out / "report.json").read_text())


def state(out: Path) -> dict:
    return json.loads((out / "state.json").read_text())


# -- generation ------------------------------------------------------------------------------
def test_a_request_is_a_function_of_seed_index_and_pool():
    pool = [generate(9, i) for i in range(5)]
    first = [generate(4, i, pool).to_json() for i in range(60)]
    again = [generate(4, i, pool).to_json() for i in range(60)]
    assert first == again
    assert first != [generate(5, i, pool).to_json() for i in range(60)]


def test_generated_requests_are_schema_valid_vectors_and_round_trip():
    seen_statuses, malformed = set(), 0
    for i in range(300):
        inp = generate(11, i)
        vector = make_vector(inp, 11, i, "output", "x")
        assert vector_problems(vector) == [], vector["id"]
        vi = vector["input"]
        assert FuzzInput.from_json(inp.to_json()).vector_input() == vi
        assert FuzzInput.from_vector_input(vi, "1.0").vector_input() == vi
        seen_statuses.add(vector["expected"]["result"]["status"])
        malformed += vector["expected"]["result"]["status"] == "invalid"
    # both valid programs that run and a share of malformed containers
    assert {"success", "invalid"} <= seen_statuses
    assert 0 < malformed < 100


def test_generated_programs_use_every_instruction_type_and_several_contracts():
    types, callers = set(), 0
    for i in range(400):
        inp = generate(2, i)
        types.update(TABLE.by_mnemonic[m].type for m in inp.mnemonics())
        callers += len(inp.contracts) > 1
    assert types == set(TABLE.instruction_types)
    assert callers > 40


# -- campaigns -------------------------------------------------------------------------------
def test_no_false_positives_against_the_reference_adapter(tmp_path):
    out = tmp_path / "ref"
    done = cli("fuzz", "--runs", "1536", "--seed", "7", "--out", str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    r = report(out)
    assert r["executions"] == 1536 and r["buckets"] == [] and r["divergent_requests"] == 0
    assert r["coverage"]["cells_beyond_corpus"] > 0
    assert "no divergence" in done.stdout
    assert store.load(out / "findings") == []


def test_same_campaign_with_one_or_two_workers(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    assert cli("fuzz", "--runs", "512", "--seed", "3", "--out", str(one)).returncode == 0
    assert cli("fuzz", "--runs", "512", "--seed", "3", "--out", str(two), "--workers", "2").returncode == 0
    a, b = state(one), state(two)
    for key in ("pool", "cells", "arcs", "outcomes", "executions", "buckets"):
        assert a[key] == b[key], key
    assert sorted(int(w) for w in b["workers"]) == [0, 1]


def test_resume_continues_to_the_same_state(tmp_path):
    straight, resumed = tmp_path / "straight", tmp_path / "resumed"
    assert cli("fuzz", "--runs", "512", "--seed", "5", "--out", str(straight)).returncode == 0
    assert cli("fuzz", "--runs", "256", "--seed", "5", "--out", str(resumed)).returncode == 0
    assert state(resumed)["next_index"] == 256
    assert cli("fuzz", "--resume", str(resumed), "--runs", "512").returncode == 0
    a, b = state(straight), state(resumed)
    for key in ("pool", "cells", "arcs", "outcomes", "executions"):
        assert a[key] == b[key], key
    assert b["sessions"] == 2


BUG = adapter(SEEDED, "--bug", "sstore-rewrite-new")


@pytest.fixture(scope="module")
def sstore_campaign(tmp_path_factory):
    """One campaign against a seeded bug that passes the whole corpus, shared by the tests below."""
    out = tmp_path_factory.mktemp("fuzz") / "bug"
    done = cli("fuzz", "--impl", BUG, "--runs", "8192", "--stop-on-finding", "--seed", "1", "--out", str(out))
    return out, done


def test_seeded_bug_found_shrunk_and_replayable(sstore_campaign, tmp_path):
    out, done = sstore_campaign
    bug = BUG
    assert done.returncode == 1, done.stdout + done.stderr
    r = report(out)
    assert r["stopped"] == "the first finding"
    assert r["buckets"] and all("usage.storage_new_slots" in b["class"].split(",") for b in r["buckets"])
    bucket = r["buckets"][0]
    assert bucket["count"] >= 1 and bucket["finding"]["size"] <= 16
    assert "SSTORE" in "\n".join(bucket["finding"]["program"])
    assert "[" in done.stdout and "SSTORE" in done.stdout
    findings = out / "findings"
    vectors = store.load(findings)
    assert len(vectors) == len(r["buckets"]) and vectors[0]["tags"]["source"] == "fuzz"
    from conformance.fuzz.state import load_state
    assert load_state(out)["buckets"]          # a state with findings passes the resume checks
    assert "seed_1" in vectors[0]["tags"]["categories"]
    # the finding passes the reference and fails the buggy adapter, through conformance run as it is
    ok = cli("conformance", "run", "--dir", str(findings), "--out", str(tmp_path / "c1"), "--quiet")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = cli("conformance", "run", "--dir", str(findings), "--impl", bug, "--out", str(tmp_path / "c2"), "--quiet")
    assert bad.returncode == 1, bad.stdout + bad.stderr


def test_nondeterministic_implementation_is_a_finding(tmp_path):
    out = tmp_path / "nd"
    impl = adapter(FAULTY, "--fault", "nondeterministic")
    env = {**os.environ, "TZ": "UTC0"}     # the fault is correct in UTC only: the perturbed runs differ
    done = cli("fuzz", "--impl", impl, "--runs", "2048", "--stop-on-finding", "--seed", "2", "--out", str(out),
               env=env)
    assert done.returncode == 1, done.stdout + done.stderr
    classes = [b["class"] for b in report(out)["buckets"]]
    assert any(c.startswith("nondeterministic:") and "usage.compute" in c for c in classes), classes


def test_crashing_implementation_is_a_finding_and_restarted(tmp_path):
    out = tmp_path / "crash"
    impl = adapter(FAULTY, "--fault", "crash", "--request-id", "fuzz/1?")
    done = cli("fuzz", "--impl", impl, "--runs", "64", "--seed", "2", "--out", str(out))
    assert done.returncode == 1, done.stdout + done.stderr
    r = report(out)
    crash = [b for b in r["buckets"] if b["class"] == "process:crash"]
    assert crash and crash[0]["count"] == 10        # fuzz/10 .. fuzz/19


def test_usage_errors_exit_2_and_unstartable_adapter_exits_3(tmp_path):
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "state.json").write_text('{"version": 1, "seed": 1, "impls": "x"}')
    for args in (["--resume", str(damaged)], ["--runs", "0"], ["--seconds", "nan"], ["--seconds", "-1"], ["--workers", "0"],
                 ["--impl", ""], ["--resume", str(tmp_path / "nothing")], ["--runs", "5", "--seconds", "1"]):
        done = cli("fuzz", "--out", str(tmp_path / "u"), *args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
    done = cli("fuzz", "--impl", str(tmp_path / "no-such-adapter"), "--runs", "32", "--out", str(tmp_path / "x"))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "could not run" in done.stderr


# -- promotion -------------------------------------------------------------------------------
def test_promote_findings_into_a_corpus(sstore_campaign, tmp_path):
    from conformance.fuzz.promote import PromoteError, promote
    out, _ = sstore_campaign
    findings = out / "findings"
    finding = store.load(findings)[0]
    promoted, target = tmp_path / "promoted.jsonl", tmp_path / "corpus"
    manifests = promote(findings, [finding["id"]], promoted=promoted, corpus_dir=target,
                        sources=("definition", "fuzz"))
    # A finding of a 1.0 campaign is a vector of 1.0 and of every later version (same input).
    assert {v: m["sources"]["fuzz"] for v, m in manifests.items()} == {"1.0": 1, "1.1": 1}
    assert "spec_version" not in promoted.read_text()      # a 1.0 entry, as every entry before 1.1
    for version in ("1.0", "1.1"):
        assert store.problems(target / version) == []
        [stored] = [v for v in store.load(target / version) if v["id"] == finding["id"]]
        assert stored["input"] == finding["input"] and stored["tags"]["source"] == "fuzz"
        assert stored["_meta"]["spec_version"] == version
        if version == "1.0":
            assert stored["expected"] == finding["expected"]
    before = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    promote(findings, [], promoted=promoted, corpus_dir=target, sources=("definition", "fuzz"))
    after = {p.relative_to(target): p.read_bytes() for p in target.rglob("*") if p.is_file()}
    assert after == before     # deterministic, idempotent
    with pytest.raises(PromoteError):
        promote(findings, ["fuzz/no/such"], promoted=promoted, corpus_dir=target, sources=("definition",))


# -- the backend's map-like API (reused by other campaigns) ------------------------------------
class _AddWorker:
    def __init__(self, index, offset):
        self.index, self.offset = index, offset

    def run(self, task):
        return (task + self.offset, self.index)

    def update(self, message):
        self.offset = message


def _add_worker(index, offset):
    return _AddWorker(index, offset)


@pytest.mark.parametrize("workers", [1, 2])
def test_backend_maps_in_task_order_and_broadcasts(workers):
    from conformance.fuzz.backend import make_backend
    backend = make_backend(_add_worker, (10,), workers=workers)
    try:
        first = backend.map(list(range(7)))
        assert [value for value, _ in first] == [10, 11, 12, 13, 14, 15, 16]
        assert {index for _, index in first} == set(range(workers))
        backend.broadcast(100)
        assert [value for value, _ in backend.map([1, 2, 3])] == [101, 102, 103]
    finally:
        backend.close()


def test_a_1_1_campaign_draws_1_1_s_instructions_and_a_1_0_one_never_does():
    new = {"MULHU", "MULHS", "CLZ", "CTZ", "POPCNT", "STATICCALL", "TLOAD", "TSTORE"}
    drawn = {v: set() for v in ("1.0", "1.1")}
    for version in drawn:
        pool: list = []
        for i in range(600):
            inp = generate(21, i, pool, version)
            assert inp.version == version
            drawn[version] |= set(inp.mnemonics())
            versions = {code.version for code, _ in inp.contracts.values() if code.rows is not None}
            assert versions <= {version}, versions       # fresh code is of the campaign's version
            if i % 7 == 0:
                pool.append(inp)
    assert not drawn["1.0"] & new
    assert new <= drawn["1.1"], new - drawn["1.1"]


def test_a_1_1_campaign_against_the_reference_finds_nothing_and_one_against_mulhs_sign_finds_it(tmp_path):
    ref = cli("fuzz", "--runs", "768", "--seed", "4", "--spec-version", "1.1", "--out", str(tmp_path / "ref"))
    assert ref.returncode == 0, ref.stdout + ref.stderr
    r = report(tmp_path / "ref")
    assert r["spec_version"] == "1.1" and r["buckets"] == [] and "(spec 1.1)" in ref.stdout
    planted = adapter(ROOT / "tests" / "conformance_fixtures" / "planted_vm.py", "--bug", "mulhs-sign")
    bad = cli("fuzz", "--impl", planted, "--runs", "4096", "--seed", "4", "--spec-version", "1.1",
              "--stop-on-finding", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 1, bad.stdout + bad.stderr
    finding = store.load(tmp_path / "bad" / "findings")[0]
    assert finding["_meta"]["spec_version"] == "1.1" and "MULHS" in finding["tags"]["opcodes"]
    # The planted bug is 1.1's: a 1.0 campaign cannot draw MULHS, and its findings folder is 1.0's.
    again = cli("fuzz", "--resume", str(tmp_path / "bad"), "--spec-version", "1.0", "--impl", planted)
    assert again.returncode == 2 and "a campaign of spec 1.1, not 1.0" in again.stderr


def test_a_request_without_contracts_can_be_mutated():
    """A pool entry whose pre-state holds no contract (CONTRACT_NOT_FOUND vectors) is mutated
    like any other: every mutation kind is drawn over 400 seeds, and the result is a request."""
    import random
    from conformance.fuzz.mutate import mutate_once
    grown = 0
    for seed in range(400):
        inp = FuzzInput(contracts={})
        mutate_once(random.Random(seed), inp, [])
        assert set(inp.vector_input()["pre_state"]["contracts"]) == {f"0x{a:x}" for a in inp.contracts}
        grown += bool(inp.contracts)
    assert grown > 0   # some seeds add a contract (the callee branch)


def test_a_fuzz_input_copy_keeps_every_field_and_shares_nothing_mutable():
    from conformance.fuzz.program import Code, FuzzInput
    original = FuzzInput(
        contracts={0x100: (Code(rows=[("PUSH1", 7), ("SSTORE", 0), ("STOP", 0)], data=b"\x01"), {3: 4})},
        to=0x100, caller=0xBEEF, call_data=b"\x02\x03", block_time=99, random_seed=bytes(range(32)),
        policy={"forbidden": ["CALL"], "allowed": ["STOP", "SSTORE"], "gate": None},
        isolation="read", limits={"compute": 1234, "memory_pages": 3, "storage_units": 40})
    copy = original.copy()
    assert copy == original      # every field (a field the copy forgot would take its default)
    code, storage = copy.contracts[0x100]
    code.rows.append(("NOP", 0))
    storage[5] = 6
    copy.policy["forbidden"].append("SHA256")
    copy.policy["allowed"].append("NOP")
    copy.limits["compute"] = 1
    assert original.contracts[0x100][0].rows == [("PUSH1", 7), ("SSTORE", 0), ("STOP", 0)]
    assert original.contracts[0x100][1] == {3: 4}
    assert original.policy == {"forbidden": ["CALL"], "allowed": ["STOP", "SSTORE"], "gate": None}
    assert original.limits["compute"] == 1234
