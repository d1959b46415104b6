"""Run the proof suite on a process pool (both cores by default).

Tasks: every (theorem, width) of the registry, and the agreement checks per opcode (branch
replays, hypothesis at 64 bits, exhaustive at 8 bits) plus policy, validation and lifecycle
agreement (and, on request, the CrossHair supplement). Every task runs in a process of its
own, forked from the same warmed-up parent, and every proof claim is solved from its
SMT-LIB 2 text in a fresh solver under the deterministic budgets of ``proofs/budgets.toml``:
a verdict depends on the query alone, never on the machine's load or on the task order.

Statuses of a theorem row:

- proved: every claim unsat (no counterexample) within its budget, and the premises
  satisfiable;
- counterexample: a claim is sat; its inputs are replayed on the interpreter and printed;
- unknown: a claim was left undecided within its resource budget (not proved);
- timeout: a claim hit the wall-clock safety net (not proved; distinct from unknown);
- vacuous: the premises (the query's assumptions) are unsatisfiable, so every claim would
  hold trivially: a failure, never a proof;
- agrees / disagrees: an agreement check. A re-checking solver answering otherwise than the
  prover on a decided claim is a disagreement;
- informative: the CrossHair supplement (findings listed; never a verdict);
- error: a task crashed (a bug in the suite or a missing dependency).

Counterexamples, disagreements, vacuous premises and errors fail the suite; unknown and
timeout are not failures of the model but leave the suite unproved (readiness says so).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field

import z3

from proofs import smtlib, solvers

PROVED, COUNTEREXAMPLE, UNKNOWN, TIMEOUT = "proved", "counterexample", "unknown", "timeout"
VACUOUS = "vacuous"
AGREES, DISAGREES = "agrees", "disagrees"
INFORMATIVE = "informative"
# A task that crashed (a bug in the suite or a missing dependency): neither proof nor refutation.
ERROR = "error"
FAILING = (COUNTEREXAMPLE, DISAGREES, ERROR, VACUOUS)
UNDECIDED = (UNKNOWN, TIMEOUT)
VERDICT_OK = (PROVED, AGREES)


@dataclass
class Options:
    opcodes: tuple[str, ...] | None = None   # None: every opcode
    names: tuple[str, ...] | None = None     # None: every theorem (and agreement_* check)
    width: int | None = None                 # None: every width each theorem lists
    solver: str = "cvc5"                     # re-checking: cvc5 (the profiles), bitwuzla, z3 (none)
    export_dir: str | None = None
    jobs: int = 2
    wall_seconds: float | None = None        # safety net per query (None: budgets.toml)
    budgets: str | None = None               # budgets file (None: proofs/budgets.toml)
    theorems_file: str | None = None         # a user's theorems instead of the built-in ones
    samples: int = 8                         # hypothesis examples per opcode
    agreement: bool = True
    crosshair: bool = False                  # the informative CrossHair supplement
    model_overrides: dict = field(default_factory=dict)    # mnemonic -> model (tests)
    handler_overrides: dict = field(default_factory=dict)  # mnemonic -> handler (tests)

    @property
    def partial(self) -> bool:
        """Whether this run covers less than the whole registered suite."""
        return bool(self.opcodes is not None or self.width is not None or self.theorems_file
                    or self.names is not None
                    or not self.agreement or self.model_overrides or self.handler_overrides
                    or self.budgets or self.solver != "cvc5")


_OPTIONS = Options()  # set before the pool forks, read by the workers
_THEOREMS: list = []


def theorems(options: Options) -> list:
    from proofs import registry
    if options.theorems_file:
        return registry.load_file(options.theorems_file)
    return registry.builtin()


def plan(options: Options, registered: list | None = None) -> list[tuple]:
    from proofs.words import SPEC
    registered = theorems(options) if registered is None else registered
    tasks = []
    named = options.names is not None
    for index, th in enumerate(registered):
        if named and th.name not in options.names:
            continue
        if th.opcode != "-" and not (options.opcodes is None or th.opcode in options.opcodes):
            continue
        if th.opcode == "-" and options.opcodes is not None and not named:
            continue
        for bits in th.widths:
            if options.width is None or bits in (options.width, 0):
                tasks.append(("theorem", index, bits))
    if options.agreement and not options.theorems_file:
        width = options.width or 64
        for ins in SPEC.instructions:
            if options.opcodes is None or ins.mnemonic in options.opcodes:
                tasks.append(("branches", ins.mnemonic, width))
                if width == 64 and options.samples:
                    tasks.append(("hypothesis", ins.mnemonic, 64))
                if ins.mnemonic in _word_ops() and options.width in (None, 8):
                    tasks.append(("exhaustive", ins.mnemonic, 8))
        if options.opcodes is None:
            tasks += [("policy", "-", 0), ("validate", "-", 0), ("lifecycle", "-", 0)]
    if options.crosshair and options.opcodes is None and not options.theorems_file:
        tasks.append(("crosshair", "-", 64))
    if named:
        tasks = [t for t in tasks if t[0] == "theorem" or f"agreement_{t[0]}" in options.names]
    return tasks


def expected_rows(options: Options | None = None) -> set[tuple[str, str, str]]:
    """(theorem, opcode, width) of every verdict row a complete run reports."""
    options = options or Options()
    registered = theorems(options)
    out = set()
    for kind, key, bits in plan(options, registered):
        if kind == "crosshair":
            continue
        name, opcode = ((registered[key].name, registered[key].opcode) if kind == "theorem"
                        else (f"agreement_{kind}", key))
        out.add((name, str(opcode), str(bits or "-")))
    return out


def _word_ops() -> list[str]:
    from proofs.exhaustive import word_operations
    return word_operations()


def _row(kind, opcode, width, status, seconds, **extra) -> dict:
    return {"theorem": kind, "opcode": opcode, "width": width or "-", "status": status,
            "seconds": round(seconds, 2), **extra}


def _rechecking(profile) -> tuple[str, ...]:
    if _OPTIONS.solver == "z3":
        return ()
    if _OPTIONS.solver == "bitwuzla":
        return ("bitwuzla",)
    return profile.recheck


def _premises(query, budgets) -> str:
    """Whether the query's assumptions can hold at all (sat), by a query of its own."""
    if not query.assumptions:
        return "satisfiable (none)"
    solver = z3.Solver()
    solver.add(*query.assumptions)
    answer = solvers.check(budgets.configs["z3"], solver.to_smt2(), budgets.wall_seconds)
    return _premise_word(answer.status)


