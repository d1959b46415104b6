"""Teeth: for every theorem kind, a model (or spec encoding) broken on purpose is caught.

Each case breaks one thing — a transition model through ``model_overrides``, or the
symbolic validation, policy or lifecycle encoding through ``monkeypatch`` (the suite's
workers are forked, so they see the patch) — runs only the theorem that should notice, and
requires its row to be a counterexample (never proved, unknown or vacuous). The per-opcode
kinds, the word and state law families, validation, policy and lifecycle each have one.
"""

from __future__ import annotations

import dataclasses

import pytest
import z3

from proofs.accounting import halt, running
from proofs.instructions import models
from proofs.machine import REVERTED
from proofs.runner import COUNTEREXAMPLE, Options, run_suite
from conftest import BASE_VERSION as V



def rows_of(opcode, name, width=None):
    return run_suite(Options(version=V, opcodes=(opcode,) if opcode else None, names=(name,), width=width,
                             agreement=False, solver="z3", jobs=2))


def broken(mnemonic, change, bits=64):
    """The real model of ``mnemonic`` with ``change(pre, branch)`` applied to each branch."""
    real = models(bits, V)[mnemonic]

    def model(state, imm):
        return [change(state, b) for b in real(state, imm)]
    return model


def on_state(f):
    return lambda pre, b: dataclasses.replace(b, state=f(pre, b.state)) if b.status == "running" else b


def _top(f):
    return on_state(lambda pre, t: t.replace(stack=(f(pre, t.stack[0]),) + t.stack[1:]))


def add_leaves_an_operand(state, imm):
    (b, a), s = state.pop(2)
    return [running(s.push(a).push(a + b))]


def add_reverts_on_zero(state, imm):
    (b, a), s = state.pop(2)
    return [halt(s, REVERTED, a == 0, "bug"), running(s.push(a + b), cond=a != 0)]


def sstore_then_fails(state, imm):
    """SSTORE that writes the slot and then reports a storage-limit error."""
    (value, key), s = state.pop(2)
    return [halt(s.replace(storage=z3.Store(s.storage, key, value)), "STORAGE_LIMIT_EXCEEDED",
                 z3.BoolVal(True), "storage limit")]


CASES = {
    # the six per-opcode theorems
    "stack_effect": ("ADD", "stack_effect", None, add_leaves_an_operand),
    "cost": ("ADD", "cost", None, broken("ADD", on_state(
        lambda pre, t: t.replace(compute=t.compute + t.w.cval(1))))),
    "halts_exactly": ("ADD", "halts_exactly", None, add_reverts_on_zero),
    "charges_before_effect": ("SSTORE", "charges_before_effect", None, sstore_then_fails),
    "meters": ("ADD", "meters", None, broken("ADD", on_state(
        lambda pre, t: t.replace(reads=t.reads - t.w.cval(1))))),
    "deterministic": ("ADD", "deterministic", None, broken("ADD", _top(
        lambda pre, v: v + pre.env.block_time))),
    # the law families (word laws at 8 bits, where a broken model is quick to refute)
    "ring": ("ADD", "ring_laws_add_sub", None, broken("ADD", _top(
        lambda pre, v: v | 1))),
    "multiplication": ("MUL", "mul_is_low_word_of_product", 8, broken("MUL", _top(
        lambda pre, v: v ^ 1), 8)),
    "division": ("DIVU", "divu_remu_identity_and_floor", 8, broken("DIVU", _top(
        lambda pre, v: v + 1), 8)),
    "comparison": ("LTS", "comparison_orders", 8, broken("LTS", lambda pre, b: dataclasses.replace(
        b, state=b.state.replace(stack=(z3.If(z3.ULT(pre.stack[1], pre.stack[0]), pre.w.wval(1),
                                              pre.w.wval(0)),) + b.state.stack[1:])), 8)),
    "boolean": ("XOR", "boolean_algebra", None, broken("XOR", lambda pre, b: dataclasses.replace(
        b, state=b.state.replace(stack=(pre.stack[0] | pre.stack[1],) + b.state.stack[1:])))),
    "shift": ("SHL", "shl_every_amount", 8, broken("SHL", _top(
        lambda pre, v: z3.If(z3.UGE(pre.stack[0], 8), pre.stack[1], v)), 8)),
    "storage": ("SSTORE", "sstore_then_sload_and_frame", None, broken("SSTORE", on_state(
        lambda pre, t: t.replace(storage=z3.Store(t.storage, pre.stack[1] + 1, 0))))),
    "control": ("JUMPI", "jumpi_taken_iff_nonzero", None, broken("JUMPI", on_state(
        lambda pre, t: t.replace(pc=t.pc + t.w.cval(1))))),
    "context": ("RANDOM", "time_and_random_stream", None, broken("RANDOM", on_state(
        lambda pre, t: t.replace(random_counter=t.random_counter + t.w.cval(1))))),
}


