"""Trace checks of a conformance run (spec chapter 11.6): when an implementation announces
the ``trace`` capability, the runner requests traces for

- failing vectors that got a result (unlisted ones first), to name the first divergence, and
- a sample of *passing* vectors that together execute every opcode at least once, jumps and
  subroutine calls and calls included: a trace that disagrees with the reference's on a
  vector whose result agrees is a ``trace`` failure.

The sample is chosen greedily (the vector adding the most opcodes not yet covered first, ties
by id), so it is the same for the same selection.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from conformance.run.compare import Mismatch
from conformance.run.tracediff import first_divergence, reference_trace

SAMPLE_LIMIT = 200      # passing vectors traced at most


def covering_sample(vectors: Sequence[Mapping[str, Any]], limit: int = SAMPLE_LIMIT) -> list[str]:
    """Ids of few vectors whose opcodes together cover every opcode any of them has."""
    left = {v["id"]: set(v["tags"]["opcodes"]) for v in vectors if v["tags"]["opcodes"]}
    covered: set[str] = set()
    chosen: list[str] = []
    while left and len(chosen) < limit:
        best = max(sorted(left), key=lambda i: len(left[i] - covered))
        if not left[best] - covered:
            break
        chosen.append(best)
        covered |= left.pop(best)
    return chosen


def judge(vector: Mapping[str, Any], message: Mapping[str, Any] | None, passing: bool, version: str):
    """(divergence, mismatches) of one traced reply in a session of spec ``version``; the
    mismatches are trace failures of a passing vector (a failing one only gets its divergence
    named)."""
    trace = message.get("trace") if isinstance(message, Mapping) else None
    if not isinstance(trace, list):
        problem = "no trace returned"
        return None, [Mismatch("trace", "a trace list (capability trace)", problem, "trace")] if passing else []
    divergence = first_divergence(reference_trace(vector["input"], version), trace)
    if divergence is None or not passing:
        return divergence, []
    return divergence, [Mismatch(f"trace step {divergence.step}: {divergence.field}", divergence.expected,
                                 divergence.actual, "trace")]
