"""Access and bounds, applied to every request before any route runs (a pure ASGI layer).

- A query string longer than api.toml ``bounds.max_query_bytes``: QUERY_TOO_LONG.
- An action (any method but GET and HEAD under ``/api/``) needs ``Authorization: Bearer
  <token>``, compared in constant time (``hmac.compare_digest``) with the server's token;
  a server started without a token file is read-only: every action is UNAUTHORIZED. The
  token is checked before the body is read.
- A request body is read into memory up to ``bounds.max_body_bytes`` and refused with
  BODY_TOO_LARGE as soon as it passes the bound (a Content-Length above it is refused
  without reading anything; a chunked body is counted as it arrives), then handed to the
  application whole. A client that goes away before its body is complete reaches no route.
- An action's body, when it has one, must be ``application/json``: UNSUPPORTED_MEDIA_TYPE.

No route takes a file name: path parameters are record ids, looked up in the database only.
"""

from __future__ import annotations

import hmac
import json
from typing import Any, Awaitable, Callable

from fastapi import FastAPI

from rtwo_vm.server.api.codes import bounds, status_of

Scope = dict[str, Any]
Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

READS = frozenset({"GET", "HEAD"})
API_ROOT = "/api/"


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
    body = json.dumps({"error": code, "message": message}).encode()
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
        limits = bounds()
        if len(scope.get("query_string", b"")) > limits.max_query_bytes:
            await refuse(send, "QUERY_TOO_LONG",
                         f"the query string is longer than {limits.max_query_bytes} bytes")
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1")
                   for k, v in scope.get("headers", ())}
        action = scope["method"] not in READS and scope["path"].startswith(API_ROOT)
        if action:
            token = scope["app"].state.token  # Starlette puts the application in the scope
            if token is None:
                await refuse(send, "UNAUTHORIZED", "this server is read-only: it was started "
                             "without --token-file, so no action is allowed")
                return
            if not authorized(headers.get("authorization"), token):
                await refuse(send, "UNAUTHORIZED",
                             "this action needs the header Authorization: Bearer <token>")
                return
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limits.max_body_bytes):
            await refuse(send, "BODY_TOO_LARGE", f"the body is longer than "
                         f"{limits.max_body_bytes} bytes", close=True)
            return
        chunks: list[bytes] = []
        size = 0
        more = scope["method"] not in READS or declared not in (None, "0") \
            or "transfer-encoding" in headers
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return  # the client went away before its request was complete: nothing ran
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limits.max_body_bytes:
                await refuse(send, "BODY_TOO_LARGE", f"the body is longer than "
                             f"{limits.max_body_bytes} bytes", close=True)
                return
            chunks.append(chunk)
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if action and body:
            media = headers.get("content-type", "").split(";")[0].strip().lower()
            if media != "application/json":
                await refuse(send, "UNSUPPORTED_MEDIA_TYPE",
                             "an action's body must be application/json")
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
