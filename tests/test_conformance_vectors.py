"""The conformance corpora: strict schema, deterministic fill, each version's committed corpus
equal to a fresh fill, coverage targets met per version, and every expected result consistent
with its version's spec. (Versions across each other: tests/test_conformance_versions.py.)"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import spec
from conformance.corpus import store, coverage, fill as fill_mod
from conformance.constants import corpus_dir
from conformance.corpus.schema import corpus_problems, schema_problems, vector_problems
from conformance.corpus.selection import SelectionError, compile_filter, load_known_failures, select
from conformance.corpus.vector import Case, fill_case

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = spec.names()
TABLE = spec.load(VERSIONS[0])


@pytest.fixture(scope="module")
def corpora():
    return {v: store.load(corpus_dir(v)) for v in VERSIONS}


@pytest.fixture(scope="module")
def vectors(corpora):
    return corpora[VERSIONS[0]]


@pytest.fixture(scope="module")
def fresh():
    return fill_mod.fill()


@pytest.mark.parametrize("version", VERSIONS)
def test_committed_corpus_is_byte_identical_to_a_fresh_fill(fresh, version):
    corpus = fresh.corpora[version]
    rendered = store.render(corpus.vectors, version, corpus.manifest_extra)
    assert store.differences(rendered, corpus_dir(version)) == []


def test_a_second_fill_in_another_process_with_another_hash_seed_is_identical():
    env = {**os.environ, "PYTHONHASHSEED": "12345", "TZ": "XST+11"}
    done = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "vectors", "fill", "--check", "--second-oracle", "quick"],
                          cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stored corpus is identical" in done.stdout
    assert "second oracle (quick): " in done.stdout and ": all agree" in done.stdout, done.stdout
    assert all(f"spec {v}: " in done.stdout for v in VERSIONS), done.stdout
    # 1.1's repricing of SHA256's blocks (item P1) changes the usage of 1.0's SHA256 vectors
    # filled for 1.1, and nothing else does: every such vector is explained by P1; one that
    # also runs CALL is explained by F1 and T1 too (they affect CALL, changelog D1).
    (line,) = [line for line in done.stdout.splitlines() if "explained by a diff item" in line]
    assert re.fullmatch(r"spec 1\.1: (\d+) vectors differ from the previous version's, each explained by a "
                        r"diff item \(1\.1/F1: (\d+), 1\.1/P1: \1, 1\.1/T1: \2\)", line), line


@pytest.mark.parametrize("version", VERSIONS)
def test_stored_corpus_matches_its_manifest_and_digest(corpora, version):
    assert store.problems(corpus_dir(version), corpora[version]) == []
    assert {v["_meta"]["spec_version"] for v in corpora[version]} == {version}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_vector_passes_the_authoritative_schema_sample(corpora, version):
    # jsonschema itself on a spread sample (the whole corpus takes seconds; fastschema does
    # the whole corpus in test_stored_corpus_matches_its_manifest_and_digest).
    sample = corpora[version][::7]
    assert corpus_problems(sample, version, authoritative=True) == []


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
    yield mutate(lambda c: c["_meta"].update(spec_version="v1"))
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
    assert closures(nan) == []
    # A word followed by a newline: refused by every validator, as 11.2.1's ECMA-262 patterns
    # require (changelog E1; Python's re alone would accept it).
    assert closures(newline) != [] and schema_problems("vector", newline, authoritative=True) != []
    execute = execute_validator()
    for document in documents:
        request = execute_request("r-1", document.get("input"), False)
        assert not execute(request) or closures(document), document["id"]
    assert execute(execute_request("r-1", vectors[0]["input"], "yes")) == ["/trace: expected boolean"]


def test_a_vector_of_a_version_the_spec_does_not_define_is_invalid(corpora):
    v = copy.deepcopy(corpora[VERSIONS[-1]][0])
    v["_meta"]["spec_version"] = "9.9"              # the pattern of a version: only the loader can tell
    assert schema_problems("vector", v, authoritative=True) == []
    assert vector_problems(v) == [f"_meta/spec_version: '9.9' is not a version of spec/versions.toml "
                                  f"({', '.join(VERSIONS)})"]
    # In the corpus of another version, a vector is a problem too (chapter 11.3).
    other = corpora[VERSIONS[0]][0]
    assert corpus_problems([other], VERSIONS[-1]) == [
        f"{other['id']}: _meta/spec_version: {VERSIONS[0]}, in the corpus of spec {VERSIONS[-1]}"]


def test_a_1_1_mnemonic_is_unknown_in_a_1_0_vector(corpora):
    new = next(v for v in corpora["1.1"] if v["id"] == "bitwise/CLZ/zero")
    as_1_0 = copy.deepcopy(new)
    as_1_0["_meta"]["spec_version"] = "1.0"
    assert "tags/opcodes: unknown mnemonic CLZ" in vector_problems(as_1_0)


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


@pytest.mark.parametrize("version", VERSIONS)
def test_coverage_targets_met_by_the_corpus_and_by_the_hand_written_definitions_alone(corpora, version):
    full = coverage.measure(corpora[version], version)
    assert full.complete, (full.missing_opcodes, full.missing_codes, full.missing_boundaries)
    hand = coverage.measure((v for v in corpora[version] if v["tags"]["source"] == "definition"), version)
    assert hand.complete, (hand.missing_opcodes, hand.missing_codes, hand.missing_boundaries)
    table = spec.load(version)
    assert set(full.target_codes) == set(table.errors) - {"INTERNAL_ERROR"}
    assert len(full.target_boundaries) == 3 * (3 + len(table.limits["machine"]) - 1 + 6)


def test_the_1_1_targets_are_1_1_s_own():
    # Every instruction, code and machine limit 1.1 adds is a target of its corpus, none of 1.0's.
    old, new = coverage.measure([], "1.0"), coverage.measure([], "1.1")
    assert set(new.missing_opcodes) - set(old.missing_opcodes) == {
        "MULHU", "MULHS", "CLZ", "CTZ", "POPCNT", "STATICCALL", "TLOAD", "TSTORE"}
    assert set(new.target_codes) - set(old.target_codes) == {"READ_ONLY_WRITE", "TRANSIENT_STORAGE_FULL"}
    assert set(new.target_boundaries) - set(old.target_boundaries) == {
        "transient_slots:limit-1", "transient_slots:limit", "transient_slots:limit+1"}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_source_contributes(corpora, version):
    sources = {v["tags"]["source"] for v in corpora[version]}
    # fuzz: the promoted findings of conformance/fuzz/promoted.jsonl (docs/guides/fuzzing.md);
    # symbolic: every path of the examples (conformance/symbolic_inputs.json)
    assert sources == {"definition", "smt", "random", "fuzz", "symbolic"}, \
        "the SMT cache, the random, the fuzz or the symbolic source is missing"
    assert 2000 <= len(corpora[version]) <= 6000


@pytest.mark.parametrize("version", VERSIONS)
def test_expected_results_are_spec_consistent(corpora, version):
    limits = spec.load(version).limits
    for v in corpora[version]:
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


@pytest.mark.parametrize("version", VERSIONS)
def test_ids_are_meaningful_and_grouped(corpora, version):
    table = spec.load(version)
    groups = set(table.instruction_types) | {"validation", "policy", "request", "smt", "random", "fuzz",
                                               "symbolic"}
    for v in corpora[version]:
        group = v["id"].split("/")[0]
        assert group in groups, v["id"]
        if group in table.instruction_types and v["tags"]["source"] == "definition":
            assert v["id"].split("/")[1] in table.by_mnemonic, v["id"]


@pytest.mark.parametrize("version,mnemonics", [("1.0", ("ADD", "SSTORE", "MCOPY", "CALL", "SHA256")),
                                               ("1.1", ("ADD", "SHA256", "MULHS", "TSTORE", "STATICCALL"))])
def test_boundary_vectors_really_sit_at_the_limit(corpora, version, mnemonics):
    by_id = {v["id"]: v for v in corpora[version]}
    for mnemonic in mnemonics:
        group = spec.load(version).by_mnemonic[mnemonic].type
        below, at, above = (by_id[f"{group}/{mnemonic}/compute_{p}"]["expected"]["result"]
                            for p in ("limit-1", "limit", "limit+1"))
        assert below["status"] == at["status"] == "success"
        # CALL's last charge is its callee's: the callee is exhausted, not the caller.
        errors = [above["error"]] + [c["error"] for c in above["calls"]]
        assert "COMPUTE_LIMIT_EXCEEDED" in errors
        assert at["usage"]["compute"] == by_id[f"{group}/{mnemonic}/compute_limit"]["input"]["sandbox"]["limits"]["compute"]


def test_a_case_fills_to_a_valid_vector_with_provenance():
    case = Case(id="arithmetic/ADD/example", description="example", code="push 1\npush 2\nadd\nstop\n",
                opcodes=("ADD",))
    for version in VERSIONS:
        v = fill_case(case, version)
        assert vector_problems(v) == []
        assert v["_meta"]["spec_version"] == version and v["_meta"]["generator"].startswith("rtwo-vm vectors fill")
        assert v["expected"]["result"]["usage"]["compute"] == 3 and v["tags"]["sections"] == ["6.3"]
        # A 1.0 definition: its container is 1.0's (header bytes 4 and 5) in every version's vector.
        assert v["input"]["pre_state"]["contracts"]["0x100"]["code"][10:14] == "0100"


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
    (known,) = load_known_failures([good], "1.0")
    assert load_known_failures([good], "1.1") == []        # a list names its version (11.6)
    assert known.applies("my-vm", "arithmetic/DIVS/min__minus_one", ["./my-vm --adapter", "0.4.1"])
    assert not known.applies("other-vm", "arithmetic/DIVS/min__minus_one", ["./my-vm --adapter", "0.4.1"])
    # The name alone is not enough: another build (or an impostor) with the same name.
    assert not known.applies("my-vm", "arithmetic/DIVS/min__minus_one", ["./impostor", "1.0"])
    unprinted = tmp_path / "unprinted.toml"
    unprinted.write_text('version = 1\nspec_version = "1.0"\nimplementation = "my-vm"\nknown_failure = []\n')
    with pytest.raises(SelectionError, match="missing 'fingerprint'"):
        load_known_failures([unprinted], "1.0")
    bad = tmp_path / "bad.toml"
    bad.write_text('version = 1\nimplementation = "x"\nknown_failure = [{id = "a"}]\n')
    with pytest.raises(SelectionError):
        load_known_failures([bad], "1.0")
    unversioned = tmp_path / "unversioned.toml"
    unversioned.write_text('spec_version = "1.0"\nimplementation = "x"\nfingerprint = "*"\nknown_failure = []\n')
    with pytest.raises(SelectionError) as raised:
        load_known_failures([unversioned], "1.0")
    assert str(raised.value) == f"{unversioned}: (top): missing 'version'"
    unknown = tmp_path / "unknown.toml"
    unknown.write_text('version = 1\nspec_version = "9.9"\nimplementation = "x"\nfingerprint = "*"\n'
                       'known_failure = []\n')
    with pytest.raises(SelectionError) as raised:
        load_known_failures([unknown], "1.0")
    assert str(raised.value) == (f"{unknown}: spec_version: '9.9' is not a version of spec/versions.toml "
                                 f"({', '.join(VERSIONS)})")
    shipped = sorted((ROOT / "conformance" / "known_failures").glob("*.toml"))
    assert shipped and all(load_known_failures(shipped, v) == [] for v in VERSIONS)


@pytest.mark.parametrize("version", VERSIONS)
def test_vectors_per_opcode_feeds_the_documentation(version):
    counts = store.vectors_per_opcode(corpus_dir(version))
    assert set(counts) == set(spec.load(version).by_mnemonic) and min(counts.values()) >= 5


@pytest.mark.parametrize("version", VERSIONS)
def test_manifest_names_every_file_with_counts(version):
    manifest = json.loads((corpus_dir(version) / "manifest.json").read_text())
    assert manifest["spec_version"] == version
    assert schema_problems("vector-manifest", manifest, authoritative=True) == []
    assert sum(f["vectors"] for f in manifest["files"]) == manifest["vector_count"]
    assert manifest["smt_inputs"] is not None and manifest["smt_inputs"]["branches"] > 0


def _fill_with(monkeypatch, *extra):
    monkeypatch.setattr(fill_mod, "all_cases", lambda: iter(extra))
    return fill_mod.fill(["definition"])


@pytest.mark.parametrize("typo,message", [
    ({"opcodes": ("SSTOR",)}, "storage/SSTORE/typo: unknown opcode 'SSTOR' (did you mean 'SSTORE'?) in opcodes"),
    ({"code": "push 1\npush 0\nsstor\nstop\n"},
     "storage/SSTORE/typo: assembly (1.0): line 3: unknown mnemonic 'sstor'"),
    ({"code": "push 1\nclz\nstop\n"}, "storage/SSTORE/typo: assembly (1.0): line 2: unknown mnemonic 'clz'"),
    ({"since": "1.7"}, "storage/SSTORE/typo: unknown version in since '1.7' (did you mean '1.1'?)"),
    ({"since": "1.1", "until": "1.0"}, "storage/SSTORE/typo: until 1.0 is before since 1.1"),
    ({"since": "1.0", "container": "1.1"},
     "storage/SSTORE/typo: container version 1.1 is after since 1.0: a version runs no newer container"),
    ({"limits": {"computer": 5}}, "storage/SSTORE/typo: unknown limit 'computer' (did you mean 'compute'?)"),
    ({"policy": {"storage_acess": "read_only"}}, "storage/SSTORE/typo: unknown policy field 'storage_acess'"),
])
def test_a_bad_definition_is_named_by_its_vector_id(monkeypatch, typo, message):
    fields = {"code": "push 1\npush 0\nsstore\nstop\n", "opcodes": ("SSTORE",), **typo}
    bad = Case(id="storage/SSTORE/typo", description="a definition with a typo", **fields)
    with pytest.raises(ValueError) as raised:
        _fill_with(monkeypatch, bad)
    assert str(raised.value).startswith(message), str(raised.value)


def test_a_definition_is_filled_for_the_versions_it_declares(monkeypatch):
    code = "push 1\npush 2\nadd\nstop\n"
    both = Case(id="arithmetic/ADD/both", description="both", code=code, opcodes=("ADD",))
    first = Case(id="arithmetic/ADD/first", description="first", code=code, opcodes=("ADD",), until="1.0")
    later = Case(id="arithmetic/ADD/later", description="later", code=code, opcodes=("ADD",), since="1.1")
    filled = _fill_with(monkeypatch, both, first, later)
    assert {v: [x["id"] for x in c.vectors] for v, c in filled.corpora.items()} == {
        "1.0": ["arithmetic/ADD/both", "arithmetic/ADD/first"], "1.1": ["arithmetic/ADD/both", "arithmetic/ADD/later"]}
    by = {(v, x["id"]): x for v, c in filled.corpora.items() for x in c.vectors}
    # One definition, one input in both versions (its 1.0 container); a 1.1 one is a 1.1 container.
    assert by[("1.0", "arithmetic/ADD/both")]["input"] == by[("1.1", "arithmetic/ADD/both")]["input"]
    assert by[("1.1", "arithmetic/ADD/later")]["input"]["pre_state"]["contracts"]["0x100"]["code"][10:14] == "0101"


def test_two_definitions_of_one_id_may_not_share_a_version(monkeypatch):
    code = "push 1\nstop\n"
    one = Case(id="stack/PUSH1/twice", description="a", code=code, opcodes=("PUSH1",))
    two = Case(id="stack/PUSH1/twice", description="b", code=code, opcodes=("PUSH1",), since="1.1")
    with pytest.raises(ValueError, match="stack/PUSH1/twice: duplicate vector id in spec 1.1"):
        _fill_with(monkeypatch, one, two)
    alone = Case(id="stack/PUSH1/twice", description="a", code=code, opcodes=("PUSH1",), until="1.0")
    filled = _fill_with(monkeypatch, alone, two)
    assert [x["description"] for x in filled.corpora["1.0"].vectors] == ["a"]
    assert [x["description"] for x in filled.corpora["1.1"].vectors] == ["b"]


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
                       opcodes=("ADD",)), "1.0")
    expected = reference_trace(v["input"], "1.0")
    actual = copy.deepcopy(expected)
    actual[-1]["status"] = "fault"
    d = first_divergence(expected, actual)
    assert d.summary and str(d).startswith("first divergence in the final summary object (after 4 steps, "
                                           "the last STOP at pc "), str(d)
    assert "status: expected 'success', got 'fault'" in str(d)
    step = first_divergence(expected, [{**expected[0], "computeUsed": 9}] + expected[1:])
    assert not step.summary and str(step).startswith("first divergence at step 0 (pc ")

