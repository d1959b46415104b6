"""The JSON API, ``/api/v1/...``: collections, records and actions over the runtime's services.

    codes.py      refusal codes, statuses and bounds (spec/data/api.toml, errors.toml)
    errors.py     every failure in the shape {"error": CODE, "message": one line}
    paging.py     keyset cursors, page sizes, time ranges
    bodies.py     the actions' request bodies, bounded by the spec's data
    schemas.py    the declared answers (the OpenAPI document describes real responses)
    records.py    GET collections and records (VMs ... instructions) and the overview
    events.py     the outbox, sinks, dead events; requeue and deliver
    actions.py    deploy, call, policy create
    readiness.py  the readiness report (computed in the background: ../background.py)
    upgrade.py    the upgrade check of a deployed contract (rtwo_vm/runtime/upgrade.py)
"""

from __future__ import annotations

from fastapi import APIRouter, FastAPI

from rtwo_vm.server.api import actions, errors, events, readiness, records, upgrade
from rtwo_vm.server.api.codes import status_of

router = APIRouter()
router.include_router(records.router)
router.include_router(events.router)
router.include_router(actions.router)
router.include_router(readiness.router)
router.include_router(upgrade.router)


def install(app: FastAPI, prefix: str) -> None:
    """The API's routes under ``prefix`` and its error answers. Its readiness report and
    instruction registry are ``app.state.readiness`` and ``app.state.instructions``
    (rtwo_vm/server/background.py, made by ``create_app`` and shared with the dashboard)."""
    errors.install(app)
    _openapi_without_422(app)
    app.include_router(router, prefix=prefix)


# Refusals below the routes (access.py, connection.py), declared on every operation they
# can answer: any request, and any action.
EVERY_REQUEST = ("UNKNOWN_HOST", "DUPLICATE_HEADER", "QUERY_TOO_LONG", "HEADER_TOO_LARGE",
                 "REQUEST_TIMEOUT", "TOO_MANY_CONNECTIONS")
EVERY_ACTION = ("FORBIDDEN_ORIGIN", "UNAUTHORIZED", "BODY_TOO_LARGE", "UNSUPPORTED_MEDIA_TYPE")


def _openapi_without_422(app: FastAPI) -> None:
    """FastAPI documents a 422 answer for every route with parameters; this API answers a
    request that fails validation 400 with the spec's code (errors.py), as documented. Every
    operation also gets the refusals made before any route runs."""
    build = app.openapi

    def openapi() -> dict:
        if app.openapi_schema is None:
            doc = build()
            error = {"$ref": "#/components/schemas/ErrorBody"}
            for path in doc.get("paths", {}).values():
                for method, operation in path.items():
                    responses = operation.get("responses", {})
                    responses.pop("422", None)
                    codes = EVERY_REQUEST + (EVERY_ACTION if method not in ("get", "head") else ())
                    for code in codes:
                        entry = responses.setdefault(str(status_of(code)), {
                            "description": "", "content": {"application/json": {"schema": error}}})
                        named = [c for c in entry["description"].split(", ") if c]
                        if code not in named:
                            entry["description"] = ", ".join([*named, code])
            for name in ("HTTPValidationError", "ValidationError"):
                doc.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = doc
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
