"""What the API and the dashboard both need but a request cannot wait for: one of each per
process, shared through ``app.state`` (``create_app`` makes them; api/ and dashboard/ read them,
neither imports the other).

    app.state.readiness      ReadinessCache: the readiness report, computed in the background
    app.state.instructions   InstructionsCache: the instruction registry's computed statuses

Readiness runs the example scenarios and replays the conformance vectors: about a second on an
idle machine, several under load, and the database check reads every context. ``rtwo-vm
serve`` starts the first computation before it serves; after that a reader that finds the
report missing or older than ``max_age`` (api.toml ``bounds.readiness_max_age_seconds``)
starts a new one in the background and is answered with the latest report meanwhile, and
:meth:`ReadinessCache.recompute` (the dashboard's "recompute now" button, ``POST
/api/v1/readiness/recompute``) starts one at once: if one is running, another follows it, so
that the report after it was computed after the request. At most one computation runs at a
time, so asking again costs nothing more. Each report is kept with the time it was computed
(wall clock and age, shown as "computed 3 min ago"): presentation only, never part of a
verdict. Pages never run the checks themselves, so a page costs the same at any size of the
database (the database check reads every context).

The instruction registry probes the proofs and conformance packages (0.1-0.2 s): computed on
the first read and again on a read that finds it older than ``INSTRUCTIONS_MAX_AGE``, by that
reader while any others wait for it (one computation at a time, no thread).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.models import RTWORuntimeInstruction
from rtwo_vm.runtime.readiness import ReadinessReport, evidence_from

log = logging.getLogger("rtwo_vm.server")

INSTRUCTIONS_MAX_AGE = 60.0   # seconds a computed instruction registry is served


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ReadinessView:
    """What a reader sees of the readiness cache at one moment."""

    report: ReadinessReport | None    # the latest report (None: none computed yet)
    seconds: float | None             # how long computing it took
    error: str | None                 # why the last computation failed (None: it did not)
    computing_since: str | None       # when the running computation started (None: none runs)
    max_age: float
    version: int                      # changes when a computation starts or ends
    computed_at: str | None = None    # UTC when the report was computed (presentation only)
    age: float | None = None          # seconds since then (presentation only)


class ReadinessCache:
    """The latest report of the readiness checks over the server's database, their evidence
    read from ``data_dir`` (the server's data directory; None: none given, and the proof check
    says so). ``evidence_from`` says where, as the CLI's ``readiness --json`` does."""

    def __init__(self, db: str | Path, max_age: float, data_dir: Path | None = None):
        self.db = str(db)
        self.max_age = max_age
        self.data_dir = data_dir
        self.evidence_from = evidence_from(data_dir)
        self._lock = threading.Lock()
        self._report: ReadinessReport | None = None
        self._done_at = 0.0
        self._done_wall: str | None = None
        self._again = False            # a recompute asked for while one was running
        self._seconds: float | None = None
        self._error: str | None = None
        self._started_at: str | None = None
        self._thread: threading.Thread | None = None
        self._version = 0

    @property
    def version(self) -> int:
        """A number that changes when a computation starts or ends (live streams watch it)."""
        return self._version

    def latest(self) -> ReadinessReport | None:
        with self._lock:
            return self._report

    def refresh(self) -> None:
        """Start computing a report in the background unless one is being computed."""
        with self._lock:
            self._start()

    def recompute(self) -> ReadinessView:
        """Compute a report now: start one, or, when one is running (it may have started
        before what the caller wants counted), start another as soon as it ends."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                self._again = True
            else:
                self._start()
        return self.view()

    def _start(self) -> None:   # with the lock held
        if self._thread is not None and self._thread.is_alive():
            return
        self._started_at = _now()
        self._version += 1
        self._thread = threading.Thread(target=self._compute, name="rtwo-readiness", daemon=True)
        self._thread.start()

    def wait(self, timeout: float) -> bool:
        """Wait for the running computation and any asked to follow it (at most ``timeout``
        seconds); whether a report exists after them."""
        deadline = time.monotonic() + timeout
        while (thread := self._thread) is not None and thread.is_alive():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            thread.join(left)
        return self.latest() is not None

    def view(self) -> ReadinessView:
        """The latest report and the state of the cache; starts a computation when the report
        is missing or older than ``max_age`` and none is running."""
        with self._lock:
            running = self._thread is not None and self._thread.is_alive()
            if not running and (self._report is None
                                or time.monotonic() - self._done_at > self.max_age):
                self._start()
                running = True
            age = None if self._report is None else time.monotonic() - self._done_at
            return ReadinessView(self._report, self._seconds, self._error,
                                 self._started_at if running else None, self.max_age,
                                 self._version, self._done_wall, age)

    def _compute(self) -> None:
        started = time.monotonic()
        report, error = None, None
        try:
            with Runtime(self.db, create=False, data_dir=self.data_dir) as rt:
                report = rt.readiness.run()
        except Exception as err:  # noqa: BLE001 - shown as it is; the next reader tries again
            error = f"{type(err).__name__}: {err}"
            log.warning("readiness could not be computed: %s", error)
        with self._lock:
            if report is not None:
                self._report, self._done_at = report, time.monotonic()
                self._done_wall = _now()
                self._seconds = round(self._done_at - started, 3)
            self._error = error
            self._version += 1
            if self._again:   # asked for while this one ran: one more, started after it
                self._again = False
                self._thread = None
                self._start()


@dataclass(frozen=True)
class InstructionsView:
    records: tuple[RTWORuntimeInstruction, ...]
    evidence: dict[str, str]     # what the registry found (handlers, SMT models, vectors)
    computed_at: str             # UTC, ISO 8601
    seconds: float               # how long computing it took
    finished: float              # time.monotonic() at the end


class InstructionsCache:
    """The instruction registry's records, recomputed when older than ``max_age``."""

    def __init__(self, max_age: float = INSTRUCTIONS_MAX_AGE):
        self.max_age = max_age
        self._lock = threading.Lock()
        self._view: InstructionsView | None = None

    def view(self) -> InstructionsView:
        with self._lock:
            view = self._view
            if view is None or time.monotonic() - view.finished > self.max_age:
                view = self._view = self._compute()
            return view

    def recompute(self) -> InstructionsView:
        """Compute the records now (the "recompute now" of the dashboard and the API)."""
        with self._lock:
            self._view = self._compute()
            return self._view

    @staticmethod
    def _compute() -> InstructionsView:
        from rtwo_vm.runtime.registry import RuntimeInstructionRegistry
        started = time.monotonic()
        registry = RuntimeInstructionRegistry()
        try:
            records = tuple(registry.list())
        except Exception as err:  # noqa: BLE001 - shown as evidence, never a guess
            records = ()
            registry.last_evidence = {"registry": f"failed: {type(err).__name__}: {err}"}
        ended = time.monotonic()
        return InstructionsView(records, dict(registry.last_evidence), _now(),
                                round(ended - started, 3), ended)

    def one(self, name: str) -> RTWORuntimeInstruction:
        """An instruction by mnemonic or opcode, as ``RuntimeInstructionRegistry.get``."""
        from rtwo_vm.runtime.registry import find_instruction
        return find_instruction(self.view().records, name)
