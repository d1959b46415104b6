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


# The user information of a URL (scheme://USER:PASSWORD@host): a sink's target may carry
# credentials, which no message, listing or sink name shows.
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#@\s]*@")


def redact(text: str) -> str:
    """``text`` with the user information of every URL in it replaced by ``***``."""
    return _USERINFO.sub(r"\1***@", text) if isinstance(text, str) else text


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
