"""Access and bounds, applied to every request before any route runs (a pure ASGI layer).
What a connection must meet before this (connections, header deadline and size) is
connection.py's.

In this order, each refusal in the spec's shape with its api.toml code, changing nothing:

- A request line and headers longer than ``bounds.max_header_bytes`` (h11 bounds a header
  that arrives in pieces; one that arrives at once is measured here): HEADER_TOO_LARGE.
- The Host header must name this server (``app.state.served``, rtwo_vm/server/served.py):
  else UNKNOWN_HOST. A page of another site whose name was rebound to this address sends its
  own name; nothing it asks is answered.
- A header of api.toml ``headers.single_headers`` given twice: DUPLICATE_HEADER (never
  "first wins" or "last wins", whatever the values).
- A query string longer than api.toml ``bounds.max_query_bytes``: QUERY_TOO_LONG.
- Only an action (any method but GET and HEAD under ``/api/``) takes a body: any other
  request that declares one (a Content-Length above 0, or Transfer-Encoding) is
  INVALID_REQUEST, its body unread.
- An action sent by a browser must come from a served origin: an Origin header that is not
  one (``null`` included), or, without Origin, a ``Sec-Fetch-Site`` other than
  ``same-origin`` or ``none``, is FORBIDDEN_ORIGIN. A client that sends neither (curl,
  scripts) is not a browser and is judged by its token alone.
- The dashboard's one form (POST /readiness/recompute, the "recompute now" button) is not
  an action: it changes no record, takes no body and no token (the dashboard is read by
  anyone who can reach it), but it is held to the same origin rule, so a page of another
  site cannot make a visitor's browser send it (FORBIDDEN_ORIGIN).
- An action needs ``Authorization: Bearer <token>``, compared in constant time
  (``hmac.compare_digest``) with the server's token; a server started without a token file
  is read-only: every action is UNAUTHORIZED. The token is checked before the body is read.
- An action's body is read into memory up to ``bounds.max_body_bytes`` and refused with
  BODY_TOO_LARGE as soon as it passes the bound (a Content-Length above it is refused
  without reading anything; a chunked body is counted as it arrives), within
  ``app.state.limits.body_timeout`` seconds of the header (REQUEST_TIMEOUT), then handed to
  the application whole. A client that goes away before its body is complete reaches no
  route. An action's body, when it has one, must be ``application/json``:
  UNSUPPORTED_MEDIA_TYPE.

Every refusal of a request that declared a body closes the connection (the rest is dropped
unread, connection.py). The order is spec chapter 10.11's.

No route takes a file name: path parameters are record ids, looked up in the database only.
"""

from __future__ import annotations

import asyncio
import hmac
from typing import Any, Awaitable, Callable

from fastapi import FastAPI

from rtwo_vm.server.api.codes import bounds, headers as spec_headers, refusal_body, status_of
from rtwo_vm.server.served import Served

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

READS = frozenset({"GET", "HEAD"})
API_ROOT = "/api/"
SINGLE = spec_headers().single


def install(app: FastAPI) -> None:
    """Add the access rules to ``app`` (the outermost layer: nothing runs before them)."""
    app.add_middleware(AccessLayer)


def authorized(header: str | None, token: str | None) -> bool:
    """Whether an Authorization header carries ``token`` (never, without a token)."""
    if token is None or header is None:
        return False
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not given:
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode())


async def refuse(send: Send, code: str, message: str, *, close: bool = False) -> None:
    body = refusal_body(code, message)
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if code == "UNAUTHORIZED":
        headers.append((b"www-authenticate", b"Bearer"))
    if close:
        headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status_of(code), "headers": headers})
    await send({"type": "http.response.body", "body": body})


