"""Resource accounting: exact usage and fee in three dimensions, at every limit boundary."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import spec
from reference_vm import Limits
from rtwo_vm.examples import requests_with_results
from rtwo_vm.runtime import CallRequest
from rtwo_vm.runtime.records import ResourceAccountingService
from test_runtime_support import EXAMPLES, VERSION, example, runtime

# dimension -> (usage field, code when the limit is one short)
DIMENSIONS = {
    "compute": ("compute", "COMPUTE_LIMIT_EXCEEDED"),
    "memory_pages": ("memory_pages", "MEMORY_LIMIT_EXCEEDED"),
    "storage_units": ("storage_units", "STORAGE_LIMIT_EXCEEDED"),
}


def _refused_before_sandbox(code: str | None) -> bool:
    """Whether an outcome code is raised before the sandbox checks the limits (chapter 8.3): such a
    call (the read-only counter call of ledger.toml) uses nothing, whatever its limits."""
    if code is None:
        return False
    order = [s["name"] for s in spec.load(VERSION).lifecycle["stage"]]
    return order.index(spec.load(VERSION).errors[code].stage) < order.index(
        spec.load(VERSION).errors["INVALID_LIMITS"].stage)


# Every example call the sandbox runs (a call its policy refuses never reaches the limits).
CALLS = [(req, res) for path in sorted(EXAMPLES.glob("*.toml"))
         for req, res in requests_with_results(path, VERSION) if not _refused_before_sandbox(res.error)]


def _run_in_runtime(request, limits: Limits):
    """Deploy the call's pre-state into a fresh runtime and run the call through it."""
    with runtime() as rt:
        for address, contract in request.state.contracts.items():
            rt.deploy(contract.code, address, dict(contract.storage))
        policy = rt.policies.create(time_access=request.policy.time_access,
                                    randomness=request.policy.randomness,
                                    external_call=request.policy.external_call)
        rec = rt.call(CallRequest(
            to=request.message.to, caller=request.message.caller,
            call_data=request.message.call_data, block_time=request.context.block_time,
            random_seed=request.context.random_seed, policy_id=policy.policy_id,
            storage_access=request.policy.storage_access, limits=limits))
        assert rt.contexts.incomplete() == []
        return rec, rt.accounting.for_context(rec.context.context_id)


def test_the_examples_are_all_here():
    assert len(CALLS) >= 8 and {r.scenario for r, _ in CALLS} >= {"counter", "token", "proxy"}


@pytest.mark.parametrize("dimension", sorted(DIMENSIONS))
@pytest.mark.parametrize("call", CALLS, ids=lambda c: f"{c[0].scenario}-{c[0].index}")
def test_each_example_at_limit_minus_one_limit_and_limit_plus_one(call, dimension):
    request, unlimited = call
    field, code = DIMENSIONS[dimension]
    used = getattr(unlimited.usage, field)
    for delta in (-1, 0, 1):
        limit = used + delta
        limits = Limits(**{**{d: getattr(request.limits, d) for d in Limits.DIMENSIONS},
                           dimension: limit})
        direct = request.run(limits)
        rec, accounting = _run_in_runtime(request, limits)
        assert rec.result.digest == direct.digest(), (request.scenario, dimension, delta)
        if delta >= 0:
            # At or above the usage the execution is the same as without the limit.
            assert direct.digest() == unlimited.digest()
            usage = unlimited.usage
            assert (accounting.compute_units, accounting.memory_units, accounting.storage_units,
                    accounting.storage_reads, accounting.storage_writes,
                    accounting.storage_new_slots) == (
                usage.compute, usage.memory_pages, usage.storage_units, usage.storage_reads,
                usage.storage_writes, usage.storage_new_slots)
            assert accounting.fee == unlimited.fee == ResourceAccountingService.fee(
                usage.compute, usage.memory_pages, usage.storage_units, VERSION)
            assert accounting.status == "charged"
        elif limit < 0:
            # Usage 0 in this dimension: one short is a negative limit, refused by the sandbox.
            assert rec.result.error == "INVALID_LIMITS"
            assert rec.sandbox.status == "refused" and accounting.status == "not_charged"
            assert [v.violation_type for v in rec.violations] == ["sandbox_limits"]
        else:
            # One short halts exactly where the last unit would have been charged: in the
            # entry frame, or in a callee whose CALL then fails while the caller goes on.
            assert getattr(direct.usage, field) <= limit
            assert accounting.fee == direct.fee and accounting.status == "charged"
            holder = next(r for r in [rec, *_descendants(rec)] if r.result.error == code)
            (violation,) = holder.violations
            assert violation.code == code and violation.error_pc == holder.result.error_pc
            assert holder.result.error_pc is not None and holder.sandbox.status == "halted"
            if holder is rec:
                assert rec.result.execution_status == "exhausted"
                assert rec.result.state_changes == () and rec.result.emitted_events == ()
                assert violation.action_taken == "execution_halted"
            else:
                assert violation.action_taken == "call_halted"
                assert holder.context.status == "finalized"
                assert [e.stage for e in holder.history][-2] == "rolled_back"


def _descendants(rec):
    for child in rec.children:
        yield child
        yield from _descendants(child)

def test_fee_formula_uses_the_schedule_prices_in_integers():
    prices = spec.load(VERSION).schedule["fee"]
    fee = ResourceAccountingService.fee(1234, 5, 67, VERSION)
    assert fee == 1234 * prices["compute_price"] + 5 * prices["memory_page_price"] + 67 * prices["storage_unit_price"]
    assert isinstance(fee, int)
    assert ResourceAccountingService.fee(10 ** 12, 65536, 10 ** 9, VERSION) == (
        10 ** 12 * prices["compute_price"] + 65536 * prices["memory_page_price"]
        + 10 ** 9 * prices["storage_unit_price"])


def test_totals_sum_the_charged_contexts_only(tmp_path):
    with runtime(tmp_path / "t.db") as rt:
        rt.deploy(example("counter"), 0x100)
        charged = [rt.call(to=0x100).accounting for _ in range(2)]
        rt.call(to=0x100, isolation_level="pure")  # refused: not charged
        totals = rt.accounting.totals()
    assert totals == {"contexts": 2, "computeUnits": sum(a.compute_units for a in charged),
                      "memoryUnits": sum(a.memory_units for a in charged),
                      "storageUnits": sum(a.storage_units for a in charged),
                      "fee": sum(a.fee for a in charged)}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compute=st.integers(0, 2000), pages=st.integers(0, 3), units=st.integers(0, 40),
       start=st.integers(0, 3))
def test_recorded_accounting_always_equals_the_interpreter_usage(compute, pages, units, start):
    from reference_vm import Contract, Message, WorldState, execute
    limits = Limits(compute=compute, memory_pages=pages, storage_units=units)
    direct = execute(WorldState({0x100: Contract(example("counter"), {0: start})}),
                     Message(0x100, 1), limits=limits, version=VERSION)
    with runtime() as rt:
        rt.deploy(example("counter"), 0x100, {0: start})
        rec = rt.call(to=0x100, caller=1, limits=limits)
    assert rec.result.digest == direct.digest()
    assert (rec.accounting.compute_units, rec.accounting.memory_units,
            rec.accounting.storage_units, rec.accounting.fee) == (
        direct.usage.compute, direct.usage.memory_pages, direct.usage.storage_units, direct.fee)
    assert direct.usage.compute <= compute and direct.usage.memory_pages <= pages
    assert direct.usage.storage_units <= units
