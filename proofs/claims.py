"""Solving a task's claims under the budget profile: provers, re-checkers, premises, rows.

A task is one theorem row, or a group of rows of one opcode and width that share their
assumptions and their budget profile (the generic theorems but ``deterministic``, see
runner.plan): a group's claims are solved together — one script per configuration — and
the answers are then split into the rows, each with its own statuses, provers, re-checkers,
work units and counterexample, exactly as if it had been solved alone; the premises'
check is shared (the same assumptions). What a task solves is fixed by the plan, so its
texts, and so its answers, depend on the task alone (runner.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import z3

from proofs import exports, slices, smtlib, solvers, vacuity, verdicts
from proofs.registry import Query


def _premises(query, budgets) -> str:
    """Whether the query's assumptions can hold at all (sat), by a query of its own."""
    if not query.assumptions:
        return "satisfiable (none)"
    solver = smtlib.fresh_solver(list(query.assumptions))
    answer = solvers.check(budgets.configs["z3"], solver.to_smt2(), budgets.wall_seconds,
                           model=False)
    return _premise_word(answer.status)


def _premise_word(status: str) -> str:
    return {solvers.SAT: "satisfiable", solvers.UNSAT: "unsatisfiable"}.get(status, status)


def _solve(config, query, texts, ks: list[int], wall: float, stop_at_sat: bool,
           premises: bool = True, scripts: dict | None = None):
    """Claims ``ks`` by ``config``: {k: Answer}, and the premises' Answer when the
    configuration solves the claims as one script (smtlib.script: the assumptions, a check
    of the premises unless already decided, then each claim between push and pop, all in
    one fresh solver). Otherwise each claim is solved from its own text in a fresh solver
    (stopping at a refutation if asked)."""
    if config.script:
        # One text per set of claims (the prover's and the re-checker's scripts differ only
        # in the premises' check): printed once, from its own fresh context.
        scripts = {} if scripts is None else scripts
        if tuple(ks) not in scripts:
            scripts[tuple(ks)] = smtlib.script(query.assumptions, [query.claims[k] for k in ks])
        text = scripts[tuple(ks)] if premises else smtlib.without_premises(scripts[tuple(ks)])
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
    """Each claim's own SMT-LIB text, exported when first asked for (claims solved only by
    scripts never need them)."""

    def __init__(self, query):
        self.query = query
        self.cache: dict[int, str] = {}      # claim index -> its SMT-LIB text

    def __getitem__(self, k: int) -> str:
        if k not in self.cache:
            self.cache[k] = smtlib.export(self.query.assumptions, self.query.claims[k])
        return self.cache[k]


_WORST = {solvers.SAT: 3, solvers.TIMEOUT: 2, solvers.UNKNOWN: 1, solvers.UNSAT: 0}


def _parted_decide(query, provers, recheckers, wall, stop_at_sat) -> "_Decided":
    """The claims cut into the parts about the oldest version's components and those about
    the components a newer version added (slices.split), each set solved on its own
    (_sliced_decide; the first then reads as the older version's claims), and the answers
    folded back into each claim's: sat if a part is (its model refutes the claim), unsat
    if every part is, otherwise the worst part's."""
    memo: dict = {}
    new = slices.added(verdicts.current.version)
    parts: list[list[tuple[int, Any]]] = [[], []]
    for k, claim in enumerate(query.claims):
        for side, part in zip(parts, slices.split(claim, new, memo)):
            if part is not None:
                side.append((k, part))
    if not parts[1]:
        return _sliced_decide(query, provers, recheckers, wall, stop_at_sat)
    solved = [(side, _sliced_decide(Query([c for _, c in side], query.assumptions), provers,
                                    recheckers, wall, stop_at_sat)) for side in parts if side]
    d = _Decided()
    of: dict[int, list[tuple[Any, int]]] = {}
    for side, sub in solved:
        d.premise_answers += sub.premise_answers
        for name, used in sub.premise_spent.items():
            d.premise_spent[name] = d.premise_spent.get(name, 0) + used
        for j, (k, _) in enumerate(side):
            of.setdefault(k, []).append((sub, j))
    for k, subs in of.items():
        for sub, j in subs:
            for name, used in sub.spent.get(j, {}).items():
                d.spent.setdefault(k, {})[name] = d.spent.setdefault(k, {}).get(name, 0) + used
            if j in sub.timed:
                d.timed.add(k)
        answered = [(sub, j) for sub, j in subs if j in sub.last]
        if not answered:
            continue
        sub, j = max(answered, key=lambda a: _WORST.get(a[0].last[a[1]].status, 1))
        refuted = sub.last[j].status == solvers.SAT
        if len(answered) < len(subs) and not refuted:
            continue                    # a part left unchecked (after a refutation)
        d.last[k] = sub.last[j]
        if refuted and j in sub.prover_of or all(j2 in s2.prover_of for s2, j2 in subs):
            d.prover_of[k] = sub.prover_of.get(j) or subs[0][0].prover_of[subs[0][1]]
            again = [s2.verdict.get(j2, solvers.UNKNOWN) for s2, j2 in subs]
            d.verdict[k] = max(again, key=lambda a: _WORST.get(a, 1))
            by = [s2.rechecker_of[j2] for s2, j2 in subs if j2 in s2.rechecker_of]
            if by and d.verdict[k] in solvers.DECIDED:
                d.rechecker_of[k] = by[0]
    return d


