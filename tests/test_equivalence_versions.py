"""Contracts across spec versions (issue 36, part 2): the symbolic executor runs 1.1 (transient
storage carried across frames, STATICCALL's read-only frames), and ``rtwo-vm equivalence
--spec-version 1.0 --against 1.1 CONTRACT`` proves a 1.0 container gives the same result under
both versions' rules or finds an input, replayed on the reference under both, on which it does
not. Expectations come from the spec (SHA256's block cost 6 -> 3, the fee prices) and from
the programs below, worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import z3

import spec
from reference_vm.assembler import assemble
from rtwo_vm.cli import main

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
ACROSS = ("--spec-version", "1.0", "--against", "1.1")
BEHAVIOUR = "status,error,error_pc,output,storage,events"

# SHA-256 of the first call data word (8 bytes: one 64-byte block).
HASH_WORD = """
    push 0
    calldataload
    push 0
    swap1
    mstore
    push 8
    push 0
    push 8
    sha256
    push 8
    push 32
    return
"""
# 1.1: x = call data word 0; tstore(1, x); x == 0: CALL 0x101 (it writes its transient slot 5
# = 7 and succeeds); x == 1: STATICCALL 0x101 (the same write faults: read-only frame);
# otherwise CALL 0x101 with 2 bytes (it writes and reverts). Then CALL 0x101 with 1 byte: it
# returns its slot 5. Output: [slot 5 as the second call sees it, tload(1), first status].
T_MAIN = """
    push 1
    push 0
    calldataload
    tstore
    push 0
    calldataload
    dup1
    jumpi notzero
    pop
    push 0x101
    push 100000
    push 0
    push 0
    call
    jump second
notzero:
    push 1
    eq
    jumpi static
    push 0x101
    push 100000
    push 0
    push 2
    call
    jump second
static:
    push 0x101
    push 100000
    push 0
    push 0
    staticcall
second:
    push 16
    swap1
    mstore
    push 0x101
    push 100000
    push 0
    push 1
    call
    pop
    push 0
    push 0
    push 8
    returndatacopy
    push 1
    tload
    push 8
    swap1
    mstore
    push 0
    push 24
    return
"""
T_CALLEE = """
    calldatasize
    jumpi nonzero
    push 5
    push 7
    tstore
    push 0
    push 0
    return
nonzero:
    calldatasize
    push 1
    eq
    jumpi read
    push 5
    push 7
    tstore
    push 0
    push 0
    revert
read:
    push 5
    tload
    push 0
    swap1
    mstore
    push 0
    push 8
    return
"""
# 1.1, re-entrant: with call data it returns its transient slot 1; without, it sets slot 1 =
# 9, calls 0x101, which calls it back with one byte, and returns what 0x101 returned.
R_MAIN = """
    calldatasize
    jumpi reentered
    push 1
    push 9
    tstore
    push 0x101
    push 100000
    push 0
    push 0
    call
    pop
    push 0
    push 0
    push 8
    returndatacopy
    push 0
    push 8
    return
reentered:
    push 1
    tload
    push 0
    swap1
    mstore
    push 0
    push 8
    return
"""
R_BACK = """
    push 0x100
    push 100000
    push 0
    push 1
    call
    pop
    push 0
    push 0
    push 8
    returndatacopy
    push 0
    push 8
    return
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(name: str, text: str) -> str:
    Path(name).write_text(text)
    return name


def word(n: int) -> str:
    return n.to_bytes(8, "little").hex()


def corpus(folder: str) -> list[dict]:
    return [json.loads(line) for line in
            (Path(folder) / "symbolic.jsonl").read_text().splitlines()]


# -- the executor under 1.1 ------------------------------------------------------------------

def explore_11(main_src: str, callee_src: str, max_calldata: int = 8):
    from proofs.symbolic.executor import explore
    from proofs.symbolic.witness import replay_all
    from proofs.symbolic.world import Setup
    codes = {0x100: assemble(main_src, "1.1"), 0x101: assemble(callee_src, "1.1")}
    x = explore(Setup(0x100, codes, version="1.1", max_calldata=max_calldata))
    assert x.solver is not None
    return x, replay_all(x, x.solver)


