"""Run the proof suite on a process pool (both cores by default).

Tasks: every (theorem, width) of the registry, and the agreement checks per opcode (branch
replays, hypothesis at 64 bits, exhaustive at 8 bits, CALL across frames) plus policy,
validation and lifecycle agreement (and, on request, the CrossHair supplement). Tasks run in processes forked from
the same warmed-up parent: a few to a process those whose rows do not depend on what ran
before (``BATCHED``: all but the CrossHair supplement); every proof claim is solved from
its SMT-LIB 2 text (printed from a z3 context of its own) in a fresh solver under the
deterministic budgets of ``proofs/budgets.toml``: a verdict depends on the query alone,
never on the machine's load or on the task order.

The statuses of the rows, and the options of a run, are in verdicts.py.

Counterexamples, disagreements, vacuous premises and errors fail the suite; unknown and
timeout are not failures of the model but leave the suite unproved (readiness says so).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Iterator


from proofs import claims, smtlib, solvers, verdicts

from proofs.verdicts import (  # noqa: F401 - the statuses and Options, as runner's API
    AGREES, COUNTEREXAMPLE, DISAGREES, ERROR, FAILING, INFORMATIVE, PROVED, TIMEOUT, UNDECIDED,
    UNKNOWN, VACUOUS, VERDICT_OK, Options,
)

_THEOREMS: list = []


def theorems(options: Options) -> list:
    """The theorems of the run, built under its spec version."""
    from proofs import registry, versions
    versions.check(options.version)
    if options.theorems_file:
        return [registry.bind(th, options.version) for th in registry.load_file(
            options.theorems_file, options.file_seconds, options.file_memory)]
    return registry.builtin(options.version)


def plan(options: Options, registered: list | None = None) -> list[tuple]:
    from proofs.words import width as width_of
    table = width_of(None, options.version).spec
    registered = theorems(options) if registered is None else registered
    tasks: list[tuple] = []
    names = options.names
    for index, th in enumerate(registered):
        if names is not None and th.name not in names:
            continue
        if th.opcode != "-" and not (options.opcodes is None or th.opcode in options.opcodes):
            continue
        if th.opcode == "-" and options.opcodes is not None and names is None:
            continue
        for bits in th.widths:
            if options.width is None or bits in (options.width, 0):
                tasks.append(("theorem", index, bits))
    if options.agreement and not options.theorems_file:
        width = options.width or 64
        for ins in table.instructions:
            if options.opcodes is None or ins.mnemonic in options.opcodes:
                tasks.append(("branches", ins.mnemonic, width))
                if width == 64 and options.samples:
                    tasks.append(("hypothesis", ins.mnemonic, 64))
                if ins.mnemonic in _word_ops(options.version) and options.width in (None, 8):
                    tasks.append(("exhaustive", ins.mnemonic, 8))
                if ins.mnemonic in ("CALL", "STATICCALL") and width == 64:
                    tasks.append(("frames", ins.mnemonic, 64))
        if options.opcodes is None:
            tasks += [("policy", "-", 0), ("validate", "-", 0), ("lifecycle", "-", 0)]
    if options.crosshair and options.opcodes is None and not options.theorems_file:
        tasks.append(("crosshair", "-", 64))
    if names is not None:
        tasks = [t for t in tasks if t[0] == "theorem" or f"agreement_{t[0]}" in names]
    return _grouped(tasks, registered, options)


# Generic theorems of one opcode and width that share their assumptions (a well-formed
# pre-state) are solved as one task when they share their budget profile too
# (claims.py): one script per configuration for all their claims.
GROUPED = ("stack_effect", "cost", "halts_exactly", "charges_before_effect", "meters")


def _grouped(tasks: list[tuple], registered: list, options: Options) -> list[tuple]:
    budgets = solvers.load(options.budgets)
    groups: dict[tuple, list[int]] = {}
    out: list[tuple] = []
    for task in tasks:
        th = registered[task[1]] if task[0] == "theorem" else None
        if th is None or th.name not in GROUPED or th.source != "proofs.theorems":
            out.append(task)
            continue
        key = (th.opcode, task[2], budgets.profile(th.name, th.profile, th.opcode).name)
        if key not in groups:
            groups[key] = []
            out.append(("group", key, task[2]))
        groups[key].append(task[1])
    return [("group", tuple(groups[t[1]]), t[2]) if t[0] == "group" else t for t in out]


def expected_rows(options: Options | None = None) -> set[tuple[str, str, str]]:
    """(theorem, opcode, width) of every verdict row a complete run of ``options`` reports
    (default: a full run of the newest version with models)."""
    if options is None:
        from proofs import versions
        options = Options(version=versions.newest())
    registered = theorems(options)
    out: set[tuple[str, str, str]] = set()
    for kind, key, bits in plan(options, registered):
        if kind == "crosshair":
            continue
        if kind == "group":
            out.update((registered[i].name, registered[i].opcode, str(bits)) for i in key)
            continue
        name, opcode = ((registered[key].name, registered[key].opcode) if kind == "theorem"
                        else (f"agreement_{kind}", key))
        out.add((name, str(opcode), str(bits or "-")))
    return out


def _word_ops(version: str) -> list[str]:
    from proofs.exhaustive import word_operations
    return word_operations(version)


def _row(kind, opcode, width, status, seconds, **extra) -> dict:
    return {"theorem": kind, "opcode": opcode, "width": width or "-", "status": status,
            "seconds": round(seconds, 2), **extra}


def task_texts(task: tuple) -> list[str]:
    """The SMT-LIB texts a theorem task (or group) solves: each claim's own text, then the
    script of all its claims. z3 names shared subterms by term ids, which in the main
    context depend on the terms built before in the process: the texts are printed from a
    fresh context (smtlib.fresh_solver), so they (and so the answers) do not depend on
    which tasks ran before in the process (tests pin it)."""
    kind, key, bits = task
    queries = [_THEOREMS[i].build(bits) for i in (key if kind == "group" else (key,))]
    all_claims = [c for q in queries for c in q.claims]
    texts = [smtlib.export(queries[0].assumptions, c) for c in all_claims]
    return texts + [smtlib.script(queries[0].assumptions, all_claims)]


# Tasks whose rows do not depend on what ran before them in the process: theorem tasks
# (every SMT-LIB text is printed from a z3 context of its own, smtlib.fresh_solver, and
# solved by a fresh solver), and the agreement checks on fixed concrete cases
# (derandomized hypothesis examples, every 8-bit operand, seeded random codes, fixed
# paths), compared by value, and the branch replays (their inputs are z3 models of queries
# solved from their text, branches.solve). They run BATCH_SIZE to a process (tests pin that
# texts, inputs and rows equal those of one process per task, in any order). Only the
# CrossHair supplement keeps a process of its own.
BATCHED = ("theorem", "group", "branches", "hypothesis", "exhaustive", "frames", "policy",
           "validate", "lifecycle")
BATCH_SIZE = 24


def batched(tasks: list[tuple]) -> list[tuple]:
    """``tasks`` with the BATCHED kinds gathered, in order, into ("batch", tasks, 0)."""
    single = [t for t in tasks if t[0] not in BATCHED]
    many = [t for t in tasks if t[0] in BATCHED]
    return single + [("batch", tuple(many[i:i + BATCH_SIZE]), 0)
                     for i in range(0, len(many), BATCH_SIZE)]


def _build(th, bits):
    model = verdicts.current.model_overrides.get(th.opcode)
    return th.build(bits, model) if model is not None else th.build(bits)


def run_task(task: tuple) -> list[dict]:
    """The rows of one task (one row, or a group's rows)."""
    if task[0] == "batch":
        return [row for t in task[1] for row in run_task(t)]
    return counted(_run_task, task)


def counted(work, *args) -> list[dict]:
    """``work(*args)``'s rows, the first one with how many of its solver answers came from
    the verdict cache, were solved, or were refused (proofs/cache.py), when one is used."""
    cache = solvers.verdict_cache
    if cache is not None:
        cache.take_stats()
    rows = work(*args)
    if cache is not None and rows:
        rows[0]["cache"] = cache.take_stats()
    return rows


def _run_task(task: tuple) -> list[dict]:
    kind, key, bits = task
    start = time.perf_counter()
    try:
        if kind in ("theorem", "group"):
            ths = [_THEOREMS[i] for i in (key if kind == "group" else (key,))]
            items = [(th, _build(th, bits)) for th in ths]
            if any(not _same(q.assumptions, items[0][1].assumptions) for _, q in items):
                results = [r for item in items for r in claims.check_rows([item], bits)]
            else:
                results = claims.check_rows(items, bits)
            for (_, q), (status, extra, _) in zip(items, results):
                if status == COUNTEREXAMPLE and isinstance(extra.get("counterexample"), dict):
                    _explain(q, extra)
            elapsed = time.perf_counter() - start
            # A group's time is shared by its rows in proportion to their work units.
            return [_row(th.name, th.opcode, bits, status, elapsed * share, **extra)
                    for th, (status, extra, share) in zip(ths, results)]
        return [_agreement_row(kind, key, bits, start)]
    except Exception as err:  # noqa: BLE001 - a crashing task is a failure row, not a crash
        return error_rows(task, time.perf_counter() - start, f"{type(err).__name__}: {err}")


def _explain(query, extra: dict) -> None:
    """Add the counterexample's readable part (proofs/explain.py) to a row's ``extra``: the
    refuted claim is the last one checked (the checks stop at the first refutation)."""
    from proofs.explain import explain
    cex = extra["counterexample"]
    k = extra.get("claims_checked", extra.get("claims", len(query.claims))) - 1
    try:
        handler = verdicts.current.handler_overrides.get(query.mnemonic)
        cex["explained"] = ex = explain(query, query.claims[k], cex, verdicts.current.budgets,
                                        verdicts.current.wall_seconds, handler)
        call = ex.get("call")
        if call and call["mnemonic"] == query.mnemonic:
            # A word law's input is the operands its instruction was applied to, by the
            # law's own names (not the registry's default a b c): the replay is of that.
            inputs = {"mnemonic": call["mnemonic"], "width": call["width"],
                      "version": query.version, "stack": [o["value"] for o in call["operands"]]}
            if inputs != cex.get("inputs"):
                from proofs.agreement import compare
                cex["inputs"] = inputs
                cex["differences"] = compare(inputs, handler,
                                             verdicts.current.model_overrides.get(query.mnemonic))
    except Exception as err:  # noqa: BLE001 - the verdict stands; the explanation says why not
        cex["explained"] = {"not_explained": f"{type(err).__name__}: {err}"[:300]}


def error_rows(task: tuple, elapsed: float, error: str) -> list[dict]:
    """The rows of ``task`` (every row of a batch or a group) as ERROR rows saying ``error``."""
    kind, key, bits = task
    if kind == "batch":
        return [row for t in key for row in error_rows(t, 0.0, error)]
    if kind in ("theorem", "group"):
        keys = key if kind == "group" else (key,)
        return [_row(_THEOREMS[i].name if i < len(_THEOREMS) else f"theorem #{i}",
                     _THEOREMS[i].opcode if i < len(_THEOREMS) else "-", bits, ERROR,
                     elapsed, error=error) for i in keys]
    return [_row(f"agreement_{kind}", str(key), bits, ERROR, elapsed, error=error)]


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(x.eq(y) for x, y in zip(a, b))


def _agreement_row(kind, key, bits, start) -> dict:
    """An agreement check's row, from the verdict cache when it agreed before (kept.py)."""
    from proofs import kept
    return kept.agreement_row(kind, key, bits, start, _agreement)


def _agreement(kind, key, bits, start) -> dict:
    handler = verdicts.current.handler_overrides.get(key)
    model = verdicts.current.model_overrides.get(key)
    version = verdicts.current.version
    found: list = []
    cases = 0
    if kind == "branches":
        from proofs.agreement import compare
        from proofs.branches import branch_inputs
        if verdicts.current.export_dir:
            from proofs import exports
            for name, text in exports.branch_files(key, bits, version):
                exports.write(name, text)
        for x in branch_inputs(key, bits, version):
            cases += 1
            diffs = compare(x, handler, model)
            if diffs:
                found.append({"inputs": x, "differences": diffs})
    elif kind == "hypothesis":
        from proofs import sampled
        cases = sampled.examples_for(key, verdicts.current.samples)
        found = sampled.check(key, verdicts.current.samples, version, handler, model)
    elif kind == "exhaustive":
        from proofs import exhaustive
        cases = 1 << (8 * len(exhaustive.result_term(key, version)[0]))
        found = exhaustive.check_operation(key, version, handler, model)
    elif kind == "frames":
        from proofs import frames
        cases, found = frames.check(version, handler, model, key)
    elif kind == "policy":
        from proofs import policy
        found = policy.check_agreement(version)
    elif kind == "validate":
        from proofs import validate
        cases = len(validate.agreement_codes(version, 300))
        found = validate.check_agreement(version, 300)
    elif kind == "lifecycle":
        from proofs import lifecycle
        found = lifecycle.check_interpreter_paths(version)
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
    from proofs.branches import keep_freed_memory
    from proofs.instructions import models
    keep_freed_memory()     # inherited by every forked task: z3 contexts' memory is reused
    if options.cache_dir and options.agreement:
        from proofs.kept import code_fingerprint
        code_fingerprint()  # hashed once, before the tasks fork (agreement rows' cache key)
    for bits in (8, 16, 32, 64):
        models(bits, options.version)
    solvers.load(options.budgets)
    if options.agreement:
        _word_ops(options.version)
        if options.samples:
            # hypothesis's first run in a process pays for its own set-up (derandomized:
            # the examples of every later run do not depend on it).
            from proofs import sampled
            sampled.check("NOP", 1, options.version)


def _task_child(conn, task: tuple, work) -> None:
    conn.send(work(task))
    conn.close()


def _forked(context, tasks: list[tuple], jobs: int, work=run_task, tagged: bool = False):
    """The rows of each task (``work(task)``, default run_task), run in a process of its own
    forked from this one, ``jobs`` at a time, as they finish. A process that ends without sending its rows (a crash, a kill, or a
    user's theorem calling ``os._exit``) gives ERROR rows for all of them, never a hang."""
    from multiprocessing.connection import Connection, wait
    pending = list(reversed(tasks))
    running: dict = {}                # connection -> (process, task, start)
    try:
        while pending or running:
            while pending and len(running) < jobs:
                task = pending.pop()
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_task_child, args=(send, task, work),
                                          daemon=True)
                process.start()
                send.close()
                running[receive] = (process, task, time.perf_counter())
            for ready in wait(list(running)):
                assert isinstance(ready, Connection), "only the tasks' connections are waited on"
                process, task, start = running.pop(ready)
                try:
                    done = ready.recv()
                    if done is None:
                        raise EOFError
                except Exception:  # noqa: BLE001 - EOF, or a message cut short by the process's end
                    process.join()
                    done = error_rows(task, time.perf_counter() - start,
                                      f"the task's process ended (exit code {process.exitcode}) "
                                      "before it reported its rows")
                ready.close()
                process.join()
                yield (task, done) if tagged else done
    finally:
        for conn, (process, _, _) in running.items():
            process.kill()
            process.join()
            conn.close()


