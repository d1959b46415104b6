"""VM Readiness Service and Runtime Instruction Registry: statuses computed from real checks."""

from __future__ import annotations

import json
import types

import pytest

import spec
from rtwo_vm.runtime import readiness as readiness_mod
from rtwo_vm.runtime import tools
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.readiness import overall
from rtwo_vm.runtime.registry import RuntimeInstructionRegistry
from rtwo_vm.runtime.tools import Probe
from test_runtime_support import DEFAULT_VMS, VERSION, example, runtime


@pytest.fixture
def rt(tmp_path):
    r = runtime(tmp_path / "r.db")
    yield r
    r.close()


def test_every_check_runs_and_readiness_follows_from_their_statuses(rt):
    report = rt.readiness.run()
    names = [c.name for c in report.checks]
    assert names == list(rt.readiness.check_names)
    for check in report.checks:
        assert check.status in catalog().values("check_status") and check.evidence
    assert report.readiness == overall([c.status for c in report.checks])
    by_name = {c.name: c for c in report.checks}
    assert by_name["instruction_coverage"].status == "passed"
    assert f"{len(spec.load(VERSION).instructions)}/{len(spec.load(VERSION).instructions)}" in by_name["instruction_coverage"].evidence
    assert by_name["examples"].status == "passed" and "example calls" in by_name["examples"].evidence
    assert by_name["spec_data"].status == "passed" and by_name["lifecycle"].status == "passed"
    assert json.loads(json.dumps(report.to_json()))["readiness"] == report.readiness


def test_database_evidence_is_measured_not_assumed(rt):
    first = rt.readiness.run(only=["database"]).checks[0]
    assert first.status == "passed" and "0 contexts" in first.evidence
    rt.deploy(example("proxy"), 0x100)
    rt.call(to=0x100)
    second = rt.readiness.run(only=["database"]).checks[0]
    assert "3 contexts (1 entry), 0 incomplete" in second.evidence
    rt.store.conn.execute("DROP TRIGGER stage_history_is_append_only")
    rt.store.conn.execute("UPDATE stage_history SET stage = 'executing' WHERE seq = 9")
    broken = rt.readiness.run(only=["database"]).checks[0]
    assert broken.status == "failed" and "1 incomplete" in broken.evidence


def test_missing_tools_are_not_available_never_guessed(rt, monkeypatch, tmp_path):
    monkeypatch.setattr(tools, "smt_models", lambda version, bits=64: Probe(False, "proofs not installed"))
    monkeypatch.setattr(tools, "vectors_dir", lambda version: None)
    rt.readiness.examples_dir = tmp_path / "nowhere"
    report = rt.readiness.run(skip=["database"])
    statuses = {c.name: (c.status, c.evidence) for c in report.checks}
    assert statuses["smt_semantics"] == ("not_available",
                                         "1.0: proofs not installed; 1.1: proofs not installed")
    assert statuses["conformance_vectors"] == (
        "not_available", "1.0: conformance not installed; 1.1: conformance not installed")
    assert statuses["examples"][0] == "not_available"
    assert report.readiness == "partial"


def test_a_failing_check_makes_the_vm_not_ready(rt, monkeypatch):
    monkeypatch.setattr(readiness_mod, "self_check",
                        lambda mode, version: (version == "1.1", "missing ADD"))
    report = rt.readiness.run(only=["instruction_coverage", "lifecycle"])
    assert report.readiness == "not_ready"
    # No VM registered yet: every VM the registry registers by default is checked.
    evidence = report.checks[0].evidence
    assert evidence.startswith("reference_interpreter, spec 1.0: missing ADD; "
                               "compiled_engine, spec 1.0: missing ADD; ")
    assert evidence.count("missing ADD") == DEFAULT_VMS

    def explode():
        raise RuntimeError("boom")
    monkeypatch.setattr(rt.readiness, "_lifecycle", explode)
    crashed = rt.readiness.run(only=["lifecycle"]).checks[0]
    assert crashed.status == "failed" and "RuntimeError: boom" in crashed.evidence
    with pytest.raises(ValueError, match="unknown readiness check"):
        rt.readiness.run(only=["vibes"])


