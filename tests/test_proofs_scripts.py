"""A row's claims as one incremental SMT-LIB script: the same answers as each claim alone,
per-check budgets, and texts that do not depend on the tasks run before in the pool."""

from __future__ import annotations

import multiprocessing

import z3

from proofs import runner, smtlib, solvers, verdicts
from proofs.runner import Options, run_suite
from proofs.words import width
from conftest import BASE_VERSION as V



def _claims():
    a, b = z3.BitVecs("a b", 16)
    w = width(16, V)
    assumptions = [z3.ULT(a, 100), b != 0]
    claims = [z3.ULT(w.divu(a, b), 100),        # valid under the assumptions
              w.remu(a, b) == a,                 # false: a = 5, b = 2
              z3.ULE(w.remu(a, b), a)]           # valid
    return assumptions, claims


def test_a_script_answers_the_premises_then_each_claim_as_alone():
    assumptions, claims = _claims()
    texts = [smtlib.export(assumptions, c) for c in claims]
    text = smtlib.script(assumptions, claims)
    assert text.count("(check-sat)") == 4 and text.count("(push 1)") == 3
    budgets = solvers.load()
    for name in ("z3-script", "cvc5"):
        config = budgets.configs[name]
        assert config.script
        answers = [a.status for a in solvers.check_script(config, text, 60)]
        assert answers == ["sat", "unsat", "sat", "unsat"], name
        alone = [solvers.check(config, t, 60).status for t in texts]
        assert alone == answers[1:], name


def test_each_check_of_a_script_has_its_own_budget():
    # Two claims each cheaper than the limit: both decided although together they spend more.
    a, b, c = z3.BitVecs("a b c", 8)
    claims = [a * (b + c) == a * b + a * c, (a + b) * c == a * c + b * c]
    text = smtlib.script([], claims)
    config = solvers.load().configs["z3-script"]
    answers = solvers.check_script(config, text, 60)
    spent = [x.resources for x in answers]
    limit = max(spent) + 1
    small = solvers.Config("small", "z3", limit, (), True)
    assert sum(spent) > limit
    assert [x.status for x in solvers.check_script(small, text, 60)] == ["sat", "unsat", "unsat"]


def _texts_after(tasks):
    """In one process forked from the warmed parent, as the runner's workers: the texts of
    the last task after building every earlier one."""
    for task in tasks[:-1]:
        runner.task_texts(task)
    return runner.task_texts(tasks[-1])


def _main_context_text(task):
    """The first claim's text printed by z3 in the main context (without smtlib's fresh
    context): names of shared subterms follow the process's term ids."""
    kind, key, bits = task
    query = runner._THEOREMS[key[0] if kind == "group" else key].build(bits)
    solver = z3.Solver()
    solver.add(*query.assumptions, z3.Not(query.claims[0]))
    return solver.to_smt2()


def _main_context_after(tasks):
    for task in tasks[:-1]:
        runner.task_texts(task)
    return _main_context_text(tasks[-1])


def test_a_tasks_texts_do_not_depend_on_the_tasks_before_it():
    options = runner.Options(version=V)
    verdicts.use(options)
    runner._THEOREMS = runner.theorems(options)
    tasks = runner.plan(options, runner._THEOREMS)
    groups = {runner._THEOREMS[t[1][0]].opcode: t for t in tasks if t[0] == "group"}
    # MSTORE's stack_effect, cost, halts_exactly, charges_before_effect and meters, one task
    meters, cost, call = groups["MSTORE"], groups["LOG1"], groups["CALL"]
    single = next(t for t in tasks if t[0] == "theorem")
    assert sorted(runner._THEOREMS[i].name for i in meters[1]) == sorted(runner.GROUPED)
    runner._warm(options)
    context = multiprocessing.get_context("fork")
    with context.Pool(1, maxtasksperchild=1) as pool:   # one process per task
        alone = {t: pool.apply(runner.task_texts, (t,)) for t in (meters, cost, call, single)}
        main_alone = pool.apply(_main_context_text, (meters,))
    assert all(len(v) > 1 for v in alone.values())
    # Built after other tasks in the same process, in either order, byte for byte the same
    # texts (smtlib prints from a fresh context): why theorem tasks may share a process.
    for order in ([cost, call, single, meters], [single, meters, call, cost],
                  [meters, cost, single, call], [call, cost, meters, single]):
        with context.Pool(1, maxtasksperchild=1) as pool:
            assert pool.apply(_texts_after, (order,)) == alone[order[-1]]
    # Printed in the main context instead, the text does depend on what was built before.
    with context.Pool(1, maxtasksperchild=1) as pool:
        assert pool.apply(_main_context_after, ([cost, meters],)) != main_alone


def test_a_group_gives_each_row_what_it_gets_alone():
    def key(r):
        return (r["theorem"], r["status"], r.get("second_status"), r["claims"], r["premises"],
                r["proved_by"], r.get("rechecked_by"))
    together = run_suite(Options(version=V, opcodes=("SSTORE",), agreement=False, jobs=1))
    grouped = [r for r in together if "solved_with" in r]
    assert sorted(r["theorem"] for r in grouped) == sorted(runner.GROUPED)
    alone = [r for name in runner.GROUPED
             for r in run_suite(Options(version=V, opcodes=("SSTORE",), names=(name,), agreement=False,
                                        jobs=1))]
    assert all("solved_with" not in r for r in alone)
    assert sorted(map(key, grouped)) == sorted(map(key, alone))
    assert all(r["status"] == runner.PROVED for r in alone)
