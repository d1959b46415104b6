"""What a half-finished VM should implement next (issue 23, item 1): a real adapter that
implements only PUSH*, ADD, STOP and RETURN (tests/conformance_fixtures/half_finished_vm.py)
is run on the whole corpus; the report's "what to implement next" is checked against counts
computed here from the corpus files by a plain byte scan, and --last-failed --kind wrong
reruns only its wrong answers."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import spec
from rtwo_vm.cli import main


def run_cli(*args: str) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of rtwo-vm ARGS in this process."""
    import io
    from contextlib import redirect_stderr, redirect_stdout
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def refused(*args: str, fragment: str = "") -> str:
    """The one-line usage error (exit 2) of rtwo-vm ARGS."""
    code, out, err = run_cli(*args)
    assert code == 2 and err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, (args, code, err[:400])
    assert "Traceback" not in err and fragment in err, (args, err)
    return err

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "conformance_fixtures" / "half_finished_vm.py"
IMPL = f"{sys.executable} {FIXTURE}"
TABLE = spec.load("1.0")          # the half-finished VM is a VM of 1.0 (its hello says so)
SIZE = {i.opcode: i.size for i in TABLE.instructions}
NAME = {i.opcode: i.mnemonic for i in TABLE.instructions}
MACHINE = TABLE.limits["machine"]
IMPLEMENTED = {op for op, m in NAME.items() if m.startswith("PUSH") or m in ("ADD", "STOP", "RETURN")}


def _corpus() -> list[dict]:
    vectors = []
    for path in sorted((ROOT / "conformance" / "vectors" / "1.0").glob("*.jsonl")):
        vectors += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return vectors


def _scan(code_hex: str) -> list[tuple[int, int]]:
    """(offset, opcode) of a valid container's code section, read byte by byte with the
    sizes of instructions.toml, up to the first undefined byte."""
    blob = bytes.fromhex(code_hex[2:])
    code_size, data_size = int.from_bytes(blob[8:12], "little"), int.from_bytes(blob[12:16], "little")
    if (len(blob) < 16 or blob[:8] != b"RTWO\x01\x00\x00\x00" or len(blob) != 16 + code_size + data_size
            or code_size > MACHINE["code_size"] or data_size > MACHINE["data_size"]):
        return []      # not a valid container (chapter 2): no instruction of it ever runs
    code = blob[16:16 + code_size]
    out, pc = [], 0
    while pc < len(code) and code[pc] in SIZE:
        out.append((pc, code[pc]))
        pc += SIZE[code[pc]]
    return out


def _by_hand():
    """Per vector: the missing instructions, the VM's expected message, and whether its
    answer is wrong (supported, but it should run out of compute: the VM does not meter)."""
    missing, messages, wrong = {}, Counter(), set()
    for v in _corpus():
        programs = [_scan(c["code"]) for c in v["input"]["pre_state"]["contracts"].values()]
        lacking = {NAME[op] for p in programs for _, op in p if op not in IMPLEMENTED}
        missing[v["id"]] = lacking
        first = next(((pc, op) for p in programs for pc, op in p if op not in IMPLEMENTED), None)
        if v["input"]["policy"]["allowed_operations"] is not None:
            messages["policy allowed_operations not implemented"] += 1
        elif first is not None:
            messages[f"opcode 0x{first[1]:02x} at offset N not implemented"] += 1
        elif v["expected"]["result"]["error"] == "COMPUTE_LIMIT_EXCEEDED":
            wrong.add(v["id"])
    return missing, messages, wrong


@pytest.fixture(scope="module")
def first_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("triage")
    # --no-blind: the hand count reads the published programs; blinding appends unreachable
    # code, so the first opcode the VM names as missing may differ (the ranking does not).
    code, text, err = run_cli("conformance", "run", "--no-blind", "--impl", IMPL, "--out", str(out), "--fresh", "0",
                              "--repeat", "0", "--show", "0", "--by-opcode")
    assert code == 1, (text[-2000:], err[-2000:])
    # A VM of 1.0 is checked on 1.0 alone, and told so.
    assert "spec 1.1: not checked for half-finished-vm: not announced: the adapter implements 1.0" in text
    assert not (out / "1.1").exists()
    return out / "1.0", text, json.loads((out / "1.0" / "report.json").read_text())


