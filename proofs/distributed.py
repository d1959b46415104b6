"""``rtwo-vm prove --ray local|ADDRESS`` and ``--resume DIR``: the suite's tasks on a Ray
cluster (fanout/tasks.py, the fan-out every heavy command shares), resumable.

On Ray every task of runner.plan is one Ray task: a worker process sets itself up once per
run (the run's options, the registry's theorems, the budgets, the verdict cache) and runs
``runner.run_task`` — the very function a forked local worker runs, whose rows depend on
the task alone (runner.BATCHED: tests pin that texts and rows equal those of one process per
task, in any order), so a run on Ray gives the rows of a local run, and a retried task (its
worker or node died: fanout/tasks.py) the rows it would have given the first time. A task
whose workers die every time (RETRIES + 1 attempts) becomes ERROR rows, as a local task
whose process dies.

The verdict cache (proofs/cache.py) stays on the driver's machine with its key: the driver
carries its verified entries to the workers (proofs/carried.py, put once in the cluster's
object store), each task hands back the answers it solved, and the driver seals and stores
them with its own key. So the cache works on a cluster of several machines without a shared
file system, and a worker never holds the key (whoever holds it can forge entries).

``--resume DIR`` (with or without Ray; locally one forked process per task, unbatched, so
that a resumed run loses at most the tasks running): every finished task's rows are appended to
DIR/state.jsonl sealed with the cache's local key (fanout/resume.py); a run started again
with the same DIR and options takes the verified ones and runs only the rest. A line that
does not verify is refused and its task runs again; rows with an ERROR are never kept (the
task runs again on resume). The run's digest covers the options, the code and data the
verdicts are about (report.fingerprint) and the plan.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import sys
from pathlib import Path
from typing import Callable, Iterator

from proofs import runner
from proofs.verdicts import ERROR, Options

_READY: Options | None = None


def _absolute(options: Options) -> Options:
    """``options`` with its paths absolute (a Ray worker's working directory is its own)."""
    paths = {k: os.path.abspath(getattr(options, k)) for k in
             ("export_dir", "budgets", "cache_dir", "cache_key") if getattr(options, k)}
    return dataclasses.replace(options, **paths)


def ray_task(entries: dict | None, payload: tuple) -> tuple[list[dict], dict]:
    """In a Ray worker: the rows of one task of the run ``payload[0]``, and the answers it
    solved for the driver's cache (``entries``: the driver's, None without a cache)."""
    global _READY
    options, task = payload
    from proofs import solvers
    if _READY != options:
        from proofs import carried, verdicts
        verdicts.use(options)
        runner._THEOREMS = runner.theorems(options)
        solvers.load(options.budgets)
        solvers.verdict_cache = None if entries is None else carried.CarriedCache(entries)
        if options.export_dir:
            os.makedirs(options.export_dir, exist_ok=True)
        _READY = options
    rows = runner.run_task(task)
    kept = solvers.verdict_cache
    return rows, (kept.take_new() if kept is not None else {})


def task_id(task: tuple) -> str:
    return json.dumps(task, default=str)


def run_digest(options: Options, tasks: list[tuple]) -> str:
    from proofs.report import fingerprint
    shown = {f.name: getattr(options, f.name) for f in dataclasses.fields(options)
             if f.name not in ("jobs", "cache_dir", "cache_key", "export_dir")}
    budgets = Path(options.budgets).read_bytes() if options.budgets else b""
    blob = json.dumps([shown, fingerprint(), hashlib.sha256(budgets).hexdigest(),
                       [task_id(t) for t in tasks],
                       [(th.name, th.opcode) for th in runner._THEOREMS]], default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def _state(folder: str, options: Options, tasks: list[tuple]):
    from fanout.resume import State
    from proofs import cache
    key = cache.load_key(Path(options.cache_key) if options.cache_key else cache.default_key())
    return State(folder, key, run_digest(options, tasks))


def _every(total: int, say: Callable[[str], None]) -> Callable:
    """A progress line about every twentieth of the tasks, and at every retry and the end."""
    step, last = max(1, total // 20), [-1, 0]

    def show(p) -> None:
        if p.done == p.total or p.retried != last[1] or p.done >= last[0] + step:
            say(p.line())
            last[:] = [p.done, p.retried]
    return show


def rows(tasks: list[tuple], options: Options, ray: str | None, resume: str | None,
         say: Callable[[str], None]) -> Iterator[list[dict]]:
    """The rows of every task: on Ray or in local forked processes, the finished ones of a
    resumed run taken from its state."""
    state, done = None, {}
    if resume:
        state = _state(resume, options, tasks)
        done = state.load({task_id(t) for t in tasks})
        say(f"resume: {len(done)} of {len(tasks)} tasks done before, run again "
            f"{len(tasks) - len(done)}" + (f"; {state.refused} state lines refused (not sealed "
                                            f"by this machine's key, or cut short): their tasks "
                                            f"run again" if state.refused else ""))
    for t in tasks:
        if task_id(t) in done:
            yield done[task_id(t)]
    todo = [t for t in tasks if task_id(t) not in done]
    if ray is not None:
        found = _on_ray(todo, options, ray, say)
    else:
        found = runner._forked(multiprocessing.get_context("fork"), todo, options.jobs,
                               tagged=True)
    for task, got in found:
        if state is not None and not any(r.get("status") == ERROR for r in got):
            state.record(task_id(task), got)
        yield got


def _on_ray(todo: list[tuple], options: Options, ray: str, say: Callable[[str], None]):
    """(task, rows) of every task on the cluster, the driver's cache carried to the workers
    and what they solved stored in it."""
    import functools

    from fanout.tasks import ray_map
    from proofs import cache, carried, solvers
    driver = solvers.verdict_cache if isinstance(solvers.verdict_cache, cache.VerdictCache) else None
    entries = driver.entries() if driver is not None else None
    shipped = dataclasses.replace(_absolute(options), cache_dir=None, cache_key=None)
    for i, (rows, solved) in ray_map(
            functools.partial(ray_task, entries), [(shipped, t) for t in todo], ray, options.jobs,
            progress=_every(len(todo), say),
            lost=lambda item, why: (runner.error_rows(item[1], 0.0, f"the task's worker was lost "
                                                      f"on every attempt: {why}"), {})):
        if driver is not None:
            carried.store_carried(driver, solved)
        yield todo[i], rows


def run_suite(options: Options, progress=None, ray: str | None = None,
              resume: str | None = None, say: Callable[[str], None] | None = None) -> list[dict]:
    """runner.run_suite, its tasks on Ray (``ray``) and/or resumable (``resume``)."""
    shown = say or (lambda line: print(line, file=sys.stderr, flush=True))
    return runner.run_suite(options, progress,
                            source=lambda tasks: rows(tasks, options, ray, resume, shown))