def _premise_word(status: str) -> str:
    return {solvers.SAT: "satisfiable", solvers.UNSAT: "unsatisfiable"}.get(status, status)


def _solve(config, query, texts, ks: list[int], wall: float, stop_at_sat: bool,
           premises: bool = True):
    """Claims ``ks`` by ``config``: {k: Answer}, and the premises' Answer when the
    configuration solves the row as one script (smtlib.script: the assumptions, a check of
    the premises unless already decided, then each claim between push and pop, all in one
    fresh solver). Otherwise each claim is solved from its own text in a fresh solver
    (stopping at a refutation if asked)."""
    if config.script:
        text = smtlib.script(query.assumptions, [query.claims[k] for k in ks], premises)
        answers = solvers.check_script(config, text, wall)
        if not premises:
            return dict(zip(ks, answers)), None
        return dict(zip(ks, answers[1:])), answers[0]
    out = {}
    for k in ks:
        out[k] = solvers.check(config, texts[k], wall)
        if stop_at_sat and out[k].status == solvers.SAT:
            break
    return out, None


class _Texts:
    """Each claim's own SMT-LIB text, exported when first asked for (a row solved only by
    scripts never needs them), and written to the export directory when one is given."""

    def __init__(self, th, bits, query):
        self.query, self.cache = query, {}
        if _OPTIONS.export_dir:
            for k in range(len(query.claims)):
                name = f"{th.name}__{th.opcode}__w{bits}__{k:03d}.smt2".replace("-", "all")
                with open(os.path.join(_OPTIONS.export_dir, name), "w") as f:
                    f.write(self[k])

    def __getitem__(self, k: int) -> str:
        if k not in self.cache:
            self.cache[k] = smtlib.export(self.query.assumptions, self.query.claims[k])
        return self.cache[k]


