"""``rtwo-vm vectors strength``: mutants are generated from the syntax tree and applied only
in child processes (the checkout never changes), the prescreen kills what the corpus catches,
survivors are confirmed through the adapter protocol, a hanging mutant is stopped, and the
curated bugs are data. Runs are tiny: a handful of mutants on a filtered corpus."""

from __future__ import annotations

import ast
import hashlib
import json
import subprocess
import sys

import pytest

from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.strength import backend, mutants, report, run

CLI = [sys.executable, "-m", "rtwo_vm.cli", "vectors", "strength"]


def checkout_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(mutants.PACKAGE.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def test_generated_mutants_change_one_thing_and_keep_docstrings():
    found = list(mutants.generated("instructions/comparison.py"))
    original = (mutants.PACKAGE / "instructions/comparison.py").read_text()
    docstrings = {ast.get_docstring(n) for n in ast.walk(ast.parse(original))
                  if isinstance(n, (ast.FunctionDef, ast.Module)) and ast.get_docstring(n)}
    assert len({m.id for m in found}) == len(found) > 20
    kinds = {m.kind for m in found}
    assert {"compare", "constant", "statement"} <= kinds
    canonical = ast.unparse(ast.parse(original))
    for m in found:
        assert m.source != canonical and m.before != m.after
        compile(m.source, "mutant", "exec")
        tree = ast.parse(m.source)
        assert docstrings <= {ast.get_docstring(n) for n in ast.walk(tree)
                              if isinstance(n, (ast.FunctionDef, ast.Module)) and ast.get_docstring(n)}
    lts = [m for m in found if m.id.startswith("instructions/comparison.py:handlers.LTS:compare:")]
    assert [m.description for m in lts] == ["< -> <="]


def test_the_sample_is_deterministic():
    assert [m.id for m in mutants.select(("instructions/hash",), 5)] == \
           [m.id for m in mutants.select(("instructions/hash",), 5)]
    with pytest.raises(ValueError, match="no module"):
        mutants.select(("instructions/nothing",))


def test_curated_bugs_are_patches_with_descriptions():
    bugs = mutants.curated()
    assert len(bugs) >= 20 and len({b.id for b in bugs}) == len(bugs)
    for bug in bugs:
        assert bug.description and bug.source != (mutants.PACKAGE / bug.module).read_text()
        compile(bug.source, bug.id, "exec")
    # A bug of 1.1's instructions is run against the 1.1 corpus, never against 1.0's.
    newer = {b.id for b in bugs} - {b.id for b in mutants.curated("1.0")}
    assert {"curated:mulhs_second_operand_unsigned", "curated:tstore_in_read_only_frame"} <= newer
    assert {b.id for b in mutants.curated("1.1")} == {b.id for b in bugs}


def test_the_curated_bugs_of_1_1_are_killed_twice_by_its_corpus():
    from conformance.corpus.selection import select
    newer = [b for b in mutants.curated("1.1") if b.id not in {o.id for o in mutants.curated("1.0")}]
    vectors = select(store.load(corpus_dir("1.1")), ["arithmetic/MULHS/*", "bitwise/CTZ/*", "call/STATICCALL/*",
                                                     "transient/*"])
    run.set_plan(run.Plan(newer, vectors, "1.1", exhaustive=frozenset(b.id for b in newer), timeout=120.0))
    verdicts = list(backend.local_map(run.prescreen, range(len(newer)), 2))
    assert len(verdicts) == len(newer) >= 6
    for verdict in verdicts:
        assert verdict["status"] == "killed" and len(verdict["killers"]) >= 2, verdict


def test_an_equivalent_mutant_needs_a_reason(tmp_path):
    listing = tmp_path / "equivalent.toml"
    listing.write_text('[[mutant]]\nid = "x"\nreason = "  "\n')
    with pytest.raises(ValueError, match="a reason is required"):
        mutants.equivalent(listing)
    listing.write_text('[[mutant]]\nid = "x"\nreason = "the value is masked right after"\n')
    assert mutants.equivalent(listing) == {"x": "the value is masked right after"}


def test_curated_prescreen_on_a_filtered_corpus_leaves_the_checkout_alone(tmp_path):
    before = checkout_digest()
    out = tmp_path / "strength.json"
    proc = subprocess.run([*CLI, "--curated-only", "--no-confirm", "--workers", "2", "--filter", "arithmetic/SUB/*",
                           "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stderr  # the SUB vectors alone cannot kill every bug twice
    doc = json.loads(out.read_text())
    by_id = {m["id"]: m for m in doc["mutants"]}
    sub = by_id["curated:sub_operands_swapped"]
    assert sub["status"] == "killed" and len(sub["killers"]) >= 2
    assert all(k.startswith("arithmetic/SUB/") for k in sub["killers"])
    assert by_id["curated:log_topics_reversed"]["status"] == "survived"
    assert "WEAK log_topics_reversed" in proc.stdout and "ok   sub_operands_swapped" in proc.stdout
    assert checkout_digest() == before


def test_survivors_are_confirmed_through_the_adapter_and_get_a_killing_candidate(tmp_path):
    out = tmp_path / "strength.json"
    proc = subprocess.run([*CLI, "--no-curated", "--module", "instructions/comparison", "--limit", "4",
                           "--filter", "arithmetic/ADD/one__one", "--workers", "1", "--json", str(out)],
                          capture_output=True, text=True, timeout=300)
    doc = json.loads(out.read_text())
    survivors = [m for m in doc["mutants"] if m["status"] == "survived"]
    # ADD's vector runs no comparison: mutants that still import survive, confirmed by the runner.
    assert survivors and proc.returncode == 1
    assert all(m["how"] == "" for m in survivors)
    assert any(m["shortest"] for m in survivors)
    for m in survivors:
        if m["shortest"]:
            assert m["shortest"]["size"] > 0 and m["shortest"]["difference"]
    assert "survivors (" in proc.stdout and "--- reference_vm/instructions/comparison.py" in proc.stdout


def test_a_hanging_mutant_is_stopped_and_counted_as_killed():
    source = (mutants.PACKAGE / "instructions/control.py").read_text()
    find = '        raise Halt(False, b"")\n'
    assert source.count(find) == 1
    hang = mutants.Mutant("test:hang", "instructions/control.py", "curated", "STOP loops forever", 1, find,
                          "while True: pass", source.replace(find, "        while True:\n            pass\n"))
    vectors = [v for v in store.load(corpus_dir("1.0")) if v["id"] == "control/STOP/happy"]
    run.set_plan(run.Plan([hang], vectors, "1.0", timeout=1.0))
    (verdict,) = list(backend.local_map(run.prescreen, [0], 1))
    assert verdict["status"] == "killed" and verdict["how"] == "timeout"


def test_redundant_vectors_are_those_that_are_no_mutant_s_only_killer():
    verdicts = [{"status": "killed", "killers": ["a"]}, {"status": "killed", "killers": ["a", "b"]},
                {"status": "survived", "killers": []}, {"status": "killed", "killers": ["c"]}]
    assert report.redundant_vectors(verdicts, ["a", "b", "c", "d"]) == ["b", "d"]


def test_bad_options_are_refused():
    for args in (["--workers", "0"], ["--timeout", "nan"], ["--curated-only", "--no-curated"],
                 ["--backend", "mars"], ["--filter", "nothing/*"], ["--curated-only", "--mutant", "curated:nope"]):
        proc = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (args, proc.stderr)


def test_a_task_runs_in_a_fresh_interpreter_as_a_remote_backend_would():
    from conformance.strength import worker
    (bug,) = [b for b in mutants.curated() if b.id == "curated:sub_operands_swapped"]
    verdict = worker.run_subprocess(worker.task(bug, corpus_dir("1.0"), "1.0", ["arithmetic/SUB/*"], True, 60))
    assert verdict["status"] == "killed" and len(verdict["killers"]) >= 2


def test_a_timeout_kills_a_mutant_only_after_a_second_attempt_with_four_times_the_limit(tmp_path):
    # A limit no mutant can meet (1 ms, against about a second for the corpus): each runs again
    # with 4 ms, and only then is killed.
    out = tmp_path / "strength.json"
    subprocess.run([*CLI, "--no-curated", "--module", "words", "--limit", "2", "--no-confirm",
                    "--timeout", "0.001", "--json", str(out)],
                   capture_output=True, text=True, timeout=300)
    doc = json.loads(out.read_text())
    assert [(m["status"], m["how"], m["detail"]) for m in doc["mutants"]] == [
        ("killed", "timeout", "still running after 0.004 s (wall-clock safety net)")] * 2
