"""rtwo-vm fuzz against a partial VM (issue 23, item 3): the unsupported answers are split by the
instruction or feature the adapter names, each sub-bucket shrinks to a request whose only
unsupported element is that one, and the shrinker stops at a fixpoint instead of spending its
budget on a request that cannot get smaller.

The implementation is the real half-finished VM behind a real adapter process
(tests/conformance_fixtures/half_finished_vm.py: PUSH1..PUSH32, ADD, STOP and RETURN; it
answers UNSUPPORTED_INPUT naming the first opcode it lacks, or "policy allowed_operations").
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from conformance.fuzz import classify
from conformance.fuzz.program import Code, FuzzInput
from conformance.fuzz.shrink import Shrinker
from conformance.fuzz.unsupported import named
from reference_vm.container import parse
from reference_vm.decode import decode
from reference_vm.rules import rules

ROOT = Path(__file__).resolve().parents[1]
HALF = ROOT / "tests" / "conformance_fixtures" / "half_finished_vm.py"
COMMAND = shlex.join([sys.executable, str(HALF)])
TABLE = spec.load("1.0")          # the half-finished VM is a VM of 1.0: its campaigns are 1.0's
# What the fixture implements, from its documented contract and the instruction table.
IMPLEMENTED = {i.mnemonic for i in TABLE.instructions if i.mnemonic.startswith("PUSH")} | {"ADD", "STOP", "RETURN"}
UNSUPPORTED = "error:UNSUPPORTED_INPUT"
RUNS, SEED = 1024, 3


def program_mnemonics(vector_input: dict) -> list[str]:
    """Every instruction of every contract of a request, decoded from its container bytes."""
    out = []
    for body in vector_input["pre_state"]["contracts"].values():
        parsed = parse(bytes.fromhex(body["code"][2:]), rules("1.0"))
        out += [d.instruction.mnemonic for d in decode(parsed.code, rules("1.0").instruction_set(parsed.version))]
    return out


def check_split(report: dict, findings: dict[str, dict]) -> None:
    """What a partial VM's campaign must report: the asserts of this module's main test, kept
    in one place so that the planted-bug test runs exactly these."""
    buckets = [b for b in report["buckets"] if b["class"].startswith(UNSUPPORTED)]
    assert all(b["class"] != UNSUPPORTED for b in buckets), "the fixture always names what it lacks"
    assert len(buckets) >= 4, [b["class"] for b in buckets]
    # the summary: one line per sub-bucket, most blocking (most requests) first
    summary = report["unsupported"]
    assert [e["class"] for e in summary] == [b["class"] for b in buckets]
    counts = [e["count"] for e in summary]
    assert counts == sorted(counts, reverse=True) and sum(counts) == sum(b["count"] for b in buckets)
    kept = 0
    for b in buckets:
        name = b["class"][len(UNSUPPORTED) + 1:]
        f = b["finding"]
        if f is None:
            continue                       # counted only (the state keeps a bounded number of findings)
        kept += 1
        vi = findings[f["vector_id"]]["input"]
        lacking = set(program_mnemonics(vi)) - IMPLEMENTED
        if name in TABLE.by_mnemonic:      # exactly one unsupported instruction: the named one
            assert lacking == {name}, (b["class"], program_mnemonics(vi))
            assert vi["policy"]["allowed_operations"] is None
        else:                              # a feature: no unsupported instruction at all
            assert name == "allowed_operations" and lacking == set(), (b["class"], program_mnemonics(vi))
            assert vi["policy"]["allowed_operations"] is not None
        assert f["minimal"] is True and f["tests"] < 300, (b["class"], f["tests"])
    assert kept >= 4


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("partial") / "fuzz"
    proc = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "fuzz", "--impl", COMMAND, "--runs", str(RUNS),
                           "--seed", str(SEED), "--out", str(out), "--spec-version", "1.0"], cwd=ROOT,
                          capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 1, proc.stderr[-2000:]
    return out, proc.stdout


def _findings(out: Path) -> dict[str, dict]:
    lines = (out / "findings" / "fuzz.jsonl").read_text().splitlines()
    return {v["id"]: v for v in map(json.loads, lines)}


def test_the_unsupported_bucket_is_split_by_what_the_adapter_names(campaign):
    out, stdout = campaign
    report = json.loads((out / "report.json").read_text())
    check_split(report, _findings(out))
    # the text report lists the sub-buckets in the same order, with their counts
    head = stdout.splitlines()
    start = next(i for i, line in enumerate(head) if line.startswith("unsupported by half-finished-vm:"))
    total = sum(e["count"] for e in report["unsupported"])
    assert f"{total:,} requests in {len(report['unsupported'])} sub-buckets" in head[start]
    listed = [line.split()[:2] for line in head[start + 1:start + 1 + len(report["unsupported"])]]
    assert listed == [[e["names"], f"{e['count']:,}"] for e in report["unsupported"]]


def test_without_the_split_the_check_fails(tmp_path, monkeypatch):
    """The planted bug: every unsupported answer in one class again (as before issue 23)."""
    from conformance.fuzz.campaign import Options, report_json, run_campaign
    monkeypatch.setattr(classify, "unsupported_class", lambda message: UNSUPPORTED)
    out = tmp_path / "fuzz"
    state = run_campaign(Options(impls=[COMMAND], out=out, seed=SEED, runs=RUNS))
    report = report_json(state, out)
    # every unsupported answer in one bucket (the fixture's wrong answers, its unmetered compute,
    # are buckets of their own, found or not depending on the inputs the corpus seeds)
    assert [b["class"] for b in report["buckets"] if b["class"].startswith(UNSUPPORTED)] == [UNSUPPORTED]
    with pytest.raises(AssertionError):
        check_split(report, _findings(out))


@pytest.mark.parametrize("message, name", [
    ("opcode 0x30 at offset 12 not implemented", TABLE.by_opcode[0x30].mnemonic),
    ("opcode 48 is missing", TABLE.by_opcode[0x30].mnemonic),
    ("MSTORE not supported", "MSTORE"),
    ("unknown byte 0x71", TABLE.by_opcode[0x71].mnemonic),
    ("policy allowed_operations not implemented", "allowed_operations"),
    ("storage_access read_only with SLOAD", "SLOAD"),          # an instruction wins over a feature
    ("not implemented at offset 0x30", None),                  # an offset is no opcode; "not" is no NOT
    ("policy not implemented", None),
    ("x" * 300 + " MSTORE", None),                              # only the first 200 characters are read
    (None, None),
])
def test_what_an_unsupported_message_names(message, name):
    assert named(message) == name


# -- the shrinker's fixpoint ------------------------------------------------------------------
def _policy_case() -> FuzzInput:
    """Two instructions under the view isolation level with a read-only storage access: setting
    the access to its default is narrowed back by the level, which once made every round look
    like progress until the 1,500-test budget was spent."""
    inp = FuzzInput(contracts={0x100: (Code(rows=[("PUSH1", 5), ("SLOAD", 0)]), {})}, isolation="view")
    inp.policy["storage_access"] = "read_only"
    inp.policy["allowed"] = ["SLOAD", "PUSH1"]
    return inp


def test_a_two_instruction_policy_bucket_ends_at_a_fixpoint_after_few_tests():
    from conformance.fuzz.worker import Worker
    worker = Worker(0, {"seed": 1, "impls": [COMMAND], "timeout": 30})
    try:
        kind = f"{UNSUPPORTED}:allowed_operations"
        assert worker.check(0, _policy_case(), "").kind == kind
        calls = 0

        def keeps(cand: FuzzInput) -> bool:
            nonlocal calls
            calls += 1
            d = worker.check(0, cand, kind)        # the real adapter process answers
            return d is not None and d.kind == kind
        shrinker = Shrinker(keeps, budget=1500)
        small = shrinker.shrink(_policy_case())
        assert shrinker.minimal and calls == shrinker.tests and calls <= 20, calls
        assert small.contracts[0x100][0].rows == [("STOP", 0)] and small.policy["allowed"] == ["SLOAD", "PUSH1"]
        # an already-minimal request: one round of tests, every candidate rejected
        calls = 0
        again = Shrinker(keeps, budget=1500)
        assert again.shrink(small).to_json() == small.to_json()
        assert again.minimal and calls == again.tests <= 10, calls
    finally:
        worker.close()


def test_a_shrink_stopped_by_its_budget_is_not_minimal():
    rows = [("PUSH1", i) for i in range(40)] + [("SLOAD", 0)]
    inp = FuzzInput(contracts={0x100: (Code(rows=rows), {})})
    shrinker = Shrinker(lambda c: len(c.contracts[0x100][0].rows or ()) >= 30, budget=5)
    shrinker.shrink(inp)
    assert shrinker.tests == 5 and shrinker.minimal is False