def test_swap1_and_mstore_top_what_to_implement_next(first_run):
    out, text, doc = first_run
    missing, messages, wrong = _by_hand()
    blocked = Counter(m for need in missing.values() for m in need)
    (top_1, n_1), (top_2, n_2) = blocked.most_common(2)
    # (the two may tie: the corpus's return helper holds both)
    assert {top_1, top_2} == {"SWAP1", "MSTORE"} and n_1 >= n_2 > blocked.most_common(3)[2][1]
    section = doc["implementations"][0]["what_to_implement_next"]
    rows = section["instructions"]
    assert sorted((r["name"], r["blocked"]) for r in rows[:2]) == sorted([(top_1, n_1), (top_2, n_2)])
    assert {r["name"]: r["blocked"] for r in rows} == dict(blocked)   # every instruction, by hand
    assert not set(section["known_instructions"]) - {NAME[op] for op in IMPLEMENTED}
    # "alone": vectors whose only missing element is that instruction (features aside here:
    # at least the vectors whose missing instructions are exactly it and that pass elsewhere).
    assert all(r["alone"] <= r["blocked"] for r in rows)
    runnable = [r["runnable_after"] for r in rows]
    assert runnable == sorted(runnable) and runnable[-1] <= section["failing"]
    # The text and HTML reports carry the same ranking.
    table = text.split("what to implement next", 1)[1].splitlines()
    # (SWAP1 and MSTORE may tie: the two rows in either order.)
    assert {tuple(table[2].split()[:2]), tuple(table[3].split()[:2])} == {(top_1, str(n_1)),
                                                                          (top_2, str(n_2))}
    html = (out / "report.html").read_text()
    assert all(f"<code>{m}</code></td><td>{n}</td>" in html for m, n in ((top_1, n_1), (top_2, n_2)))
    # The adapter's messages, counted by text with the offsets as N.
    got = {m["message"]: m["count"] for m in section["unsupported_messages"]}
    ranked = sorted(messages.items(), key=lambda mn: (-mn[1], mn[0]))    # count, then text
    assert got == dict(ranked[:len(got)]) and section["unsupported_messages_left_out"] == max(
        0, len(messages) - len(got))


def test_by_opcode_has_an_unsupported_column_and_failures_rank_only_wrong_answers(first_run):
    _, text, doc = first_run
    missing, messages, wrong = _by_hand()
    vectors = {v["id"]: v for v in _corpus()}
    unsupported = {i for i, need in missing.items() if need} | {
        i for i, v in vectors.items() if v["input"]["policy"]["allowed_operations"] is not None}
    by_opcode = doc["implementations"][0]["by_opcode"]
    for mnemonic in ("ADD", "SWAP1", "RETURN"):
        tagged = [i for i, v in vectors.items() if mnemonic in v["tags"]["opcodes"]]
        assert by_opcode[mnemonic].get("unsupported", 0) == len(set(tagged) & unsupported)
    row = next(line for line in text.splitlines() if line.split()[:1] == ["ADD"])
    tagged_add = [i for i, v in vectors.items() if "ADD" in v["tags"]["opcodes"]]
    assert row.split()[-1] == str(len(set(tagged_add) & unsupported))   # the "unsup" column
    assert "unsup" in text.split("opcode", 1)[1].splitlines()[0]
    # "opcodes with failures" names only what the VM got wrong: never an opcode it lacks.
    line = next(line for line in text.splitlines() if "opcodes with failures:" in line)
    named = {part.split()[0] for part in line.split(":", 1)[1].split(",")}
    wrong_tags = {m for i in wrong for m in vectors[i]["tags"]["opcodes"]}
    assert named == wrong_tags and named <= {NAME[op] for op in IMPLEMENTED}


def test_report_json_keeps_every_failure_summary(first_run):
    _, _, doc = first_run
    run = doc["implementations"][0]
    missing, messages, wrong = _by_hand()
    failing = sum(messages.values()) + len(wrong)
    assert len(run["failure_summaries"]) == len(run["failed_ids"]) == failing > 1000
    assert len(run["failures"]) <= 1000 and run["failures_left_out"] == failing - len(run["failures"])
    kinds = Counter(s["kind"] for s in run["failure_summaries"])
    assert kinds["unsupported"] == sum(messages.values())
    assert {s["id"] for s in run["failure_summaries"] if s["kind"] != "unsupported"} == wrong