def _user_tasks(tasks: list[tuple], options: Options):
    """A user's theorems file's tasks: each one's claims built in a confined child, which
    reports their SMT-LIB texts only, and proved here from what this process parsed
    (proofs/usertasks.py). The export folder is named by its absolute path."""
    import dataclasses
    from proofs import usertasks
    from proofs.machine import fresh_state
    from proofs.registry import Query, words
    from proofs.words import width as width_of
    if options.export_dir:
        verdicts.use(dataclasses.replace(options, export_dir=os.path.abspath(options.export_dir)))

    def expected(task: tuple) -> list[tuple]:
        keys = task[1] if task[0] == "group" else (task[1],)
        return [(_THEOREMS[i].name, _THEOREMS[i].opcode, task[2] or "-") for i in keys]

    def decide(*args) -> list:
        return counted(decide_rows, *args)

    def decide_rows(index: int, bits: int, assumptions: list, claims_: list,
                    shown: tuple) -> list:
        th, start = _THEOREMS[index], time.perf_counter()
        calls, named = shown[:2]
        version = verdicts.current.version
        known = bits in (8, 16, 32, 64) and th.opcode in width_of(bits, version).spec.by_mnemonic
        word_law, state_law = known and bool(calls), known and not calls and shown[2]
        query = Query(claims_, assumptions, width=bits, named=named, calls=calls,
                      mnemonic=th.opcode if word_law or state_law else None, version=version,
                      operands=tuple(words(bits, "a b c")) if word_law else (),
                      pre=fresh_state(width_of(bits, version)) if state_law else None)
        try:
            ((status, extra, _),) = claims.check_rows([(th, query)], bits)
            if status == COUNTEREXAMPLE and isinstance(extra.get("counterexample"), dict):
                _explain(query, extra)
            return [_row(th.name, th.opcode, bits, status,
                         time.perf_counter() - start, **extra)]
        except Exception as err:  # noqa: BLE001 - a crashing check is an error row
            return error_rows(("theorem", index, bits), time.perf_counter() - start,
                              f"{type(err).__name__}: {err}")
    bounds = usertasks.limits(options.file_seconds, options.file_memory, usertasks.TASK_SECONDS)

    def forked(work: list) -> Iterator[list]:
        """Each (task, solve) of ``work`` in a process forked from this one (which never ran
        the file's code), ``jobs`` at a time."""
        solve = dict(work)
        return _forked(multiprocessing.get_context("fork"), [t for t, _ in work],
                       options.jobs, lambda task: solve[task]())
    return usertasks.run(tasks, lambda t: usertasks.texts(_THEOREMS, t, _build), decide,
                         error_rows, expected, bounds, options.jobs, forked)


