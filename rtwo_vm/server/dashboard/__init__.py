"""The dashboard: the seed's page with real content, the pages behind it and live events.

    install(app)    adds the pages, /static (CSS and JS shipped in the package) and /live

Pages are server-rendered HTML, every value escaped (html.py), each read through a Runtime of
the application's pool for that request only (rtwo_vm/server/runtimes.py):

    overview.py     /                 VM, readiness with evidence, models, services
    executions.py   /contexts, /contexts/{id}, /results/{id}, /accounting/{context id}
    registries.py   /violations, /instructions, /events
    reports.py      /reports          the latest proofs and conformance reports
    live.py         /live             server-sent events fed from the outbox
    background.py   readiness and the instruction registry, computed off the request path
    queries.py      bounded reads: newest-first pages and aggregates

Ids from a request only ever reach SQL parameters; an unknown one gives the 404 page.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.staticfiles import StaticFiles

from rtwo_vm.runtime import Runtime
from rtwo_vm.server.dashboard import executions, live, overview, registries, reports
from rtwo_vm.server.dashboard.background import Background
from rtwo_vm.server.runtimes import runtime

STATIC = Path(__file__).parent / "static"

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)


def _background(request: Request) -> Background:
    return request.app.state.dashboard_background


RT = Annotated[Runtime, Depends(runtime)]          # this request's runtime, from the pool
BG = Annotated[Background, Depends(_background)]


@router.get("/")
def index(rt: RT, bg: BG):
    return overview.render(rt, bg)


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
def instructions(bg: BG):
    return registries.instructions(bg)


@router.get("/events")
def events(request: Request, rt: RT, before: str | None = None):
    return registries.events(rt, before, request.app.state.dashboard_streams.open)


@router.get("/reports")
def reports_page():
    return reports.render()


@router.get("/live", response_class=Response)
def live_events(request: Request):
    app = request.app
    bg: Background = app.state.dashboard_background
    return live.stream(request, app.state.runtimes, app.state.dashboard_streams,
                       lambda rt: overview.summary_json(rt, bg))


def install(app: FastAPI) -> None:
    """Add the dashboard's routes and static assets to ``app``; start the background
    readiness computation with the application and end the live streams before it stops."""
    background = Background(app.state.runtimes)
    streams = live.Streams()
    app.state.dashboard_background = background
    app.state.dashboard_streams = streams
    app.include_router(router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    inner = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app_: FastAPI):
        streams.watch_signals()
        background.refresh(if_older_than=None)
        try:
            async with inner(app_) as state:
                yield state
        finally:
            streams.closing.set()
            streams.restore_signals()

    app.router.lifespan_context = lifespan
