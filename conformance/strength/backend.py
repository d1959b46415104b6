"""The parallel map of a strength run: ``local`` (processes on this machine) or ``ray``.

``local`` forks one child per mutant from the parent, which has loaded the corpus once, so a
child starts in milliseconds, and the mutant dies with its child. ``ray`` runs each mutant as
a task of the shared fan-out (fanout/tasks.py, which ``prove --ray`` uses too: a task whose
worker or node dies runs again) in a fresh interpreter (``python -m
conformance.strength.worker``), on a private local cluster or the one at ``--ray ADDRESS``;
it needs Ray (the ``distributed`` extra).
"""

from __future__ import annotations

import multiprocessing
import os
from typing import Callable, Iterable, Iterator

BACKENDS = ("local", "ray")


class BackendUnavailable(RuntimeError):
    pass


def local_map(fn: Callable, items: Iterable, workers: int) -> Iterator:
    """fn over items in forked children, one child per item, results in input order."""
    items = list(items)
    if workers <= 1 or len(items) <= 1:
        context = multiprocessing.get_context("fork")
        for item in items:  # still one child per item: a mutant must not outlive its task
            with context.Pool(1, maxtasksperchild=1) as pool:
                yield pool.apply(fn, (item,))
        return
    with multiprocessing.get_context("fork").Pool(workers, maxtasksperchild=1) as pool:
        yield from pool.imap(fn, items)


def ray_map(tasks: Iterable[dict], workers: int, address: str = "local") -> Iterator:
    """Each task (conformance.strength.worker.task) run by worker.run_subprocess as a task of
    the shared fan-out (fanout.tasks.ordered), results in input order; progress on stderr."""
    import sys

    from conformance.strength.worker import run_subprocess
    from fanout.ray_setup import RayUnavailable
    from fanout.tasks import ordered
    try:
        yield from ordered(run_subprocess, list(tasks), address, workers,
                           progress=lambda p: print(p.line("mutants"), file=sys.stderr, flush=True))
    except RayUnavailable as err:
        raise BackendUnavailable(str(err)) from None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
