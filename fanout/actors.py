"""Where stateful work runs: in this process, in local worker processes, or on Ray actors — behind one
small map-like API, reusable by any campaign (fuzzing here; mutation testing later).

    backend = make_backend(factory, args, workers=2, ray=None | "local" | "ray://host:10001")
    results = backend.map(tasks)        # worker.run(task) for each task, results in task order
    backend.broadcast(message)          # worker.update(message) on every worker, before later tasks
    backend.close()

``factory(index, *args)`` builds a worker object with ``run(task)``, optionally ``update(message)``
and ``close()``; it must be a module-level function (local processes and Ray actors import it
by name). A worker is stateful and long-lived: it owns its own resources (adapter processes),
which it releases in ``close``. Tasks and results are plain picklable data.

Local workers are ``multiprocessing`` processes started with ``spawn`` (no inherited state);
with one worker everything runs in this process. On Ray each worker is an actor (one CPU);
``ray="local"`` starts a private single-node cluster bound to 127.0.0.1 and stops it on
close, any other value is the address of an existing cluster to join (``ray.init(address=...)``).
"""

from __future__ import annotations

import multiprocessing
import traceback
from multiprocessing.connection import Connection, wait
from typing import Any, Callable, Sequence

from fanout.ray_setup import RayUnavailable, connect, disconnect


class BackendError(Exception):
    """A worker failed to start or to run a task: a one-line message naming it and its cause,
    and ``detail``, the worker's traceback when there is one."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def _cause(text: str) -> str:
    """The last line of a traceback or of an error text: where the cause is named."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else "no detail"


class InProcess:
    def __init__(self, factory: Callable, args: tuple, workers: int = 1):
        try:
            self.worker = factory(0, *args)
        except Exception as err:  # noqa: BLE001
            raise BackendError(f"worker 0 did not start: {err}") from err
        self.workers = 1

    def map(self, tasks: Sequence[Any]) -> list[Any]:
        return [self.worker.run(t) for t in tasks]

    def broadcast(self, message: Any) -> None:
        if hasattr(self.worker, "update"):
            try:
                self.worker.update(message)
            except Exception as err:  # noqa: BLE001 - as a worker process reports it
                raise BackendError(f"worker 0 failed: {type(err).__name__}: {err}"[:500],
                                   traceback.format_exc()) from None

    def call(self, method: str) -> list[Any]:
        return [getattr(self.worker, method)()]

    def close(self) -> None:
        if hasattr(self.worker, "close"):
            self.worker.close()


def _serve(conn, factory, index, args) -> None:
    try:
        worker = factory(index, *args)
        conn.send(("ready", None))
    except Exception as err:  # noqa: BLE001
        conn.send(("error", f"worker {index} did not start: {err}"))
        return
    try:
        while True:
            try:
                kind, payload = conn.recv()
            except EOFError:
                break
            if kind == "close":
                break
            try:
                if kind == "run":
                    conn.send(("ok", worker.run(payload)))
                elif kind == "update":
                    if hasattr(worker, "update"):
                        worker.update(payload)
                elif kind == "call":
                    conn.send(("ok", getattr(worker, payload)()))
            except Exception:  # noqa: BLE001 - report, then stop
                conn.send(("error", traceback.format_exc(limit=8)))
                break
    finally:
        if hasattr(worker, "close"):
            worker.close()
        conn.close()


class LocalProcesses:
    def __init__(self, factory: Callable, args: tuple, workers: int):
        ctx = multiprocessing.get_context("spawn")
        self.conns, self.procs = [], []
        self.workers = workers
        for i in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_serve, args=(child, factory, i, args), daemon=True)
            proc.start()
            child.close()
            self.conns.append(parent)
            self.procs.append(proc)
        try:
            for i, _conn in enumerate(self.conns):
                kind, payload = self._recv(i)
                if kind != "ready":
                    raise BackendError(payload)
        except BaseException:
            self.close()
            raise

    def _recv(self, i: int):
        try:
            return self.conns[i].recv()
        except (EOFError, OSError):
            self.procs[i].join(timeout=5)          # reaped, so that its exit code is known
            code = self.procs[i].exitcode
            raise BackendError(f"worker {i} exited unexpectedly (exit code {code})") from None

    def map(self, tasks: Sequence[Any]) -> list[Any]:
        results: list[Any] = [None] * len(tasks)
        pending = list(range(len(tasks)))[::-1]
        busy: dict[int, int] = {}
        for i in range(self.workers):
            if pending:
                t = pending.pop()
                self.conns[i].send(("run", tasks[t]))
                busy[i] = t
        while busy:
            ready = wait([self.conns[i] for i in busy])
            for conn in ready:
                assert isinstance(conn, Connection)     # only the workers' pipes are waited on
                i = self.conns.index(conn)
                kind, payload = self._recv(i)
                if kind != "ok":
                    raise BackendError(f"worker {i} failed: {_cause(payload)}", str(payload))
                results[busy.pop(i)] = payload
                if pending:
                    t = pending.pop()
                    conn.send(("run", tasks[t]))
                    busy[i] = t
        return results

    def broadcast(self, message: Any) -> None:
        for conn in self.conns:
            conn.send(("update", message))

    def call(self, method: str) -> list[Any]:
        out = []
        for i, conn in enumerate(self.conns):
            conn.send(("call", method))
            kind, payload = self._recv(i)
            if kind != "ok":
                raise BackendError(f"worker {i} failed: {_cause(payload)}", str(payload))
            out.append(payload)
        return out

    def close(self) -> None:
        for conn in self.conns:
            try:
                conn.send(("close", None))
            except (OSError, BrokenPipeError):
                pass
        for proc in self.procs:
            proc.join(timeout=15)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5)
        for conn in self.conns:
            conn.close()
        self.conns, self.procs = [], []


