"""The laws of spec 1.1's new instructions (proofs/laws_v11.py) and the 1.1 suite's strength
and engines: the laws are registered under 1.1 only, proved at 8 bits and (TSTORE's) at 64
bits, each with its antecedents satisfiable; planted model bugs (CLZ one off at the top
bit, POPCNT blind to the top bit, MULHU read signed, TSTORE writing the next key) each fail
the law that states what they break; ``prove --strength`` attributes a mutant to the
version whose instructions run it (a 1.1-only mutant is not counted under 1.0) and records
one score per version; every 1.1 instruction is replayed through compiled_vm's generated
code, as every 1.0 one is. Expectations come from the spec's text (6.3, 6.5, 6.13)."""

from __future__ import annotations

import json

import z3

from proofs import paths
from proofs.instructions import arithmetic, bitwise, transient
from proofs.registry import builtin
from proofs.runner import COUNTEREXAMPLE, PROVED, Options, run_suite
from proofs.strength import mutants, run
from proofs.words import Width, width

V = "1.1"
LAWS = {"mulh_high_words_of_product": "MULHU", "mulhs_is_mulhu_sign_corrected": "MULHS",
        "mulh_edge_cases": "MULHS", "clz_highest_one_bit": "CLZ", "ctz_lowest_one_bit": "CTZ",
        "popcnt_recurrence": "POPCNT", "tstore_then_tload_and_frame": "TSTORE"}


def statuses(names, width_=None, model=None, opcode=None):
    overrides = {opcode: model} if model is not None else {}
    rows = run_suite(Options(version=V, names=tuple(names), width=width_, agreement=False,
                             solver="z3", jobs=1, model_overrides=overrides))
    return {(r["theorem"], r["width"]): r for r in rows}


def test_the_laws_are_of_1_1_only_and_at_every_width():
    mine = {th.name: th for th in builtin(V) if th.name in LAWS}
    assert {n: th.opcode for n, th in mine.items()} == LAWS
    assert mine["clz_highest_one_bit"].widths == (8, 16, 32, 64)
    assert mine["tstore_then_tload_and_frame"].widths == (64,)
    assert not {th.name for th in builtin("1.0")} & set(LAWS)


def test_the_laws_are_proved_at_8_bits_and_not_vacuously():
    words_ = [n for n in LAWS if n != "tstore_then_tload_and_frame"]
    got = {**statuses(words_, 8), **statuses(["tstore_then_tload_and_frame"], 64)}
    assert {k: r["status"] for k, r in got.items()} == {
        **{(n, 8): PROVED for n in words_}, ("tstore_then_tload_and_frame", 64): PROVED}
    # Vacuity: every antecedent (a != 0, the TSTORE/TLOAD branch conditions) satisfiable.
    assert all(not r.get("vacuous_claims") for r in got.values())


def _planted(count):
    """A bit-count model (bitwise.unary, as CLZ's, CTZ's and POPCNT's) pushing ``count``."""
    w = Width(8, V)
    return bitwise.unary(lambda a: count(w, a))


def test_a_clz_one_off_at_the_top_bit_fails_its_law():
    def off_by_one(w, a):     # the highest bit k read as giving W - k (one too many)
        term = w.wval(w.bits)
        for k in range(w.bits):
            term = z3.If(z3.Extract(k, k, a) == 1, w.wval(w.bits - k), term)
        return term
    model = _planted(off_by_one)
    got = statuses(["clz_highest_one_bit"], 8, model, "CLZ")
    assert got[("clz_highest_one_bit", 8)]["status"] == COUNTEREXAMPLE


def test_a_popcnt_blind_to_the_top_bit_fails_its_law():
    def blind(w, a):
        return z3.Sum([z3.ZeroExt(w.bits - 1, z3.Extract(k, k, a)) for k in range(w.bits - 1)])
    model = _planted(blind)
    got = statuses(["popcnt_recurrence"], 8, model, "POPCNT")
    assert got[("popcnt_recurrence", 8)]["status"] == COUNTEREXAMPLE


def test_a_mulhu_read_signed_fails_its_law():
    w = Width(8, V)

    def signed(s, imm):
        (b, a), s = s.pop(2)
        from proofs.accounting import running
        return [running(s.push(arithmetic.high_word(w, z3.SignExt(8, a) * z3.SignExt(8, b))))]
    got = statuses(["mulh_high_words_of_product"], 8, signed, "MULHU")
    assert got[("mulh_high_words_of_product", 8)]["status"] == COUNTEREXAMPLE


