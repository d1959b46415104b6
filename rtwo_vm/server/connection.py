"""The connections of ``rtwo-vm serve``: uvicorn's h11 protocol with the bounds that hold
before the application sees a request (the application's own layer is access.py).

    uvicorn.Config(app, http=protocol(limits), ...)

- **Connection limit.** A connection opened while ``limits.max_connections`` are open is
  answered ``TOO_MANY_CONNECTIONS`` at once and closed; its request is never read.
- **Header deadline.** A connection must deliver a whole request header within
  ``limits.header_timeout`` seconds of being opened, and each later request on a kept-alive
  connection within as long after its first byte (between requests the idle connection is
  kept ``limits.keep_alive`` seconds). Past it: ``REQUEST_TIMEOUT``, and closed. uvicorn has
  no such deadline: a client sending a header a byte at a time would hold its connection.
- **Header size.** h11 reads at most ``limits.max_header_bytes`` of request line and headers
  (``HEADER_TOO_LARGE``); bytes that are not HTTP/1.1 are ``INVALID_REQUEST`` (instead of
  uvicorn's text answer).
- **Unread bodies.** An answer given before the request's body was read whole (a refusal,
  a route that takes no body) closes the connection: the rest of the body is never read.
- **Closing without losing the answer.** A connection is closed by sending the answer, then
  the end of the stream (FIN), then reading and dropping what the client still sends for at
  most ``LINGER`` seconds: closing a socket with unread input makes the kernel send a reset,
  which can destroy the answer before the client reads it.

The body deadline is the application's (access.py reads an action's body, under
``limits.body_timeout``); every other request's body is not read at all.
"""

from __future__ import annotations

import asyncio
import http
from typing import Any, ClassVar

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from rtwo_vm.server.api.codes import refusal_body, status_of
from rtwo_vm.server.served import Limits

LINGER = 2.0   # seconds a closed connection's remaining input is still read and dropped
# Bytes read from a socket at once (asyncio reads 256 KiB): what a request costs before the
# application has refused it is at most about this plus uvicorn's 64 KiB of buffered body.
READ_SIZE = 16384


def protocol(limits: Limits) -> type[asyncio.Protocol]:
    """The protocol class uvicorn instantiates for each connection, with ``limits``."""
    return type("BoundedConnection", (Connection,), {"limits": limits})


def answer_bytes(code: str, message: str) -> bytes:
    """A whole HTTP/1.1 refusal that closes the connection."""
    body = refusal_body(code, message)
    status = status_of(code)
    head = (f"HTTP/1.1 {status} {http.HTTPStatus(status).phrase}\r\n"
            "content-type: application/json\r\n"
            f"content-length: {len(body)}\r\nconnection: close\r\n\r\n")
    return head.encode("ascii") + body


class _Transport(asyncio.Transport):
    """The transport as uvicorn's protocol sees it: ``close`` closes gracefully (see the
    module's docstring); everything else is the socket's transport."""

    def __init__(self, real: asyncio.Transport, close: Any):
        super().__init__()
        self.real = real
        self._close = close
        self.closing = False

    def close(self) -> None:
        self._close()

    def is_closing(self) -> bool:
        return self.closing or self.real.is_closing()

    def write(self, data: Any) -> None:
        self.real.write(data)

    def writelines(self, list_of_data: Any) -> None:
        self.real.writelines(list_of_data)

    def write_eof(self) -> None:
        self.real.write_eof()

    def can_write_eof(self) -> bool:
        return self.real.can_write_eof()

    def abort(self) -> None:
        self.real.abort()

    def pause_reading(self) -> None:
        self.real.pause_reading()

    def resume_reading(self) -> None:
        self.real.resume_reading()

    def is_reading(self) -> bool:
        return self.real.is_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.real.get_extra_info(name, default)

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.real.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        return self.real.get_protocol()

    def get_write_buffer_size(self) -> int:
        return self.real.get_write_buffer_size()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        self.real.set_write_buffer_limits(high, low)


class Connection(H11Protocol):
    limits: ClassVar[Limits]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if hasattr(transport, "max_size"):   # asyncio's socket transport: its recv() size
            setattr(transport, "max_size", READ_SIZE)  # noqa: B010 - not in Transport's type
        self._wrapped = _Transport(transport, self._close_gracefully)
        self._header_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        super().connection_made(self._wrapped)
        if len(self.connections) > self.limits.max_connections:
            self._answer("TOO_MANY_CONNECTIONS", f"{self.limits.max_connections} connections "
                         "are open: try again later")
            return
        self._header_timer = self.loop.call_later(self.limits.header_timeout, self._header_late)

    # -- the header deadline ------------------------------------------------------------------

    def _watch_header(self) -> None:
        """Arm the header deadline at a new request's first byte; disarm it at its header's end."""
        if self._wrapped.closing:
            return
        waiting = self.conn.their_state is h11.IDLE
        if waiting and self._header_timer is None and self.conn.trailing_data[0]:
            self._header_timer = self.loop.call_later(self.limits.header_timeout, self._header_late)
        elif not waiting and self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_late(self) -> None:
        self._header_timer = None
        if self._wrapped.closing or self.conn.their_state is not h11.IDLE:
            return
        self._answer("REQUEST_TIMEOUT", "the request's header did not arrive within "
                     f"{self.limits.header_timeout:g} s")

    def data_received(self, data: bytes) -> None:
        if self._wrapped.closing:
            return   # closing: what the client still sends is dropped
        super().data_received(data)
        self._watch_header()

    def on_response_complete(self) -> None:
        if self.conn.their_state is h11.SEND_BODY:
            self._close_gracefully()   # answered before the body was read: it never will be
        super().on_response_complete()
        self._watch_header()

    def send_400_response(self, msg: str) -> None:
        if len(self.conn.trailing_data[0]) > self.limits.max_header_bytes:
            self._answer("HEADER_TOO_LARGE", "the request line and headers are longer than "
                         f"{self.limits.max_header_bytes} bytes")
        else:
            self._answer("INVALID_REQUEST", "the bytes received are not an HTTP/1.1 request")

    # -- closing ------------------------------------------------------------------------------

    def _answer(self, code: str, message: str) -> None:
        """Answer ``code`` outside any request cycle (none runs) and close."""
        if not self._wrapped.is_closing():
            self._wrapped.real.write(answer_bytes(code, message))
        self._close_gracefully()

    def _close_gracefully(self) -> None:
        wrapped = self._wrapped
        if wrapped.closing:
            return
        wrapped.closing = True
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None
        real = wrapped.real
        if real.is_closing():
            return
        if not real.can_write_eof():
            real.close()
            return
        real.write_eof()          # after what is buffered: the answer, then FIN
        real.resume_reading()     # drain: the client's unread input is dropped
        self._linger_timer = self.loop.call_later(LINGER, real.close)

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._header_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._wrapped.closing = True
        super().connection_lost(exc)

    def shutdown(self) -> None:
        """The server stops: an idle or closing connection is closed now, without lingering."""
        if self._wrapped.closing:
            self._wrapped.real.close()
            return
        if self.cycle is None or self.cycle.response_complete:
            self._wrapped.closing = True
            self._wrapped.real.close()
            return
        super().shutdown()
