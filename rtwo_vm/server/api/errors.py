"""Every failure answered in the spec's shape ``{"error": CODE, "message": one line}``.

The runtime's refusals are mapped as the command line's ``guard`` maps them
(rtwo_vm/arguments/runtime.py), sink credentials redacted: InvalidInput and ModelError are
INVALID_REQUEST, UnknownRecord is UNKNOWN_RECORD, RuntimeBusy and a database that stays
locked are SERVER_BUSY. FastAPI's own answers are replaced: a body or query that fails
validation is INVALID_REQUEST (INVALID_LIMITS when a sandbox limit is out of range), an
unknown path UNKNOWN_ROUTE, a wrong method METHOD_NOT_ALLOWED. A damaged record or an
unexpected error is SERVER_FAULT (500): a fault of the server, never of the request.
"""

from __future__ import annotations

import logging
import sqlite3
from typing import Mapping

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from rtwo_vm.runtime import InvalidInput, ModelError, RuntimeBusy, StoreError, UnknownRecord
from rtwo_vm.runtime.sinks import redact
from rtwo_vm.runtime.store import DamagedRecord
from rtwo_vm.server.api.codes import ApiError, status_of

log = logging.getLogger("rtwo_vm.server")

# The codes of the answers FastAPI and Starlette make themselves, found by their HTTP status
# (api.toml gives each code its status).
HTTP_ANSWERS = ("UNKNOWN_ROUTE", "METHOD_NOT_ALLOWED", "BODY_TOO_LARGE", "UNAUTHORIZED",
                "UNSUPPORTED_MEDIA_TYPE")
# The runtime's refusals, as the command line's guard turns them into one-line errors.
REFUSALS: dict[type[Exception], str] = {
    UnknownRecord: "UNKNOWN_RECORD", InvalidInput: "INVALID_REQUEST",
    ModelError: "INVALID_REQUEST", RuntimeBusy: "SERVER_BUSY"}
LIMIT_FIELDS = ("limits",)   # a body field whose refusal is INVALID_LIMITS


def answer(code: str, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    lines = redact(str(message)).splitlines()
    return JSONResponse({"error": code, "message": lines[0] if lines else code},
                        status_code=status_of(code), headers=headers)


def validation_message(err: RequestValidationError) -> tuple[str, str]:
    """(code, one line) for the first problem pydantic found."""
    errors = list(err.errors())
    if not errors:
        return "INVALID_REQUEST", "the request is not valid"
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ())]
    code = "INVALID_LIMITS" if len(loc) > 1 and loc[0] == "body" and loc[1] in LIMIT_FIELDS \
        else "INVALID_REQUEST"
    where = ".".join(loc) or "request"
    text = str(first.get("msg", "invalid"))
    if first.get("type") == "json_invalid":
        where, text = "body", "not valid JSON"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return code, f"{where}: {text}{more}"


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api(request: Request, exc: ApiError) -> JSONResponse:
        return answer(exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        return answer(*validation_message(exc))

    code_of_status = {status_of(c): c for c in HTTP_ANSWERS}

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = code_of_status.get(exc.status_code, "INVALID_REQUEST")
        text = {"UNKNOWN_ROUTE": f"no route {request.url.path[:120]}",
                "METHOD_NOT_ALLOWED": f"{request.method} is not allowed on this route"
                }.get(code, str(exc.detail))
        return answer(code, text, exc.headers)

    for refusal, code in REFUSALS.items():
        app.add_exception_handler(refusal, _refusal(code))

    @app.exception_handler(StoreError)
    async def _store(request: Request, exc: StoreError) -> JSONResponse:
        if isinstance(exc, DamagedRecord):
            log.error("damaged record: %s", redact(_text(exc)))
            return answer("SERVER_FAULT", _text(exc))
        return answer("SERVER_BUSY", _text(exc))

    @app.exception_handler(sqlite3.DatabaseError)
    async def _database(request: Request, exc: sqlite3.DatabaseError) -> JSONResponse:
        busy = "locked" in str(exc) or "busy" in str(exc)
        return answer("SERVER_BUSY" if busy else "SERVER_FAULT", f"database error: {exc}")

    @app.exception_handler(Exception)
    async def _fault(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error answering %s %s", request.method, request.url.path)
        return answer("SERVER_FAULT", f"the server failed: {type(exc).__name__}")


def _refusal(code: str):
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        return answer(code, _text(exc))
    return handler


def _text(exc: BaseException) -> str:
    return str(exc.args[0] if exc.args else type(exc).__name__)
