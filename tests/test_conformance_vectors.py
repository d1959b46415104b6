"""The conformance corpus: strict schema, deterministic fill, committed corpus equal to a fresh
fill, coverage targets met, and every expected result consistent with the spec."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from conformance.corpus import store, coverage, fill as fill_mod
from conformance.constants import VECTORS_DIR
from conformance.corpus.schema import corpus_problems, schema_problems, vector_problems
from conformance.corpus.selection import SelectionError, compile_filter, load_known_failures, select
from conformance.corpus.vector import Case, fill_case

ROOT = Path(__file__).resolve().parent.parent
TABLE = spec.load()


@pytest.fixture(scope="module")
def vectors():
    return store.load()


@pytest.fixture(scope="module")
def fresh():
    return fill_mod.fill()


def test_committed_corpus_is_byte_identical_to_a_fresh_fill(fresh):
    rendered = store.render(fresh.vectors, fresh.manifest_extra)
    assert store.differences(rendered, VECTORS_DIR) == []


def test_a_second_fill_in_another_process_with_another_hash_seed_is_identical():
    env = {**os.environ, "PYTHONHASHSEED": "12345", "TZ": "XST+11"}
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "vectors", "fill", "--check"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stored corpus is identical" in done.stdout


def test_stored_corpus_matches_its_manifest_and_digest(vectors):
    assert store.problems(VECTORS_DIR, vectors) == []


def test_every_vector_passes_the_authoritative_schema_sample(vectors):
    # jsonschema itself on a spread sample (the whole corpus takes seconds; fastschema does
    # the whole corpus in test_stored_corpus_matches_its_manifest_and_digest).
    sample = vectors[::7]
    assert corpus_problems(sample, authoritative=True) == []


def _broken_variants(v):
    def mutate(fn):
        c = copy.deepcopy(v)
        fn(c)
        return c
    yield mutate(lambda c: c.update(surprise=1))
    yield mutate(lambda c: c.pop("tags"))
    yield mutate(lambda c: c["input"]["message"].update(extra="0x1"))
    yield mutate(lambda c: c["input"]["sandbox"].pop("isolation_level"))
    yield mutate(lambda c: c["expected"]["result"].pop("fee"))
    yield mutate(lambda c: c["expected"]["result"]["usage"].update(compute=-1))
    yield mutate(lambda c: c["expected"]["result"].update(output="0xabc"))
    yield mutate(lambda c: c["input"]["pre_state"]["contracts"].update({"0x01": {"code": "0x", "storage": {}}}))
    yield mutate(lambda c: c["tags"].update(source="handmade"))
    yield mutate(lambda c: c["_meta"].update(spec_version="2.0"))
    yield mutate(lambda c: c.update(id="Not An Id"))
    yield mutate(lambda c: c["tags"].update(opcodes=["ADD", "ADD"]))


def test_schema_rejects_unknown_and_missing_fields_and_both_validators_agree(vectors):
    v = vectors[0]
    assert vector_problems(v) == [] and vector_problems(v, authoritative=True) == []
    for broken in _broken_variants(v):
        fast, slow = vector_problems(broken), schema_problems("vector", broken, authoritative=True)
        assert fast and slow, broken


def _hostile_variants(v):
    """Values where jsonschema-rs and the compiled closures read a document differently."""
    def changed(path, value):
        c = copy.deepcopy(v)
        node = c
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
        return c
    limits = ("input", "sandbox", "limits", "compute")
    yield from (changed(limits, x) for x in (float("nan"), float("inf"), -float("inf"), 10**30, -10**30, 1e12,
                                              2**64, True, 1.5))
    yield from (changed(("input", "message", "to"), x) for x in ("0x100\n", "0x100\n\n", "0X100", "0x\u0661"))
    yield changed(("expected", "result", "output"), "0x\n")
    yield changed(("input", "\ud800"), 1)                       # a key that is not UTF-8
    yield changed(("tags", "opcodes"), {"ADD"})                  # a set: no JSON value


def test_jsonschema_rs_first_changes_no_verdict_and_no_problem_text(vectors):
    # fastschema.compile_schema: jsonschema-rs's acceptance, then the compiled closures.
    from conformance.corpus.fastschema import compile_schema
    from conformance.corpus.schema import execute_validator
    from conformance.protocol import execute_request
    both, closures = compile_schema(spec.schema("vector")), compile_schema(spec.schema("vector"), library=False)
    hostile = list(_hostile_variants(vectors[0]))
    documents = [*vectors[::11], *_broken_variants(vectors[0]), *hostile]
    for document in documents:
        assert both(document) == closures(document), document["id"]
    nan, newline = hostile[0], hostile[9]         # what jsonschema-rs refuses and Python's reading accepts
    assert closures(nan) == [] and closures(newline) == []
    assert schema_problems("vector", newline, authoritative=True) == []     # as jsonschema does
    execute = execute_validator()
    for document in documents:
        request = execute_request("r-1", document.get("input"), False)
        assert not execute(request) or closures(document), document["id"]
    assert execute(execute_request("r-1", vectors[0]["input"], "yes")) == ["/trace: expected boolean"]


def test_cross_reference_checks_catch_what_the_schema_cannot(vectors):
    v = copy.deepcopy(next(x for x in vectors if x["expected"]["result"]["error"] == "STACK_UNDERFLOW"))
    assert vector_problems(v) == []
    v["expected"]["error_stage"] = "validated"
    assert any("error_stage" in p for p in vector_problems(v))
    v = copy.deepcopy(vectors[3])
    v["description"] += " (edited)"
    assert any("content_hash" in p for p in vector_problems(v))
    v = copy.deepcopy(vectors[3])
    v["tags"]["opcodes"] = ["FROB"]
    assert any("FROB" in p for p in vector_problems(v))


def test_coverage_targets_met_by_the_corpus_and_by_the_hand_written_definitions_alone(vectors):
    full = coverage.measure(vectors)
    assert full.complete, (full.missing_opcodes, full.missing_codes, full.missing_boundaries)
    hand = coverage.measure(v for v in vectors if v["tags"]["source"] == "definition")
    assert hand.complete, (hand.missing_opcodes, hand.missing_codes, hand.missing_boundaries)
    assert set(full.target_codes) == set(TABLE.errors) - {"INTERNAL_ERROR"}


def test_every_source_contributes(vectors):
    sources = {v["tags"]["source"] for v in vectors}
    # fuzz: the promoted findings of conformance/fuzz/promoted.jsonl (docs/guides/fuzzing.md);
    # symbolic: every path of the examples (conformance/symbolic_inputs.json)
    assert sources == {"definition", "smt", "random", "fuzz", "symbolic"}, \
        "the SMT cache, the random, the fuzz or the symbolic source is missing"
    assert 2000 <= len(vectors) <= 6000


def test_expected_results_are_spec_consistent(vectors):
    limits = TABLE.limits
    for v in vectors:
        result, sandbox = v["expected"]["result"], v["input"]["sandbox"]["limits"]
        usage = result["usage"]
        assert result["status"] != "internal", v["id"]
        if all(limits["minimum"][d] <= sandbox[d] <= limits["maximum"][d] for d in sandbox):
            assert usage["compute"] <= sandbox["compute"], v["id"]
            assert usage["memory_pages"] <= sandbox["memory_pages"], v["id"]
            assert usage["storage_units"] <= sandbox["storage_units"], v["id"]
        if result["status"] in ("invalid", "rejected", "violation"):
            assert set(usage.values()) == {0} and result["fee"] == 0, v["id"]
        if result["status"] != "success":
            assert result["state_changes"] == [] and result["events"] == [], v["id"]


def test_ids_are_meaningful_and_grouped(vectors):
    groups = set(TABLE.instruction_types) | {"validation", "policy", "request", "smt", "random", "fuzz",
                                                "symbolic"}
    for v in vectors:
        group = v["id"].split("/")[0]
        assert group in groups, v["id"]
        if group in TABLE.instruction_types and v["tags"]["source"] == "definition":
            assert v["id"].split("/")[1] in TABLE.by_mnemonic, v["id"]


def test_boundary_vectors_really_sit_at_the_limit(vectors):
    by_id = {v["id"]: v for v in vectors}
    for mnemonic in ("ADD", "SSTORE", "MCOPY", "CALL"):
        group = TABLE.by_mnemonic[mnemonic].type
        below, at, above = (by_id[f"{group}/{mnemonic}/compute_{p}"]["expected"]["result"]
                            for p in ("limit-1", "limit", "limit+1"))
        assert below["status"] == at["status"] == "success"
        # CALL's last charge is its callee's: the callee is exhausted, not the caller.
        errors = [above["error"]] + [c["error"] for c in above["calls"]]
        assert "COMPUTE_LIMIT_EXCEEDED" in errors
        assert at["usage"]["compute"] == by_id[f"{group}/{mnemonic}/compute_limit"]["input"]["sandbox"]["limits"]["compute"]


def test_a_case_fills_to_a_valid_vector_with_provenance():
    v = fill_case(Case(id="arithmetic/ADD/example", description="example", code="push 1\npush 2\nadd\nstop\n",
                       opcodes=("ADD",)))
    assert vector_problems(v) == []
    assert v["_meta"]["spec_version"] == "1.0" and v["_meta"]["generator"].startswith("rtwo-vm vectors fill")
    assert v["expected"]["result"]["usage"]["compute"] == 3 and v["tags"]["sections"] == ["6.3"]


def test_filters_select_by_tags_and_globs(vectors):
    assert {v["id"].split("/")[1] for v in select(vectors, ["arithmetic/DIV*"])} == {"DIVU", "DIVS"}
    picked = select(vectors, ["opcode=SSTORE,outcome=STORAGE_LIMIT_EXCEEDED"])
    assert picked and all("SSTORE" in v["tags"]["opcodes"] for v in picked)
    union = select(vectors, ["boundary=call_depth", "call_outcome=CALL_DEPTH_EXCEEDED"])
    assert {v["id"] for v in union} >= {"call/CALL/depth_limit+1"}
    with pytest.raises(SelectionError):
        compile_filter("colour=blue")


def test_known_failure_lists_are_schema_checked(tmp_path):
    good = tmp_path / "vm.toml"
    good.write_text('version = 2\nspec_version = "1.0"\nimplementation = "my-vm"\nfingerprint = "0.4.*"\n'
                    '[[known_failure]]\nid = "arithmetic/DIVS/*"\nreason = "rounds toward -inf"\n')
    (known,) = load_known_failures([good])
    assert known.applies("my-vm", "arithmetic/DIVS/min__minus_one", ["./my-vm --adapter", "0.4.1"])
    assert not known.applies("other-vm", "arithmetic/DIVS/min__minus_one", ["./my-vm --adapter", "0.4.1"])
    # The name alone is not enough: another build (or an impostor) with the same name.
    assert not known.applies("my-vm", "arithmetic/DIVS/min__minus_one", ["./impostor", "1.0"])
    unprinted = tmp_path / "unprinted.toml"
    unprinted.write_text('version = 1\nspec_version = "1.0"\nimplementation = "my-vm"\nknown_failure = []\n')
    with pytest.raises(SelectionError, match="missing 'fingerprint'"):
        load_known_failures([unprinted])
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\nimplementation = "x"\nknown_failure = [{id = "a"}]\n')
    with pytest.raises(SelectionError):
        load_known_failures([bad])
    unversioned = tmp_path / "unversioned.toml"
    unversioned.write_text('spec_version = "1.0"\nimplementation = "x"\nfingerprint = "*"\nknown_failure = []\n')
    with pytest.raises(SelectionError) as raised:
        load_known_failures([unversioned])
    assert str(raised.value) == f"{unversioned}: (top): missing 'version'"
    shipped = sorted((ROOT / "conformance" / "known_failures").glob("*.toml"))
    assert shipped and load_known_failures(shipped) == []


def test_vectors_per_opcode_feeds_the_documentation(vectors):
    counts = store.vectors_per_opcode()
    assert set(counts) == set(TABLE.by_mnemonic) and min(counts.values()) >= 5


def test_manifest_names_every_file_with_counts():
    manifest = json.loads((VECTORS_DIR / "manifest.json").read_text())
    assert schema_problems("vector-manifest", manifest, authoritative=True) == []
    assert sum(f["vectors"] for f in manifest["files"]) == manifest["vector_count"]
    assert manifest["smt_inputs"] is not None and manifest["smt_inputs"]["branches"] > 0


def _fill_with(monkeypatch, *extra):
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter(extra))
    return fill_mod.fill(["definition"])


@pytest.mark.parametrize("typo,message", [
    ({"opcodes": ("SSTOR",)}, "storage/SSTORE/typo: unknown opcode 'SSTOR' (did you mean 'SSTORE'?) in opcodes"),
    ({"code": "push 1\npush 0\nsstor\nstop\n"}, "storage/SSTORE/typo: assembly: line 3: unknown mnemonic 'sstor'"),
    ({"limits": {"computer": 5}}, "storage/SSTORE/typo: unknown limit 'computer' (did you mean 'compute'?)"),
    ({"policy": {"storage_acess": "read_only"}}, "storage/SSTORE/typo: unknown policy field 'storage_acess'"),
])
def test_a_bad_definition_is_named_by_its_vector_id(monkeypatch, typo, message):
    fields = {"code": "push 1\npush 0\nsstore\nstop\n", "opcodes": ("SSTORE",), **typo}
    bad = Case(id="storage/SSTORE/typo", description="a definition with a typo", **fields)
    with pytest.raises(ValueError) as raised:
        _fill_with(monkeypatch, bad)
    assert str(raised.value).startswith(message), str(raised.value)


def test_cli_fill_reports_a_bad_definition_on_one_line(monkeypatch, capsys):
    from rtwo_vm import cli
    bad = Case(id="storage/SSTORE/typo", description="typo", code="push 1\npush 0\nsstore\nstop\n",
               opcodes=("SSTOR",))
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter([bad]))
    assert cli.main(["vectors", "fill", "--check", "--source", "definition"]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == ["rtwo-vm: error: storage/SSTORE/typo: unknown opcode 'SSTOR' "
                                        "(did you mean 'SSTORE'?) in opcodes"]


def test_a_divergence_in_the_summary_object_says_so():
    from conformance.run.tracediff import first_divergence, reference_trace
    v = fill_case(Case(id="arithmetic/ADD/t", description="t", code="push 1\npush 2\nadd\nstop\n",
                       opcodes=("ADD",)))
    expected = reference_trace(v["input"])
    actual = copy.deepcopy(expected)
    actual[-1]["status"] = "fault"
    d = first_divergence(expected, actual)
    assert d.summary and str(d).startswith("first divergence in the final summary object (after 4 steps, "
                                           "the last STOP at pc "), str(d)
    assert "status: expected 'success', got 'fault'" in str(d)
    step = first_divergence(expected, [{**expected[0], "computeUsed": 9}] + expected[1:])
    assert not step.summary and str(step).startswith("first divergence at step 0 (pc ")

