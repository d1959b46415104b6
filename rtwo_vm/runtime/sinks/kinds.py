"""The sink kinds (kind -> module and class, :data:`SINK_KINDS`) and making a sink of one: from
its kind, target and options (:func:`make_sink`), or from a stored ``sinks`` row
(:func:`sink_from_row`). A kind's module is imported only when a sink of it is made, so that
an optional client library (``nats``) is needed only by those who use it; the kinds' modules
import the shared rules from the package, never this module.
"""

from __future__ import annotations

import importlib
import math
from typing import Any

from rtwo_vm.runtime import stored
from rtwo_vm.runtime.sinks import Sink, redact
from rtwo_vm.runtime.trust import DamagedRecord
from rtwo_vm.arguments.sinks import COMMON_OPTIONS

# kind -> (module under rtwo_vm.runtime.sinks, class name)
SINK_KINDS: dict[str, tuple[str, str]] = {
    "jsonl": ("jsonl", "JsonLinesSink"),
    "webhook": ("webhook", "WebhookSink"),
    "nats": ("nats", "NatsSink"),
}


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
    cls = getattr(importlib.import_module(f"rtwo_vm.runtime.sinks.{module}"), name)
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
