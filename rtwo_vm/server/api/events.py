"""The VM Event Publisher over HTTP: the outbox (``GET /api/v1/events``), its sinks and dead
events, and the actions ``POST /api/v1/events/requeue`` and ``/events/deliver`` (as
``rtwo-vm events list|show|sinks|dead|requeue|deliver``; no sink is added over HTTP)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Depends, Path

from rtwo_vm.runtime import Runtime
from rtwo_vm.runtime.catalog import catalog
from rtwo_vm.server.api import schemas
from rtwo_vm.server.api.bodies import DeliverBody, RequeueBody
from rtwo_vm.server.api.codes import ApiError, bounds, refusals
from rtwo_vm.server.api.paging import PageParams, TextQuery, enum_query
from rtwo_vm.server.runtimes import runtime

router = APIRouter(tags=["events"])
RT = Annotated[Runtime, Depends(runtime)]
ACTION = refusals("INVALID_REQUEST", "UNKNOWN_RECORD", "UNAUTHORIZED", "BODY_TOO_LARGE",
                  "UNSUPPORTED_MEDIA_TYPE", "SERVER_BUSY")


@router.get("/events", response_model=schemas.PageOf[schemas.EventShown],
            responses=refusals("INVALID_REQUEST"))
def events(rt: RT, page: Annotated[PageParams, Depends()],
           stream: TextQuery = None,
           type: str | None = enum_query(catalog().values("event_type"), "only this type")):
    """The outbox in event order; ``stream`` is a context id, ``contract:ADDRESS`` ..."""
    return page.answer(rt.events.page(**page.window(1), stream=stream,
                                      type=type))


@router.get("/events/sinks", response_model=schemas.Sinks)
def sinks(rt: RT):
    return {"sinks": rt.events.sinks(), "undelivered": rt.events.undelivered_counts(),
            "failures": rt.events.failures()}


@router.get("/events/dead", response_model=list[schemas.DeadEventShown],
            responses=refusals("INVALID_REQUEST", "UNKNOWN_RECORD"))
def dead(rt: RT, sink: TextQuery = None):
    return rt.events.dead(sink)


@router.get("/events/{event_id}", response_model=schemas.EventShown,
            responses=refusals("INVALID_REQUEST", "UNKNOWN_RECORD"))
def event(rt: RT, event_id: Annotated[int, Path(ge=0, le=(1 << 63) - 1)]):
    return rt.events.get(event_id).to_json()


@router.post("/events/requeue", response_model=schemas.Requeued, responses=ACTION)
def requeue(rt: RT, body: RequeueBody):
    """Put dead events back: one (``eventId``) or ``all``, for one ``sink`` or every sink."""
    if (body.eventId is None) == (not body.all):
        raise ApiError("INVALID_REQUEST", "give eventId or all: true (one of them)")
    ids = None if body.all else [body.eventId]
    count = rt.events.requeue(ids, body.sink)  # type: ignore[arg-type]
    if ids is not None and count == 0:
        raise ApiError("UNKNOWN_RECORD", f"event {body.eventId} is not dead"
                       + (f" for sink {body.sink[:bounds().max_text_chars]}" if body.sink else ""))
    return {"requeued": count}


@router.post("/events/deliver", response_model=schemas.Delivered, responses=ACTION)
def deliver(rt: RT, body: Annotated[DeliverBody | None, Body()] = None):
    """One delivery pass to every registered sink, reported per sink."""
    reports = rt.events.deliver()
    return {"delivery": {name: r.to_json() for name, r in reports.items()},
            "complete": all(r.complete for r in reports.values())}
