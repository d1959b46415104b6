"""``rtwo-vm scenario run`` and ``rtwo-vm scenario export`` (issue 35 item 4, spec chapter 11.9).

Expected values are written out by hand: the counter returns its new count as one
little-endian word (1, 2, 3); the token moves balances (1000 - 300 = 700 = 0x2bc, 300 = 0x12c,
300 - 100 = 200 = 0xc8, 700 + 100 = 800 = 0x320). Costs are those tests/test_examples.py sums
from the spec (a counter call that creates its slot: compute 595, fee 595 + 100 * 1 page + 50 *
21 storage units = 1745).
"""

from __future__ import annotations

import io
import json
import shutil
import sqlite3
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from conformance.scenario.carry import run_steps
from conformance.scenario.schema import vector_problems
from reference_vm.assembler import assemble
from rtwo_vm.cli import main
from rtwo_vm.runtime import CallRequest, Runtime
from rtwo_vm.runtime.runtime import counting_ids

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
V = "1.1"


def run_cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def refused(*args: str, fragment: str = "") -> str:
    code, out, err = run_cli(*args)
    assert code == 2, (args, code, out[:300], err[:400])
    assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, err[:400]
    assert fragment in err, err
    return err


def le(value: int) -> str:
    return "0x" + value.to_bytes(8, "little").hex()


def scenario_dir(tmp_path: Path, text: str) -> Path:
    folder = tmp_path / "sc"
    folder.mkdir(exist_ok=True)
    for name in ("counter.rasm", "token.rasm"):
        shutil.copy(EXAMPLES / name, folder / name)
    (folder / "s.toml").write_text(text)
    return folder / "s.toml"


COUNTER = """
[[scenario]]
name = "count"
contracts."0x100" = { code = "counter.rasm" }
call = [ { to = "0x100", caller = "0x1" }, { to = "0x100", caller = "0x2" }, { to = "0x100", caller = "0x1" } ]
"""

TOKEN = """
[[scenario]]
name = "pay"
id = "scenario/t/pay"
contracts."0x200" = { code = "token.rasm", storage = { "0xa" = "1000" } }
call = [
    { to = "0x200", caller = "0xa", calldata = ["0xb", "300"] },
    { to = "0x200", caller = "0xb", calldata = "0x0c000000000000006400000000000000" },
    { to = "0x200", caller = "0xb", calldata = ["0xc", 201] },
]
"""


def test_a_toml_scenario_prints_every_step_and_the_final_state(tmp_path):
    code, out, err = run_cli("scenario", "run", str(scenario_dir(tmp_path, COUNTER)))
    assert code == 0, err
    lines = out.splitlines()
    outputs = [line.split("output ")[1] for line in lines if line.startswith("  success; output")]
    assert outputs == [le(1), le(2), le(3)]
    assert "  state 0x100[0x0]: 0x0 -> 0x1" in lines and "  state 0x100[0x0]: 0x2 -> 0x3" in lines
    assert "fee 1745" in lines[4] and "compute 595," in lines[4]
    assert lines[lines.index("final state:") + 1] == "  0x100: 0x0 = 0x3"


def test_token_balances_carry_and_a_refused_transfer_changes_nothing(tmp_path):
    code, out, err = run_cli("scenario", "run", str(scenario_dir(tmp_path, TOKEN)), "--json")
    assert code == 0, err
    [vector] = json.loads(out)
    assert vector_problems(vector) == [] and vector["id"] == "scenario/t/pay"
    assert vector["tags"]["outcomes"] == ["success", "success", "reverted"]
    assert vector["tags"]["source"] == "definition"
    steps = vector["input"]["steps"]
    assert steps[0]["message"]["call_data"] == "0x" + "0b".ljust(16, "0") + "2c01".ljust(16, "0")
    assert steps[2]["message"]["call_data"] == "0x" + "0c".ljust(16, "0") + "c9".ljust(16, "0")
    assert vector["expected"]["post_state"]["contracts"]["0x200"]["storage"] == {
        "0xa": "0x2bc", "0xb": "0xc8", "0xc": "0x64"}
    assert bytes.fromhex(vector["expected"]["steps"][2]["result"]["output"][2:]) == b"insufficient balance"