def test_last_failed_kind_wrong_reruns_only_the_wrong_answers(first_run, tmp_path):
    out, _, doc = first_run
    _, _, wrong = _by_hand()
    again = tmp_path / "again"
    (again / "1.0").mkdir(parents=True)
    (again / "1.0" / "report.json").write_text((out / "report.json").read_text())
    code, text, err = run_cli("conformance", "run", "--impl", IMPL, "--out", str(again), "--repeat", "0",
                              "--last-failed", "--kind", "wrong", "--show", "0")
    assert code == 1, err[-2000:]
    rerun = json.loads((again / "1.0" / "report.json").read_text())["implementations"][0]
    assert set(rerun["failed_ids"]) == wrong and 0 < len(wrong) < 50
    assert rerun["counts"]["unsupported"] == 0 and rerun["counts"]["pass"] == 0
    assert f"{len(wrong)} vectors of corpus" in text
    # A report of an older version (no failure summaries): refused in one line, not guessed.
    old = json.loads((out / "report.json").read_text())
    for entry in old["implementations"]:
        del entry["failure_summaries"]
    (again / "1.0" / "report.json").write_text(json.dumps(old))
    refused("conformance", "run", "--impl", IMPL, "--out", str(again), "--last-failed", "--kind", "wrong",
            fragment="has no failure kinds")


def _vector(vid: str, *mnemonics: str, allowed=None) -> dict:
    by_name = {i.mnemonic: i for i in TABLE.instructions}
    code = b"".join(bytes([by_name[m].opcode]) + bytes(by_name[m].size - 1) for m in mnemonics)
    blob = b"RTWO\x01\x00\x00\x00" + len(code).to_bytes(4, "little") + bytes(4) + code
    return {"id": vid, "input": {
        "context": {"block_time": "0x0", "random_seed": "0x" + "00" * 32},
        "message": {"call_data": "0x", "caller": "0xca11e7", "to": "0x100"},
        "pre_state": {"contracts": {"0x100": {"code": "0x" + blob.hex(), "storage": {}}}},
        "policy": {"allowed_operations": allowed, "external_call": "allowed", "forbidden_operations": [],
                   "randomness": "forbidden", "time_access": "forbidden"},
        "sandbox": {"isolation_level": "standard", "storage_access": "read_write",
                    "limits": {"compute": 10000, "memory_pages": 1, "storage_units": 0}}}}


def test_the_ranking_follows_its_documented_definition():
    from conformance.run.compare import Mismatch
    from conformance.run.outcomes import Outcome
    from conformance.report.triage import normalised, triage
    vectors = {v["id"]: v for v in (
        _vector("v1", "PUSH1", "PUSH1", "ADD", "STOP", "SWAP1", "STOP"),  # SWAP1 never runs
        _vector("v2", "PUSH1", "SWAP1", "STOP"),                          # misses SWAP1 alone
        _vector("v3", "PUSH1", "SWAP1", "MSTORE", "STOP"),                # SWAP1 and MSTORE
        _vector("v4", "PUSH1", "MSTORE", "STOP", allowed=["PUSH1"]),      # MSTORE and a policy gate
        _vector("v5", "PUSH1", "ADD", "STOP"))}                           # a wrong answer
    unsupported = [Mismatch("response", "a result", "UNSUPPORTED_INPUT", "unsupported")]
    said = {"v2": "opcode 0x3A at offset 2 not implemented", "v3": "opcode 0x3a at offset 12 not implemented",
            "v4": "policy allowed_operations not implemented"}
    outcomes = [Outcome("v1", "pass"), Outcome("v5", "fail", [Mismatch("output", "0x", "0x00", "result")])]
    outcomes += [Outcome(v, "fail", unsupported, "", {"type": "error", "code": "UNSUPPORTED_INPUT", "message": m})
                 for v, m in said.items()]
    section = triage(outcomes, vectors, "1.0")
    # v1 passed, but its SWAP1 never ran (issue 39): not known. SWAP1 and MSTORE both block 2;
    # SWAP1 alone unblocks v2, so it ranks first; after SWAP1, v2 can run; after both, v3 too
    # (v4 still needs its policy gate).
    assert section["instructions"] == [
        {"name": "SWAP1", "blocked": 2, "alone": 1, "runnable_after": 1},
        {"name": "MSTORE", "blocked": 2, "alone": 0, "runnable_after": 2}]
    assert section["features"] == [{"name": "policy allowed_operations list", "blocked": 1, "alone": 0}]
    assert section["failing"] == 4 and section["without_missing"] == 1          # v5
    assert section["known_instructions"] == [i.mnemonic for i in TABLE.instructions        # table order
                                             if i.mnemonic in ("STOP", "ADD", "PUSH1")]
    assert section["unsupported_messages"] == [
        {"message": "opcode 0x3a at offset N not implemented", "count": 2},
        {"message": "policy allowed_operations not implemented", "count": 1}]
    assert normalised("id r-17: PUSH8 0xFF at 3\nof 40") == "id r-N: PUSH8 0xff at N of N"
    assert triage([Outcome("v1", "pass")], vectors, "1.0")["instructions"] == []