class _Actor:
    """The Ray actor around one worker (wrapped with ray.remote when Ray is used)."""

    def __init__(self, factory, index, args):
        self.worker = factory(index, *args)

    def run(self, task):
        return self.worker.run(task)

    def update(self, message):
        if hasattr(self.worker, "update"):
            self.worker.update(message)

    def call(self, method):
        return getattr(self.worker, method)()

    def close(self):
        if hasattr(self.worker, "close"):
            self.worker.close()


def ray_available() -> bool:
    from fanout.ray_setup import available
    return available()


class RayActors:
    def __init__(self, factory: Callable, args: tuple, workers: int, address: str = "local"):
        try:
            import ray
        except ImportError:
            raise BackendError("--ray needs Ray: pip install 'rtwo-vm[distributed]'") from None
        self.ray = ray
        self.started = False
        self.actors: list[Any] = []
        try:
            self.started = connect(address, workers)
            remote = ray.remote(num_cpus=1)(_Actor)
            self.actors = [remote.remote(factory, i, args) for i in range(workers)]
            ray.get([a.update.remote({}) for a in self.actors])   # wait until every actor is up
        except BackendError:
            raise
        except RayUnavailable as err:
            raise BackendError(str(err)) from None
        except Exception as err:  # noqa: BLE001 - connection errors, actor start failures
            self.close()
            raise BackendError(f"Ray: {err}".splitlines()[0]) from None
        self.workers = workers

    def _get(self, refs):
        try:
            return self.ray.get(refs)
        except Exception as err:  # noqa: BLE001 - a task or actor died
            text = str(err)
            first = text.strip().splitlines()[0][:200] if text.strip() else type(err).__name__
            raise BackendError(f"Ray worker failed: {first}: {_cause(text)}", text[-8000:]) from None

    def map(self, tasks: Sequence[Any]) -> list[Any]:
        refs = [self.actors[i % len(self.actors)].run.remote(t) for i, t in enumerate(tasks)]
        return self._get(refs)

    def broadcast(self, message: Any) -> None:
        ref = self.ray.put(message)
        for a in self.actors:
            a.update.remote(ref)

    def call(self, method: str) -> list[Any]:
        return self._get([a.call.remote(method) for a in self.actors])

    def close(self) -> None:
        ray = self.ray
        for a in getattr(self, "actors", []):
            try:
                ray.get(a.close.remote(), timeout=30)
            except Exception:  # noqa: BLE001
                pass
            try:
                ray.kill(a)
            except Exception:  # noqa: BLE001
                pass
        self.actors = []
        disconnect(self.started)
        self.started = False


def make_backend(factory: Callable, args: tuple = (), workers: int = 1, ray: str | None = None):
    """The backend for ``workers`` workers: Ray actors when ``ray`` is given, local processes
    for two or more workers, this process for one."""
    if ray:
        return RayActors(factory, args, workers, ray)
    if workers <= 1:
        return InProcess(factory, args)
    return LocalProcesses(factory, args, workers)


class _Apply:
    """A worker that applies one picklable function to each task (for map_tasks)."""

    def __init__(self, index: int, function: Callable):
        self.function = function

    def run(self, task: Any) -> Any:
        return self.function(task)


def map_tasks(function: Callable, items: Sequence[Any], workers: int, ray: str = "local") -> list[Any]:
    """``[function(item) for item in items]`` on ``workers`` Ray actors (a local cluster by
    default, or the cluster at ``ray``): the backend other campaigns share (strength runs)."""
    backend = RayActors(_Apply, (function,), workers, ray)
    try:
        return backend.map(list(items))
    finally:
        backend.close()