def test_out_writes_vectors_that_validate_and_run_again_on_every_engine(tmp_path):
    out_file = tmp_path / "v.jsonl"
    code, _, err = run_cli("scenario", "run", "ledger", "--out", str(out_file))   # a bundled example
    assert code == 0, err
    vectors = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert [v["id"] for v in vectors] == ["scenario/ledger/transfers", "scenario/ledger/counter"]
    assert all(vector_problems(v) == [] for v in vectors)
    assert vectors[0]["expected"]["post_state"]["contracts"]["0x200"]["storage"] == {"0xa": "0x320", "0xb": "0xc8"}
    code, out, err = run_cli("scenario", "run", str(out_file), "--engine", "compiled")
    assert code == 0, err
    assert out.count("agrees: the compiled engine gives the vector's expected results") == 2
    # A vector whose expectation is wrong (its hash made to match) is reported, exit 1.
    from conformance.corpus.vector import stamped, vector_line
    wrong = json.loads(json.dumps(vectors[1]))
    wrong["expected"]["steps"][0]["result"]["fee"] += 1
    wrong = stamped({k: v for k, v in wrong.items() if k != "_meta"}, V)
    (tmp_path / "w.jsonl").write_text(vector_line(wrong) + "\n")
    code, out, _ = run_cli("scenario", "run", str(tmp_path / "w.jsonl"))
    assert code == 1 and "DIFFERS: the vector's expected results: step 0 diverges (fee)" in out


def _deployed_runtime(path: Path) -> tuple[Runtime, list[str]]:
    """Token and counter deployed, then five calls (two counter calls, three transfers)."""
    rt = Runtime(path, ids=counting_ids())
    rt.deploy(assemble((EXAMPLES / "token.rasm").read_text(), V), 0x200, {0xa: 1000}, spec_version=V)
    rt.deploy(assemble((EXAMPLES / "counter.rasm").read_text(), V), 0x100, spec_version=V)
    words = lambda *w: b"".join(x.to_bytes(8, "little") for x in w)  # noqa: E731
    ids = [rt.call(r).context.context_id for r in (
        CallRequest(to=0x100, caller=1),
        CallRequest(to=0x200, caller=0xA, call_data=words(0xB, 300)),
        CallRequest(to=0x200, caller=0xB, call_data=words(0xC, 301)),      # refused
        CallRequest(to=0x100, caller=2, block_time=7),
        CallRequest(to=0x200, caller=0xB, call_data=words(0xC, 100)))]
    return rt, ids


def test_runtime_calls_export_as_a_vector_the_reference_reproduces(tmp_path):
    db = tmp_path / "rt.db"
    rt, ids = _deployed_runtime(db)
    recorded = [rt.results.for_context(i).compared for i in ids]
    rt.close()
    out_file = tmp_path / "export.jsonl"
    code, _, err = run_cli("scenario", "export", "--db", str(db), "--contract", "0x200", "--out", str(out_file))
    assert code == 0, err
    [vector] = [json.loads(line) for line in out_file.read_text().splitlines()]
    assert vector_problems(vector) == [] and vector["tags"]["source"] == "runtime"
    # The pre-state is the deployed one; the counter (never reached by a token call) is not in it.
    assert vector["input"]["pre_state"]["contracts"]["0x200"]["storage"] == {"0xa": "0x3e8"}
    assert list(vector["input"]["pre_state"]["contracts"]) == ["0x200"]
    run = run_steps(vector["input"])
    assert list(run.results) == [recorded[1], recorded[2], recorded[4]]
    assert run.post_state["contracts"]["0x200"]["storage"] == {"0xa": "0x2bc", "0xb": "0xc8", "0xc": "0x64"}
    # The later counter call alone starts from the count the earlier one left, at block time 7.
    code, out, err = run_cli("scenario", "export", "--db", str(db), "--context", ids[3], "--json")
    assert code == 0, err
    later = json.loads(out)
    assert later["input"]["pre_state"]["contracts"]["0x100"]["storage"] == {"0x0": "0x1"}
    assert later["input"]["steps"][0]["context"]["block_time"] == "0x7"
    assert later["expected"]["steps"][0]["result"]["output"] == le(2)


