"""Readiness over HTTP: the VM Readiness Service's report, computed in the background.

The checks run the example scenarios and replay the conformance vectors: about a second on
an idle machine, several under load, and the database check reads every context. A request
never waits for them: the server computes a report when it starts, serves the latest one
with the time it was computed (``computedAt``) and how long it took, and computes a new one
in the background when a request finds it older than api.toml
``bounds.readiness_max_age_seconds``. Until the first report exists the answer says
``computing`` and has no report.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Path as PathParam, Request

from rtwo_vm.runtime import Runtime, UnknownRecord
from rtwo_vm.runtime.readiness import ReadinessReport
from rtwo_vm.server.api import schemas
from rtwo_vm.server.api.codes import bounds, refusals

router = APIRouter(tags=["readiness"])
log = logging.getLogger("rtwo_vm.server")
NOTE = ("computed in the background when the server starts and again when a request finds "
        "it older than maxAgeSeconds (the checks take seconds); computedAt says when")


class ReadinessCache:
    """The latest report of the readiness checks over the server's database."""

    def __init__(self, db: str | Path, max_age: float | None = None):
        self.db = str(db)
        self.max_age = bounds().readiness_max_age_seconds if max_age is None else max_age
        self._lock = threading.Lock()
        self._report: ReadinessReport | None = None
        self._done_at = 0.0
        self._seconds: float | None = None
        self._thread: threading.Thread | None = None

    def latest(self) -> ReadinessReport | None:
        with self._lock:
            return self._report

    def refresh(self) -> None:
        """Start computing a report in the background unless one is being computed."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._compute, name="rtwo-readiness",
                                            daemon=True)
            self._thread.start()

    def wait(self, timeout: float) -> bool:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return self.latest() is not None

    def _compute(self) -> None:
        started = time.monotonic()
        try:
            with Runtime(self.db, create=False) as rt:
                report = rt.readiness.run()
        except Exception as err:  # noqa: BLE001 - the next request tries again
            log.warning("readiness could not be computed: %s", err)
            return
        with self._lock:
            self._report, self._done_at = report, time.monotonic()
            self._seconds = round(self._done_at - started, 3)

    def answer(self) -> dict[str, Any]:
        with self._lock:
            report, done_at, seconds = self._report, self._done_at, self._seconds
            computing = self._thread is not None and self._thread.is_alive()
        if report is None or time.monotonic() - done_at > self.max_age:
            if not computing:
                self.refresh()
            computing = True
        return {"state": "computing" if computing else "computed",
                "computedAt": None if report is None else report.checked_at,
                "seconds": seconds, "maxAgeSeconds": self.max_age, "note": NOTE,
                "report": None if report is None else report.to_json()}


@router.get("/readiness", response_model=schemas.Readiness)
def readiness(request: Request):
    """The latest readiness report with the evidence of each check."""
    return request.app.state.readiness.answer()


@router.get("/readiness/{check}", response_model=schemas.Check,
            responses=refusals("INVALID_REQUEST", "UNKNOWN_RECORD"))
def readiness_check(request: Request, check: Annotated[str, PathParam(max_length=64)]):
    """One check of the latest report."""
    doc = request.app.state.readiness.answer()
    for item in (doc["report"] or {}).get("checks", ()):
        if item["name"] == check:
            return item
    if doc["report"] is None:
        raise UnknownRecord(f"no readiness report yet (computing); check {check[:64]!r} unknown")
    raise UnknownRecord(f"no readiness check {check[:64]!r}")
