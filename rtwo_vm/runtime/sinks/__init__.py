"""Event sinks: where the dispatcher sends outbox events (chapter 10.8). One module per kind.

A sink is durable configuration (a kind, a target and options, stored in ``sinks``); for each
delivery pass the dispatcher opens **one session** (one file handle, one HTTP keep-alive
connection, one NATS connection) and closes it at the end of the pass. A session's
``send(events, deadline)`` sends the events in order and answers, per event, ``None`` (the
sink acknowledged it) or the exception that says why not. Two kinds of failure:

- :class:`SinkUnavailable` (cannot connect, connection lost, no answer in time): the session
  is unusable; the events after it were not sent (:data:`NOT_SENT`) and the pass to this sink
  ends. :class:`DeadlineReached` is the same when the pass deadline, not the sink's timeout,
  cut the wait: the event is not charged an attempt.
- any other exception: the sink refused that event (an HTTP error status, a JetStream error);
  later events of the same stream in the batch are not sent (:data:`NOT_SENT`), so order per
  stream holds; other streams go on.

This package holds what every kind shares (the session rules, :func:`send_each`,
:func:`redact`); the kinds are declared in :mod:`rtwo_vm.runtime.sinks.kinds`, which makes a
sink of a kind, importing a kind's module (whose client library may be an optional extra,
``nats``) only when it is used.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from typing import Any, Protocol, Sequence

from rtwo_vm.runtime.events import VMEvent


class SinkUnavailable(Exception):
    """The sink cannot be reached or did not answer: nothing more goes to it this pass."""


class DeadlineReached(SinkUnavailable):
    """The pass deadline came before the sink answered: the event is not at fault (no
    attempt is counted); the next pass sends it again."""

    def __init__(self, text: str = "delivery pass deadline reached"):
        super().__init__(text)


class _NotSent(Exception):
    def __str__(self) -> str:
        return "not sent"


NOT_SENT = _NotSent()


class Session(Protocol):
    def send(self, events: Sequence[VMEvent], deadline: float) -> list[BaseException | None]: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...


class Sink(Protocol):
    name: str
    kind: str
    target: str
    options: dict[str, Any]

    def open(self, deadline: float) -> Session: ...


def remaining(deadline: float) -> float:
    """Seconds left until a time.monotonic() deadline (never negative)."""
    return max(0.0, deadline - time.monotonic())


def canonical_line(event: VMEvent) -> bytes:
    return json.dumps(event.to_json(), sort_keys=True, separators=(",", ":")).encode()


def one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return redact(f"{type(err).__name__}: {text[0] if text else ''}")[:500]


# A URL in a text: a scheme, "://" and everything up to white space. A sink's target may carry
# secrets anywhere after its host: credentials (scheme://USER:PASSWORD@host), a token in the
# path (https://hooks.example.com/services/T0/B0/SECRET) or in the query (?token=SECRET).
_URL = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*)://(\S*)")
_TRAILING = "'\")]>,;:."        # punctuation around a URL in a message, kept outside it
_DIGEST = re.compile(r"[0-9a-f]{8}\Z")
HIDDEN = "..."
_NO_PATH = ("nats", "tls")   # schemes whose URLs the sinks take without a path (nats.py)


def shown_url(url: str) -> str:
    """A URL as every listing, name and message shows it: its scheme, host and port, with
    ``***`` for the user information, ``/...`` for the path beyond the host, ``?...`` for the
    query, and, when a path, query or fragment was hidden, ``#`` and the first 8 hex digits of
    the SHA-256 of the whole URL, so that two sinks on one host are told apart
    (``https://hooks.example.com/...?...#3fa9c2d1``). A URL already in this form is returned
    unchanged (so that showing is idempotent). A ``nats://`` or ``tls://`` URL has no path
    (the NATS sink refuses one), so what follows its host is kept: a NATS sink's name is
    ``nats:URL/STREAM``."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url
    where = len(rest)
    for mark in "/?#":
        at = rest.find(mark)
        if at != -1:
            where = min(where, at)
    netloc, tail = rest[:where], rest[where:]
    userinfo, at_sign, host = netloc.rpartition("@")
    path, _, fragment = tail.partition("#")
    path, question, query = path.partition("?")
    if (path in ("", "/", "/" + HIDDEN) and query in ("", HIDDEN)
            and (fragment == "" or _DIGEST.match(fragment)) and userinfo in ("", "***")
            and (fragment or (path, query) == ("", "") or path == "/")):
        return f"{scheme}://{'***@' if at_sign else ''}{host}{tail}"
    if scheme.lower() in _NO_PATH and not question and "#" not in tail:
        path_kept = path   # a NATS URL has no path: after it comes a sink name's /STREAM
    else:
        path_kept = None
    hidden = (path not in ("", "/") and path_kept is None) or bool(question) or "#" in tail
    out = f"{scheme}://{'***@' if at_sign else ''}{host}"
    if path_kept is not None or path == "/":
        out += path
    elif path:
        out += "/" + HIDDEN
    if question:
        out += "?" + HIDDEN
    if hidden:
        out += "#" + hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return out


def _shown_match(match: re.Match) -> str:
    text = match.group(0)
    kept = ""
    while text and text[-1] in _TRAILING:
        kept, text = text[-1] + kept, text[:-1]
    return shown_url(text) + kept


def redact(text: str) -> str:
    """``text`` with every URL in it shown as :func:`shown_url` shows it: no credentials, no
    path beyond the host, no query (a webhook's secret token lives in either)."""
    return _URL.sub(_shown_match, text) if isinstance(text, str) else text


def send_each(events: Sequence[VMEvent], deadline: float, send_one) -> list[BaseException | None]:
    """The session rules of this module for a sink that sends one event at a time."""
    out: list[BaseException | None] = []
    refused: set[str] = set()
    for index, event in enumerate(events):
        if event.stream in refused:
            out.append(NOT_SENT)
            continue
        if remaining(deadline) <= 0:
            out.extend([NOT_SENT] * (len(events) - index))
            break
        try:
            send_one(event)
            out.append(None)
        except SinkUnavailable as err:
            out.append(err)
            out.extend([NOT_SENT] * (len(events) - index - 1))
            break
        except Exception as err:  # noqa: BLE001 - the sink refused this event
            out.append(err)
            refused.add(event.stream)
    return out