def _check_claims(th, bits, query) -> tuple[str, dict]:
    budgets = solvers.load(_OPTIONS.budgets)
    wall = _OPTIONS.wall_seconds or budgets.wall_seconds
    profile = budgets.profile(th.name, th.profile, th.opcode)
    provers = [budgets.configs[c] for c in profile.prove]
    recheckers = [budgets.configs[c] for c in _rechecking(profile)]
    resources: dict[str, int] = {}
    texts = _Texts(th, bits, query)
    count = len(query.claims)
    premise_answers = []
    last: dict[int, solvers.Answer] = {}
    prover_of: dict[int, object] = {}
    timed: set[int] = set()
    for config in provers:
        todo = [k for k in range(count) if k not in prover_of]
        if not todo or any(a.status == solvers.SAT for a in last.values()):
            break
        got, premise = _solve(config, query, texts, todo, wall, stop_at_sat=True)
        if premise is not None:
            premise_answers.append((config, premise))
            _spend(resources, config, premise)
        for k, answer in got.items():
            _spend(resources, config, answer)
            last[k] = answer
            if answer.status == solvers.TIMEOUT:
                timed.add(k)
            if answer.status in solvers.DECIDED:
                prover_of[k] = config
    # Claims in order up to the first refutation (the rest cannot change the verdict).
    checked = sorted(last)
    refuted = [k for k in checked if last[k].status == solvers.SAT]
    if refuted:
        checked = [k for k in checked if k <= refuted[0]]
    # Undecided after any prover met the wall-clock safety net: the answer depended on
    # time, so it is a timeout, never a budget-spent unknown.
    statuses = [solvers.TIMEOUT if k not in prover_of and k in timed else last[k].status
                for k in checked]
    proved_by: dict[str, int] = {}
    for k in checked:
        if k in prover_of:
            proved_by[prover_of[k].label] = proved_by.get(prover_of[k].label, 0) + 1
    cex = None
    if refuted:
        cex = _counterexample(query, query.claims[refuted[0]], last[refuted[0]].model,
                              budgets, wall)
    verdict = {k: solvers.UNKNOWN for k in checked if k in prover_of}
    rechecked_by: dict[str, int] = {}
    for config in recheckers:
        ks = [k for k in sorted(verdict) if verdict[k] not in solvers.DECIDED
              and prover_of[k] != config]
        if not ks:
            continue
        decided = any(a.status in solvers.DECIDED for _, a in premise_answers)
        got, premise = _solve(config, query, texts, ks, wall, stop_at_sat=False,
                              premises=not decided)
        if premise is not None:
            premise_answers.append((config, premise))
            _spend(resources, config, premise)
        for k, again in got.items():
            _spend(resources, config, again)
            if again.status in solvers.DECIDED:
                verdict[k] = again.status
                rechecked_by[config.label] = rechecked_by.get(config.label, 0) + 1
            elif again.status == solvers.TIMEOUT:
                verdict[k] = solvers.TIMEOUT
    second = [(k, last[k].status, verdict[k]) for k in sorted(verdict)] if recheckers else []
    premises, premises_by = _premise_status(query, budgets, premise_answers)
    if COUNTEREXAMPLE_ANSWER in statuses:
        status = COUNTEREXAMPLE
    elif all(s == solvers.UNSAT for s in statuses):
        status = PROVED
    elif solvers.TIMEOUT in statuses:
        status = TIMEOUT
    else:
        status = UNKNOWN
    disagreements = [k for k, a, b in second if {a, b} == {solvers.SAT, solvers.UNSAT}]
    extra = {"claims": len(query.claims), "note": th.note, "premises": premises,
             "premises_by": premises_by, "budget_profile": profile.name,
             "proved_by": proved_by, "resources": resources}
    undecided = [k for k, s in zip(checked, statuses) if s not in solvers.DECIDED]
    if undecided:
        extra["undecided_claims"] = undecided
    if recheckers:
        extra["second_solver"] = ", ".join(c.label for c in recheckers)
        extra["rechecked_by"] = rechecked_by
        extra["second_status"] = (DISAGREES if disagreements else AGREES if second and all(
            a == b for _, a, b in second) and len(second) == len(statuses) else UNKNOWN)
    if len(statuses) < len(query.claims):
        extra["claims_checked"] = len(statuses)   # stopped at the first counterexample
        if disagreements:
            extra["disagreeing_claims"] = disagreements
    if cex is not None:
        extra["counterexample"] = cex
    if disagreements and status != COUNTEREXAMPLE:
        status = DISAGREES
    if premises == "unsatisfiable":
        status = VACUOUS
    elif not premises.startswith("satisfiable") and status == PROVED:
        status = TIMEOUT if premises == solvers.TIMEOUT else UNKNOWN
    return status, extra