def run_suite(options: Options, progress=None, source=None) -> list[dict]:
    """Every row of the run. ``source(tasks)``, when given, runs the (unbatched) tasks
    instead of the local pool and yields each one's rows (proofs/distributed.py: on Ray,
    or resumable)."""
    global _THEOREMS
    verdicts.use(options)
    _THEOREMS = theorems(options)
    solvers.load(options.budgets)   # a bad budgets file fails before any task runs
    solvers.verdict_cache = None
    if options.cache_dir:           # opened here, inherited by every forked worker
        from proofs import cache
        solvers.verdict_cache = cache.open_cache(options.cache_dir, options.cache_key)
    for th in _THEOREMS:
        solvers.load(options.budgets).profile(th.name, th.profile, th.opcode)
    if options.export_dir:
        os.makedirs(options.export_dir, exist_ok=True)
    # Heavy tasks first so the workers finish together.
    weight = {"hypothesis": 5, "crosshair": 9, "branches": 4, "validate": 3, "group": 4}

    def heavy(t: tuple) -> int:
        if t[0] == "batch":
            return sum(heavy(u) for u in t[1])
        return weight.get(t[0], 1) + (3 if t[1] == "CALL" else 0)
    tasks = sorted(plan(options, _THEOREMS), key=lambda t: -heavy(t))
    if not options.theorems_file and source is None:   # a user's tasks: one to a confined child
        tasks = batched(tasks)
        tasks.sort(key=lambda t: -heavy(t))
    _warm(options)
    rows = []
    context = multiprocessing.get_context("fork")
    # One fresh process per task or batch (maxtasksperchild=1).
    def rows_of(t: tuple) -> int:
        if t[0] == "batch":
            return sum(rows_of(u) for u in t[1])
        return len(t[1]) if t[0] == "group" else 1
    total = sum(rows_of(t) for t in tasks)
    try:
        for done in (source(tasks) if source is not None
                     else _user_tasks(tasks, options) if options.theorems_file
                     else _forked(context, tasks, options.jobs)):
            for row in done:
                rows.append(row)
                if progress:
                    progress(len(rows), total, row)
    finally:
        solvers.verdict_cache = None
    rows.sort(key=lambda r: (r["theorem"].startswith("agreement"), str(r["opcode"]),
                             r["theorem"], str(r["width"])))
    return rows
