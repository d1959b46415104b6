"""The wall-clock limit of a vector is a safety net, never a verdict on its own.

A reply that did not come within ``Settings.timeout`` says as much about the machine's load as
about the implementation. So a vector that meets the safety net is run once more, in a fresh
process under the same environment, with :data:`RETRY_FACTOR` times the time:

- it answers: the answer is judged as if it had come the first time (the first attempt is kept
  in the vector's passes, marked as a safety-net timeout), and nothing else counts it;
- it does not answer again: the implementation hangs on it, and the vector fails (category
  ``timeout``) with both limits named. In a determinism pass this is a hang under that
  environment, never "nondeterministic".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from conformance.run.process import Reply, Settings
from conformance.run.runner import Pool

RETRY_FACTOR = 4
TIMEOUT = "timeout"


def met_safety_net(reply: Reply | None) -> bool:
    return reply is not None and reply.failure == TIMEOUT


def retry_settings(settings: Settings) -> Settings:
    return replace(settings, timeout=settings.timeout * RETRY_FACTOR)


def hang_detail(settings: Settings) -> str:
    return (f"no answer within {settings.timeout:g} s, nor within "
            f"{settings.timeout * RETRY_FACTOR:g} s when run again in a fresh process (a hang)")


def collect(argv: Sequence[str], settings: Settings, jobs: list) -> tuple[dict[str, Reply], int]:
    """Run ``jobs`` (built with a pass label of their own) in a fresh pool with the retry
    limit: their replies by vector id, and the adapter restarts."""
    replies: dict[str, Reply] = {}
    if not jobs:
        return replies, 0
    report = Pool(list(argv), retry_settings(settings)).run(
        jobs, lambda r: replies.__setitem__(r.vector_id, r), keep=False)
    return replies, report.restarts


def summary(count: int, settings: Settings) -> dict[str, Any]:
    """What a report says of the retries (informative: none of them is a failure by itself)."""
    return {"limit_seconds": settings.timeout, "retry_seconds": settings.timeout * RETRY_FACTOR,
            "vectors_retried": count}


def ids_of(outcomes: Mapping[str, Any]) -> list[str]:
    """Vector ids whose main-pass attempt met the safety net (first attempt of each outcome)."""
    return [vid for vid, o in outcomes.items() if o.passes and met_safety_net(o.passes[0].reply)]
