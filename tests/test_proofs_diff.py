"""``prove --diff``: the models of 1.0 and 1.1 held to the diff's declarations (proofs/diff/),
with the bugs it must catch planted: a cost changed without an item, an item the model does
not implement, a model differing for one operand value, and premises no state satisfies.

Expectations come from the spec's own text (spec/CHANGELOG.md's 1.1 items and chapter 5.6.5),
never from a run of the code under test.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import pytest

import spec
from proofs.diff import declared as declared_mod, run
from proofs.instructions import models
from proofs.machine import well_formed

# CHANGELOG 1.1: N1 (MULHU, MULHS), N2 (CLZ, CTZ, POPCNT), F1 (STATICCALL), T1 (TLOAD, TSTORE).
ADDED = {"MULHU": "N1", "MULHS": "N1", "CLZ": "N2", "CTZ": "N2", "POPCNT": "N2",
         "STATICCALL": "F1", "TLOAD": "T1", "TSTORE": "T1"}
# F1: SSTORE and LOG0-LOG4 halt in a read-only frame, CALL's callee inherits it; T1: CALL keeps
# its callee's transient slots; P1: SHA256's block cost.
CHANGED = {"SSTORE": {"F1"}, "CALL": {"F1", "T1"}, "SHA256": {"P1"},
           **{f"LOG{n}": {"F1"} for n in range(5)}}


@pytest.fixture(scope="module")
def whole():
    return run.run("1.0", "1.1")


def test_every_instruction_is_unchanged_added_or_changed_as_its_item_declares(whole):
    rows = {r.mnemonic: r for r in whole.rows}
    both = set(spec.load("1.0").by_mnemonic) & set(spec.load("1.1").by_mnemonic)
    assert set(rows) == both | set(ADDED)
    for m, item in ADDED.items():
        assert (rows[m].status, rows[m].items) == (run.ADDED, (f"1.1/{item}",))
    for m, items in CHANGED.items():
        assert rows[m].status == run.AS_DECLARED, (m, rows[m].note)
        assert {i.split("/")[1] for i in rows[m].items} == items
        assert rows[m].witness is not None and rows[m].shows
    for m in both - set(CHANGED):
        assert rows[m].status == run.UNCHANGED, (m, rows[m].status, rows[m].note)
    assert not whole.failures and not whole.undecided
    assert {i["id"] for i in whole.other_items} == {"1.1/C1", "1.1/X1"}


def test_the_repricing_is_characterised_as_compute_only_and_replayed(whole):
    sha = next(r for r in whole.rows if r.mnemonic == "SHA256")
    differs = {k for k, v in sha.components.items() if v == "differs"}
    # 5.6.5: the charge moves, so does the compute-limit outcome; the digest, memory and
    # every other meter are proved equal.
    assert differs == {"compute", "outcome"}
    assert {"stack", "memory", "storage", "events", "pages_live"} <= {
        k for k, v in sha.components.items() if v == "equal"}
    assert sha.shows == ["compute"]
    a, b = sha.replay["results"]["1.0"], sha.replay["results"]["1.1"]
    length = sha.witness["stack"][-1]          # SHA256: dst src length (length on top)
    blocks = -(-length // 64)
    assert (a["status"], b["status"]) == ("running", "running")
    assert a["meters"]["compute"] - b["meters"]["compute"] == (6 - 3) * blocks
    assert a["stack"] == b["stack"] and sha.replay["differ"] == ["meters"]


def test_a_read_only_write_is_the_witness_of_f1(whole):
    row = next(r for r in whole.rows if r.mnemonic == "SSTORE")
    assert row.witness["read_only"] is True and row.shows == ["outcome"]
    assert row.replay["results"]["1.1"]["status"] == "READ_ONLY_WRITE"
    assert row.replay["results"]["1.0"]["status"] == "running"


def _plant_cost(monkeypatch, mnemonic: str, delta: int) -> None:
    """The models of 1.1 read a table whose row of ``mnemonic`` has another base cost, no
    item saying so (the table 1.0 plus the diff would have made, edited afterwards)."""
    from types import MappingProxyType

    from proofs.words import Width
    real = spec.load("1.1")
    row = real.by_mnemonic[mnemonic]
    rows = dict(real.by_mnemonic, **{mnemonic: dataclasses.replace(row, cost=row.cost + delta)})
    edited = dataclasses.replace(real, by_mnemonic=MappingProxyType(rows))
    monkeypatch.setattr(Width, "spec", property(
        lambda w: edited if w.version == "1.1" else spec.load(w.version)))


def test_planted_a_cost_of_add_changed_in_1_1_without_an_item(monkeypatch):
    _plant_cost(monkeypatch, "ADD", 1)
    row = run.run("1.0", "1.1", ("ADD",)).rows[0]
    assert row.status == run.UNDECLARED and row.items == ()
    assert row.components["compute"] == "differs" and row.components["stack"] == "equal"
    assert "no item" in row.note


def test_planted_a_diff_item_the_1_1_model_does_not_implement():
    # P1's 1.1 model charging 1.0's block cost: the 1.0 model run on 1.1's states.
    old_model = models(64, "1.0")["SHA256"]
    report = run.run("1.0", "1.1", ("SHA256",), model_overrides={("1.1", "SHA256"): old_model})
    row = report.rows[0]
    assert row.status == run.NOT_CHANGED and row.items == ("1.1/P1",)
    assert report.failures == [row]


def test_planted_a_1_1_model_differing_for_one_operand_value():
    real = models(64, "1.1")["ADD"]
    magic = 0x1234_5678_9ABC

    def planted(s, imm):
        out = []
        for b in real(s, imm):
            top = b.state.stack[0]
            wrong = b.state.replace(stack=(top + 1, *b.state.stack[1:]))
            a = s.stack[1]
            import z3
            out += [dataclasses.replace(b, cond=z3.And(b.cond, a != magic)),
                    dataclasses.replace(b, cond=z3.And(b.cond, a == magic), state=wrong)]
        return out

    row = run.run("1.0", "1.1", ("ADD",), model_overrides={("1.1", "ADD"): planted}).rows[0]
    assert row.status == run.UNDECLARED
    assert row.components["stack"] == "differs" and row.components["compute"] == "equal"
    assert magic in row.witness["stack"] and row.shows == ["stack"]
    # The interpreter is right: its replay shows both versions adding the same way.
    assert row.replay["differ"] == []


def test_planted_an_item_that_declares_no_change_of_a_repriced_instruction():
    # P1 without its affects list: SHA256's change is then undeclared.
    real = declared_mod.declared("1.0", "1.1")
    items = tuple(dataclasses.replace(i, changed=()) if i.id == "1.1/P1" else i for i in real.items)
    report = run.run("1.0", "1.1", ("SHA256", "ADD"),
                     declarations=dataclasses.replace(real, items=items))
    status = {r.mnemonic: r.status for r in report.rows}
    assert status == {"ADD": run.UNCHANGED, "SHA256": run.UNDECLARED}


def test_planted_premises_that_no_state_satisfies(monkeypatch):
    import z3
    from proofs.diff import compare
    monkeypatch.setattr(compare, "well_formed", lambda s: z3.And(well_formed(s), s.pc != s.pc))
    with pytest.raises(run.VacuousPremises):
        run.run("1.0", "1.1", ("ADD",))


def _cli(*args, cwd):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


def test_the_command_writes_the_report_and_a_witness_vector_for_both_versions(tmp_path):
    report, vectors = tmp_path / "diff.json", tmp_path / "w"
    done = _cli("prove", "--diff", "1.0", "1.1", "--opcode", "sha256", "--opcode", "ADD",
                "--report", str(report), "--vectors", str(vectors), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "SHA256       changed as declared      P1" in done.stdout
    assert "1.1/P1   proved as declared" in done.stdout
    doc = json.loads(report.read_text())
    assert doc["counts"] == {"changed as declared": 1, "unchanged": 1}
    assert doc["item_status"]["1.1/P1"] == "proved as declared"
    old, new = ([json.loads(line) for line in (vectors / f"{v}.jsonl").read_text().splitlines()]
                for v in ("1.0", "1.1"))
    assert [v["id"] for v in old] == [v["id"] for v in new] == ["diff/1.0-1.1/SHA256"]
    assert old[0]["input"] == new[0]["input"]
    a, b = old[0]["expected"]["result"], new[0]["expected"]["result"]
    assert a["usage"]["compute"] > b["usage"]["compute"]
    assert {k: v for k, v in a.items() if k not in ("usage", "fee")} == \
           {k: v for k, v in b.items() if k not in ("usage", "fee")}
    assert old[0]["_meta"]["spec_version"] == "1.0" and new[0]["_meta"]["spec_version"] == "1.1"


@pytest.mark.parametrize("args, message", [
    (("1.1", "1.0"), "is not a later version built on 1.1"),
    (("1.0", "9.9"), "unknown spec version '9.9'"),
    (("1.0", "1.0"), "is not a later version"),
])
def test_bad_version_pairs_are_refused_in_one_line(tmp_path, args, message):
    done = _cli("prove", "--diff", *args, cwd=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "build").exists()