@pytest.mark.parametrize("kind", sorted(CASES))
def test_a_broken_model_is_refuted(kind):
    opcode, name, width, model = CASES[kind]
    rows = run_suite(Options(version=V, opcodes=(opcode,), names=(name,), width=width, agreement=False,
                             solver="z3", jobs=2, model_overrides={opcode: model}))
    assert rows and all(r["theorem"] == name for r in rows)
    assert all(r["status"] == COUNTEREXAMPLE for r in rows), [(r["width"], r["status"]) for r in rows]
    assert all(r["premises"].startswith("satisfiable") for r in rows)


def test_a_validation_rule_left_out_is_refuted(monkeypatch):
    from proofs import validate
    # Validation that accepts any jump target: the theorem must find a jump off a boundary.
    monkeypatch.setattr(validate, "valid", lambda version, code, sizes, boundary, targets: z3.And([
        z3.Implies(boundary[k], sizes[k] + k <= len(code)) for k in range(len(code))]))
    rows = rows_of(None, "validated_control_lands_on_boundaries")
    assert [r["status"] for r in rows] == [COUNTEREXAMPLE]


def test_a_policy_that_ignores_its_lists_is_refuted(monkeypatch):
    from proofs import policy
    real_refusal = policy.SymbolicPolicy.refusal

    def refusal_without_listing(self, ins):
        # An open gate binds even an instruction the policy lists as forbidden.
        return z3.If(self.gate_open(ins), z3.BitVecVal(0, 8), real_refusal(self, ins))
    monkeypatch.setattr(policy.SymbolicPolicy, "refusal", refusal_without_listing)
    rows = rows_of(None, "forbidden_instruction_never_executes")
    assert [r["status"] for r in rows] == [COUNTEREXAMPLE]


def test_a_lifecycle_with_a_back_edge_is_refuted(monkeypatch):
    from proofs import lifecycle
    real = lifecycle.graph
    monkeypatch.setattr(lifecycle, "graph",
                        lambda v: (real(v)[0], real(v)[1] | {("executed", "requested")}))
    rows = rows_of(None, "lifecycle_terminates_without_revisiting")
    assert [r["status"] for r in rows] == [COUNTEREXAMPLE]


def test_contradictory_premises_are_vacuous_never_proved(tmp_path):
    from proofs.report import failures
    from proofs.runner import VACUOUS
    theorems = tmp_path / "vacuous.py"
    theorems.write_text(
        "import z3\n"
        "from proofs.registry import Query, theorem\n"
        "@theorem('contradiction_proves_anything', 'ADD', (64,))\n"
        "def build(bits, model=None):\n"
        "    x = z3.BitVec('x', bits)\n"
        "    return Query([x == 7], [x == 0, x == 1])\n")
    rows = run_suite(Options(version=V, theorems_file=str(theorems), solver="z3", jobs=1))
    assert [(r["status"], r["premises"]) for r in rows] == [(VACUOUS, "unsatisfiable")]
    assert failures(rows) == rows