def test_a_tstore_writing_the_next_key_fails_its_law():
    real = transient.models(width(64, V))["TSTORE"]

    def next_key(s, imm):
        # The key operand (second from the top) read one higher: the write lands elsewhere.
        return real(s.replace(stack=(s.stack[0], s.stack[1] + 1) + s.stack[2:]), imm)
    got = statuses(["tstore_then_tload_and_frame"], 64, next_key, "TSTORE")
    assert got[("tstore_then_tload_and_frame", 64)]["status"] == COUNTEREXAMPLE


def _mutant(path, kind, before, function):
    return next(m for m in mutants.generated(path) if m.kind == kind and before in m.before
                and m.function == function)


def test_strength_units_follow_the_version():
    handler = _mutant("reference_vm/instructions/arithmetic.py", "constant", "", "handlers.MULHS")
    assert run.unit(handler, V) == ("MULHS",) and run.unit(handler, "1.0") == ()
    helper = _mutant("proofs/instructions/arithmetic.py", "compare", "same =", "sign_cases")
    assert run.unit(helper, V) == ("MULHS",) and run.unit(helper, "1.0") == ()
    count = _mutant("proofs/instructions/bitwise.py", "constant", "w.bits - 1 - k",
                    "leading_zeros")
    assert run.unit(count, V) == ("CLZ",)
    read_only = next(m for m in mutants.generated("proofs/accounting.py"))
    assert read_only.function == "unless_read_only"
    assert run.unit(read_only, V) == ("SSTORE", "TSTORE", "LOG0", "LOG1", "LOG2", "LOG3", "LOG4")
    assert run.unit(read_only, "1.0") == ("SSTORE", "LOG0", "LOG1", "LOG2", "LOG3", "LOG4")
    call = next(m for m in mutants.generated("reference_vm/execute.py")
                if m.function.startswith("Execution.call"))
    assert run.unit(call, V) == ("CALL", "STATICCALL") and run.unit(call, "1.0") == ("CALL",)
    chosen = mutants.select(("reference_vm/instructions/transient.py",),
                            keep=lambda m: bool(run.unit(m, "1.0")))
    assert chosen == []                  # nothing of TLOAD/TSTORE is a 1.0 mutant


def test_the_score_is_recorded_per_version(tmp_path):
    recorded = run.recorded()
    assert "1.0" in recorded and recorded["1.0"]["spec_version"] == "1.0"
    assert run.recorded(tmp_path / "none.json") == {}
    result = run.Result()
    doc = run.record(result, "nothing", V)
    assert doc["spec_version"] == V and doc["score"] is None
    path = tmp_path / "score.json"
    path.write_text(json.dumps({"versions": {V: doc}}))
    assert run.recorded(path) == {V: doc}


def test_every_1_1_instruction_runs_through_compiled_code():
    """paths.py replays every agreement input through compiled_vm's generated block; a 1.1
    instruction must compile there (a region codegen refuses would only be interpreted)."""
    new = ("MULHU", "MULHS", "CLZ", "CTZ", "POPCNT", "TLOAD", "TSTORE", "STATICCALL")
    for mnemonic in new:
        ins = width(64, V).spec.by_mnemonic[mnemonic]
        x = {"mnemonic": mnemonic, "width": 64, "version": V, "immediate": 0, "pc": 0,
             "stack": [1] * ins.inputs}
        for name, program, _ in paths.variants(paths.complete(x)):
            segment = paths.segment_of(paths.complete(x), program)
            assert paths.compiled(segment, 64, V) is not None, (mnemonic, name)


def test_a_tstore_handler_taking_a_zero_write_for_a_new_slot_disagrees():
    """5.6.8 step 1: only a non-zero value into a zero slot is a new transient slot (charged
    new_slot_cost). A handler testing ``value != 1`` instead charges a zero write into an
    empty slot and not a write of 1: the fixed TSTORE inputs of sampled.py catch it (the
    1.1 strength run found the branch inputs alone missing it)."""
    from proofs import sampled
    from reference_vm.accounting import charge
    from reference_vm.rules import rules
    cost = rules(V, 64).transient_new_slot_cost

    def wrong(frame, imm):
        value, key = frame.stack.pop(), frame.stack.pop()
        journal = frame.execution.journal
        if value != 1 and journal.transient_load(frame.address, key) == 0:
            charge(frame, cost)
        journal.transient_store(frame.address, key, value)
    assert sampled.check("TSTORE", 1, V) == []
    (found,) = sampled.check("TSTORE", 1, V, handler=wrong)
    assert found["inputs"]["stack"] == [7, 0] and found["inputs"]["transient"] == {}
