"""First divergence between an implementation's step trace and the reference's.

Traces are lists of step objects in the format of reference_vm.trace (EIP-3155 style: pc, op,
opName, immediate, stack, computeUsed, cost, memSize, depth), one per executed instruction of
every frame, followed by one summary object (status, error, output, computeUsed). The
reference trace is computed here, in-process, from the vector input.
"""

from __future__ import annotations

import io
import json
from dataclasses import asdict, dataclass
from typing import Any, Mapping, Sequence

from conformance.corpus.vector import run_reference
from reference_vm.trace import Eip3155Tracer, JsonLinesTracer

# Compared in this order, so the divergence names the most telling field first.
STEP_FIELDS = ("depth", "pc", "op", "opName", "immediate", "stack", "computeUsed", "cost", "memSize")
SUMMARY_FIELDS = ("status", "error", "output", "computeUsed")


@dataclass(frozen=True)
class Divergence:
    step: int                 # index in the trace (0 = the first instruction executed)
    field: str
    expected: Any
    actual: Any
    pc: int | None            # the reference's pc and instruction at that step, when it has one
    op_name: str | None
    previous: str | None = None   # the instruction before it: a step's counters are taken
                                  # before it runs, so a mischarge shows one step later
    summary: bool = False         # at the reference's final summary object, not at a step

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        if self.summary:
            last = f", the last {self.previous}" if self.previous else ""
            where = f"in the final summary object (after {self.step} steps{last})"
        elif self.field == "step" and self.expected == "end of trace":
            where = f"after the final summary object (entry {self.step}: the trace goes on)"
        else:
            where = f"at step {self.step}" + (f" (pc {self.pc}, {self.op_name})" if self.op_name else "")
        after = f", after {self.previous}" if self.previous and not self.summary else ""
        return f"first divergence {where}{after}: {self.field}: expected {self.expected!r}, got {self.actual!r}"


def reference_trace(vector_input: Mapping[str, Any], version: str) -> list[dict[str, Any]]:
    """The reference's native trace of a vector input under spec ``version``."""
    out = io.StringIO()
    run_reference(vector_input, version, tracer=JsonLinesTracer(out))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def eip3155_trace(vector_input: Mapping[str, Any], version: str) -> list[dict[str, Any]]:
    """The reference's EIP-3155 trace of a vector input under spec ``version`` (chapter 11.5.5)."""
    out = io.StringIO()
    run_reference(vector_input, version, Eip3155Tracer(out))
    return [json.loads(line) for line in out.getvalue().splitlines()]


def _is_summary(entry: Any) -> bool:
    return isinstance(entry, dict) and "status" in entry and "pc" not in entry


def first_divergence(expected: Sequence[Mapping[str, Any]], actual: Any) -> Divergence | None:
    """The first step and field where ``actual`` departs from ``expected``; None if equal."""
    if not isinstance(actual, list):
        return Divergence(0, "trace", "a list of steps", type(actual).__name__, None, None)
    for i, want in enumerate(expected):
        got = actual[i] if i < len(actual) else None
        summary = _is_summary(want)
        pc, name = (want.get("pc"), want.get("opName")) if not summary else (None, None)
        if not isinstance(got, dict):
            return Divergence(i, "step", _label(want), "end of trace" if got is None else got, pc, name,
                              summary=summary)
        fields = SUMMARY_FIELDS if summary else STEP_FIELDS
        for field in fields:
            if want.get(field) != got.get(field):
                previous = _label(expected[i - 1]) if i else None
                return Divergence(i, field, want.get(field), got.get(field), pc, name, previous, summary)
    if len(actual) > len(expected):
        return Divergence(len(expected), "step", "end of trace", actual[len(expected)], None, None)
    return None


def _label(entry: Mapping[str, Any]) -> str:
    return "summary" if _is_summary(entry) else f"{entry.get('opName')} at pc {entry.get('pc')}"