def _premise_status(query, budgets, answers) -> tuple[str, str]:
    """The premises' status: from the first script that decided it (its first check-sat),
    otherwise from a z3 query of its own."""
    if not query.assumptions:
        return "satisfiable (none)", "-"
    for config, answer in answers:
        if answer.status in solvers.DECIDED:
            return _premise_word(answer.status), config.label
    return _premises(query, budgets), budgets.configs["z3"].label


COUNTEREXAMPLE_ANSWER = solvers.SAT


def _spend(resources: dict, config, answer) -> None:
    if answer.resources is not None:
        resources[config.name] = resources.get(config.name, 0) + answer.resources


def _counterexample(query, claim, model, budgets, wall: float) -> dict:
    """Concrete inputs of a counterexample, replayed on the interpreter (and on the model).
    ``model`` is z3's (translated to the main context); when another solver decided the
    claim, z3 solves it again within its budget only to produce one."""
    if model is None:
        solver = z3.Solver()
        solver.set("rlimit", budgets.configs["z3"].rlimit)
        solver.set("timeout", int(wall * 1000))
        solver.add(*query.assumptions)
        solver.add(z3.Not(claim))
        if solver.check() != z3.sat:
            return {"model": "not reproduced by z3 (the deciding solver found one)"}
        model = solver.model()
    if query.operands and query.mnemonic:
        return _word_counterexample(model, query)
    if query.pre is None or query.mnemonic is None:
        return {"model": str(model)[:2000]}
    from proofs.agreement import compare
    from proofs.branches import inputs_from_model
    from proofs.replay import complete, run_interpreter
    inputs = inputs_from_model(model, query.pre, query.mnemonic, query.imm)
    out = {"inputs": inputs}
    try:
        observed = run_interpreter(complete(inputs))
        out["interpreter"] = {"outcome": observed.status, "stack_top": observed.stack[-4:],
                              "meters": observed.meters}
        out["differences"] = compare(inputs, _OPTIONS.handler_overrides.get(query.mnemonic),
                                     _OPTIONS.model_overrides.get(query.mnemonic))
    except Exception as err:  # noqa: BLE001 - a replay failure is reported, not raised
        out["replay_error"] = f"{type(err).__name__}: {err}"
    return out


def _word_counterexample(model, query) -> dict:
    """A word law's operand values, replayed as the law's instruction on both sides."""
    from proofs.agreement import compare
    from proofs.words import SPEC
    values = [model.eval(v, model_completion=True).as_long() for v in query.operands]
    arity = SPEC.by_mnemonic[query.mnemonic].inputs
    inputs = {"mnemonic": query.mnemonic, "width": query.width, "stack": values[:arity]}
    return {"inputs": inputs, "operand_values": values,
            "differences": compare(inputs, _OPTIONS.handler_overrides.get(query.mnemonic),
                                   _OPTIONS.model_overrides.get(query.mnemonic))}


def task_texts(task: tuple) -> list[str]:
    """The SMT-LIB texts a theorem task solves: each claim's own text, then the row's
    script. z3 names shared subterms by term ids, which depend on the terms built before in
    the process: each task runs in a fresh process forked from the warmed parent, so the
    texts (and so the answers) do not depend on which tasks ran before (tests pin it)."""
    kind, key, bits = task
    th = _THEOREMS[key]
    query = th.build(bits)
    texts = [smtlib.export(query.assumptions, claim) for claim in query.claims]
    return texts + [smtlib.script(query.assumptions, query.claims)]


