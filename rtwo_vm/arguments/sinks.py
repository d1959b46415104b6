"""The numeric options of event sinks, as data: default, lowest and highest value.

Read by the sinks (:func:`rtwo_vm.runtime.sinks.kinds.check_options`, which checks a stored sink's
options) and by ``rtwo-vm events sink-add`` (its option types and help), so that a range is
written once. This module imports nothing, so the CLI can read it without loading the
runtime.
"""

from __future__ import annotations

# Delivery options every kind takes (the dispatcher's retry policy for a sink).
COMMON_OPTIONS: dict[str, tuple[float, float, float]] = {
    "timeout": (5.0, 0.01, 300.0),        # seconds per request / acknowledgement
    "max_attempts": (20, 1, 1000),        # failed attempts before an event is parked as dead
    "backoff": (0.5, 0.0, 3600.0),        # seconds after the first failure, doubled each time
    "backoff_cap": (300.0, 0.0, 86400.0), # ... up to this
}

# Numeric options of one kind (its other options are strings, declared on the sink class).
KIND_OPTIONS: dict[str, dict[str, tuple[float, float, float]]] = {
    "nats": {"dedup_window": (600.0, 1.0, 7 * 86400.0)},   # JetStream duplicate window, s
}