def _sliced_decide(query, provers, recheckers, wall, stop_at_sat) -> "_Decided":
    """_decide on the claims with the premises sliced to their symbols (slices.py), then,
    when a premise was dropped, again with every premise for each claim the provers did not
    prove (a sliced sat may be spurious): the two merged, claim by claim. Only the full
    premises' answers say whether the premises can hold."""
    sliced = slices.sliced(query.assumptions, query.claims)
    d = _decide(Query(query.claims, sliced), _Texts(Query(query.claims, sliced)), provers,
                recheckers, wall, stop_at_sat)
    if len(sliced) == len(slices.conjuncts(query.assumptions)):
        return d                        # nothing dropped: the same premises
    d.premise_answers = []
    redo = [k for k in range(len(query.claims))
            if k not in d.last or d.last[k].status != solvers.UNSAT]
    if not redo:
        return d
    part = Query([query.claims[k] for k in redo], query.assumptions)
    again = _decide(part, _Texts(part), provers, recheckers, wall, stop_at_sat)
    for j, k in enumerate(redo):
        for name in ("last", "prover_of", "verdict", "rechecker_of"):
            mine, theirs = getattr(d, name), getattr(again, name)
            mine.pop(k, None)
            if j in theirs:
                mine[k] = theirs[j]
        d.timed.discard(k)
        if j in again.timed:
            d.timed.add(k)
        for config_name, used in again.spent.get(j, {}).items():
            into = d.spent.setdefault(k, {})
            into[config_name] = into.get(config_name, 0) + used
    d.premise_answers = again.premise_answers
    for config_name, used in again.premise_spent.items():
        d.premise_spent[config_name] = d.premise_spent.get(config_name, 0) + used
    return d


@dataclass
class _Decided:
    """Per claim (index into the combined claims): the last prover answer, who decided it,
    the re-check verdict and who gave it, the work units spent on it, and the seconds of
    its checks."""
    last: dict = field(default_factory=dict)
    prover_of: dict = field(default_factory=dict)
    timed: set = field(default_factory=set)
    verdict: dict = field(default_factory=dict)
    rechecker_of: dict = field(default_factory=dict)
    spent: dict = field(default_factory=dict)
    premise_answers: list = field(default_factory=list)
    premise_spent: dict = field(default_factory=dict)


def _spend(into: dict, config, answer) -> None:
    if answer.resources is not None:
        into[config.name] = into.get(config.name, 0) + answer.resources


def _decide(query, texts, provers, recheckers, wall, stop_at_sat) -> _Decided:
    d = _Decided()
    scripts: dict = {}
    count = len(query.claims)
    for config in provers:
        todo = [k for k in range(count) if k not in d.prover_of]
        if not todo or (stop_at_sat and any(a.status == solvers.SAT for a in d.last.values())):
            break
        got, premise = _solve(config, query, texts, todo, wall, stop_at_sat, scripts=scripts)
        if premise is not None:
            d.premise_answers.append((config, premise))
            _spend(d.premise_spent, config, premise)
        for k, answer in got.items():
            _spend(d.spent.setdefault(k, {}), config, answer)
            d.last[k] = answer
            if answer.status == solvers.TIMEOUT:
                d.timed.add(k)
            if answer.status in solvers.DECIDED:
                d.prover_of[k] = config
    d.verdict = {k: solvers.UNKNOWN for k in d.prover_of}
    for config in recheckers:
        ks = [k for k in sorted(d.verdict) if d.verdict[k] not in solvers.DECIDED
              and d.prover_of[k] != config]
        if not ks:
            continue
        # The premises' status is a verdict: never from a configuration without a resource
        # limit (Bitwuzla's script checks the claims only; _premise_status asks z3 then).
        decided = config.rlimit is None or any(
            a.status in solvers.DECIDED for _, a in d.premise_answers)
        got, premise = _solve(config, query, texts, ks, wall, stop_at_sat=False,
                              premises=not decided, scripts=scripts)
        if premise is not None:
            d.premise_answers.append((config, premise))
            _spend(d.premise_spent, config, premise)
        for k, again in got.items():
            _spend(d.spent.setdefault(k, {}), config, again)
            if again.status in solvers.DECIDED:
                d.verdict[k] = again.status
                d.rechecker_of[k] = config
            elif again.status == solvers.TIMEOUT:
                d.verdict[k] = solvers.TIMEOUT
    return d


