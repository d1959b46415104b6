"""The corpora of several spec versions (chapter 11.2.6, 11.3; issue 34): the 1.0 corpus kept
byte for byte, one input per definition in every version it is valid in, and every difference
between two versions' vectors of one definition explained by a diff item, or the fill fails."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from conformance.constants import corpus_dir
from conformance.corpus import explain, fill as fill_mod, store
from conformance.corpus.vector import Case
from planting import plant

ROOT = Path(__file__).resolve().parent.parent
# The corpus of 1.0 as it was committed before versions existed (conformance/vectors/, now
# conformance/vectors/1.0/): its digest and size. A change of a 1.0 vector changes the digest;
# 1.0 vectors added since (each with a V item of the changelog) are left out of the pin: the
# vectors of before stay byte for byte, whatever is added.
DIGEST_1_0 = "ceb57eadcfc24ef279d8977bdafcf513c905a2f985aa8e97ff5ee76f557e361b"
COUNT_1_0 = 3157
ADDED_1_0 = {   # changelog V2: the symbolic witnesses of examples/vault.rasm (issue 35)
    "symbolic/vault/reverted_2eca800b52", "symbolic/vault/reverted_66347c99f6",
    "symbolic/vault/success_3cf154b20d", "symbolic/vault/success_9381bba992",
    # changelog V3: what two definitions meant to test (found by the author expectations)
    "call/CALL/callee_exhausted_after_a_write_writes_undone",
    "call/CALL/entry_underflow_after_a_call_outputs_nothing"}


@pytest.fixture(scope="module")
def corpora():
    return {v: {x["id"]: x for x in store.load(corpus_dir(v))} for v in spec.names()}


def test_the_1_0_corpus_is_the_one_of_before_versions(corpora):
    manifest = json.loads((corpus_dir("1.0") / "manifest.json").read_text())
    assert manifest["spec_version"] == "1.0" and manifest["vector_count"] == COUNT_1_0 + len(ADDED_1_0)
    assert ADDED_1_0 <= set(corpora["1.0"])
    before = [v for i, v in corpora["1.0"].items() if i not in ADDED_1_0]
    assert (store.digest(before), len(before)) == (DIGEST_1_0, COUNT_1_0)


def test_a_definition_valid_in_both_versions_sends_the_same_input(corpora):
    old, new = corpora["1.0"], corpora["1.1"]
    # Every 1.0 vector is filled for 1.1 with the same input, but two kinds of definitions: a 1.1
    # container, which 1.1 runs (1.0's UNSUPPORTED_VERSION vector has no 1.1 twin), and SHA256's
    # compute boundaries, which P1 moves (each version has its own, at its own price).
    assert set(old) - set(new) == {"validation/UNSUPPORTED_VERSION/v1_1"}
    moved = sorted(i for i in set(old) & set(new) if old[i]["input"] != new[i]["input"])
    assert moved == ["hash/SHA256/compute_limit", "hash/SHA256/compute_limit+1", "hash/SHA256/compute_limit-1"]
    for i in moved:       # each at its own version's boundary: the limit is the compute the program needs
        assert old[i]["input"]["sandbox"]["limits"]["compute"] > new[i]["input"]["sandbox"]["limits"]["compute"]
    # The 1.0 definitions in 1.1 run their 1.0 containers (header bytes 4 and 5: 01 00).
    headers = {c["code"][10:14] for i in set(old) & set(new) for c in new[i]["input"]["pre_state"]["contracts"].values()
               if c["code"].startswith("0x5254574f")}
    assert headers & {"0100", "0101"} == {"0100"}


def test_every_difference_between_the_versions_is_sha256_repriced(corpora):
    old, new = corpora["1.0"], corpora["1.1"]
    differing = sorted(i for i in set(old) & set(new)
                       if old[i]["input"] == new[i]["input"] and old[i]["expected"] != new[i]["expected"])
    assert differing and all("SHA256" in new[i]["tags"]["opcodes"] or i.startswith("symbolic/hashing/")
                             for i in differing), differing
    for i in differing:
        # P1 explains each; F1 and T1 affect CALL, SSTORE and the LOGs (a request that also
        # ran one of them is explained by those items too: the rule is coarse on purpose).
        items = explain.explaining(old[i], new[i])
        assert "1.1/P1" in items and set(items) <= {"1.1/P1", "1.1/F1", "1.1/T1"}, (i, items)
        # Only usage and fee move: the bytes hashed are the same (P1 changes no result but its cost).
        a, b = old[i]["expected"]["result"], new[i]["expected"]["result"]
        assert b["usage"]["compute"] < a["usage"]["compute"] and b["fee"] < a["fee"]
        assert {k: v for k, v in a.items() if k not in ("usage", "fee")} == \
               {k: v for k, v in b.items() if k not in ("usage", "fee")}


def test_what_each_item_touches():
    touched = {item.id: item.tokens for item in explain.items("1.0", "1.1")}
    assert touched["1.1/P1"] == {("op", "SHA256")}                    # its affects list alone
    assert touched["1.1/C1"] == {("container", "1.1")}
    assert touched["1.1/N2"] == {("op", "CLZ"), ("op", "CTZ"), ("op", "POPCNT"), ("type", "bitwise")}
    assert {("op", "TSTORE"), ("type", "transient"), ("code", "TRANSIENT_STORAGE_FULL")} <= touched["1.1/T1"]
    assert {("op", "STATICCALL"), ("code", "READ_ONLY_WRITE"), ("op", "SSTORE"), ("type", "event"),
            ("op", "CALL")} <= touched["1.1/F1"]                    # rows and affects (prove --diff)
    assert ("op", "CALL") in touched["1.1/T1"]
    assert touched["1.1/X1"] == frozenset()


@pytest.fixture
def mcopy_costs_more_in_1_1(monkeypatch):
    """A planted change of 1.1's rules that no diff item declares: a copy word costs one more
    compute unit (the real Rules built with one edited line), every reference cache emptied
    before and after."""
    from conformance.fuzz.feedback import _clear_reference_caches
    from reference_vm.rules import Rules
    plant(monkeypatch, Rules, "__init__", 'self.copy_word_cost = schedule["copy"]["word_cost"]',
          'self.copy_word_cost = schedule["copy"]["word_cost"] + (self.version != "1.0")')
    _clear_reference_caches()
    yield
    monkeypatch.undo()
    _clear_reference_caches()


def _fill_with(monkeypatch, *cases):
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter(cases))
    return fill_mod.fill(["definition"])


def test_a_difference_no_item_explains_fails_the_fill(monkeypatch, mcopy_costs_more_in_1_1):
    copy = Case(id="memory/MCOPY/planted", description="MCOPY of one word", code="push 0\npush 8\npush 8\nmcopy\nstop\n",
                opcodes=("MCOPY",))
    with pytest.raises(fill_mod.UnexplainedDifference) as raised:
        _fill_with(monkeypatch, copy)
    assert str(raised.value) == (
        "1 vectors differ between versions with no diff item to explain it; first: memory/MCOPY/planted: "
        "differs between 1.0 and 1.1 in expected/result/fee, expected/result/usage/compute, and no item of "
        "the diff explains it (the request touches container 1.0, op MCOPY, op PUSH1, op STOP; an item "
        "explains a difference when it touches one of these: its rows, or its affects list)")
    # The same planted change in a request an item does touch is explained (by that item, wrongly:
    # the rule is coarse on purpose, a request that hashes may move).
    hashed = Case(id="hash/SHA256/planted", description="SHA256 and MCOPY", opcodes=("SHA256", "MCOPY"),
                  code="push 0\npush 8\npush 8\nmcopy\npush 0\npush 0\npush 8\nsha256\nstop\n")
    filled = _fill_with(monkeypatch, hashed)
    assert filled.explained == {"1.1:hash/SHA256/planted": ["1.1/P1"]}


def test_without_the_plant_the_same_definition_is_the_same_in_both(monkeypatch):
    copy = Case(id="memory/MCOPY/planted", description="MCOPY of one word", code="push 0\npush 8\npush 8\nmcopy\nstop\n",
                opcodes=("MCOPY",))
    filled = _fill_with(monkeypatch, copy)
    (a,), (b,) = filled.corpora["1.0"].vectors, filled.corpora["1.1"].vectors
    assert {k: v for k, v in a.items() if k != "_meta"} == {k: v for k, v in b.items() if k != "_meta"}
    assert (a["_meta"]["spec_version"], b["_meta"]["spec_version"]) == ("1.0", "1.1")
    assert filled.explained == {}


@pytest.mark.parametrize("argv", [
    ["vectors", "fill", "--check", "--spec-version", "9.9"],
    ["vectors", "check", "--spec-version", "1.07"],
    ["vectors", "show", "arithmetic/ADD/one__one", "--spec-version", "latest"],
    ["conformance", "run", "--spec-version", "2.0"],
    ["conformance", "selftest", "--spec-version", "0.9"],
    ["fuzz", "--runs", "1", "--spec-version", "1.2"],
])
def test_an_unknown_version_is_one_line_and_exit_2(argv):
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.startswith("rtwo-vm: error: argument --spec-version: unknown spec version ")
    assert done.stderr.count("\n") == 1 and done.stdout == "", done.stderr


def test_a_vector_of_an_unknown_version_is_refused_in_one_line(tmp_path):
    """One vector of a copy of the 1.0 corpus names spec 9.9: every command reading the corpus
    refuses it in one line, exit 2, before any adapter runs."""
    folder = tmp_path / "corpus"
    shutil.copytree(corpus_dir("1.0"), folder)     # its scenarios/ folder too
    lines = (folder / "hash.jsonl").read_text().splitlines()
    vector = json.loads(lines[0])
    vector["_meta"]["spec_version"] = "9.9"
    lines[0] = json.dumps(vector, sort_keys=True, separators=(",", ":"))
    (folder / "hash.jsonl").write_text("\n".join(lines) + "\n")
    why = f"rtwo-vm: error: cannot read the corpus in {folder}: vector {vector['id']} is of spec 9.9, in the corpus of spec 1.0\n"
    for argv in (["vectors", "check"], ["vectors", "list"],
                 ["conformance", "run", "--repeat", "0", "--fresh", "0", "--out", str(tmp_path / "out")]):
        done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv, "--dir", str(folder)], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert (done.returncode, done.stderr, done.stdout) == (2, why, ""), argv
    assert not (tmp_path / "out").exists()


def test_a_corpus_folder_of_an_unknown_version_is_refused_in_one_line(tmp_path):
    from rtwo_vm import cli
    folder = tmp_path / "corpus"
    shutil.copytree(corpus_dir("1.1"), folder)     # its scenarios/ folder too
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "spec_version": "3.0"}))
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "vectors", "check", "--dir", str(folder)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (f"rtwo-vm: error: cannot read the corpus in {folder}: manifest.json: "
                                   "spec_version: '3.0' is not a version of spec/versions.toml (1.0, 1.1)")
    assert cli.main(["vectors", "check", "--dir", str(corpus_dir("1.1"))]) == 0
