"""Where the queries of a symbolic run are solved: ``Spread``.

The driver explores, then asks ``Solver.prefetch`` to solve a batch of independent queries
(the first query of every path's witness, of every path's claims) before it walks them in
path order. ``Spread`` solves such a batch: in the driver itself (``jobs`` 1, no Ray: then
nothing is solved ahead, each query when the walk reaches it), in ``jobs`` local worker
processes, or as Ray tasks (``ray``: 'local' or a cluster's address, the fuzzer's backend,
``fanout.tasks``). Every query is ``apart.solve`` of its text in a fresh context, so the
answers are the same wherever they were solved; a worker or node lost mid-batch has its
tasks run again (``fanout.tasks.ray_map``).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable

from concurrent.futures.process import BrokenProcessPool

from proofs.symbolic import apart

RETRIES = 3                                  # as fanout.tasks: a lost query runs again


class LostQueries(RuntimeError):
    """A batch's queries could not be solved: workers kept dying (one line)."""


@dataclass
class Spread:
    jobs: int = 1
    ray: str | None = None
    task: Callable = apart.solve_item       # tests plant a worker that dies
    say: Callable[[str], None] | None = None
    solved: int = 0                          # queries solved ahead, over the run
    retried: int = 0
    per_node: dict = field(default_factory=dict)
    _pool: Any = None                        # the local worker processes, made once

    def close(self) -> None:
        """Stop the local worker processes (none are left behind)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()               # a worker still solving is not waited for
            pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "Spread":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def ahead(self) -> bool:
        """Whether batches are solved ahead of the walk (elsewhere than in the driver)."""
        return self.ray is not None or self.jobs > 1

    def solve_all(self, items: list) -> list:
        """``task(item)`` for every ``(query, limits)`` item, in item order."""
        if not items:
            return []
        if self.ray is not None:
            return self._on_ray(items)
        out: list = [None] * len(items)
        todo = list(range(len(items)))
        for attempt in range(RETRIES + 1):
            pool = self._local_pool()
            futures = {pool.submit(self.task, items[i]): i for i in todo}
            broken = []
            for future, i in futures.items():
                try:
                    out[i] = future.result()
                except BrokenProcessPool:     # a worker process died: its queries run again
                    broken.append(i)
            if not broken:
                break
            self.close()
            if attempt == RETRIES:
                raise LostQueries(f"a worker process died {RETRIES + 1} times solving a "
                                  "batch of queries")
            self.retried += len(broken)
            todo = broken
        self.solved += len(out)
        if self.say is not None:
            self.say(f"workers: {len(out)}/{len(out)} queries done, {self.retried} retried "
                     f"({self.solved} this run)")
        return out

    def _local_pool(self):
        if self._pool is None:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor
            context = multiprocessing.get_context("forkserver" if sys.platform != "win32"
                                                  else "spawn")
            self._pool = ProcessPoolExecutor(self.jobs, mp_context=context)
        return self._pool

    def _on_ray(self, items: list) -> list:
        from fanout.tasks import ray_map
        out: list = [None] * len(items)
        base = dict(self.per_node)
        retried = self.retried

        def progress(p) -> None:
            self.retried = retried + p.retried
            self.per_node = {n: base.get(n, 0) + p.per_node.get(n, 0)
                             for n in set(base) | set(p.per_node)}
            if self.say is not None and (p.done == p.total or p.done % 50 == 0):
                self.say(p.line("queries"))

        assert self.ray is not None
        for index, answer in ray_map(self.task, items, self.ray, max(1, self.jobs), progress):
            out[index] = answer
        self.solved += len(out)
        return out
