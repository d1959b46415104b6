"""The dashboard: the seed's page with real content, the pages behind it and live events.

    install(app)    adds the pages, /static (CSS and JS shipped in the package) and /live

Pages are server-rendered HTML, every value escaped (html.py), each read through a Runtime of
the application's pool for that request only (rtwo_vm/server/runtimes.py):

    overview.py     /                 VM, readiness with evidence, models, services;
                    POST /readiness/recompute: its "recompute now" button
    executions.py   /contexts, /contexts/{id}, /results/{id}, /accounting/{context id}
    registries.py   /violations, /instructions, /events
    reports.py      /reports          the latest proofs and conformance reports (data directory)
    live.py         /live             server-sent events fed from the outbox (and readiness)
    queries.py      bounded reads: newest-first pages and aggregates

The readiness report and the instruction registry are the server's, shared with the API:
``app.state.readiness`` and ``app.state.instructions`` (rtwo_vm/server/background.py).

Ids from a request only ever reach SQL parameters; an unknown one gives the 404 page.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles

from rtwo_vm.runtime import Runtime
from rtwo_vm.server.dashboard import executions, live, overview, registries, reports
from rtwo_vm.server.background import InstructionsCache, ReadinessCache
from rtwo_vm.server.runtimes import runtime

STATIC = Path(__file__).parent / "static"

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


def _readiness(request: Request) -> ReadinessCache:
    return request.app.state.readiness


def _instructions(request: Request) -> InstructionsCache:
    return request.app.state.instructions


RT = Annotated[Runtime, Depends(runtime)]          # this request's runtime, from the pool
Readiness = Annotated[ReadinessCache, Depends(_readiness)]
Instructions = Annotated[InstructionsCache, Depends(_instructions)]


@router.get("/")
def index(rt: RT, readiness: Readiness, instructions: Instructions):
    return overview.render(rt, readiness, instructions)


@router.post("/readiness/recompute")
def recompute(readiness: Readiness, instructions: Instructions):
    """The overview's "recompute now" button (a form; access.py holds it to the origin rule):
    readiness and the instruction statuses computed again, then back to the overview, which
    shows the new report when it is done (/live says so)."""
    instructions.recompute()
    readiness.recompute()
    return RedirectResponse("/#readiness-section", status_code=303,
                            headers={"Cache-Control": "no-store"})


@router.get("/overview/sections", response_class=JSONResponse)
def overview_sections(rt: RT, readiness: Readiness, instructions: Instructions):
    """The overview's VM and readiness sections and its figures, for the live script."""
    return JSONResponse(overview.sections_json(rt, readiness, instructions),
                        headers={"Cache-Control": "no-store"})


@router.get("/contexts")
def contexts(rt: RT, status: str | None = None, result: str | None = None,
             contract: str | None = None, before: str | None = None, limit: str | None = None):
    return executions.contexts(rt, status=status, result=result, contract=contract,
                               before=before, limit=limit)


@router.get("/contexts/{context_id:path}")
def context(context_id: str, rt: RT):
    return executions.context(rt, context_id)


@router.get("/results/{result_id:path}")
def result(result_id: str, rt: RT):
    return executions.result(rt, result_id)


@router.get("/accounting/{context_id:path}")
def accounting(context_id: str, rt: RT):
    return executions.accounting(rt, context_id)


@router.get("/violations")
def violations(rt: RT, type: str | None = None):
    return registries.violations(rt, type)


@router.get("/instructions")
def instructions(cache: Instructions):
    return registries.instructions(cache)


@router.get("/events")
def events(request: Request, rt: RT, before: str | None = None):
    return registries.events(rt, before, request.app.state.dashboard_streams.open)


@router.get("/reports")
def reports_page(request: Request):
    return reports.render(request.app.state.evidence)


@router.get("/live", response_class=Response)
def live_events(request: Request):
    state = request.app.state
    return live.stream(request, state.runtimes, state.dashboard_streams,
                       lambda rt: overview.summary_json(rt, state.readiness, state.instructions),
                       lambda: state.readiness.version)


def install(app: FastAPI) -> None:
    """Add the dashboard's routes and static assets to ``app``, and end the live streams
    before it stops."""
    streams = live.Streams()
    app.state.dashboard_streams = streams
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app_: FastAPI):
        streams.watch_signals()
        try:
            async with inner(app_) as state:
                yield state
        finally:
            streams.closing.set()
            streams.restore_signals()

    app.router.lifespan_context = lifespan
