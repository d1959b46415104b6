"""The second oracle (proofs/oracle, conformance/oracles): vectors run by the proofs' models.

Expectations are worked out by hand from the spec (7.3.2's checks and refusal form, the
instruction table's costs), and planted bugs show the verdict catches each side's error: a
reference bug the models do not share, a model bug the reference does not share, in a
single-call vector and in a later step of a scenario.
"""

from __future__ import annotations

import copy

import pytest

import spec
from conformance.corpus.definitions.common import returning
from conformance.corpus.vector import Case, fill_case
from conformance.oracles import corpus as oracles
from conformance.oracles.compare import check_vector
from conformance.scenario.case import ScenarioCase, Step
from conformance.scenario.fill import fill_case as fill_scenario
from proofs.instructions import models
from proofs.oracle import model_run
from reference_vm.instructions import arithmetic, handlers_by_mnemonic, table
from reference_vm.program import load_program

V = "1.0"
ADD_PROGRAM = "push 5\npush 7\nadd\n" + returning(1)
TABLE = spec.load(V)


def _cost(*mnemonics: str) -> int:
    return sum(TABLE.by_mnemonic[m].cost for m in mnemonics)


def _vector(code: str = ADD_PROGRAM, **kw) -> dict:
    return fill_case(Case("oracle/test", "a test", code, **kw), V)


def _refusal(status: str, code: str) -> dict:
    """7.3.2: a request refused before execution."""
    return {"status": status, "error": code, "error_pc": None, "output": "0x", "state_changes": [],
            "events": [], "calls": [], "fee": 0,
            "usage": {"compute": 0, "memory_pages": 0, "storage_new_slots": 0, "storage_reads": 0,
                      "storage_units": 0, "storage_writes": 0}}


@pytest.fixture
def fresh_programs():
    """Prepared programs bind their handlers: a planted handler needs them prepared again."""
    caches = (load_program, table, handlers_by_mnemonic)
    for cache in caches:
        cache.cache_clear()
    yield
    for cache in caches:
        cache.cache_clear()


def test_the_models_compute_a_program_as_the_spec_says():
    run = model_run(_vector()["input"], V).result
    assert run["status"] == "success" and run["error"] is None
    assert run["output"] == "0x" + (12).to_bytes(8, "little").hex()
    # PUSH1, PUSH1, ADD, then returning(1): PUSH1, SWAP1, MSTORE, PUSH1, PUSH1, RETURN, plus one
    # memory page for the word stored (5.3).
    costs = _cost("PUSH1", "PUSH1", "ADD", "PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN")
    page = TABLE.schedule["memory"]["page_cost"]
    assert run["usage"]["compute"] == costs + page
    assert run["usage"]["memory_pages"] == 1


@pytest.mark.parametrize("change, status, code", [
    (lambda i: i["message"].update(caller=hex(1 << 64)), "rejected", "INVALID_REQUEST"),
    (lambda i: i["context"].update(random_seed="0x00"), "rejected", "INVALID_REQUEST"),
    (lambda i: i["message"].update(to="0x101"), "rejected", "CONTRACT_NOT_FOUND"),
    # check 1 comes before check 2
    (lambda i: (i["message"].update(to="0x101"), i["policy"].update(time_access="sometimes")),
     "rejected", "INVALID_REQUEST"),
    (lambda i: i["sandbox"]["limits"].update(compute=True), "rejected", "INVALID_LIMITS"),
    (lambda i: i["sandbox"]["limits"].update(compute=1.5), "rejected", "INVALID_LIMITS"),
    # validation (check 3) comes before the limits (check 5)
    (lambda i: (i["sandbox"]["limits"].update(compute=0),
                i["pre_state"]["contracts"]["0x100"].update(code="0x00")), "invalid", None),
])
def test_the_checks_before_execution_in_the_order_of_7_3_2(change, status, code):
    doc = copy.deepcopy(_vector()["input"])
    change(doc)
    got = model_run(doc, V).result
    if code is None:                     # the container's own first failing check
        assert got["status"] == status and got["error"] in TABLE.errors
        assert TABLE.errors[got["error"]].stage == "validated"
    else:
        assert got == _refusal(status, code)


def test_a_limit_written_with_a_fraction_is_the_integer_it_stands_for():
    doc = copy.deepcopy(_vector()["input"])
    doc["sandbox"]["limits"]["compute"] = 1e3
    assert model_run(doc, V).result["status"] == "success"


def test_agreeing_vectors_have_no_disagreement():
    assert check_vector(_vector(), V) is None
    scenario = fill_scenario(_counter(), V)
    assert oracles.check({V: ([], [scenario])}, "all", jobs=1).disagreements == []


def _plant_reference_add(monkeypatch, wrong_from: int) -> None:
    """The reference's ADD one too high when its result is at least ``wrong_from``."""
    right = arithmetic.handlers

    def handlers(rules_):
        table = dict(right(rules_))
        mask = rules_.word.mask

        def ADD(frame, imm):
            b = frame.stack.pop()
            total = (frame.stack[-1] + b) & mask
            frame.stack[-1] = total + 1 if total >= wrong_from else total

        table["ADD"] = ADD
        return table

    monkeypatch.setattr(arithmetic, "handlers", handlers)