def test_transient_storage_and_read_only_frames_across_frames_agree_with_the_reference():
    x, replays = explore_11(T_MAIN, T_CALLEE)
    assert not x.bounds_hit and not x.not_explored and len(x.ends) == 3
    assert [r.status for r in replays] == ["agrees"] * 3
    seen = {}
    for r in replays:
        out = bytes.fromhex(r.actual["output"][2:])
        x_word = int.from_bytes(r.witness.call_data[:8].ljust(8, b"\0"), "little")
        seen[min(x_word, 2)] = (out[:8], out[8:16], out[16:], r.actual["calls"][0])
    # CALL: the callee's write stays for the execution; its second frame reads 7.
    assert seen[0][:3] == (bytes.fromhex(word(7)), bytes(8), bytes.fromhex(word(1)))
    # STATICCALL: the write faults READ_ONLY_WRITE in the read-only frame: nothing kept.
    assert seen[1][0] == bytes(8) and seen[1][1] == bytes.fromhex(word(1))
    assert (seen[1][3]["status"], seen[1][3]["error"]) == ("fault", "READ_ONLY_WRITE")
    # A reverted callee's transient write is undone.
    assert seen[2][0] == bytes(8) and seen[2][3]["status"] == "reverted"


def test_a_reentered_frame_sees_its_contracts_transient_slots():
    x, replays = explore_11(R_MAIN, R_BACK)
    assert [r.status for r in replays] == ["agrees"] * len(x.ends)
    outputs = {r.actual["output"] for r in replays}
    assert "0x" + word(9) in outputs      # entry without call data: the re-entered frame reads 9


def test_a_callee_frame_that_does_not_start_empty_is_caught_by_the_replay(monkeypatch):
    """Planted: callee frames start with every transient slot 7 instead of the execution's
    (empty) slots. The path through the reverted callee then reads 7 where the reference reads
    0, and its witness disagrees."""
    from proofs.symbolic import calls
    monkeypatch.setattr(calls, "empty_transient",
                        lambda: z3.K(z3.BitVecSort(64), z3.BitVecVal(7, 64)))
    _, replays = explore_11(T_MAIN, T_CALLEE)
    assert "disagrees" in [r.status for r in replays]


# -- one contract, two versions --------------------------------------------------------------

def test_a_sha256_contract_differs_in_usage_and_fee_only(capsys):
    file = write("hash.rasm", HASH_WORD)
    code, out, err = run(capsys, "equivalence", *ACROSS, file, "--vectors", "v", "--json")
    assert code == 1, err
    doc = json.loads(out)
    assert doc["versions"] == ["1.0", "1.1"] and doc["verdict"] == "different"
    assert doc["differing"] == ["usage", "fee"]
    old, new = doc["results"]
    saved = (spec.raw("schedule", "1.0")["hash"]["block_cost"]
             - spec.raw("schedule", "1.1")["hash"]["block_cost"])       # 8 bytes: one block
    assert old["usage"]["compute"] - new["usage"]["compute"] == saved == 3
    assert old["fee"] - new["fee"] == saved * spec.raw("schedule", "1.1")["fee"]["compute_price"]
    assert old["output"] == new["output"] and old["status"] == new["status"] == "success"
    vectors = {}
    for version in ("1.0", "1.1"):
        (vector,) = corpus(f"v/{version}")
        jsonschema.Draft202012Validator(spec.schema("vector")).validate(vector)
        assert vector["_meta"]["spec_version"] == version
        manifest = json.loads(Path(f"v/{version}/manifest.json").read_text())
        assert manifest["spec_version"] == version
        vectors[version] = vector
        code, out, err = run(capsys, "run", f"v/{version}/symbolic.jsonl")
        assert code == 0 and json.loads(out) == vector["expected"]["result"], err
    assert vectors["1.0"]["input"] == vectors["1.1"]["input"]
    code, out, _ = run(capsys, "equivalence", *ACROSS, file, "--compare", BEHAVIOUR)
    assert code == 0 and ": equivalent" in out


