"""The webhook sink: POSTs each event as JSON over one keep-alive connection per pass.

Any 2xx answer acknowledges the event; another status refuses it (retried with backoff, then
parked as dead); no connection, a lost connection or no answer within the timeout makes the
sink unavailable for the rest of the pass. With ``hmac_secret_env`` set, each request carries
``X-RTWO-Signature: sha256=<hex HMAC-SHA256 of the body>`` keyed with the value of that
environment variable (the secret itself is never stored in the database).
"""

from __future__ import annotations

import hashlib
import hmac
import http.client
import json
import os
import socket
import urllib.parse
from typing import Any, Sequence

from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.sinks import (
    DeadlineReached, SinkUnavailable, redact, remaining, send_each,
)

MAX_ANSWER = 64 * 1024  # bytes of an answer body read (and discarded) to keep the connection
SIGNATURE_HEADER = "X-RTWO-Signature"


class WebhookSink:
    kind = "webhook"
    OPTIONS: dict[str, Any] = {"hmac_secret_env": None}

    def __init__(self, target: str, options: dict[str, Any] | None = None):
        url = urllib.parse.urlsplit(target)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise ValueError("webhook URL must start with http:// or https://, got "
                             f"{redact(target)!r}")
        try:
            url.port  # noqa: B018 - raises ValueError for a bad port
        except ValueError:
            raise ValueError(f"webhook URL has a bad port: {redact(target)!r}") from None
        self.url, self.target = url, target
        self.shown = redact(target)  # in messages and the name: no credentials
        self.name = f"webhook:{self.shown}"
        self.options = options or {}

    def _secret(self) -> bytes | None:
        var = self.options.get("hmac_secret_env")
        if not var:
            return None
        value = os.environ.get(var)
        if not value:
            raise SinkUnavailable(f"environment variable {var} (the webhook's HMAC secret) is "
                                  "not set")
        return value.encode()

    def open(self, deadline: float) -> "_Session":
        return _Session(self, self._secret(), deadline)


def signature(secret: bytes, body: bytes) -> str:
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


class _Session:
    def __init__(self, sink: WebhookSink, secret: bytes | None, deadline: float):
        self.sink, self.secret, self.deadline = sink, secret, deadline
        self.conn: http.client.HTTPConnection | None = None
        self.connections = 0  # opened this pass (one, unless the server closes it)
        self.cut = False
        url = sink.url
        self.path = (url.path or "/") + (f"?{url.query}" if url.query else "")

    def _timeout(self) -> float:
        left = remaining(self.deadline)
        if left <= 0:
            raise DeadlineReached()
        timeout = self.sink.options.get("timeout", 5.0)
        self.cut = left < timeout  # a timeout now is the deadline's, not the receiver's
        return min(timeout, left)

    def _unavailable(self, text: str, err: BaseException) -> SinkUnavailable:
        if self.cut and isinstance(err, (socket.timeout, TimeoutError)):
            return DeadlineReached()
        return SinkUnavailable(f"{text}: {_reason(err)}")

    def _connect(self) -> http.client.HTTPConnection:
        url = self.sink.url
        cls = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
        conn = cls(url.hostname or "", url.port, timeout=self._timeout())
        try:
            conn.connect()
        except (OSError, http.client.HTTPException) as err:
            conn.close()
            raise self._unavailable(f"cannot connect to {self.sink.shown}", err) from None
        self.connections += 1
        return conn

    def post(self, event: VMEvent) -> None:
        body = json.dumps(event.to_json(), sort_keys=True).encode()
        headers = {"Content-Type": "application/json", "X-RTWO-Event-Id": str(event.event_id),
                   "Connection": "keep-alive"}
        if self.secret is not None:
            headers[SIGNATURE_HEADER] = signature(self.secret, body)
        reused = self.conn is not None
        if self.conn is None:
            self.conn = self._connect()
        try:
            status = self._exchange(body, headers)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self._drop()
            if not reused:
                raise SinkUnavailable(f"{self.sink.shown} closed the connection") from None
            # An idle keep-alive connection the server closed: once more on a new one.
            self.conn = self._connect()
            try:
                status = self._exchange(body, headers)
            except (OSError, http.client.HTTPException) as err:
                self._drop()
                raise self._unavailable(self.sink.shown, err) from None
        except (OSError, http.client.HTTPException) as err:
            self._drop()
            raise self._unavailable(self.sink.shown, err) from None
        if not 200 <= status < 300:
            raise OSError(f"HTTP {status}")

    def _exchange(self, body: bytes, headers: dict[str, str]) -> int:
        conn = self.conn
        assert conn is not None
        conn.timeout = self._timeout()
        if conn.sock is not None:
            conn.sock.settimeout(conn.timeout)
        conn.request("POST", self.path, body=body, headers=headers)
        answer = conn.getresponse()
        answer.read(MAX_ANSWER)
        if answer.will_close or not answer.isclosed():
            self._drop()  # closing or an answer longer than we read: not reusable
        return answer.status

    def _drop(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    def send(self, events: Sequence[VMEvent], deadline: float) -> list[BaseException | None]:
        self.deadline = min(self.deadline, deadline)
        return send_each(events, self.deadline, self.post)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self._drop()


def _reason(err: BaseException) -> str:
    if isinstance(err, (socket.timeout, TimeoutError)):
        return "no answer in time"
    if isinstance(err, OSError) and err.strerror:
        return redact(err.strerror.lower())
    return redact(str(err)) or type(err).__name__
