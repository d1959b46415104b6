"""Joining a Ray cluster, or starting a private one: what every fan-out on Ray shares.

``address="local"`` starts a private single-node cluster bound to 127.0.0.1 with ``cpus``
CPUs (stopped by ``disconnect``); any other value is the address of a running cluster
(``ray start --head`` on some machine, joined with ``ray.init(address=...)``).
"""

from __future__ import annotations

import logging

NEEDS_RAY = "--ray needs Ray: pip install 'rtwo-vm[distributed]'"


class RayUnavailable(RuntimeError):
    """Ray is not installed, or the cluster cannot be joined (one line)."""


def available() -> bool:
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


PROBE_SECONDS = 10


def _answers(address: str) -> str | None:
    """Why the cluster at ``address`` cannot be joined, when its port does not accept a
    connection within PROBE_SECONDS (Ray itself would retry for ever); None when it does."""
    import socket
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=PROBE_SECONDS):
            return None
    except (OSError, ValueError) as err:
        return f"no answer on {host}:{port} ({getattr(err, 'strerror', None) or err})"


def connect(address: str, cpus: int) -> bool:
    """Join (or start) the cluster; True when this call started a private one. A cluster
    whose address does not answer is refused in one line (RayUnavailable)."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(NEEDS_RAY) from None
    if ray.is_initialized():
        return False
    why = None if address == "local" else _answers(address)
    if why is not None:
        raise RayUnavailable(f"Ray: cannot join {address}: {why}")
    try:
        if address == "local":
            ray.init(num_cpus=max(1, cpus), include_dashboard=False, _node_ip_address="127.0.0.1",
                     log_to_driver=False, logging_level=logging.ERROR)
            return True
        ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR)
    except Exception as err:  # noqa: BLE001 - a bad address, a cluster that does not answer
        raise RayUnavailable(f"Ray: cannot join {address}: {str(err).strip().splitlines()[0][:200]}"
                             if str(err).strip() else f"Ray: cannot join {address}") from None
    return False


def disconnect(started: bool) -> None:
    if started:
        import ray
        ray.shutdown()
