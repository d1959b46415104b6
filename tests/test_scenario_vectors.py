"""Scenario vectors (spec 11.9): how state carries from step to step, the definitions' author
expectations, the stored scenario corpus and its checks, and the reference adapter's answers to
scenario requests. Expectations are hand-computed or read from the spec tables."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

import spec
from conformance.adapter import Adapter
from conformance.constants import corpus_dir
from conformance.corpus.vector import content_hash
from conformance.scenario import store
from conformance.scenario.carry import next_state, run_steps
from conformance.scenario.case import ScenarioCase, Step
from conformance.corpus.expect import ExpectationFailed
from conformance.scenario.fill import fill_case, fill_input
from conformance.scenario.schema import authoritative_problems, vector_problems
from spec.files import FileRefused

KV = "push 0\ncalldataload\npush 8\ncalldataload\nsstore\nstop\n"   # storage[word0] = word1


def _words(*values: int) -> bytes:
    return b"".join(v.to_bytes(8, "little") for v in values)


def _stored(version: str) -> list[dict]:
    return store.load(store.folder(corpus_dir(version)), version)


def test_next_state_sets_and_removes_slots_in_order_and_leaves_its_input_alone():
    state = {"contracts": {"0x100": {"code": "0x00", "storage": {"0x1": "0x5", "0x2": "0x7"}}}}
    before = copy.deepcopy(state)
    result = {"state_changes": [{"address": "0x100", "key": "0x1", "before": "0x5", "after": "0x0"},
                                {"address": "0x100", "key": "0xa", "before": "0x0", "after": "0x3"}]}
    after = next_state(state, result)
    assert after == {"contracts": {"0x100": {"code": "0x00", "storage": {"0x2": "0x7", "0xa": "0x3"}}}}
    assert state == before
    with pytest.raises(ValueError, match="does not hold"):
        next_state(state, {"state_changes": [{"address": "0x200", "key": "0x1", "before": "0x0", "after": "0x1"}]})


def test_a_write_is_read_by_the_next_step_and_a_reverted_step_changes_nothing():
    case = ScenarioCase("scenario/t/kv", "kv", {0x100: KV},
                        (Step(call_data=_words(3, 9)), Step(call_data=_words(3, 0)),
                         Step(call_data=_words(4, 1), limits={"compute": 1}, expect="COMPUTE_LIMIT_EXCEEDED")),
                        expect_storage={0x100: {3: 0, 4: 0}})
    vector = fill_case(case, "1.0")
    steps = vector["expected"]["steps"]
    assert [s["result"]["state_changes"] for s in steps] == [
        [{"address": "0x100", "key": "0x3", "before": "0x0", "after": "0x9"}],
        [{"address": "0x100", "key": "0x3", "before": "0x9", "after": "0x0"}], []]
    assert vector["expected"]["post_state"]["contracts"]["0x100"]["storage"] == {}
    assert vector["tags"]["outcomes"] == ["success", "success", "COMPUTE_LIMIT_EXCEEDED"]
    assert "11.9" in vector["tags"]["sections"] and vector["_meta"]["spec_version"] == "1.0"


def test_a_definition_whose_author_expectations_fail_does_not_fill():
    wrong_outcome = ScenarioCase("scenario/t/a", "a", {0x100: KV}, (Step(call_data=_words(1, 1), expect="reverted"),))
    wrong_slot = ScenarioCase("scenario/t/b", "b", {0x100: KV}, (Step(call_data=_words(1, 1)),),
                              expect_storage={0x100: {1: 2}})
    wrong_output = ScenarioCase("scenario/t/c", "c", {0x100: KV}, (Step(output=b"\x01"),))
    for case, words in ((wrong_outcome, "expected reverted"), (wrong_slot, "expected slot 0x1 of 0x100 = 0x2, the reference gives 0x1"),
                        (wrong_output, "expected output 0x01")):
        with pytest.raises(ExpectationFailed, match=words):
            fill_case(case, "1.0")


@pytest.mark.parametrize("version", spec.names())
def test_the_stored_scenario_corpus_is_what_the_definitions_fill_and_every_vector_checks(version):
    folder = store.folder(corpus_dir(version))
    assert store.differences(store.fill_all([version])[version], folder, version) == []
    vectors = _stored(version)
    assert len(vectors) >= 15 and all(not vector_problems(v, version) for v in vectors)
    assert all(not authoritative_problems(v) for v in vectors)
    # transient storage and upgrades are 1.1's; the 1.0 corpus has none of them
    groups = {v["id"].split("/")[1] for v in vectors}
    assert ({"transient", "upgrade"} <= groups) == (version != "1.0")
    assert {"state", "calls"} <= groups


def _tampered(vector: dict, change) -> dict:
    out = copy.deepcopy(vector)
    change(out)
    out["_meta"]["content_hash"] = content_hash(out)
    return out


def test_tampered_scenario_vectors_are_refused_each_for_its_reason():
    vector = next(v for v in _stored("1.1") if v["id"] == "scenario/upgrade/counter_1_0_to_1_1")
    assert vector_problems(vector, "1.1") == []
    first = vector["input"]["steps"][0]
    cases = {
        "versions may not decrease": lambda v: v["input"]["steps"].append(dict(first)),
        "post_state": lambda v: v["expected"]["post_state"]["contracts"]["0x100"]["storage"].update({"0x0": "0x5"}),
        "results for": lambda v: v["expected"]["steps"].pop(),
        "must have at most": lambda v: v["input"]["steps"].extend([v["input"]["steps"][-1]] * 64),
        "not a version": lambda v: v["input"]["steps"][0].update(spec_version="1.9"),
        "last step runs": lambda v: v["_meta"].update(spec_version="1.0"),
    }
    for words, change in cases.items():
        problems = vector_problems(_tampered(vector, change), "1.1")
        assert problems and any(w in problems[0] for w in words.split(" or ")), (words, problems)
    forged = copy.deepcopy(vector)
    forged["expected"]["steps"][0]["result"]["output"] = "0x02"
    assert vector_problems(forged, "1.1") == ["_meta/content_hash does not match the vector"]


def test_sha256_is_repriced_from_the_step_that_runs_1_1():
    vector = next(v for v in _stored("1.1") if v["id"] == "scenario/upgrade/sha256_repriced")
    first, second = (s["result"] for s in vector["expected"]["steps"])
    assert first["output"] == second["output"]
    old, new = spec.load("1.0").schedule["hash"], spec.load("1.1").schedule["hash"]
    blocks = math.ceil(64 / old["block_size"])
    assert first["usage"]["compute"] - second["usage"]["compute"] == (old["block_cost"] - new["block_cost"]) * blocks
    assert first["fee"] - second["fee"] == (old["block_cost"] - new["block_cost"]) * blocks * spec.load("1.1").schedule["fee"]["compute_price"]


def test_fill_input_takes_the_version_of_the_last_step_and_refuses_decreasing_ones():
    vector = next(v for v in _stored("1.1") if v["id"] == "scenario/upgrade/counter_1_0_to_1_1")
    again = fill_input(vector["input"], id=vector["id"], description=vector["description"], source="definition",
                       opcodes=vector["tags"]["opcodes"], categories=vector["tags"]["categories"])
    assert again["expected"] == vector["expected"] and again["_meta"]["spec_version"] == "1.1"
    backwards = copy.deepcopy(vector["input"])
    backwards["steps"].append({**backwards["steps"][0], "spec_version": "1.0"})
    with pytest.raises(ValueError, match="may not decrease"):
        fill_input(backwards, id="scenario/x/y", description="d", source="runtime")


def _adapter(versions: tuple[str, ...] | None = None) -> Adapter:
    adapter = Adapter()
    if versions:
        adapter.spec_versions = versions
    reply, _ = adapter.handle(json.dumps({"type": "hello", "protocol": "rtwo-conformance/1",
                                          "spec_version": (versions or spec.names())[-1]}).encode())
    assert reply is not None and reply["type"] == "hello" and "scenario" in reply["capabilities"]
    return adapter


def test_the_reference_adapter_answers_scenarios_and_refuses_what_is_not_one():
    vector = next(v for v in _stored("1.1") if v["id"] == "scenario/calls/reentrancy_lock")
    request = {"type": "scenario", "id": "q1", "input": vector["input"]}
    early, _ = Adapter().handle(json.dumps(request).encode())
    assert early["code"] == "BAD_MESSAGE" and "before hello" in early["message"]
    answer, _ = _adapter().handle(json.dumps(request).encode())
    assert answer["type"] == "scenario_result" and answer["id"] == "q1"
    assert [s["result"] for s in answer["steps"]] == [s["result"] for s in vector["expected"]["steps"]]
    assert answer["post_state"] == vector["expected"]["post_state"]
    bad = {"extra": {**request, "trace": False}, "empty id": {**request, "id": ""},
           "no steps": {**request, "input": {**vector["input"], "steps": []}},
           "decreasing": {**request, "input": {**vector["input"], "steps": [
               {**vector["input"]["steps"][0], "spec_version": "1.1"}, {**vector["input"]["steps"][0], "spec_version": "1.0"}]}},
           "pure level, storage written": {**request, "input": {**vector["input"], "steps": [
               {**vector["input"]["steps"][0], "sandbox": {**vector["input"]["steps"][0]["sandbox"],
                                                           "isolation_level": "no_such_level"}}]}}}
    for name, message in bad.items():
        reply, go_on = _adapter().handle(json.dumps(message).encode())
        assert reply["type"] == "error" and reply["code"] == "BAD_MESSAGE" and go_on, (name, reply)
    only_old = _adapter(("1.0",))
    upgrade = next(v for v in _stored("1.1") if v["id"] == "scenario/upgrade/counter_1_0_to_1_1")
    reply, _ = only_old.handle(json.dumps({**request, "input": upgrade["input"]}).encode())
    assert reply["code"] == "UNSUPPORTED_INPUT" and "spec 1.1" in reply["message"]


def test_a_scenario_folder_from_elsewhere_is_read_bounded_and_checked(tmp_path: Path):
    vectors = _stored("1.0")
    folder = tmp_path / "scenarios"
    store.write(vectors, folder, "1.0")
    assert [v["id"] for v in store.load(folder, "1.0")] == [v["id"] for v in vectors]
    assert store.load(tmp_path / "none", "1.0") == []
    with pytest.raises(FileRefused, match="in the corpus of 1.1"):
        store.load(folder, "1.1")
    manifest = json.loads((folder / "manifest.json").read_text())
    (folder / "manifest.json").write_text(json.dumps({**manifest, "files": [{"path": "../outside.jsonl"}]}))
    with pytest.raises(FileRefused, match="not a scenario manifest"):
        store.load(folder, "1.0")
    store.write(vectors, folder, "1.0")
    group = folder / "state.jsonl"
    lines = group.read_text().splitlines()
    tampered = json.loads(lines[0])
    tampered["expected"]["post_state"] = {"contracts": {}}
    group.write_text("\n".join([json.dumps(tampered)] + lines[1:]) + "\n")
    with pytest.raises(FileRefused, match="not a scenario vector"):
        store.load(folder, "1.0")
    group.write_text("[" * 100 + "\n")
    with pytest.raises(FileRefused, match="not JSON"):
        store.load(folder, "1.0")


def test_every_engine_runs_the_scenarios_as_the_reference():
    import compiled_vm
    for vector in _stored("1.1"):
        run = run_steps(vector["input"], compiled_vm.execute)
        assert list(run.results) == [s["result"] for s in vector["expected"]["steps"]], vector["id"]
        assert run.post_state == vector["expected"]["post_state"]


def test_vectors_check_judges_the_scenario_folder(tmp_path: Path, capsys):
    from rtwo_vm.commands.vectors import _check_scenarios
    store.write(_stored("1.0"), store.folder(tmp_path), "1.0")
    assert _check_scenarios(tmp_path, "1.0") == 0
    assert "15 scenario vectors, 56 steps: valid" in capsys.readouterr().out
    group = store.folder(tmp_path) / "calls.jsonl"
    group.write_text(group.read_text().replace('"0x1"', '"0x01"', 1))
    assert _check_scenarios(tmp_path, "1.0") == 1
    assert "scenarios:" in capsys.readouterr().out
