"""Run the proof suite on a process pool (both cores by default).

Tasks: every (theorem, width) of the registry, and the agreement checks per opcode (branch
replays, hypothesis at 64 bits, exhaustive at 8 bits) plus policy, validation and lifecycle
agreement and the CrossHair supplement. Each proof claim is exported to SMT-LIB before z3
checks it, then re-checked by the second solver. Statuses:

- proved: z3 answered unsat for every claim (a timeout or unknown is never 'proved');
- counterexample: z3 found a model; its inputs are replayed on the interpreter and printed;
- unknown: z3 gave up or timed out on some claim (not proved, not a failure);
- agrees / disagrees: an agreement check. A second solver answering otherwise than z3 on a
  decided claim is a disagreement. Counterexamples and disagreements fail the suite.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field

import z3

from proofs import smtlib

PROVED, COUNTEREXAMPLE, UNKNOWN = "proved", "counterexample", "unknown"
AGREES, DISAGREES = "agrees", "disagrees"
# A task that crashed (a bug in the suite or a missing dependency): neither proof nor refutation.
ERROR = "error"
FAILING = (COUNTEREXAMPLE, DISAGREES, ERROR)


@dataclass
class Options:
    opcodes: tuple[str, ...] | None = None   # None: every opcode
    width: int | None = None                 # None: every width each theorem lists
    solver: str = "cvc5"                     # the second solver, or "z3" for none
    export_dir: str | None = None
    jobs: int = 2
    timeout_ms: int = 10_000
    samples: int = 8                         # hypothesis examples per opcode
    agreement: bool = True
    crosshair: bool = True
    model_overrides: dict = field(default_factory=dict)    # mnemonic -> model (tests)
    handler_overrides: dict = field(default_factory=dict)  # mnemonic -> handler (tests)


_OPTIONS = Options()  # set before the pool forks, read by the workers


def _wanted(opcode: str) -> bool:
    return _OPTIONS.opcodes is None or opcode in _OPTIONS.opcodes


def plan(options: Options) -> list[tuple]:
    from proofs.theorems import registry
    from proofs.words import SPEC
    tasks = []
    for index, th in enumerate(registry()):
        if th.opcode != "-" and not (options.opcodes is None or th.opcode in options.opcodes):
            continue
        if th.opcode == "-" and options.opcodes is not None:
            continue
        for bits in th.widths:
            if options.width is None or bits in (options.width, 0):
                tasks.append(("theorem", index, bits))
    if options.agreement:
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
            if options.crosshair:
                tasks.append(("crosshair", "-", 64))
    return tasks


def _word_ops() -> list[str]:
    from proofs.exhaustive import word_operations
    return word_operations()


def _row(kind, opcode, width, status, seconds, **extra) -> dict:
    return {"theorem": kind, "opcode": opcode, "width": width or "-", "status": status,
            "seconds": round(seconds, 2), **extra}


def _check_claims(th, bits, query) -> dict:
    second = _OPTIONS.solver if _OPTIONS.solver != "z3" else None
    statuses, second_statuses, cex = [], [], None
    for k, claim in enumerate(query.claims):
        text = smtlib.export(query.assumptions, claim)   # exported before z3 checks it
        if _OPTIONS.export_dir:
            name = f"{th.name}__{th.opcode}__w{bits}__{k:03d}.smt2".replace("-", "all")
            with open(os.path.join(_OPTIONS.export_dir, name), "w") as f:
                f.write(text)
        solver = z3.Solver()
        solver.set("timeout", _OPTIONS.timeout_ms)
        solver.add(*query.assumptions)
        solver.add(z3.Not(claim))
        answer = str(solver.check())
        statuses.append(answer)
        if answer == "sat" and cex is None:
            cex = _counterexample(solver.model(), query)
        if second:
            second_statuses.append(smtlib.check_second(second, text, _OPTIONS.timeout_ms))
    z3_status = (COUNTEREXAMPLE if "sat" in statuses else
                 PROVED if all(s == "unsat" for s in statuses) else UNKNOWN)
    disagreements = [k for k, (a, b) in enumerate(zip(statuses, second_statuses))
                     if {a, b} == {"sat", "unsat"}]
    extra = {"claims": len(statuses), "note": th.note}
    if second:
        extra["second_solver"] = second
        extra["second_status"] = (DISAGREES if disagreements else AGREES if all(
            s == a for s, a in zip(second_statuses, statuses)) else UNKNOWN)
        if disagreements:
            extra["disagreeing_claims"] = disagreements
    if cex is not None:
        extra["counterexample"] = cex
    status = z3_status
    if disagreements and status != COUNTEREXAMPLE:
        status = DISAGREES
    return status, extra


def _counterexample(model, query) -> dict:
    """Concrete inputs of a z3 model, replayed on the interpreter (and on the model)."""
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


def run_task(task: tuple) -> dict:
    kind, key, bits = task
    start = time.perf_counter()
    try:
        if kind == "theorem":
            from proofs.theorems import registry
            th = registry()[key]
            model = _OPTIONS.model_overrides.get(th.opcode)
            query = th.build(bits, model) if model is not None else th.build(bits)
            status, extra = _check_claims(th, bits, query)
            return _row(th.name, th.opcode, bits, status, time.perf_counter() - start, **extra)
        return _agreement(kind, key, bits, start)
    except Exception as err:  # noqa: BLE001 - a crashing task is a failure row, not a crash
        name = f"agreement_{kind}" if kind != "theorem" else f"theorem #{key}"
        return _row(name, str(key), bits, ERROR, time.perf_counter() - start,
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
    status = DISAGREES if found else AGREES
    return _row(f"agreement_{kind}", key, bits, status, time.perf_counter() - start,
                cases=cases, findings=found[:3])


def run_suite(options: Options, progress=None) -> list[dict]:
    global _OPTIONS
    _OPTIONS = options
    if options.export_dir:
        os.makedirs(options.export_dir, exist_ok=True)
    tasks = plan(options)
    # Heavy tasks first so the two workers finish together.
    weight = {"hypothesis": 5, "crosshair": 9, "branches": 4, "validate": 3}
    tasks.sort(key=lambda t: -(weight.get(t[0], 1) + (3 if t[1] == "CALL" else 0)))
    rows = []
    if options.jobs <= 1:
        for k, task in enumerate(tasks):
            rows.append(run_task(task))
            if progress:
                progress(k + 1, len(tasks), rows[-1])
    else:
        context = multiprocessing.get_context("fork")
        with context.Pool(options.jobs) as pool:
            for k, row in enumerate(pool.imap_unordered(run_task, tasks)):
                rows.append(row)
                if progress:
                    progress(k + 1, len(tasks), row)
    rows.sort(key=lambda r: (r["theorem"].startswith("agreement"), str(r["opcode"]),
                             r["theorem"], str(r["width"])))
    return rows