def _vector(vid, opcodes, result):
    return {"id": vid, "tags": {"opcodes": opcodes}, "input": {"vid": vid},
            "expected": {"result": result}}


def test_conformance_vectors_are_counted_and_replayed(rt, monkeypatch, tmp_path):
    (tmp_path / "vectors").mkdir()
    lines = [_vector("v1", ["ADD", "STOP"], {"ok": 1}), _vector("v2", ["ADD"], {"ok": 2})]
    (tmp_path / "vectors" / "a.jsonl").write_text("\n".join(json.dumps(v) for v in lines) + "\n")
    (tmp_path / "vectors" / "manifest.json").write_text(json.dumps({"files": [{"path": "a.jsonl"}]}))
    monkeypatch.setattr(tools, "vectors_dir", lambda version: tmp_path / "vectors")

    class Result:
        def __init__(self, doc):
            self.doc = doc

        def to_json(self):
            return self.doc
    fake = types.SimpleNamespace(run_reference=lambda vector_input, version: Result({"ok": 1}))
    real_import = tools._import
    monkeypatch.setattr(tools, "_import", lambda name: (fake, None) if name == "conformance.corpus.vector"
                        else real_import(name))
    probe = tools.conformance_vectors(VERSION)
    assert probe.value["ADD"] == 2 and probe.value["STOP"] == 1 and probe.value["SUB"] == 0
    report = {c.name: c for c in rt.readiness.run(only=["conformance_vectors", "conformance_results"]).checks}
    assert report["conformance_vectors"].status == "failed"  # 2 of 95 instructions tagged
    # Each version's evidence: 2 of 1.0's 95 instructions and of 1.1's 103 are tagged.
    assert report["conformance_vectors"].evidence.count("2 vectors") == 2
    assert "2/95 instructions of spec 1.0" in report["conformance_vectors"].evidence
    assert "2/103 instructions of spec 1.1" in report["conformance_vectors"].evidence
    assert report["conformance_results"].status == "failed"
    assert "1/2 vectors agree" in report["conformance_results"].evidence and "v2" in report["conformance_results"].evidence


def test_instruction_statuses_are_computed_from_what_exists(monkeypatch):
    monkeypatch.setattr(tools, "smt_models", lambda version, bits=64: Probe(True, "1 model", frozenset({"ADD", "SUB"})))
    counts = {m: 0 for m in spec.load(VERSION).by_mnemonic}
    counts.update(ADD=3, MUL=1)
    monkeypatch.setattr(tools, "conformance_vectors", lambda version: Probe(True, "4 vectors", counts))
    registry = RuntimeInstructionRegistry()
    by_id = {i.instruction_id: i for i in registry.list()}
    assert by_id["ADD"].status == "verified" and by_id["ADD"].conformance_vectors == 3
    assert by_id["SUB"].status == "implemented" and by_id["SUB"].smt_semantics is True
    assert by_id["MUL"].status == "tested" and by_id["MUL"].smt_semantics is False
    assert by_id["STOP"].status == "implemented" and all(i.implemented for i in by_id.values())
    assert registry.get(hex(spec.load(VERSION).by_mnemonic["ADD"].opcode)) == by_id["ADD"] == registry.get("add")
    assert by_id["ADD"].resource_cost_reference["baseCost"] == spec.load(VERSION).by_mnemonic["ADD"].cost
    monkeypatch.setattr(tools, "smt_models", lambda version, bits=64: Probe(False, "proofs not installed"))
    monkeypatch.setattr(tools, "conformance_vectors", lambda version: Probe(False, "no vectors"))
    unknown = {i.instruction_id: i for i in registry.list()}["ADD"]
    assert (unknown.smt_semantics, unknown.conformance_vectors, unknown.status) == (None, None, "implemented")
    assert registry.last_evidence["smt_semantics"] == "proofs not installed"


def test_the_readiness_rule():
    assert overall(["passed", "passed"]) == "ready"
    assert overall(["passed", "not_available"]) == "partial"
    assert overall(["not_available", "failed"]) == "not_ready"


