"""Planted wrong models that the suite used to prove, each now refuted by the theorem that
states the spec independently of the model (issue 22).

Policy: every gate open, the allowed list ignored, everything refused (the conclusions
read policy.toml's tables, not the model's gate_open/listed_out). Lifecycle: an added edge
validated -> finalized (roll-back over every path, not reachability). RANDOM hashing its
counter big-endian (the law evaluates the model on concrete seeds and counters against
hashlib). RETURN/REVERT output one byte late; CALL keeping stale return data when the
callee cannot run, dropping the callee's storage writes on success, charging nothing for
the callee, and refusing one frame too early; DUPn copying the wrong item; SELF
pushing the caller. Each runs only the theorem that must notice, with real solvers.
"""

from __future__ import annotations

import dataclasses
import hashlib

import pytest
import z3

from proofs.instructions import models
from proofs.instructions.hash import as_int
from proofs.machine import REVERTED, SUCCESS, memory_range
from proofs.runner import COUNTEREXAMPLE, VACUOUS, Options, run_suite
from conftest import BASE_VERSION as V


def statuses(name, opcode=None, model=None):
    overrides = {opcode: model} if model is not None else {}
    rows = run_suite(Options(version=V, opcodes=(opcode,) if opcode else None, names=(name,),
                             agreement=False, solver="z3", jobs=1, model_overrides=overrides))
    assert rows and all(r["theorem"] == name for r in rows)
    return [r["status"] for r in rows]


def test_a_policy_with_every_gate_open_is_refuted(monkeypatch):
    from proofs import policy
    monkeypatch.setattr(policy.SymbolicPolicy, "gate_open", lambda self, ins: z3.BoolVal(True))
    assert statuses("forbidden_instruction_never_executes") == [COUNTEREXAMPLE]
    assert statuses("listing_refuses_before_gate") == [COUNTEREXAMPLE]


def test_a_policy_that_ignores_the_allowed_list_is_refuted(monkeypatch):
    from proofs import policy

    def listed_out(self, ins):
        return z3.Or(self.forbidden[ins.mnemonic], self.forbidden[ins.type])
    monkeypatch.setattr(policy.SymbolicPolicy, "listed_out", listed_out)
    assert statuses("forbidden_instruction_never_executes") == [COUNTEREXAMPLE]
    assert statuses("listing_refuses_before_gate") == [COUNTEREXAMPLE]


def test_a_policy_that_refuses_everything_is_refuted_or_vacuous(monkeypatch):
    from proofs import policy
    monkeypatch.setattr(policy.SymbolicPolicy, "refusal", lambda self, ins: z3.BitVecVal(1, 8))
    assert statuses("listing_refuses_before_gate") == [COUNTEREXAMPLE]
    assert statuses("forbidden_instruction_never_executes") == [VACUOUS]


def with_edge(monkeypatch, lifecycle, edge) -> None:
    """The lifecycle graph of every version with one more allowed transition."""
    real = lifecycle.graph
    monkeypatch.setattr(lifecycle, "graph", lambda v: (real(v)[0], real(v)[1] | {edge}))


def test_a_lifecycle_edge_from_validated_to_finalized_is_refuted(monkeypatch):
    from proofs import lifecycle
    with_edge(monkeypatch, lifecycle, ("validated", "finalized"))
    assert statuses("lifecycle_error_stages_roll_back") == [COUNTEREXAMPLE]


def test_a_lifecycle_edge_that_commits_a_failure_is_refuted(monkeypatch):
    from proofs import lifecycle
    with_edge(monkeypatch, lifecycle, ("policy_bound", "committed"))
    assert statuses("lifecycle_error_stages_roll_back") == [COUNTEREXAMPLE]


def random_counter_big_endian(state, imm):
    """RANDOM hashing its counter big-endian (symbolic inputs as the real model)."""
    real = models(64, V)["RANDOM"](state, imm)
    seed, counter = as_int(state.env.seed), as_int(state.random_counter)
    if seed is None or counter is None:
        return real
    block = seed.to_bytes(32, "little") + counter.to_bytes(8, "big")
    word = int.from_bytes(hashlib.sha256(block).digest()[:8], "little")
    return [dataclasses.replace(b, state=b.state.replace(
        stack=(state.w.wval(word),) + b.state.stack[1:])) for b in real]


def _output_one_byte_late(mnemonic, status):
    def model(state, imm):
        w = state.w
        length, offset = w.widen(state.stack[0]), w.widen(state.stack[1])
        return [dataclasses.replace(b, state=b.state.replace(
            output=memory_range(b.state.memory, offset + 1, length)))
            if b.status == status else b for b in models(64, V)[mnemonic](state, imm)]
    return model


def call_keeps_return_data_when_callee_cannot_run(state, imm):
    return [dataclasses.replace(b, state=b.state.replace(return_data=state.return_data))
            if b.label.endswith("callee cannot run") else b
            for b in models(64, V)["CALL"](state, imm)]


def call_drops_the_callees_writes(state, imm):
    return [dataclasses.replace(b, state=b.state.replace(storage=state.storage))
            if b.label.endswith("callee succeeded") else b
            for b in models(64, V)["CALL"](state, imm)]


def call_charges_nothing_for_the_callee(state, imm):
    """CALL run as if the callee used no compute at all."""
    oracle = dataclasses.replace(state.env.oracle, compute=state.w.cval(0))
    at = state.replace(env=dataclasses.replace(state.env, oracle=oracle))
    return [dataclasses.replace(b, state=b.state.replace(env=state.env))
            for b in models(64, V)["CALL"](at, imm)]


def dup3_copies_the_fourth(state, imm):
    from proofs.accounting import running
    return [running(state.push(state.stack[3]))]


def self_pushes_the_caller(state, imm):
    from proofs.accounting import running
    return [running(state.push(state.env.caller))]


PLANTED = {
    "random counter big-endian": ("time_and_random_stream", "RANDOM", random_counter_big_endian),
    "RETURN output one byte late": ("return_output_bytes", "RETURN",
                                    _output_one_byte_late("RETURN", SUCCESS)),
    "REVERT output one byte late": ("revert_output_bytes", "REVERT",
                                    _output_one_byte_late("REVERT", REVERTED)),
    "CALL keeps stale return data": ("call_outcome_and_return_data", "CALL",
                                     call_keeps_return_data_when_callee_cannot_run),
    "CALL drops the callee's writes": ("call_outcome_and_return_data", "CALL",
                                       call_drops_the_callees_writes),
    "CALL charges nothing for its callee": ("call_charges_callee_usage", "CALL",
                                            call_charges_nothing_for_the_callee),
    "DUP3 copies the 4th item": ("stack_effect", "DUP3", dup3_copies_the_fourth),
    "SELF pushes the caller": ("stack_effect", "SELF", self_pushes_the_caller),
}


@pytest.mark.parametrize("bug", sorted(PLANTED))
def test_a_planted_model_bug_is_refuted(bug):
    name, opcode, model = PLANTED[bug]
    assert statuses(name, opcode, model) == [COUNTEREXAMPLE]


def test_call_refusing_one_frame_too_early_is_refuted(monkeypatch):
    from proofs.instructions import call
    monkeypatch.setattr(call, "depth_limit", lambda w: w.num.call_depth - 1)
    assert statuses("call_outcome_and_return_data", "CALL") == [COUNTEREXAMPLE]


def test_the_real_models_are_proved():
    for name, opcode, _ in PLANTED.values():
        assert statuses(name, opcode) == ["proved"], name
