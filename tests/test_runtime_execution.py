"""Invocations through the runtime: ten stages, sandbox, nested calls, violations, records."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reference_vm import Context, Limits, Message, Policy, WorldState, Contract, execute
from rtwo_vm.runtime import InvalidInput, UnknownRecord
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.runtime.lifecycle import is_legal_path
from test_runtime_support import ROOT, VERSION, example, program, runtime

FULL_COMMIT = ["requested", "validated", "policy_bound", "sandbox_provisioned", "state_loaded",
               "executing", "executed", "accounted", "committed", "finalized"]
FULL_ROLLBACK = FULL_COMMIT[:8] + ["rolled_back", "finalized"]


@pytest.fixture
def rt(tmp_path):
    r = runtime(tmp_path / "vm.db")
    yield r
    r.close()


def _stages(rt, context_id):
    return [e.stage for e in rt.contexts.history(context_id)]


def test_a_call_passes_all_ten_stages_and_commits_its_state_changes(rt):
    rt.deploy(example("counter"), 0x100, {0: 41})
    root_before = rt.state_root
    rec = rt.call(to=0x100, caller=0x1)
    cid = rec.context.context_id
    assert _stages(rt, cid) == FULL_COMMIT == [e.stage for e in rec.history]
    assert rt.contexts.get(cid).status == "finalized"
    assert rt.contract(0x100)["storage"] == {"0x0": "0x2a"}
    assert rt.state_root != root_before and rec.context.state_reference == root_before
    result = rt.results.for_context(cid)
    assert result.execution_status == "success" and result.output == "0x" + (42).to_bytes(8, "little").hex()
    assert result.state_changes == ({"address": "0x100", "key": "0x0", "before": "0x29", "after": "0x2a"},)
    # The recorded result is exactly the interpreter's, and holds no ids or times.
    direct = execute(WorldState({0x100: Contract(example("counter"), {0: 41})}), Message(0x100, 0x1),
                     version=VERSION)
    assert result.digest == direct.digest() and result.compared == direct.to_json()
    assert "ctx_" not in json.dumps(result.compared) and "2025" not in json.dumps(result.compared)
    accounting = rt.accounting.for_context(cid)
    assert (accounting.compute_units, accounting.memory_units, accounting.storage_units,
            accounting.fee) == (direct.usage.compute, direct.usage.memory_pages,
                                direct.usage.storage_units, direct.fee)
    sandbox = rt.sandboxes.for_context(cid)
    assert (sandbox.isolation_level, sandbox.storage_access_policy, sandbox.status) == (
        "standard", "read_write", "released")
    assert sandbox.compute_limit_reference == Limits().compute
    # Every transition, and the result, is an event in the context's stream.
    events = rt.events.list(stream=cid)
    assert [e.payload["stage"] for e in events if e.type == "lifecycle.transition"] == FULL_COMMIT
    assert events[-1].type == "result.recorded" and events[-1].payload["digest"] == result.digest


def test_successive_calls_see_the_committed_state(rt):
    rt.deploy(example("counter"), 0x100)
    outputs = [rt.call(to=0x100).result.output for _ in range(3)]
    assert [int.from_bytes(bytes.fromhex(o[2:]), "little") for o in outputs] == [1, 2, 3]


def test_a_reverted_call_rolls_back_but_is_charged(rt):
    rt.deploy(example("token"), 0x200, {0xA: 5})
    rec = rt.call(to=0x200, caller=0xB, call_data=bytes.fromhex("0c000000000000002d01000000000000"))
    assert rec.result.execution_status == "reverted" and [e.stage for e in rec.history] == FULL_ROLLBACK
    assert rec.accounting.status == "charged" and rec.accounting.fee > 0
    assert rec.sandbox.status == "released" and rec.violations == []
    assert rt.contract(0x200)["storage"] == {"0xa": "0x5"}


def test_nested_calls_become_child_contexts_with_their_own_sandboxes(rt):
    rt.deploy(example("proxy"), 0x100)
    rt.deploy(example("counter"), 0x101, {0: 41})
    rt.deploy(example("reverter"), 0x102)
    rec = rt.call(to=0x100, caller=0x1)
    counter, reverter = rec.children
    parent = rec.context.context_id
    for child in (counter, reverter):
        assert child.context.parent_context_id == parent and child.context.depth == 2
        assert child.sandbox.parent_sandbox_id == rec.sandbox.sandbox_id
        assert child.accounting.status == "included_in_parent"
        assert child.result.compared["callee"] == child.context.contract_id
    assert _stages(rt, counter.context.context_id) == FULL_COMMIT
    assert _stages(rt, reverter.context.context_id) == FULL_ROLLBACK
    assert counter.accounting.compute_units == rec.result.compared["calls"][0]["compute"]
    # Each callee's own accounting, written out by hand (counter: read + rewrite of an existing
    # slot on one page; reverter: a new slot on one page) with the fee of chapter 5.5.
    assert (counter.accounting.compute_units, counter.accounting.memory_units,
            counter.accounting.storage_units, counter.accounting.fee) == (195, 1, 5, 195 + 100 + 5 * 50)
    assert (reverter.accounting.compute_units, reverter.accounting.memory_units,
            reverter.accounting.storage_units, reverter.accounting.fee) == (542, 1, 20, 542 + 100 + 20 * 50)
    assert [c.context_id for c in rt.contexts.children(parent)] == [
        counter.context.context_id, reverter.context.context_id]
    # The reverted callee's write to slot 7 is undone; the counter's survives.
    assert rt.contract(0x102)["storage"] == {} and rt.contract(0x101)["storage"] == {"0x0": "0x2a"}


def test_a_succeeding_callee_of_a_failing_caller_is_rolled_back(rt):
    rt.deploy(program("call_then_trap"), 0x100)
    rt.deploy(example("counter"), 0x101)
    rec = rt.call(to=0x100)
    assert rec.result.error == "TRAP_EXECUTED"
    (child,) = rec.children
    assert child.result.execution_status == "success"
    assert [e.stage for e in child.history] == FULL_ROLLBACK
    assert rt.contract(0x101)["storage"] == {}


def test_call_depth_is_limited_and_the_refused_callee_is_recorded(rt):
    rt.deploy(program("recursive"), 0x100)
    rec = rt.call(to=0x100)
    assert rec.result.execution_status == "success"
    depth_limit = 64
    chain = rec.children
    assert len(chain) == depth_limit and chain[-1].context.depth == depth_limit + 1
    last = chain[-1]
    assert last.result.error == "CALL_DEPTH_EXCEEDED"
    assert [e.stage for e in last.history] == ["requested", "validated", "policy_bound",
                                                "rolled_back", "finalized"]
    assert last.sandbox.status == "refused"
    (violation,) = last.violations
    assert (violation.violation_type, violation.action_taken) == ("call_depth", "call_refused")
    # Parent links follow the chain: each callee's parent is the frame one level up.
    for upper, lower in zip(chain, chain[1:]):
        assert lower.context.parent_context_id == upper.context.context_id


@pytest.mark.parametrize("isolation,access,contract,code", [
    ("pure", None, "counter", "STORAGE_READ_FORBIDDEN"),
    ("view", None, "counter", "STORAGE_WRITE_FORBIDDEN"),
    ("view", None, "reader", None),
    ("pure", None, "proxy", "EXTERNAL_CALL_FORBIDDEN"),
    ("standard", "read_only", "counter", "STORAGE_WRITE_FORBIDDEN"),
    ("standard", "none", "reader", "STORAGE_READ_FORBIDDEN"),
    ("pure", None, "stop", None),
])
def test_isolation_levels_map_onto_the_bound_policy(rt, isolation, access, contract, code):
    rt.deploy(example(contract) if contract in ("counter", "proxy") else program(contract), 0x100)
    rec = rt.call(to=0x100, isolation_level=isolation, storage_access=access)
    assert rec.result.error == code
    assert rec.sandbox.isolation_level == isolation
    expected_access = access or catalog().isolation[isolation].max_storage_access
    assert rec.sandbox.storage_access_policy == expected_access
    if code is not None:
        assert rec.result.execution_status == "violation"
        assert [e.stage for e in rec.history] == ["requested", "validated", "rolled_back", "finalized"]
        assert rec.accounting.status == "not_charged" and rec.accounting.fee == 0


def test_requests_refused_before_recording_change_nothing(rt):
    rt.deploy(example("counter"), 0x100)
    before = (rt.contexts.count(), len(rt.events.list()))
    with pytest.raises(InvalidInput, match="exceeds isolation"):
        rt.call(to=0x100, isolation_level="view", storage_access="read_write")
    with pytest.raises(InvalidInput, match="unknown isolation"):
        rt.call(to=0x100, isolation_level="airtight")
    with pytest.raises(UnknownRecord):
        rt.call(to=0x100, policy_id="pol_missing")
    with pytest.raises(UnknownRecord):
        rt.call(to=0x100, vm_id="vm_missing")
    assert (rt.contexts.count(), len(rt.events.list())) == before


def test_spec_outcomes_before_execution_are_recorded_like_the_interpreter_reports_them(rt):
    rt.deploy(example("counter"), 0x100)
    rt.deploy(b"not a container at all", 0x105, validate_code=False)
    cases = [
        (dict(to=0x100, caller=-1), "INVALID_REQUEST", ["requested"]),
        (dict(to=0x999), "CONTRACT_NOT_FOUND", ["requested"]),
        (dict(to=0x105), "BAD_MAGIC", ["requested"]),
        (dict(to=0x100, limits=Limits(compute=1.5)), "INVALID_LIMITS",
         ["requested", "validated", "policy_bound"]),
    ]
    state = WorldState({0x100: Contract(example("counter")), 0x105: Contract(b"not a container at all")})
    for fields, code, reached in cases:
        rec = rt.call(**fields)
        assert rec.result.error == code
        assert [e.stage for e in rec.history] == reached + ["rolled_back", "finalized"]
        assert is_legal_path([e.stage for e in rec.history])
        message = Message(fields["to"], fields.get("caller", 0))
        direct = execute(state, message, Context(), Policy(), fields.get("limits", Limits()),
                         version=VERSION)
        assert rec.result.digest == direct.digest()
    assert rt.contexts.incomplete() == []
    # Listing filters on how contexts ended, not on their status (always the final stage).
    assert len(rt.contexts.list(status="rolled_back")) == 4 and rt.contexts.list(status="committed") == []
    assert [c.contract_id for c in rt.contexts.list(execution_status="invalid")] == ["0x105"]
    for bad in (dict(status="bogus"), dict(execution_status="bogus")):
        with pytest.raises(InvalidInput, match="bogus"):
            rt.contexts.list(**bad)


def _violation_triggers():
    """One way to raise each violation type, as (setup, request fields, callee?)."""
    def deploy(rt, **programs):
        for address, code in programs.items():
            rt.deploy(code, int(address[1:], 16), validate_code=False)

    forbid_arithmetic = lambda rt: rt.policies.create(forbidden_operations=["arithmetic"]).policy_id  # noqa: E731
    no_calls = lambda rt: rt.policies.create(external_call="forbidden").policy_id  # noqa: E731
    return {
        "invalid_code": (lambda rt: deploy(rt, x100=b"\x00" * 4), {}, False),
        "forbidden_instruction": (lambda rt: deploy(rt, x100=example("counter")),
                                  {"policy_id": forbid_arithmetic}, False),
        "time_access": (lambda rt: deploy(rt, x100=program("time")), {}, False),
        "randomness": (lambda rt: deploy(rt, x100=program("random")), {}, False),
        "external_call": (lambda rt: deploy(rt, x100=example("proxy")), {"policy_id": no_calls}, False),
        "storage_read": (lambda rt: deploy(rt, x100=program("reader")), {"isolation_level": "pure"}, False),
        "storage_write": (lambda rt: deploy(rt, x100=example("counter")), {"isolation_level": "view"}, False),
        "compute_limit": (lambda rt: deploy(rt, x100=example("counter")), {"limits": Limits(compute=10)}, False),
        "memory_limit": (lambda rt: deploy(rt, x100=example("counter")), {"limits": Limits(memory_pages=0)}, False),
        "storage_limit": (lambda rt: deploy(rt, x100=example("counter")), {"limits": Limits(storage_units=0)}, False),
        "call_depth": (lambda rt: deploy(rt, x100=program("recursive")), {}, True),
        "stack_fault": (lambda rt: deploy(rt, x100=program("underflow")), {}, False),
        "trap": (lambda rt: deploy(rt, x100=program("trap")), {}, False),
        "sandbox_limits": (lambda rt: deploy(rt, x100=program("stop")), {"limits": Limits(compute=-1)}, False),
        # From 1.1 (the version the runtime deploys under by default).
        "read_only_write": (lambda rt: deploy(rt, x100=program("staticcall_0x101"),
                                              x101=program("writer")), {}, True),
        "transient_storage": (lambda rt: deploy(rt, x100=program("transient_filler")), {}, False),
    }


TRIGGERS = _violation_triggers()


def test_every_violation_type_has_a_trigger():
    assert set(TRIGGERS) == set(catalog().violation_types)


@pytest.mark.parametrize("violation_type", sorted(TRIGGERS))
def test_every_violation_type_is_triggered_and_recorded(rt, violation_type):
    setup, fields, in_callee = TRIGGERS[violation_type]
    setup(rt)
    fields = {k: (v(rt) if callable(v) else v) for k, v in fields.items()}
    rec = rt.call(to=0x100, **fields)
    holder = rec.children[-1] if in_callee else rec
    (violation,) = holder.violations
    expected = catalog().violation_types[violation_type]
    assert violation.violation_type == violation_type and violation.code in expected.codes
    assert violation.severity == expected.severity
    assert violation.action_taken == (expected.callee_action if in_callee else expected.entry_action)
    stored = rt.violations.get(violation.violation_id)
    assert stored == violation and stored.context_id == holder.context.context_id
    assert rt.violations.list(violation_type=violation_type) == [violation]
    assert any(e.type == "violation.recorded" and e.payload["violationId"] == violation.violation_id
               for e in rt.events.list(stream=holder.context.context_id))
    if expected.entry_action == "execution_halted" and not in_callee:
        assert rec.sandbox.status == "halted" and rec.result.error_pc is not None
        assert violation.error_pc == rec.result.error_pc
        assert rec.accounting.status == "charged" and rec.result.state_changes == ()


def test_callee_violations_are_recorded_on_the_callee_context(rt):
    rt.deploy(program("call_0x103"), 0x100)
    rt.deploy(program("trap"), 0x103)
    rec = rt.call(to=0x100)
    assert rec.result.execution_status == "success" and rec.violations == []
    (callee,) = rec.children
    (violation,) = callee.violations
    assert (violation.violation_type, violation.action_taken) == ("trap", "call_halted")
    assert callee.sandbox.status == "halted"


def test_a_callee_that_does_not_exist_is_a_rejected_child_without_violation(rt):
    rt.deploy(program("call_0x103"), 0x100)
    (callee,) = rt.call(to=0x100).children
    assert callee.result.error == "CONTRACT_NOT_FOUND" and callee.violations == []
    assert [e.stage for e in callee.history] == ["requested", "rolled_back", "finalized"]
    assert callee.sandbox.status == "not_provisioned"


def test_violations_can_be_acknowledged_once(rt):
    rt.deploy(program("trap"), 0x100)
    (violation,) = rt.call(to=0x100).violations
    acked = rt.violations.acknowledge(violation.violation_id)
    assert acked.status == "acknowledged" and rt.violations.acknowledge(violation.violation_id) == acked
    kinds = [e.type for e in rt.events.list(stream=violation.context_id)]
    assert kinds.count("violation.acknowledged") == 1


def test_events_emitted_by_a_committed_call_are_in_its_result(rt):
    rt.deploy(program("logger"), 0x100)
    rec = rt.call(to=0x100)
    assert rec.result.emitted_events == ({"address": "0x100", "topics": ["0x7"], "data": "0x"},)
    assert rt.contract(0x100)["storage"] == {"0x3": "0x1"}


_DIGEST_SCRIPT = """
import sys
from rtwo_vm.runtime import Runtime
from reference_vm import assemble
rt = Runtime(sys.argv[1])
rt.deploy(assemble(open(sys.argv[2]).read(), "1.0"), 0x100)
print(rt.call(to=0x100, caller=0xA, call_data=bytes.fromhex("616263")).result.digest)
"""


def test_the_compared_result_hash_is_identical_across_runs_and_processes(tmp_path):
    hashing = ROOT / "examples" / "hashing.rasm"
    digests = set()
    for i, env in enumerate(({"PYTHONHASHSEED": "1"}, {"PYTHONHASHSEED": "99", "TZ": "Asia/Tokyo"})):
        out = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT, str(tmp_path / f"{i}.db"),
                              str(hashing)], capture_output=True, text=True, timeout=60,
                             env={**__import__("os").environ, **env})
        assert out.returncode == 0, out.stderr
        digests.add(out.stdout.strip())
    with runtime(tmp_path / "here.db") as rt:
        rt.deploy(example("hashing"), 0x100)
        digests.add(rt.call(to=0x100, caller=0xA, call_data=b"abc").result.digest)
    assert len(digests) == 1


def test_the_state_root_is_the_same_for_the_same_history(tmp_path):
    roots = []
    for name in ("a", "b"):
        with runtime(tmp_path / f"{name}.db", ids=None) as rt:  # random ids this time
            rt.deploy(example("counter"), 0x100, {0: 7})
            for _ in range(3):
                rt.call(to=0x100)
            roots.append(rt.state_root)
    assert roots[0] == roots[1]


def test_a_host_failure_while_loading_state_is_recorded_as_internal(rt, monkeypatch):
    rt.deploy(example("counter"), 0x100)
    monkeypatch.setattr(rt.store, "world_state", lambda: (_ for _ in ()).throw(OSError("disk")))
    rec = rt.call(to=0x100)
    assert (rec.result.execution_status, rec.result.error) == ("internal", "INTERNAL_ERROR")
    assert [e.stage for e in rec.history] == FULL_COMMIT[:4] + ["rolled_back", "finalized"]
    assert rec.violations == [] and rec.accounting.status == "not_charged"
    assert rec.sandbox.status == "released" and rt.contract(0x100)["storage"] == {}
    assert rt.contexts.incomplete() == []


def test_an_internal_error_of_the_interpreter_rolls_back_from_executing(rt, monkeypatch):
    from reference_vm.result import ExecutionResult, Usage
    from rtwo_vm.runtime import execution
    rt.deploy(example("counter"), 0x100)
    internal = ExecutionResult("internal", "INTERNAL_ERROR", None, b"", (), (), (), Usage())
    monkeypatch.setattr(execution, "executor", lambda mode: lambda *a, **k: internal)
    rec = rt.call(to=0x100)
    assert [e.stage for e in rec.history] == FULL_COMMIT[:6] + ["rolled_back", "finalized"]
    assert rec.sandbox.status == "halted" and rec.accounting.status == "not_charged"


def test_a_result_that_breaks_its_sandbox_is_not_recorded_as_is(rt, monkeypatch):
    from reference_vm.result import StateChange
    from rtwo_vm.runtime import execution
    rt.deploy(example("counter"), 0x100)
    from reference_vm import execute as real

    def forged(*args, **kwargs):  # a broken engine writing storage under read_only access
        result = real(*args, **kwargs)
        return result.__class__(**{**{f: getattr(result, f) for f in result.__dataclass_fields__},
                                   "state_changes": (StateChange(0x100, 0, 0, 1),)})
    monkeypatch.setattr(execution, "executor", lambda mode: forged)
    rec = rt.call(to=0x100, storage_access="read_only", isolation_level="view")
    assert rec.result.error == "STORAGE_WRITE_FORBIDDEN"  # refused statically: never ran
    rt.deploy(program("reader"), 0x101)
    rec = rt.call(to=0x101, isolation_level="view")
    assert rec.result.error == "INTERNAL_ERROR" and rt.contract(0x100)["storage"] == {}