def check_rows(items: list, bits: int) -> list[tuple[str, dict, float]]:
    """(status, extra, share of the task's solving) of each (theorem, query) of ``items``:
    one row, or a group sharing assumptions and profile."""
    if any(not q.claims for _, q in items):
        # A row without claims would be proved by nothing: an error, and its group's other
        # rows are solved on their own.
        if len(items) == 1:
            return [(verdicts.ERROR, {"claims": 0, "note": items[0][0].note, "error": vacuity.EMPTY},
                     1.0)]
        return [row for item in items for row in check_rows([item], bits)]
    budgets = solvers.load(verdicts.current.budgets)
    wall = verdicts.current.wall_seconds or budgets.wall_seconds
    th0, q0 = items[0]
    profile = budgets.profile(th0.name, th0.profile, th0.opcode)
    provers = [budgets.configs[c] for c in profile.prove]
    # A profile's Bitwuzla (a first attempt at the re-check, budgets.toml) is passed over
    # when it is not installed: what it would re-check goes to the next configuration.
    recheckers = [c for c in (budgets.configs[n] for n in verdicts.rechecking(profile))
                  if c.solver != "bitwuzla" or solvers.available("bitwuzla")]
    claims: list[z3.BoolRef] = []
    spans: list[range] = []
    for _, q in items:
        spans.append(range(len(claims), len(claims) + len(q.claims)))
        claims += q.claims
    combined = Query(claims, q0.assumptions)
    if verdicts.current.export_dir:      # every query whole, with every premise
        for name, text in exports.theorem_files(items, bits):
            exports.write(name, text)
    d = _parted_decide(combined, provers, recheckers, wall, stop_at_sat=len(items) == 1)
    premises, premises_by = _premise_status(q0, budgets, d.premise_answers)
    # Every proved claim Implies(A, B): premises ∧ A must be satisfiable (vacuity.py).
    proved = [k for k in range(len(claims)) if k in d.last and d.last[k].status == solvers.UNSAT]
    antecedents, antecedent_units, antecedents_by = (
        _vacuity(q0.assumptions, claims, proved, budgets, wall)
        if premises.startswith("satisfiable") else ({}, 0, "-"))
    units = [sum(sum(d.spent.get(k, {}).values()) for k in span) for span in spans]
    out = []
    for i, ((th, q), span) in enumerate(zip(items, spans)):
        status, extra = _assemble(th, q, list(span), d, budgets, wall, profile, recheckers,
                                  premises, premises_by)
        status = _antecedents(status, extra, {k - span.start: antecedents[k] for k in span
                                              if k in antecedents}, antecedents_by)
        if i == 0:
            for name, used in d.premise_spent.items():
                extra["resources"][name] = extra["resources"].get(name, 0) + used
            if antecedent_units:
                name = vacuity.config(budgets).name
                extra["resources"][name] = extra["resources"].get(name, 0) + antecedent_units
        if len(items) > 1:
            extra["solved_with"] = [t.name for t, _ in items if t is not th]
        out.append((status, extra, units[i] / (sum(units) or 1)))
    return out


