"""A pool of ``Runtime`` objects over the server's database, one per request at a time.

Route functions are plain (``def``) functions, which the ASGI server runs on its thread pool.
A request checks a runtime out of the pool (opening a new connection when none is idle),
uses it alone, and gives it back; a runtime is never used by two requests at once (an
SQLite connection carries one transaction). The server closes them all at shutdown. The CLI
can use the same database at the same time: WAL mode, and every write is one transaction
(rtwo_vm/runtime/store.py).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Iterator

from fastapi import Request

from rtwo_vm.runtime import Runtime

MAX_IDLE = 16   # idle connections kept; more are opened under load and closed when returned


class Runtimes:
    """Runtimes over ``path``: ``take`` one, ``give`` it back. ``data_dir``: the data directory
    each runtime's readiness reads its evidence from (rtwo_vm/arguments/evidence.py; None:
    none, and readiness says so)."""

    def __init__(self, path: str | Path, data_dir: Path | None = None):
        self.path = str(path)
        self.data_dir = data_dir
        self._lock = threading.Lock()
        self._idle: list[Runtime] = []
        self._closed = False

    def take(self) -> Runtime:
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            if self._idle:
                return self._idle.pop()
        return Runtime(self.path, create=True, data_dir=self.data_dir)

    def give(self, rt: Runtime) -> None:
        with self._lock:
            if not self._closed and len(self._idle) < MAX_IDLE:
                self._idle.append(rt)
                return
        rt.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle, self._closed = self._idle, [], True
        for rt in idle:
            rt.close()


def runtime(request: Request) -> Iterator[Runtime]:
    """The route dependency: a runtime of the application's database, for this request only."""
    pool: Runtimes = request.app.state.runtimes
    rt = pool.take()
    try:
        yield rt
    finally:
        pool.give(rt)