def test_scenario_run_on_the_runtime_then_export_gives_the_same_vector(tmp_path):
    db = tmp_path / "new.db"
    path = scenario_dir(tmp_path, TOKEN)
    code, out, err = run_cli("scenario", "run", str(path), "--runtime", "--db", str(db), "--json")
    assert code == 0, err
    [ran] = json.loads(out)
    assert ran["tags"]["source"] == "runtime"
    code, out, err = run_cli("scenario", "export", "--db", str(db), "--json", "--id", "scenario/t/pay")
    assert code == 0, err
    exported = json.loads(out)
    assert exported["input"] == ran["input"] and exported["expected"] == ran["expected"]
    refused("scenario", "run", str(path), "--runtime", "--db", str(db), fragment="exists")


def test_an_export_that_would_not_reproduce_the_records_is_refused(tmp_path):
    db = tmp_path / "rt.db"
    rt, ids = _deployed_runtime(db)
    rt.close()
    out_file = tmp_path / "x.jsonl"
    # The second counter call without the first: the count it found came from a call left out.
    code, _, err = run_cli("scenario", "export", "--db", str(db), "--context", ids[0], "--context", ids[3],
                           "--context", ids[1], "--out", str(out_file))
    assert code == 0, err       # the token call in between changed no counter slot
    rt = Runtime(db, ids=counting_ids(100))
    third = rt.call(CallRequest(to=0x100, caller=3)).context.context_id
    fourth = rt.call(CallRequest(to=0x100, caller=4)).context.context_id
    rt.close()
    out_file.unlink()
    err = refused("scenario", "export", "--db", str(db), "--context", ids[0], "--context", fourth,
                  fragment="not exported, changed 0x100")
    assert ids[3] in err or third in err
    # Storage changed outside the runtime: the undo finds a slot that is not what a call left.
    conn = sqlite3.connect(db)
    conn.execute("UPDATE storage SET value = '0x63' WHERE address = '0x100'")
    conn.commit()
    conn.close()
    refused("scenario", "export", "--db", str(db), "--contract", "0x100", "--out", str(out_file),
            fragment="changed outside the runtime")
    # A context recorded before call data was (schema 6) cannot be exported.
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM call_requests WHERE context_id = ?", (ids[1],))
    conn.commit()
    conn.close()
    refused("scenario", "export", "--db", str(db), "--context", ids[1], fragment="no recorded call data")
    assert not out_file.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["rt.db"]


HOSTILE_TOML = {
    "not TOML": "[[scenario]\nname = ",
    "no scenarios": "x = 1\n",
    "too many calls": COUNTER.replace("call = [", "call = [" + "{ to = \"0x100\" }, " * 64),
    "absolute path": COUNTER.replace('"counter.rasm"', '"/etc/passwd"'),
    "path outside": COUNTER.replace('"counter.rasm"', '"../../counter.rasm"'),
    "a command as a path": COUNTER.replace('"counter.rasm"', '"$(touch pwned)"'),
    "nested": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    "unknown field": COUNTER.replace('caller = "0x2"', 'caller = "0x2", shell = "rm -rf /"'),
    "bad policy": COUNTER.replace('caller = "0x2"', 'caller = "0x2", time_access = "always"'),
    "decreasing versions": COUNTER.replace('caller = "0x2" }', 'caller = "0x2", spec_version = "1.0" }'),
    "huge word": COUNTER.replace('caller = "0x2"', 'caller = "0x1' + "0" * 40 + '"'),
    "huge call data": COUNTER.replace('caller = "0x2"', 'caller = "0x2", calldata = [' + "1, " * 9000 + ']'),
    # The words of a list follow --calldata-words's grammar: decimal or 0x-hex, nothing else.
    "binary word": COUNTER.replace('caller = "0x2"', 'caller = "0x2", calldata = ["0b101"]'),
    "underscored word": COUNTER.replace('caller = "0x2"', 'caller = "0x2", calldata = ["1_000"]'),
    "two words in one": COUNTER.replace('caller = "0x2"', 'caller = "0x2", calldata = ["1, 2"]'),
    "negative word": COUNTER.replace('caller = "0x2"', 'caller = "0x2", calldata = [-1]'),
}