def _assemble(th, query, ks, d, budgets, wall, profile, recheckers, premises, premises_by):
    """One row from the combined answers ``d`` at the row's claims ``ks``."""
    local = {k: j for j, k in enumerate(ks)}
    checked = [k for k in ks if k in d.last]
    refuted = [k for k in checked if d.last[k].status == solvers.SAT]
    if refuted:   # claims in order up to the first refutation (the rest cannot change it)
        checked = [k for k in checked if k <= refuted[0]]
    # Undecided after any prover met the wall-clock safety net: the answer depended on
    # time, so it is a timeout, never a budget-spent unknown.
    statuses = [solvers.TIMEOUT if k not in d.prover_of and k in d.timed else d.last[k].status
                for k in checked]
    proved_by: dict[str, int] = {}
    rechecked_by: dict[str, int] = {}
    resources: dict[str, int] = {}
    for k in checked:
        if k in d.prover_of:
            label = d.prover_of[k].label
            proved_by[label] = proved_by.get(label, 0) + 1
        if k in d.rechecker_of:
            label = d.rechecker_of[k].label
            rechecked_by[label] = rechecked_by.get(label, 0) + 1
    for k in ks:
        for name, used in d.spent.get(k, {}).items():
            resources[name] = resources.get(name, 0) + used
    cex = None
    if refuted:
        k = refuted[0]
        cex = _counterexample(query, query.claims[local[k]], d.last[k].model, budgets, wall)
    second = ([(local[k], d.last[k].status, d.verdict[k]) for k in checked if k in d.verdict]
              if recheckers else [])
    if solvers.SAT in statuses:
        status = verdicts.COUNTEREXAMPLE
    elif all(s == solvers.UNSAT for s in statuses):
        status = verdicts.PROVED
    elif solvers.TIMEOUT in statuses:
        status = verdicts.TIMEOUT
    else:
        status = verdicts.UNKNOWN
    disagreements = [k for k, a, b in second if {a, b} == {solvers.SAT, solvers.UNSAT}]
    extra = {"claims": len(query.claims), "note": th.note, "premises": premises,
             "premises_by": premises_by, "budget_profile": profile.name,
             "proved_by": proved_by, "resources": resources}
    undecided = [local[k] for k, s in zip(checked, statuses) if s not in solvers.DECIDED]
    if undecided:
        extra["undecided_claims"] = undecided
    if recheckers:
        extra["second_solver"] = ", ".join(c.label for c in recheckers)
        extra["rechecked_by"] = rechecked_by
        extra["second_status"] = (verdicts.DISAGREES if disagreements else verdicts.AGREES if second and all(
            a == b for _, a, b in second) and len(second) == len(statuses) else verdicts.UNKNOWN)
    if len(statuses) < len(query.claims):
        extra["claims_checked"] = len(statuses)   # stopped at the first counterexample
        if disagreements:
            extra["disagreeing_claims"] = disagreements
    if cex is not None:
        extra["counterexample"] = cex
    if disagreements and status != verdicts.COUNTEREXAMPLE:
        status = verdicts.DISAGREES
    if premises == "unsatisfiable":
        status = verdicts.VACUOUS
    elif not premises.startswith("satisfiable") and status == verdicts.PROVED:
        status = verdicts.TIMEOUT if premises == solvers.TIMEOUT else verdicts.UNKNOWN
    return status, extra


def _vacuity(assumptions, claims, proved, budgets, wall):
    """vacuity.check, with the antecedents that mention no component a newer version added
    checked against the premises about the older components only, when every model of
    those extends to the others with the added components zero (one z3 query: the zeroed
    premises follow from the others; slices.zeroed): exact, and the texts read as under
    the oldest version."""
    memo: dict = {}
    new = slices.added(verdicts.current.version)
    parts = slices.zeroed(assumptions, new, memo) if new else None
    if parts is None or not parts[1]:   # the premises' conjuncts, as the sliced texts have them
        return vacuity.check(slices.conjuncts(assumptions), claims, proved, budgets, wall)
    old, zeroed = parts
    full = slices.conjuncts(assumptions)
    ante = [vacuity.antecedent(claims[k]) for k in proved]
    if not any(a is not None for a in ante) or any(
            slices.mentions_added(a, new, memo) for a in ante if a is not None):
        # Nothing to check, or an antecedent about an added component (its text is the
        # newer version's anyway): every premise.
        return vacuity.check(full, claims, proved, budgets, wall)
    follows = solvers.check(budgets.configs["z3"], smtlib.export(
        old, zeroed[0] if len(zeroed) == 1 else z3.And(zeroed)), wall, model=False)
    got, used, by = vacuity.check(old if follows.status == solvers.UNSAT else full, claims,
                                  proved, budgets, wall)
    return got, used + (follows.resources or 0), by


