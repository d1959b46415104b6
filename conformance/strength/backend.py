"""The parallel map of a strength run: ``local`` (processes on this machine) or ``ray``.

``local`` forks one child per mutant from the parent, which has loaded the corpus once, so a
child starts in milliseconds, and the mutant dies with its child. ``ray`` runs each mutant as
a task of the fuzzer's Ray backend (conformance/fuzz/backend.py, issue 11) in a fresh
interpreter (``python -m conformance.strength.worker``); it needs Ray (the ``distributed``
extra).
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


def ray_map(tasks: Iterable[dict], workers: int) -> Iterator:
    """Each task (conformance.strength.worker.task) run by worker.run_subprocess as a task of
    the fuzzer's Ray backend: ``conformance.fuzz.backend.map_tasks(function, items, workers)``."""
    from conformance.fuzz.backend import BackendError, map_tasks
    from conformance.strength.worker import run_subprocess
    try:
        yield from map_tasks(run_subprocess, list(tasks), workers)
    except BackendError as err:
        raise BackendUnavailable(str(err)) from None


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
