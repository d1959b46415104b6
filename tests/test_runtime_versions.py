"""Contracts deployed under a spec version run under it, on every execution mode (chapter 10.7).

Expectations are computed by hand from the spec data: ``push 0 / push 0 / push 3 / sha256 /
stop`` costs 3 PUSH1 (1 each) + SHA256 (30, plus one started 64-byte block: 6 under 1.0, 3
under 1.1, item P1) + one memory page (32) + STOP (0) = 71 under 1.0 and 68 under 1.1; its fee
is the compute plus one peak page at 100 (schedule.toml [fee]).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys

import pytest

from reference_vm import assemble, container
from rtwo_vm.runtime import CallRequest, InvalidInput, Runtime
from rtwo_vm.runtime.schema import MIGRATIONS, statements
from test_runtime_support import ROOT, native_runs_versions, runtime

SHA256_ONE_BLOCK = "push 0\npush 0\npush 3\nsha256\nstop"
COMPUTE = {"1.0": 71, "1.1": 68}
MODES = ["reference_interpreter", "compiled_engine"] + (
    ["native_engine"] if native_runs_versions() else [])
# PUSH1 1, CLZ (0x69, a 1.1 opcode), POP, STOP in a container of version 1.0.
CLZ_IN_A_1_0_CONTAINER = container.build(bytes.fromhex("1001691400"), b"", (1, 0))


@pytest.fixture
def rt(tmp_path):
    with runtime(tmp_path / "v.db") as r:
        yield r


def test_the_same_contract_costs_what_its_version_says_on_every_mode(rt):
    code = assemble(SHA256_ONE_BLOCK, "1.0")      # a 1.0 container: valid under both
    assert rt.deploy(code, 0x100, spec_version="1.0").spec_version == "1.0"
    assert rt.deploy(code, 0x101, spec_version="1.1").spec_version == "1.1"
    assert [rt.contract(a)["specVersion"] for a in (0x100, 0x101)] == ["1.0", "1.1"]
    for address, version in ((0x100, "1.0"), (0x101, "1.1")):
        digests = set()
        for mode in MODES:
            rec = rt.call(CallRequest(to=address, caller=1, execution_mode=mode))
            vm = rt.vms.get(rec.context.vm_id)
            assert (vm.execution_mode, vm.runtime_compatibility) == (mode, (version,))
            assert rec.result.execution_status == "success"
            assert (rec.accounting.compute_units, rec.accounting.fee) == (
                COMPUTE[version], COMPUTE[version] + 100)
            digests.add(rec.result.digest)
        assert len(digests) == 1, f"the modes disagree under {version}"


def test_a_1_1_instruction_deploys_only_under_1_1(rt):
    clz = assemble("push 1\nclz\npop\nstop", "1.1")       # a 1.1 container
    with pytest.raises(InvalidInput, match="UNSUPPORTED_VERSION"):
        rt.deploy(clz, 0x100, spec_version="1.0")
    with pytest.raises(InvalidInput, match="UNDEFINED_OPCODE"):
        rt.deploy(CLZ_IN_A_1_0_CONTAINER, 0x100, spec_version="1.0")
    rt.deploy(clz, 0x101, spec_version="1.1")
    for mode in MODES:
        rec = rt.call(CallRequest(to=0x101, execution_mode=mode))
        assert rec.result.execution_status == "success"
        # PUSH1 (1) + CLZ (2) + POP + STOP (0): the same under every mode.
        assert rec.accounting.compute_units == 1 + 2 + rt.instructions.get("POP").resource_cost_reference["baseCost"]
    # Deployed unchecked under 1.0, a 1.1 opcode is refused as invalid code when called.
    rt.deploy(CLZ_IN_A_1_0_CONTAINER, 0x102, spec_version="1.0", validate_code=False)
    rec = rt.call(to=0x102)
    assert (rec.result.execution_status, rec.result.error) == ("invalid", "UNDEFINED_OPCODE")
    assert [v.violation_type for v in rec.violations] == ["invalid_code"]


def test_a_call_runs_only_on_a_vm_of_its_contracts_version(rt):
    rt.deploy(assemble("stop", "1.0"), 0x100, spec_version="1.0")
    rt.call(to=0x100)                                  # registers the default VMs
    other = next(vm for vm in rt.vms.list() if vm.runtime_compatibility == ("1.1",))
    before = rt.contexts.count()
    with pytest.raises(InvalidInput, match="runs spec 1.1, the contract was deployed under 1.0"):
        rt.call(CallRequest(to=0x100, vm_id=other.vm_id))
    with pytest.raises(InvalidInput, match="unknown execution mode"):
        rt.call(CallRequest(to=0x100, execution_mode="quantum"))
    for vm in rt.vms.list():
        if vm.runtime_compatibility == ("1.0",) and vm.execution_mode == "compiled_engine":
            rt.vms.retire(vm.vm_id)
    with pytest.raises(InvalidInput, match="no active VM runs spec 1.0 in mode compiled_engine"):
        rt.call(CallRequest(to=0x100, execution_mode="compiled_engine"))
    assert rt.contexts.count() == before               # refused before anything is recorded
    with pytest.raises(InvalidInput, match="unknown spec version '9.9'"):
        rt.deploy(assemble("stop", "1.0"), 0x101, spec_version="9.9")


def test_new_deployments_take_the_newest_version_a_vm_runs(rt):
    assert rt.deploy(assemble("stop", "1.0"), 0x100).spec_version == "1.1"
    rt.call(to=0x100)
    for vm in rt.vms.list():
        if "1.1" in vm.runtime_compatibility:
            rt.vms.retire(vm.vm_id)
    assert rt.deploy(assemble("stop", "1.0"), 0x101).spec_version == "1.0"


def test_contracts_of_an_older_database_are_1_0s(tmp_path):
    db = tmp_path / "old.db"
    conn = sqlite3.connect(db)
    with conn:
        for script in MIGRATIONS[:5]:                  # the schema before spec versions
            for statement in statements(script):
                conn.execute(statement)
        conn.executemany("INSERT INTO meta VALUES (?, ?)", [
            ("initial_stage", "requested"), ("state_root", "0" * 64), ("context_seq", "0")])
        conn.execute("INSERT INTO contracts VALUES ('0x100', ?, ?, '2025-01-01T00:00:00.000000+00:00')",
                     (assemble(SHA256_ONE_BLOCK, "1.0"), "0" * 64))
        conn.execute("PRAGMA user_version = 5")
    conn.close()
    with Runtime(db) as rt:
        assert rt.contract(0x100)["specVersion"] == "1.0"
        rec = rt.call(to=0x100)
        assert rec.accounting.compute_units == COMPUTE["1.0"]
        assert rt.vms.get(rec.context.vm_id).runtime_compatibility == ("1.0",)


def _cli(*args, db):
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *args, "--db", str(db)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_cli_deploys_under_a_version_and_lists_versions_and_modes(tmp_path):
    db = tmp_path / "c.db"
    source = tmp_path / "hash.rasm"
    source.write_text(SHA256_ONE_BLOCK + "\n")
    done = _cli("deploy", str(source), "--spec-version", "1.0", "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["specVersion"] == "1.0"
    done = _cli("call", "0x100", "--mode", "compiled_engine", "--json", db=db)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["accounting"]["computeUnits"] == COMPUTE["1.0"]
    listed = json.loads(_cli("vm", "list", "--json", db=db).stdout)
    assert [(v["runtimeCompatibility"], v["executionMode"]) for v in listed] == [
        ([version], mode) for version in ("1.0", "1.1") for mode in MODES]
    table = _cli("vm", "list", db=db).stdout
    assert "runtimeCompatibility" in table and "compiled_engine" in table
    refused = _cli("deploy", str(source), "--spec-version", "2.7", db=db)
    assert refused.returncode == 2 and "2.7" in refused.stderr


def test_the_state_root_chains_a_deployments_version(tmp_path):
    # 10.6 (1.1): root = SHA-256(previous root's hex || canonical JSON of the change), the
    # change of a deployment under 1.1 holding "spec_version"; one under 1.0 keeps 1.0's form.
    import hashlib

    code = assemble(SHA256_ONE_BLOCK, "1.0")
    h = hashlib.sha256(code).hexdigest()
    roots = {}
    for version in ("1.0", "1.1"):
        with runtime(tmp_path / f"{version}.db") as r:
            roots[version] = r.deploy(code, 0x100, spec_version=version).state_root
    head = f'{{"code_hash":"{h}","deploy":"0x100",'      # members in sorted order (7.5.2)
    expected_1_0 = hashlib.sha256(("0" * 64 + head + '"storage":{}}').encode()).hexdigest()
    expected_1_1 = hashlib.sha256(("0" * 64 + head + '"spec_version":"1.1","storage":{}}').encode()).hexdigest()
    assert roots == {"1.0": expected_1_0, "1.1": expected_1_1}
