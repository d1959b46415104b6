"""Theorem tasks and agreement checks on fixed concrete cases run several to a process:
their rows do not depend on the batching or on the order within a batch. Branch-input
searches are bounded by z3 work units; the wall clock is only a safety net, and hitting it
is an error."""

from __future__ import annotations

import multiprocessing

import pytest
import z3

from proofs import branches, runner, verdicts
from proofs.machine import fresh_state
from proofs.runner import Options, run_suite
from proofs.words import width
import spec
from conftest import BASE_VERSION as V

SPEC = spec.load(V)

OPCODES = ("ADD", "DIVS", "SHRS", "MSTORE", "SLOAD")
NAMES = ("agreement_hypothesis", "agreement_exhaustive")


def _key(rows):
    return sorted(tuple(sorted((k, repr(v)) for k, v in r.items() if k != "seconds"))
                  for r in rows)


def test_batched_agreement_rows_equal_one_process_per_check(monkeypatch):
    options = Options(version=V, opcodes=OPCODES, names=NAMES, jobs=1)   # branch replays: below
    planned = runner.plan(options, runner.theorems(options))
    # ADD, DIVS and SHRS have both checks, MSTORE and SLOAD hypothesis only
    assert sorted((t[0], t[1]) for t in planned) == sorted(
        [("hypothesis", m) for m in OPCODES] + [("exhaustive", m) for m in OPCODES[:3]])
    assert [t[0] for t in runner.batched(planned)] == ["batch"]
    monkeypatch.setattr(runner, "BATCH_SIZE", 1)
    alone = run_suite(options)
    monkeypatch.setattr(runner, "BATCH_SIZE", 100)
    together = run_suite(options)
    assert len(alone) == 8 and {r["status"] for r in alone} == {"agrees"}
    assert _key(together) == _key(alone)
    # and in the reverse order, in one process
    verdicts.use(options)
    runner._warm(options)
    context = multiprocessing.get_context("fork")
    with context.Pool(1, maxtasksperchild=1) as pool:
        reverse = pool.apply(runner.run_task, (("batch", tuple(reversed(planned)), 0),))
    assert _key(reverse) == _key(alone)


def test_only_the_crosshair_supplement_keeps_a_process_of_its_own(monkeypatch):
    monkeypatch.setattr(runner, "BATCH_SIZE", 3)
    tasks = [("branches", "ADD", 64), ("hypothesis", "ADD", 64), ("crosshair", "-", 64),
             ("group", (0, 1), 64), ("branches", "SUB", 64)]
    assert runner.batched(tasks) == [
        ("crosshair", "-", 64),
        ("batch", (("branches", "ADD", 64), ("hypothesis", "ADD", 64), ("group", (0, 1), 64)), 0),
        ("batch", (("branches", "SUB", 64),), 0)]


def test_batched_theorem_rows_equal_one_process_per_task(monkeypatch):
    options = Options(version=V, opcodes=("MSTORE8", "ISZERO"), agreement=False, jobs=1)
    planned = runner.plan(options, runner.theorems(options))
    assert len(planned) >= 4    # per opcode its group and its deterministic row, at least
    monkeypatch.setattr(runner, "BATCH_SIZE", 1)
    alone = run_suite(options)
    monkeypatch.setattr(runner, "BATCH_SIZE", 100)
    together = run_suite(options)
    assert {r["status"] for r in alone} == {"proved"} and len(alone) >= 12
    assert _key(together) == _key(alone)


def _divu_case():
    s = fresh_state(width(64, V))
    ins = SPEC.by_mnemonic["DIVU"]
    return s, ins, s.stack[1] == 0   # a zero divisor: easy for any budget


def test_a_spent_work_budget_passes_over_the_tiers_deterministically(monkeypatch):
    s, ins, cond = _divu_case()
    assert branches.solve(cond, s, ins) is not None
    monkeypatch.setattr(branches, "RLIMIT", 1)
    assert branches.solve(cond, s, ins) is None      # every tier undecided within 1 unit


def test_the_wall_clock_safety_net_is_an_error_not_a_skipped_tier(monkeypatch):
    s, ins, _ = _divu_case()
    x, y = s.stack[0], s.stack[1]
    hard = z3.And(x * y == 0x9E3779B97F4A7C15 * 0xC2B2AE3D27D4EB4F & (2**64 - 1),
                  z3.UGT(x, 1), z3.UGT(y, 1), z3.ULT(x, y))   # 64-bit factoring
    monkeypatch.setattr(branches, "RLIMIT", 10**12)
    monkeypatch.setattr(branches, "WALL_MS", 1)
    with pytest.raises(branches.SafetyNetHit):
        branches.solve(hard, s, ins)


def _inputs_after(mnemonics):
    """Branch inputs of the last opcode after finding every earlier one's, in one process."""
    for m in mnemonics[:-1]:
        branches.branch_inputs(m, 64, V)
    return branches.branch_inputs(mnemonics[-1], 64, V)


def test_branch_inputs_do_not_depend_on_the_searches_before_them():
    verdicts.use(Options(version=V))
    runner._warm(verdicts.current)
    context = multiprocessing.get_context("fork")
    targets = ("DIVS", "MSTORE", "SSTORE")
    with context.Pool(1, maxtasksperchild=1) as pool:
        alone = {m: pool.apply(branches.branch_inputs, (m, 64, V)) for m in targets}
    assert all(len(v) >= 3 for v in alone.values())
    for order in (("MSTORE", "SSTORE", "DIVS"), ("DIVS", "SSTORE", "MSTORE"),
                  ("SHL", "DIVS", "MSTORE", "SSTORE")):
        with context.Pool(1, maxtasksperchild=1) as pool:
            assert pool.apply(_inputs_after, (order,)) == alone[order[-1]], order
