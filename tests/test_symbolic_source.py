"""The symbolic source of ``vectors fill`` (conformance/corpus/symbolic_source.py): one vector
per feasible path of every bundled example, deterministic, checked against the reference and
against a fresh exploration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store, symbolic_source
from conformance.corpus.vector import run_reference
from conformance.corpus.vector import BASE as V

ROOT = Path(__file__).resolve().parent.parent
# The symbolic vectors are definitions of the first version (1.0 containers): its corpus.
FILL_SYMBOLIC = ("from conformance.corpus.fill import fill\n"
                 "from conformance.corpus.vector import BASE, vector_line\n"
                 "done = fill(['symbolic'], versions=[BASE]).corpora[BASE]\n"
                 "for v in sorted(done.vectors, key=lambda v: v['id']):\n"
                 "    print(vector_line(v))\n")


@pytest.fixture(scope="module")
def symbolic_vectors():
    return [v for v in store.load(corpus_dir(V)) if v["tags"]["source"] == "symbolic"]


def by_example(vectors) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for v in vectors:
        out.setdefault(v["id"].split("/")[1], []).append(v)
    return out


def test_two_fills_under_two_hash_seeds_give_the_committed_symbolic_vectors():
    outputs = []
    for seed in ("1", "4242"):
        done = subprocess.run([sys.executable, "-c", FILL_SYMBOLIC], cwd=ROOT, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0] == (corpus_dir(V) / "symbolic.jsonl").read_text(encoding="utf-8")


def test_every_symbolic_vector_is_tagged_and_expects_the_reference_result(symbolic_vectors):
    assert len(symbolic_vectors) == sum(len(e["paths"]) for e in symbolic_source.load_cache().values())
    for v in symbolic_vectors:
        assert v["id"].startswith("symbolic/"), v["id"]
        assert v["tags"]["source"] == "symbolic" and v["tags"]["categories"] == ["symbolic"], v["id"]
        assert run_reference(v["input"], V).to_json() == v["expected"]["result"], v["id"]
        assert v["tags"]["outcome"] == (v["expected"]["result"]["error"]
                                        or v["expected"]["result"]["status"]), v["id"]


def test_every_example_is_covered_path_for_path_as_a_fresh_exploration_finds(symbolic_vectors):
    """The paths (outcome and forks, hence the ids) do not depend on z3's models: a fresh
    exploration of each example finds exactly the cached paths, one vector each."""
    from proofs.symbolic.executor import explore
    from proofs.symbolic.solve import Solver

    found = by_example(symbolic_vectors)
    assert sorted(found) == sorted(p.stem for p in (ROOT / "examples").glob("*.rasm"))
    for example in symbolic_source.examples():
        setup = symbolic_source.setup_of(example)
        exploration = explore(setup, Solver(setup.rlimit))
        assert not exploration.cuts, example.name
        fresh = sorted(f"symbolic/{example.name}/{e.outcome.lower()}_"
                       f"{symbolic_source.signature(e.outcome, e.choices)}" for e in exploration.ends)
        assert fresh == sorted(v["id"] for v in found[example.name]), example.name


def test_token_by_hand_three_paths_as_rtwo_vm_symbolic_reports(symbolic_vectors):
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "symbolic", "examples/token.rasm",
                           "--address", "0x200"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3 paths (1 reverted, 2 success), 0 cut by bounds" in done.stdout
    token = by_example(symbolic_vectors)["token"]
    assert sorted(v["id"] for v in token) == ["symbolic/token/reverted_74fe6232c9",
                                              "symbolic/token/success_a9874cf75c",
                                              "symbolic/token/success_f86cc3ccd9"]
    for v in token:
        data = bytes.fromhex(v["input"]["message"]["call_data"][2:]).ljust(16, b"\0")
        to, amount = int.from_bytes(data[:8], "little"), int.from_bytes(data[8:16], "little")
        caller = int(v["input"]["message"]["caller"], 16)
        storage = {int(k, 16): int(x, 16)
                   for k, x in v["input"]["pre_state"]["contracts"]["0x200"]["storage"].items()}
        result = v["expected"]["result"]
        if v["id"].split("/")[2].startswith("reverted"):    # the refused transfer
            assert storage.get(caller, 0) < amount and result["state_changes"] == []
        else:                                               # a transfer: a new recipient slot or not
            assert storage.get(caller, 0) >= amount and len(result["events"]) == 1
            new_slot = "new slot" in v["description"]
            assert (storage.get(to, 0) == 0 and to != caller) == new_slot
            assert result["usage"]["storage_new_slots"] == (1 if new_slot else 0)


def test_a_stale_or_missing_entry_is_explored_again_and_the_rest_read(tmp_path, monkeypatch):
    cache = tmp_path / "symbolic_inputs.json"
    cache.write_text((ROOT / "conformance" / "symbolic_inputs.json").read_text())
    doc = json.loads(cache.read_text())
    doc["examples"]["max"]["settings"]["max_calldata"] = 63         # explored under other bounds
    del doc["examples"]["reverter"]                                 # never explored
    cache.write_text(json.dumps(doc))
    explored = []
    monkeypatch.setattr(symbolic_source, "explore_example",
                        lambda ex: explored.append(ex.name) or {"settings": "new", "paths": []})
    entries, notes = symbolic_source.inputs(path=cache)
    assert explored == ["max", "reverter"] and notes and "max, reverter" in notes[0]
    assert entries["token"] == doc["examples"]["token"]
    assert json.loads(cache.read_text())["examples"]["max"] == {"settings": "new", "paths": []}
    explored.clear()
    symbolic_source.inputs(refresh=True, path=cache)
    assert explored == [e.name for e in symbolic_source.examples()]
