"""Readiness over HTTP: the VM Readiness Service's report, computed in the background
(``app.state.readiness``, rtwo_vm/server/background.py, shared with the dashboard).

The checks run the example scenarios and replay the conformance vectors: about a second on
an idle machine, several under load, and the database check reads every context. A request
never waits for them: the server computes a report when it starts, serves the latest one
with the time it was computed (``computedAt``) and how long it took, and computes a new one
in the background when a request finds it older than api.toml
``bounds.readiness_max_age_seconds``. Until the first report exists the answer says
``computing`` and has no report. ``ageSeconds`` says how old the report is (presentation
only). ``POST /readiness/recompute`` (an action: it needs the token) starts a computation
now, or one more after the running one, and answers 202 at once; the report it asked for is
the one whose ``computedAt`` follows the request (``GET /readiness`` until ``state`` is
``computed``). The dashboard's "recompute now" button does the same. ``evidenceFrom`` says
where the checks read their evidence (the server's data directory, ``rtwo-vm serve
--data-dir``, and the proofs report in it), as ``rtwo-vm readiness --json`` does.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path as PathParam, Request

from rtwo_vm.runtime import UnknownRecord
from rtwo_vm.server.api import schemas
from rtwo_vm.server.api.codes import refusals
from rtwo_vm.server.background import ReadinessCache, ReadinessView

router = APIRouter(tags=["readiness"])
NOTE = ("computed in the background when the server starts, again when a request finds "
        "it older than maxAgeSeconds, and at once on POST /api/v1/readiness/recompute (the "
        "checks take seconds); computedAt says when, ageSeconds how long ago")


def answer(cache: ReadinessCache, view: ReadinessView | None = None) -> dict[str, Any]:
    """The readiness answer of ``cache`` (rtwo_vm/server/background.py)."""
    view = view or cache.view()
    report = view.report
    return {"state": "computed" if view.computing_since is None else "computing",
            "computedAt": None if report is None else report.checked_at,
            "ageSeconds": None if view.age is None else round(view.age, 1),
            "computingSince": view.computing_since,
            "seconds": view.seconds, "maxAgeSeconds": view.max_age, "note": NOTE,
            "evidenceFrom": dict(cache.evidence_from),
            "report": None if report is None else report.to_json()}


@router.get("/readiness", response_model=schemas.Readiness)
def readiness(request: Request):
    """The latest readiness report with the evidence of each check."""
    return answer(request.app.state.readiness)


@router.post("/readiness/recompute", status_code=202, response_model=schemas.Readiness,
             responses=refusals("UNAUTHORIZED"))
def recompute(request: Request):
    """Recompute the readiness report now (and the instruction registry's statuses): answered
    at once with ``state`` ``computing``; ``GET /readiness`` serves the new report when it is
    computed. One computation runs at a time: asking while one runs adds one more after it."""
    request.app.state.instructions.recompute()
    return answer(request.app.state.readiness, request.app.state.readiness.recompute())


@router.get("/readiness/{check}", response_model=schemas.Check,
            responses=refusals("INVALID_REQUEST", "UNKNOWN_RECORD"))
def readiness_check(request: Request, check: Annotated[str, PathParam(max_length=64)]):
    """One check of the latest report."""
    doc = answer(request.app.state.readiness)
    for item in (doc["report"] or {}).get("checks", ()):
        if item["name"] == check:
            return item
    if doc["report"] is None:
        raise UnknownRecord(f"no readiness report yet (computing); check {check[:64]!r} unknown")
    raise UnknownRecord(f"no readiness check {check[:64]!r}")