def test_a_reference_bug_the_models_do_not_share_fails_the_fill(monkeypatch, fresh_programs):
    _plant_reference_add(monkeypatch, wrong_from=10)
    vector = _vector()                               # filled by the planted reference
    assert vector["expected"]["result"]["output"] == "0x" + (13).to_bytes(8, "little").hex()
    found = oracles.check({V: ([vector], [])}, "all", jobs=1)
    assert len(found.disagreements) == 1
    lines = found.disagreements[0].lines()
    assert "disagree in output" in lines[0]
    # step 3 is the PUSH after ADD: its stack shows 12 by the models, 13 by the reference
    assert any(line.startswith("  first differing step: step 3 (pc") and "'0xc'" in line
               and "'0xd'" in line for line in lines), lines


def test_a_model_bug_the_reference_does_not_share_fails_the_fill(monkeypatch):
    table = models(64, V)
    right = table["ADD"]

    def wrong(state, imm):                           # ADD's model, then one more on top
        out = []
        for branch in right(state, imm):
            s = branch.state
            out.append(branch.__class__(branch.label, branch.status, branch.cond,
                                        s.replace(stack=(s.stack[0] + 1,) + s.stack[1:])))
        return out

    monkeypatch.setitem(table, "ADD", wrong)
    found = oracles.check({V: ([_vector()], [])}, "all", jobs=1)
    assert [d.fields for d in found.disagreements] == [["output"]]    # 13 where the spec says 12
    assert "first differing step: step 3" in "\n".join(found.disagreements[0].lines())


def _counter() -> ScenarioCase:
    counter = "push 0\nsload\npush 1\nadd\npush 0\ndup2\nsstore\n" + returning(1)
    return ScenarioCase("scenario/oracle/counter", "a counter", {0x100: counter},
                        (Step(), Step(), Step()))


def test_a_reference_bug_in_a_later_scenario_step_is_found_at_that_step(monkeypatch, fresh_programs):
    _plant_reference_add(monkeypatch, wrong_from=3)  # the third call's count: 4, not 3
    vector = fill_scenario(_counter(), V)
    found = oracles.check({V: ([], [vector])}, "all", jobs=1).disagreements
    assert len(found) == 1 and found[0].step == 2
    assert "scenario step 2" in found[0].lines()[0]


def test_quick_keeps_the_cheapest_vector_of_each_class_within_its_bound():
    def v(id_, op, outcome, compute):
        return {"id": id_, "tags": {"opcodes": [op], "outcome": outcome, "call_outcomes": [],
                                    "sections": ["6.3"], "source": "definition", "boundary": None},
                "expected": {"result": {"usage": {"compute": compute}}}}
    vectors = [v("a", "ADD", "success", 9), v("b", "ADD", "success", 3),
               v("c", "SUB", "success", 5), v("d", "ADD", "STACK_UNDERFLOW", 1),
               v("e", "MUL", "success", oracles.QUICK_COMPUTE + 1)]
    # MUL's only vector is over the bound: MUL and MUL with success are left to the full run
    # (success itself is covered)
    assert oracles.quick(vectors) == ([vectors[1], vectors[2], vectors[3]], 2)


def test_fill_refuses_a_bad_second_oracle_option(capsys):
    from rtwo_vm import cli
    assert cli.main(["vectors", "fill", "--check", "--second-oracle", "some"]) == 2
    assert cli.main(["vectors", "fill", "--check", "--jobs", "0", "--source", "definition"]) == 2
    assert "--jobs must be in 1..256" in capsys.readouterr().err


@pytest.mark.parametrize("callee", [None, "push1 1\n", "time\nstop\n"])
def test_a_1_1_call_of_a_callee_that_cannot_run_is_one_path(callee):
    """From 1.1 the CALL model has a branch for a writable and for a read-only callee; a callee
    that cannot run (no contract, invalid code, refused by the policy) was explored once for
    each: two identical ends of one concrete call (found by the second oracle)."""
    code = "push 0x101\npush 1000\npush 0\npush 0\ncall\n" + returning(1)
    contracts = {} if callee is None else {0x101: callee}
    vector = fill_case(Case("oracle/refused", "a refused callee", code, contracts=contracts,
                            since="1.1"), "1.1")
    run = model_run(vector["input"], "1.1").result
    assert run["output"] == "0x" + bytes(8).hex()                 # CALL pushes 0 (6.11)
    assert [c["status"] for c in run["calls"]] == [
        "rejected" if callee is None else "invalid" if callee == "push1 1\n" else "violation"]
    assert check_vector(vector, "1.1") is None


def test_a_model_that_fails_on_an_input_is_a_finding_not_a_crash_of_the_fill(monkeypatch):
    table = models(64, V)

    def broken(state, imm):
        raise ZeroDivisionError("planted")

    monkeypatch.setitem(table, "ADD", broken)
    (found,) = oracles.check({V: ([_vector()], [])}, "all", jobs=1).disagreements
    assert found.fields == [] and "the models failed: ZeroDivisionError: planted" in found.lines()[0]