@pytest.mark.parametrize("name", sorted(HOSTILE_TOML))
def test_hostile_scenario_files_get_one_line_and_leave_nothing(tmp_path, name, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = scenario_dir(tmp_path, HOSTILE_TOML[name])
    before = sorted(p.name for p in tmp_path.rglob("*"))
    refused("scenario", "run", str(path), "--out", str(tmp_path / "o.jsonl"), "--runtime",
            "--db", str(tmp_path / "r.db"))
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_hostile_files_of_other_shapes(tmp_path):
    import os
    path = scenario_dir(tmp_path, COUNTER)
    (tmp_path / "sc" / "link.rasm").symlink_to(tmp_path / "sc" / "counter.rasm")
    linked = scenario_dir(tmp_path, COUNTER.replace('"counter.rasm"', '"link.rasm"'))
    refused("scenario", "run", str(linked), fragment="symbolic link")
    os.mkfifo(tmp_path / "fifo.toml")
    refused("scenario", "run", str(tmp_path / "fifo.toml"), fragment="not a regular file")
    big = tmp_path / "big.toml"
    with open(big, "wb") as f:
        f.truncate(17 << 20)
    refused("scenario", "run", str(big), fragment="larger than")
    (tmp_path / "bad.jsonl").write_text('{"id": "scenario/x/y"}\n')
    refused("scenario", "run", str(tmp_path / "bad.jsonl"), fragment="not a scenario vector")
    (tmp_path / "deep.jsonl").write_text("[" * 100000 + "]" * 100000 + "\n")
    refused("scenario", "run", str(tmp_path / "deep.jsonl"))
    (tmp_path / "real.jsonl").write_text("")
    (tmp_path / "out.jsonl").symlink_to(tmp_path / "real.jsonl")
    refused("scenario", "run", str(path), "--out", str(tmp_path / "out.jsonl"), fragment="symbolic link")
    assert (tmp_path / "real.jsonl").read_text() == ""
    (tmp_path / "garbage.db").write_bytes(b"not a database" * 100)
    refused("scenario", "export", "--db", str(tmp_path / "garbage.db"))
    refused("scenario", "export", "--db", str(tmp_path / "missing.db"))
    assert not (tmp_path / "missing.db").exists()
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_a_bundled_example_runs_by_name_from_any_directory(tmp_path, monkeypatch):
    """As installed by pip (pyproject data-files: share/rtwo-vm/examples and benchmarks)."""
    share = tmp_path / "share" / "rtwo-vm"
    (share / "examples").mkdir(parents=True)
    (share / "benchmarks").mkdir()
    for f in list(EXAMPLES.glob("*.toml")) + list(EXAMPLES.glob("*.rasm")):
        shutil.copy(f, share / "examples" / f.name)
    shutil.copy(EXAMPLES.parent / "benchmarks" / "loop.rasm", share / "benchmarks" / "loop.rasm")
    import rtwo_vm.examples
    monkeypatch.setattr(rtwo_vm.examples, "bundled_directory", lambda: share / "examples")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    code, out, err = run_cli("scenario", "run", "scenarios", "--scenario", "loop")   # ../benchmarks
    assert code == 0, err
    code, out, err = run_cli("scenario", "run", "ledger", "--scenario", "ledger-counter")
    assert code == 0 and "  0x100: 0x0 = 0x3" in out, err
    refused("scenario", "run", "nothing-bundled", fragment="nothing-bundled")


def test_a_call_may_move_the_state_to_a_later_version(tmp_path):
    text = COUNTER.replace('name = "count"', 'name = "count"\nspec_version = "1.0"').replace(
        '{ to = "0x100", caller = "0x1" } ]', '{ to = "0x100", caller = "0x1", spec_version = "1.1" } ]')
    path = scenario_dir(tmp_path, text)
    code, out, err = run_cli("scenario", "run", str(path), "--json")
    assert code == 0, err
    [vector] = json.loads(out)
    assert [s["spec_version"] for s in vector["input"]["steps"]] == ["1.0", "1.0", "1.1"]
    assert vector["_meta"]["spec_version"] == "1.1" and vector_problems(vector) == []
    assert vector["expected"]["steps"][2]["result"]["output"] == le(3)
    refused("scenario", "run", str(path), "--runtime", fragment="change version")