def complete_report(status: str = "proved") -> dict:
    """A report as a complete `rtwo-vm prove` run writes it, every row with ``status``."""
    from proofs.report import FORMAT, fingerprint
    from proofs.runner import Options, expected_rows
    from proofs.versions import newest
    rows = [{"theorem": t, "opcode": o, "width": int(w) if w.isdigit() else w,
             "status": status if not t.startswith("agreement") else "agrees"}
            for t, o, w in sorted(expected_rows(Options(version=newest())))]
    return {"format": FORMAT, "fingerprint": fingerprint(),
            "scope": {"complete": True, "spec_version": newest()}, "results": rows}


def test_proof_results_come_from_a_complete_current_report(rt, tmp_path):
    report = tmp_path / "proofs-report.json"
    doc = complete_report()
    report.write_text(json.dumps(doc))
    rt.readiness.proofs_report = report
    n = len(doc["results"])
    check = rt.readiness.run(only=["proof_results"]).checks[0]
    assert check.status == "passed" and check.evidence.startswith(f"{n} results")
    assert "complete and current" in check.evidence
    doc["results"][0]["status"] = "counterexample"
    report.write_text(json.dumps(doc))
    check = rt.readiness.run(only=["proof_results"]).checks[0]
    assert check.status == "failed" and "counterexample 1" in check.evidence
    doc["results"][0]["status"] = "timeout"
    report.write_text(json.dumps(doc))
    check = rt.readiness.run(only=["proof_results"]).checks[0]
    assert check.status == "failed" and "1 undecided" in check.evidence
    report.write_text("{}")
    assert rt.readiness.run(only=["proof_results"]).checks[0].status == "not_available"


@pytest.mark.parametrize("spoil, why", [
    (lambda d: d["scope"].update(complete=False), "partial run"),
    (lambda d: d.update(fingerprint="0" * 64), "stale"),
    (lambda d: d["results"].pop(), "1 registered results missing"),
    (lambda d: d.update(format=1), "report format"),
])
def test_a_partial_stale_or_incomplete_report_is_refused(rt, tmp_path, spoil, why):
    report = tmp_path / "proofs-report.json"
    doc = complete_report()
    spoil(doc)
    report.write_text(json.dumps(doc))
    rt.readiness.proofs_report = report
    check = rt.readiness.run(only=["proof_results"]).checks[0]
    assert check.status == "failed" and "refused" in check.evidence and why in check.evidence


def test_without_a_data_directory_no_proof_report_is_read_not_even_the_working_directorys(
        rt, monkeypatch, tmp_path):
    """The legacy build/proofs-report.json under the working directory is never read: a
    runtime opened without a data directory says so; one opened with one reads its report."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build").mkdir()
    doc = complete_report()
    (tmp_path / "build" / "proofs-report.json").write_text(json.dumps(doc))
    missing = rt.readiness.run(only=["proof_results"]).checks[0]
    assert missing.status == "not_available"
    assert missing.evidence.startswith("no data directory given, so no proof report read")
    assert rt.readiness.evidence_from() == {"dataDir": None, "proofsReport": None}
    data = tmp_path / "data"
    data.mkdir()
    (data / "proofs-report.json").write_text(json.dumps(doc))
    with runtime(tmp_path / "d.db", data_dir=data) as given:
        check = given.readiness.run(only=["proof_results"]).checks[0]
        assert check.status == "passed"
        assert check.evidence.startswith(f"{len(doc['results'])} results in "
                                         f"{data / 'proofs-report.json'}: agrees ")
        assert given.readiness.evidence_from() == {
            "dataDir": str(data), "proofsReport": str(data / "proofs-report.json")}


def test_the_examples_check_finds_the_bundled_examples_from_any_directory(tmp_path):
    """From a directory without examples/ (and, in CI, a non-editable install), readiness
    runs the scenarios the package brings, not `not_available`."""
    import subprocess
    import sys
    proc = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "readiness", "--only", "examples",
                           "--db", str(tmp_path / "r.db"), "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    checks = {c["name"]: c for c in json.loads(proc.stdout)["checks"]}
    assert checks["examples"]["status"] == "passed", checks["examples"]