def _antecedents(status: str, extra: dict, statuses: dict[int, str], by: str) -> str:
    """The row's status once its claims' antecedents are known: vacuous when one cannot
    hold with the premises, unproved when one was left undecided."""
    word, bad = vacuity.verdict(statuses)
    extra["antecedents"] = {"none": "none", solvers.SAT: f"satisfiable ({len(statuses)})"}.get(
        word, _premise_word(word))
    if statuses:
        extra["antecedents_by"] = by
    if word == solvers.UNSAT:
        extra["vacuous_claims"] = bad
        if status in (verdicts.PROVED, verdicts.UNKNOWN, verdicts.TIMEOUT):
            return verdicts.VACUOUS
    elif word in (solvers.UNKNOWN, solvers.TIMEOUT) and status == verdicts.PROVED:
        extra["undecided_antecedents"] = bad
        return verdicts.TIMEOUT if word == solvers.TIMEOUT else verdicts.UNKNOWN
    return status


def _premise_status(query, budgets, answers) -> tuple[str, str]:
    """The premises' status: from the first script that decided it (its first check-sat),
    otherwise from a z3 query of its own."""
    if not query.assumptions:
        return "satisfiable (none)", "-"
    for config, answer in answers:
        if answer.status in solvers.DECIDED:
            return _premise_word(answer.status), config.label
    return _premises(query, budgets), budgets.configs["z3"].label


def _counterexample(query, claim, model, budgets, wall: float) -> dict:
    """Concrete inputs of a counterexample, replayed on the interpreter (and on the model).
    ``model`` is z3's (translated to the main context); when another solver decided the
    claim, z3 solves it again within its budget only to produce one."""
    if model is None:
        model = _small_model(query, claim)
    if model is None:
        # From the claim's text in a context of its own (as every proof query): the model,
        # and the time to find it, do not depend on the terms built before in the process.
        # Never from the verdict cache: its model is what is needed.
        answer = solvers.check(budgets.configs["z3"], smtlib.export(query.assumptions, claim),
                               wall, cached=False)
        if answer.status != solvers.SAT or answer.model is None:
            return {"model": "not reproduced by z3 (the deciding solver found one)"}
        model = answer.model
    if query.operands and query.mnemonic:
        return _word_counterexample(model, query)
    if query.pre is None or query.mnemonic is None:
        return {"model": str(model)[:2000]}
    from proofs.agreement import compare
    from proofs.branches import inputs_from_model
    from proofs.replay import complete, run_interpreter
    inputs = inputs_from_model(model, query.pre, query.mnemonic, query.imm)
    out: dict[str, Any] = {"inputs": inputs}
    try:
        observed = run_interpreter(complete(inputs))
        out["interpreter"] = {"outcome": observed.status, "stack_top": observed.stack[-4:],
                              "meters": observed.meters}
        out["differences"] = compare(inputs, verdicts.current.handler_overrides.get(query.mnemonic),
                                     verdicts.current.model_overrides.get(query.mnemonic))
    except Exception as err:  # noqa: BLE001 - a replay failure is reported, not raised
        out["replay_error"] = f"{type(err).__name__}: {err}"
    return out


def _small_model(query, claim):
    """When the deciding solver gave no model: a counterexample over a small state (few
    pages, short byte strings, small meters: branches.solve_small) when there is one within
    one search's work units: readable, and quick to replay (an arbitrary model may hold
    megabytes of memory). Solved from its text, so it depends on the query alone."""
    if query.pre is None or query.mnemonic is None or query.operands:
        return None
    from proofs import branches
    return branches.solve_small(z3.And(*query.assumptions, z3.Not(claim)), query.pre,
                                query.pre.w.spec.by_mnemonic[query.mnemonic])


def _word_counterexample(model, query) -> dict:
    """A word law's operand values, replayed as the law's instruction on both sides."""
    from proofs.agreement import compare
    from proofs.words import width
    version = query.version or verdicts.current.version
    values = [model.eval(v, model_completion=True).as_long() for v in query.operands]
    arity = width(query.width, version).spec.by_mnemonic[query.mnemonic].inputs
    inputs = {"mnemonic": query.mnemonic, "width": query.width, "version": version,
              "stack": values[:arity]}
    return {"inputs": inputs, "operand_values": values,
            "differences": compare(inputs, verdicts.current.handler_overrides.get(query.mnemonic),
                                   verdicts.current.model_overrides.get(query.mnemonic))}