def test_the_repricing_changes_the_status_where_a_compute_limit_falls_between(capsys):
    from reference_vm import Contract, Limits, Message, WorldState, execute
    blob = assemble(HASH_WORD, "1.0")
    used = execute(WorldState({0x100: Contract(blob, {})}), Message(0x100, 0, b""),
                   version="1.1").to_json()["usage"]["compute"]
    file = write("hash.rasm", HASH_WORD)
    assert Limits().compute > used     # the default limit is no bound here: the same status
    code, out, _ = run(capsys, "equivalence", *ACROSS, file, "--compare", "status")
    assert code == 0
    code, out, _ = run(capsys, "equivalence", *ACROSS, file, "--compare", "status",
                       "--compute", str(used), "--json", "--vectors", "v")
    doc = json.loads(out)
    assert code == 1 and doc["differing"] == ["status"]
    assert [r["status"] for r in doc["results"]] == ["exhausted", "success"]


@pytest.mark.parametrize("argv", [
    [str(EX / "max.rasm")],                                       # a branch on call data
    [str(EX / "counter.rasm")],                                   # storage
    [str(EX / "proxy.rasm"), "--contract", f"0x101={EX / 'counter.rasm'}",
     "--contract", f"0x102={EX / 'reverter.rasm'}"],              # CALLs, one reverted
], ids=["branch", "storage", "calls"])
def test_contracts_without_sha256_are_proved_equal_including_usage(capsys, argv):
    code, out, err = run(capsys, "equivalence", *ACROSS, *argv, "--json")
    doc = json.loads(out)
    assert code == 0 and doc["verdict"] == "equivalent", err
    assert "usage" in doc["compared"] and "calls" in doc["compared"] and not doc["bounds"]


def test_a_callee_that_hashes_shows_in_the_call_records_and_usage(capsys):
    write("hash.rasm", HASH_WORD)
    argv = [str(EX / "proxy.rasm"), "--contract", "0x101=hash.rasm",
            "--contract", f"0x102={EX / 'reverter.rasm'}"]
    code, out, _ = run(capsys, "equivalence", *ACROSS, *argv, "--json", "--vectors", "v")
    assert code == 1 and json.loads(out)["differing"] == ["calls", "usage", "fee"]
    code, out, _ = run(capsys, "equivalence", *ACROSS, *argv, "--compare", BEHAVIOUR)
    assert code == 0 and ": equivalent" in out


def test_a_11_container_under_10_is_refused_on_every_input(capsys):
    write("t.rasm", T_MAIN)
    write("c.rasm", T_CALLEE)
    code, out, _ = run(capsys, "equivalence", "--spec-version", "1.1", "--against", "1.0",
                       "t.rasm", "--contract", "0x101=c.rasm", "--max-calldata", "8",
                       "--compare", "status,error", "--json", "--vectors", "v")
    doc = json.loads(out)
    assert code == 1 and doc["results"][1]["error"] == "UNSUPPORTED_VERSION"


@pytest.mark.parametrize("argv, fragment", [
    (["--against", "1.1", "x.rasm"], "needs --spec-version"),
    (["x.rasm"], "needs contract B"),
    (["--spec-version", "1.0", "--against", "1.0", "x.rasm"], "the same version"),
    ([*ACROSS, "x.rasm", "x.rasm"], "give contract A only"),
    (["--spec-version", "1.0", "--against", "7.7", "x.rasm"], "unknown spec version"),
])
def test_misuse_is_one_line_and_exit_2(capsys, argv, fragment):
    write("x.rasm", HASH_WORD)
    code, out, err = run(capsys, "equivalence", *argv)
    assert code == 2 and fragment in err and err.count("\n") == 1 and not out