class AccessLayer:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope["app"].state   # Starlette puts the application in the scope
        served: Served = state.served
        headers: dict[str, str] = {}
        repeated = None
        for key, value in scope.get("headers", ()):
            name = key.decode("latin-1").lower()
            if name in headers and name in SINGLE:
                repeated = name
            headers[name] = value.decode("latin-1")
        declared = headers.get("content-length")
        has_body = declared not in (None, "0") or "transfer-encoding" in headers

        async def refuse_(code: str, message: str, *, close: bool = False) -> None:
            await refuse(send, code, message, close=close or has_body)

        size = (len(scope["method"]) + len(scope.get("raw_path", b""))
                + len(scope.get("query_string", b""))
                + sum(len(k) + len(v) + 4 for k, v in scope.get("headers", ())))
        limits = bounds()
        if size > limits.max_header_bytes:   # arrived at once: h11 bounds only a header in pieces
            await refuse_("HEADER_TOO_LARGE", "the request line and headers are longer than "
                          f"{limits.max_header_bytes} bytes", close=True)
            return
        if not served.host(headers.get("host")):
            await refuse_("UNKNOWN_HOST", "the Host header names no host this server serves")
            return
        if repeated is not None:
            await refuse_("DUPLICATE_HEADER", f"the header {repeated} is given more than once")
            return
        if len(scope.get("query_string", b"")) > limits.max_query_bytes:
            await refuse_("QUERY_TOO_LONG",
                          f"the query string is longer than {limits.max_query_bytes} bytes")
            return
        if scope["method"] in READS or not scope["path"].startswith(API_ROOT):
            if has_body:
                await refuse_("INVALID_REQUEST", "only an action takes a body (a method other "
                              "than GET and HEAD under /api/)")
                return
            if scope["method"] not in READS and not _same_origin(served, headers):
                await refuse_("FORBIDDEN_ORIGIN", "a dashboard form is accepted from a page of "
                              "this server only (the Origin or Sec-Fetch-Site header says "
                              "otherwise)")
                return
            await self.app(scope, receive, send)
            return
        if not _same_origin(served, headers):
            await refuse_("FORBIDDEN_ORIGIN", "an action is accepted from a page of this "
                          "server only (the Origin or Sec-Fetch-Site header says otherwise)")
            return
        token = state.token
        if token is None:
            await refuse_("UNAUTHORIZED", "this server is read-only: it was started "
                          "without --token-file, so no action is allowed")
            return
        if not authorized(headers.get("authorization"), token):
            await refuse_("UNAUTHORIZED",
                          "this action needs the header Authorization: Bearer <token>")
            return
        if declared is not None and (not declared.isdigit() or int(declared) > limits.max_body_bytes):
            await refuse_("BODY_TOO_LARGE", f"the body is longer than {limits.max_body_bytes} bytes")
            return
        seconds = state.limits.body_timeout
        try:
            async with asyncio.timeout(seconds):
                body = await _read_body(receive, limits.max_body_bytes) if has_body else b""
        except TimeoutError:
            await refuse_("REQUEST_TIMEOUT", f"the body did not arrive within {seconds:g} s")
            return
        except _TooLarge:
            await refuse_("BODY_TOO_LARGE", f"the body is longer than {limits.max_body_bytes} bytes")
            return
        if body is None:
            return   # the client went away before its request was complete: nothing ran
        if body:
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                await refuse(send, "UNSUPPORTED_MEDIA_TYPE",
                             "an action's body must be application/json")
                return
        await self.app(scope, _replay(body, receive), send)


class _TooLarge(Exception):
    pass


async def _read_body(receive: Receive, bound: int) -> bytes | None:
    """The whole body (None: the client went away first); _TooLarge past ``bound`` bytes."""
    chunks: list[bytes] = []
    size = 0
    more = True
    while more:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > bound:
            raise _TooLarge
        chunks.append(chunk)
        more = message.get("more_body", False)
    return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that hands ``body`` whole first, then what the connection says."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()
    return replay


def _same_origin(served: Served, headers: dict[str, str]) -> bool:
    """Whether an action comes from a served origin, or from no browser at all."""
    origin = headers.get("origin")
    if origin is not None and not served.origin(origin):
        return False
    site = headers.get("sec-fetch-site")
    return site is None or site in ("same-origin", "none")
