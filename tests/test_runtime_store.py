"""The SQLite store: migrations, refusal of foreign or newer files, state chain, registries."""

from __future__ import annotations

import sqlite3

import pytest

import spec
from rtwo_vm.runtime import CallRequest, InvalidInput, Runtime, StoreError, UnknownRecord
from rtwo_vm.runtime.store import GENESIS_STATE, SCHEMA_VERSION, Store
from test_runtime_support import VERSION, StepClock, example, runtime


def test_a_new_database_gets_every_migration(tmp_path):
    store = Store(tmp_path / "new.db")
    assert store.schema_version == SCHEMA_VERSION
    assert store.meta("state_root") == GENESIS_STATE
    indexes = {r[0] for r in store.all("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "outbox_by_stream" in indexes
    assert store.one("PRAGMA journal_mode")[0] == "wal"
    store.close()


def test_an_older_database_is_migrated_in_place_and_keeps_its_records(tmp_path):
    path = tmp_path / "old.db"
    old = Store.__new__(Store)
    old.path = str(path)
    old.conn = sqlite3.connect(str(path), isolation_level=None)
    old.conn.row_factory = sqlite3.Row
    old.migrate(target=1)
    assert old.schema_version == 1
    old.conn.close()
    # A version-1 file can hold records (the runtime's writes need no index).
    with runtime(path, create=True) as rt:
        assert rt.store.schema_version == SCHEMA_VERSION
        rt.deploy(example("counter"), 0x100)
        rt.call(to=0x100)
    with runtime(path) as rt:
        assert rt.contract(0x100)["storage"] == {"0x0": "0x1"}


def test_newer_and_foreign_databases_are_refused(tmp_path):
    newer = tmp_path / "newer.db"
    Store(newer).close()
    conn = sqlite3.connect(str(newer))
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer"):
        Store(newer)
    foreign = tmp_path / "foreign.db"
    conn = sqlite3.connect(str(foreign))
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.close()
    with pytest.raises(StoreError, match="not an RTWO VM database"):
        Store(foreign)
    with pytest.raises(StoreError, match="no database"):
        Store(tmp_path / "absent.db", create=False)


def test_the_state_reference_chains_deploys_and_committed_changes(tmp_path):
    with runtime(tmp_path / "s.db") as rt:
        assert rt.state_root == GENESIS_STATE
        first = rt.deploy(example("counter"), 0x100).state_root
        assert rt.state_root == first != GENESIS_STATE
        rec = rt.call(to=0x100)
        assert rec.context.state_reference == first and rt.state_root != first
        after = rt.state_root
        refused = rt.call(to=0x100, isolation_level="pure")
        assert refused.context.state_reference == after and rt.state_root == after


def test_deploy_checks_its_input_and_assigns_free_addresses(tmp_path):
    with runtime(tmp_path / "d.db") as rt:
        assert rt.deploy(example("counter")).address == "0x100"
        assert rt.deploy(example("counter")).address == "0x101"
        assert rt.deploy(example("counter"), 0x2000).address == "0x2000"
        assert rt.deploy(example("counter")).address == "0x102"  # the lowest free, not max + 1
        for bad, match in ((dict(code=b""), "non-empty"), (dict(code=b"junk"), "not a valid container"),
                           (dict(code=example("counter"), address=-1), "64-bit"),
                           (dict(code=example("counter"), storage={1: 1 << 64}), "64-bit"),
                           (dict(code=example("counter"), address=0x100), "already holds")):
            with pytest.raises(InvalidInput, match=match):
                rt.deploy(**bad)
        assert len(rt.contracts()) == 4
        assert rt.deploy(example("counter"), storage={5: 0, 6: 7}).storage_slots == 1  # zero is absent
        with pytest.raises(UnknownRecord):
            rt.contract(0x9999)


def test_vm_registry_requires_a_passing_self_check(tmp_path, monkeypatch):
    from rtwo_vm.runtime import vms as registry
    with runtime(tmp_path / "v.db") as rt:
        vm = rt.vms.register("candidate")
        assert vm.status == "registered"
        with pytest.raises(InvalidInput, match="no active VM"):
            rt.lifecycle.start(CallRequest(to=1))
        monkeypatch.setattr(registry, "self_check", lambda mode, version: (False, "ADD: missing"))
        with pytest.raises(InvalidInput, match="failed its self-check: ADD: missing"):
            rt.vms.activate(vm.vm_id)
        monkeypatch.undo()
        active, evidence = rt.vms.activate(vm.vm_id)
        n = len(spec.load(VERSION).instructions)   # a VM registered for the newest version
        assert active.status == "active" and f"{n}/{n} instructions of spec {VERSION}" in evidence
        with pytest.raises(InvalidInput, match="executionMode must be one of"):
            rt.vms.register("jit", execution_mode="jit")
        changes = [e.payload for e in rt.events.list(type="vm.status_changed")]
        assert changes == [{"vmId": vm.vm_id, "from": "registered", "to": "active", "evidence": evidence}]


def _native_runs_versions() -> bool:
    """Whether native_vm's engine takes a spec version (it is versioned on its own branch)."""
    from rtwo_vm.runtime import engines
    return engines.engine("native_engine")[0] is not None


def test_the_first_call_registers_and_activates_one_vm_per_version_and_mode(tmp_path):
    with runtime(tmp_path / "f.db") as rt:
        deployed = rt.deploy(example("counter"), 0x100)
        assert rt.vms.list() == []    # deploying registers no VM
        assert deployed.spec_version == "1.1"   # the newest version
        rec = rt.call(to=0x100)
        vms = rt.vms.list()
    # Oldest version first, modes in sandbox.toml's order; native only once its engine
    # takes a version.
    modes = ["reference_interpreter", "compiled_engine"] + (
        ["native_engine"] if _native_runs_versions() else [])
    expected = [(f"rtwo-{mode.split('_')[0]}-{version}", mode, (version,), "active")
                for version in ("1.0", "1.1") for mode in modes]
    assert [(vm.vm_name, vm.execution_mode, vm.runtime_compatibility, vm.status)
            for vm in vms] == expected
    # The call ran on the reference interpreter's VM of the contract's version.
    (ran,) = [vm for vm in vms if vm.vm_id == rec.context.vm_id]
    assert (ran.vm_name, ran.runtime_compatibility) == ("rtwo-reference-1.1", ("1.1",))


def test_policies_are_content_addressed_and_validated(tmp_path):
    with runtime(tmp_path / "p.db") as rt:
        a = rt.policies.create(forbidden_operations=["SSTORE", "arithmetic", "SSTORE"])
        assert a.forbidden_operations == ("SSTORE", "arithmetic")
        assert rt.policies.create(forbidden_operations=["arithmetic", "SSTORE"]) == a
        assert len(rt.policies.list()) == 1
        for bad in (dict(time_access="sometimes"), dict(forbidden_operations=["FLY"]),
                    dict(allowed_operations=["stack", "nope"])):
            with pytest.raises(InvalidInput):
                rt.policies.create(**bad)
        rt.policies.retire(a.policy_id)
        with pytest.raises(InvalidInput, match="retired"):
            rt.policies.create(forbidden_operations=["SSTORE", "arithmetic"])
        with pytest.raises(InvalidInput, match="retired"):
            rt.call(to=0x100, policy_id=a.policy_id)
        refusals = rt.policies.check_code(rt.policies.create(time_access="allowed").policy_id,
                                          example("counter"), version=VERSION, isolation_level="view")
        assert [(r["mnemonic"], r["error"]) for r in refusals] == [("SSTORE", "STORAGE_WRITE_FORBIDDEN")]


def test_the_clock_must_be_timezone_aware():
    from datetime import datetime
    rt = Runtime(":memory:", clock=lambda: datetime(2025, 1, 1))
    with pytest.raises(ValueError, match="timezone-aware"):
        rt.vms.register("x")
    rt.close()
    with Runtime(":memory:", clock=StepClock()) as fine:
        assert fine.vms.register("x").created_at == "2025-01-01T00:00:00.000000+00:00"


def test_the_transition_table_follows_the_loaded_lifecycle_data(tmp_path):
    path = tmp_path / "sync.db"
    Store(path).close()
    conn = sqlite3.connect(str(path))
    conn.execute("DELETE FROM lifecycle_transitions WHERE from_stage = 'requested'")
    conn.commit()
    conn.close()
    with runtime(path) as rt:  # reopening restores what lifecycle.toml allows
        rt.deploy(example("counter"), 0x100)
        assert rt.call(to=0x100).context.status == "finalized"
