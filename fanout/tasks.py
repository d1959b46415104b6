"""Independent tasks on a Ray cluster, with retries and progress: ``ray_map``.

    for index, result in ray_map(function, items, address="local", cpus=2, progress=show):
        ...                                  # function(items[index]), as each one finishes

Each item is one Ray task (one CPU) running ``function(item)`` in a worker process of some
node. ``function`` must be importable by the workers (a module-level function of the
project; a closure travels by value) and so must its items and results (plain data).

Faults change nothing. A task whose worker process dies (killed, ``os._exit``, out of
memory) or whose node dies is submitted again, up to ``RETRIES`` more times, on whatever
node is alive; its result is the one of the attempt that finished, and a task's result
depends on its item alone (the callers' tasks are deterministic), so a retry cannot change
a verdict. Ray's own retries are off (``max_retries=0``): the driver counts every retry
and shows it. A task that still has no result after every attempt is given to ``lost(item,
reason)`` (the caller turns it into an error verdict) or, without ``lost``, ends the run
with ``RayUnavailable``. An exception raised by ``function`` itself is not a fault of the
cluster: it is not retried, it ends the run (the callers' functions report their own
errors as results).

Progress: ``progress(Progress)`` after every finished task: tasks done of total, retried,
and done per node (the first 8 hex digits of the node id).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

from fanout.ray_setup import NEEDS_RAY, RayUnavailable, connect, disconnect

RETRIES = 3


@dataclass
class Progress:
    total: int
    done: int = 0
    retried: int = 0
    per_node: dict[str, int] = field(default_factory=dict)

    def line(self, what: str = "tasks") -> str:
        nodes = ", ".join(f"{n}: {c}" for n, c in sorted(self.per_node.items()))
        return (f"ray: {self.done}/{self.total} {what} done, {self.retried} retried"
                + (f"; per node {nodes}" if nodes else ""))


def _run(function: Callable, item: Any) -> tuple[str, Any]:
    """In the worker: the node it ran on, and the result."""
    import ray
    return ray.get_runtime_context().get_node_id()[:8], function(item)


def _faults():
    """The exceptions that mean the cluster lost the task (not the function's own error)."""
    from ray import exceptions as e
    names = ("WorkerCrashedError", "NodeDiedError", "ObjectLostError", "OwnerDiedError",
             "LocalRayletDiedError", "ObjectReconstructionFailedError", "TaskCancelledError")
    return tuple(getattr(e, n) for n in names if hasattr(e, n))


def ray_map(function: Callable, items: Sequence[Any], address: str = "local", cpus: int = 2,
            progress: Callable[[Progress], None] | None = None,
            lost: Callable[[Any, str], Any] | None = None,
            retries: int = RETRIES) -> Iterator[tuple[int, Any]]:
    """(index, function(items[index])) for every item, in the order they finish. While it
    runs, stdout is stderr: Ray's driver threads print the cluster's own messages (a worker
    or node lost) there, and a command's stdout is its report. A cluster this call joined
    is left when it ends (a private one stopped), so that no message comes later."""
    items = list(items)
    try:
        import ray
    except ImportError:
        raise RayUnavailable(NEEDS_RAY) from None
    joined = not ray.is_initialized()
    quiet = contextlib.redirect_stdout(sys.stderr)
    quiet.__enter__()
    try:
        started = connect(address, cpus)
    except BaseException:
        quiet.__exit__(None, None, None)
        raise
    try:
        faults = _faults()
        remote = ray.remote(num_cpus=1, max_retries=0)(_run)
        shared = ray.put(function)
        state = Progress(len(items))
        pending: dict[Any, tuple[int, int]] = {}       # ref -> (index, attempt)
        for index, item in enumerate(items):
            pending[remote.remote(shared, item)] = (index, 0)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            ref = ready[0]
            index, attempt = pending.pop(ref)
            try:
                node, result = ray.get(ref)
            except faults as err:
                reason = f"{type(err).__name__}: {str(err).strip().splitlines()[0][:200]}" \
                    if str(err).strip() else type(err).__name__
                if attempt < retries:
                    state.retried += 1
                    pending[remote.remote(shared, items[index])] = (index, attempt + 1)
                    if progress:
                        progress(state)
                    continue
                if lost is None:
                    raise RayUnavailable(f"Ray: task {index} lost {attempt + 1} times: {reason}") \
                        from None
                node, result = "lost", lost(items[index], reason)
            except ray.exceptions.RayTaskError as err:
                cause = str(err).strip().splitlines()
                raise RayUnavailable(f"Ray: task {index} failed: {cause[-1][:300] if cause else err}") \
                    from None
            state.done += 1
            state.per_node[node] = state.per_node.get(node, 0) + 1
            if progress:
                progress(state)
            yield index, result
    finally:
        try:
            if joined and not started:
                ray.shutdown()
            disconnect(started)
        finally:
            quiet.__exit__(None, None, None)


def ordered(function: Callable, items: Sequence[Any], address: str = "local", cpus: int = 2,
            progress: Callable[[Progress], None] | None = None,
            lost: Callable[[Any, str], Any] | None = None) -> list[Any]:
    """``[function(item) for item in items]`` on the cluster (ray_map, results in item order)."""
    out: list[Any] = [None] * len(items)
    for index, result in ray_map(function, items, address, cpus, progress, lost):
        out[index] = result
    return out