def run_task(task: tuple) -> dict:
    kind, key, bits = task
    start = time.perf_counter()
    try:
        if kind == "theorem":
            th = _THEOREMS[key]
            model = _OPTIONS.model_overrides.get(th.opcode)
            query = th.build(bits, model) if model is not None else th.build(bits)
            status, extra = _check_claims(th, bits, query)
            return _row(th.name, th.opcode, bits, status, time.perf_counter() - start, **extra)
        return _agreement(kind, key, bits, start)
    except Exception as err:  # noqa: BLE001 - a crashing task is a failure row, not a crash
        name = (f"agreement_{kind}" if kind != "theorem" else
                _THEOREMS[key].name if key < len(_THEOREMS) else f"theorem #{key}")
        opcode = _THEOREMS[key].opcode if kind == "theorem" and key < len(_THEOREMS) else key
        return _row(name, str(opcode), bits, ERROR, time.perf_counter() - start,
                    error=f"{type(err).__name__}: {err}")


def _agreement(kind, key, bits, start) -> dict:
    handler = _OPTIONS.handler_overrides.get(key)
    model = _OPTIONS.model_overrides.get(key)
    found: list = []
    cases = 0
    if kind == "branches":
        from proofs.agreement import compare
        from proofs.branches import branch_inputs
        for x in branch_inputs(key, bits):
            cases += 1
            diffs = compare(x, handler, model)
            if diffs:
                found.append({"inputs": x, "differences": diffs})
    elif kind == "hypothesis":
        from proofs import sampled
        cases = _OPTIONS.samples
        found = sampled.check(key, _OPTIONS.samples, handler, model)
    elif kind == "exhaustive":
        from proofs import exhaustive
        cases = 1 << (8 * len(exhaustive.result_term(key)[0]))
        found = exhaustive.check_operation(key, handler, model)
    elif kind == "policy":
        from proofs import policy
        found = policy.check_agreement()
    elif kind == "validate":
        from proofs import validate
        cases = 300
        found = validate.check_agreement(cases)
    elif kind == "lifecycle":
        from proofs import lifecycle
        found = lifecycle.check_interpreter_paths()
    elif kind == "crosshair":
        from proofs import crosshair_contracts
        found, cases = crosshair_contracts.run()
        return _row("agreement_crosshair", key, bits, INFORMATIVE, time.perf_counter() - start,
                    cases=cases, findings=found[:3],
                    note="CrossHair supplement: informative, never a verdict (it is bounded "
                         "by the wall clock only)")
    status = DISAGREES if found else AGREES
    return _row(f"agreement_{kind}", key, bits, status, time.perf_counter() - start,
                cases=cases, findings=found[:3])


def _warm(options: Options) -> None:
    """Build, in the parent, every cache a task reads, so that each forked task starts from
    the same state (z3 numbers terms in creation order, which the SMT-LIB text reflects)."""
    from proofs.instructions import models
    for bits in (8, 16, 32, 64):
        models(bits)
    solvers.load(options.budgets)
    if options.agreement:
        _word_ops()
        if options.samples:
            # hypothesis's first run in a process pays for its own set-up (derandomized:
            # the examples of every later run do not depend on it).
            from proofs import sampled
            sampled.check("NOP", 1)


def run_suite(options: Options, progress=None) -> list[dict]:
    global _OPTIONS, _THEOREMS
    _OPTIONS = options
    _THEOREMS = theorems(options)
    solvers.load(options.budgets)   # a bad budgets file fails before any task runs
    for th in _THEOREMS:
        solvers.load(options.budgets).profile(th.name, th.profile, th.opcode)
    if options.export_dir:
        os.makedirs(options.export_dir, exist_ok=True)
    tasks = plan(options, _THEOREMS)
    # Heavy tasks first so the workers finish together.
    weight = {"hypothesis": 5, "crosshair": 9, "branches": 4, "validate": 3}
    tasks.sort(key=lambda t: -(weight.get(t[0], 1) + (3 if t[1] == "CALL" else 0)))
    _warm(options)
    rows = []
    context = multiprocessing.get_context("fork")
    # One fresh process per task (maxtasksperchild=1): no task sees another's z3 terms.
    with context.Pool(options.jobs, maxtasksperchild=1) as pool:
        for k, row in enumerate(pool.imap_unordered(run_task, tasks)):
            rows.append(row)
            if progress:
                progress(k + 1, len(tasks), row)
    rows.sort(key=lambda r: (r["theorem"].startswith("agreement"), str(r["opcode"]),
                             r["theorem"], str(r["width"])))
    return rows
