"""Readiness and the instruction registry, computed off the request path.

The readiness service runs every check on demand (rtwo_vm/runtime/readiness.py): measured
0.9 s on an idle machine, most of it replaying the conformance corpus (budget 60 s), and
seconds under load; the instruction registry probes the proofs and conformance packages
(0.15 s). A page cannot wait for that, so one background thread computes both at startup
and again when a page asks for a snapshot older than ``MAX_AGE``; pages show the latest
snapshot with the time it was computed and how long it took, or say that it is being
computed. At most one computation runs at a time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone

from rtwo_vm.runtime.models import RTWORuntimeInstruction
from rtwo_vm.runtime.readiness import ReadinessReport
from rtwo_vm.server.runtimes import Runtimes

MAX_AGE = 300.0   # seconds after which a page's request starts a new computation


@dataclass(frozen=True)
class Snapshot:
    readiness: ReadinessReport | None
    readiness_error: str | None
    instructions: tuple[RTWORuntimeInstruction, ...]
    instruction_evidence: dict[str, str]
    computed_at: str          # when the computation finished (UTC, ISO 8601)
    seconds: float            # how long it took
    finished: float           # time.monotonic() at the end


class Background:
    """The latest snapshot over the pool's database, and the thread that computes it."""

    def __init__(self, runtimes: Runtimes):
        self._runtimes = runtimes
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started_at: str | None = None
        self.snapshot: Snapshot | None = None

    @property
    def computing_since(self) -> str | None:
        """When the running computation started (None: none is running)."""
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            return self._started_at if running else None

    def refresh(self, *, if_older_than: float | None = MAX_AGE) -> None:
        """Start a computation unless one is running or the snapshot is fresh enough."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            snap = self.snapshot
            if (snap is not None and if_older_than is not None
                    and time.monotonic() - snap.finished < if_older_than):
                return
            self._started_at = _now()
            self._thread = threading.Thread(target=self._compute, name="dashboard-readiness",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait for the running computation (tests); True when none is running after it."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _compute(self) -> None:
        started = time.monotonic()
        report, error = None, None
        try:
            rt = self._runtimes.take()
        except RuntimeError as err:   # the server is shutting down
            error = str(err)
        else:
            try:
                report = rt.readiness.run()
            except Exception as err:  # noqa: BLE001 - shown on the page, never a guess
                error = f"{type(err).__name__}: {err}"
            finally:
                self._runtimes.give(rt)
        from rtwo_vm.runtime.registry import RuntimeInstructionRegistry
        registry = RuntimeInstructionRegistry()
        try:
            instructions = tuple(registry.list())
        except Exception as err:  # noqa: BLE001
            instructions = ()
            registry.last_evidence = {"registry": f"failed: {type(err).__name__}: {err}"}
        ended = time.monotonic()
        self.snapshot = Snapshot(report, error, instructions, dict(registry.last_evidence),
                                 _now(), ended - started, ended)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
