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

Kinds are declared in :data:`SINK_KINDS` (kind -> module and class); a kind whose client
library is an optional extra (``nats``) is imported only when used.
"""

from __future__ import annotations

import importlib
import json
import math
import re
import time
from typing import Any, Protocol, Sequence

from rtwo_vm.runtime import stored
from rtwo_vm.runtime.events import VMEvent
from rtwo_vm.runtime.trust import DamagedRecord
from rtwo_vm.sink_options import COMMON_OPTIONS


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

# kind -> (module under rtwo_vm.runtime.sinks, class name)
SINK_KINDS: dict[str, tuple[str, str]] = {
    "jsonl": ("jsonl", "JsonLinesSink"),
    "webhook": ("webhook", "WebhookSink"),
    "nats": ("nats", "NatsSink"),
}

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


def check_options(kind_options: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Fill defaults and refuse unknown, non-finite or out-of-range options (ValueError)."""
    allowed = {**COMMON_OPTIONS, **kind_options}
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise ValueError(f"unknown sink option {unknown[0]!r}")
    out: dict[str, Any] = {}
    for name, spec in allowed.items():
        value = given.get(name)
        if isinstance(spec, tuple):
            default, low, high = spec
            value = default if value is None else value
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or not math.isfinite(value) or not low <= value <= high:
                raise ValueError(f"sink option {name} must be a number from {low:g} to {high:g}")
            out[name] = int(value) if isinstance(default, int) else float(value)
        else:  # a string option: spec is its default (None: optional)
            if value is not None and (not isinstance(value, str) or not value or len(value) > 200):
                raise ValueError(f"sink option {name} must be a non-empty string")
            out[name] = spec if value is None else value
    return out


def make_sink(kind: str, target: str, options: dict[str, Any] | None = None) -> Sink:
    """A sink of a declared kind (ValueError for an unknown kind, bad target or option)."""
    if kind not in SINK_KINDS:
        raise ValueError(f"unknown sink kind {kind!r}; use one of {', '.join(SINK_KINDS)}")
    module, name = SINK_KINDS[kind]
    cls = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    return cls(target, check_options(getattr(cls, "OPTIONS", {}), dict(options or {})))


def sink_from_row(row: Any) -> Sink:
    """The sink of a ``sinks`` row, its columns checked; named by the row (a sink's identity
    is the name it was registered under)."""
    stored.check_row("sinks", row)
    name = redact(row["name"])
    config = stored.json_value(row["config"], "sinks", name, "config", dict)
    try:
        sink = make_sink(row["kind"], row["target"], config)
    except ValueError as err:
        raise DamagedRecord(f"sinks {name}: {redact(str(err))} (the database was "
                                   "changed outside the runtime)") from None
    sink.name = row["name"]
    return sink


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
