"""Divergences: comparing an implementation's answer with the reference's whole canonical
result (chapter 7.5: status, error, error pc, output, state changes, events, call records,
usage, fee) and the stage, its trace with the reference trace when it traced, and a second
run under a perturbed environment with the first; and the *class* of a divergence, which the
shrinker preserves and the buckets are keyed by.

The class names what differs, not the values: field paths without list indices ("usage.compute,
fee", "calls[].memory_pages"; a list of another length is "events.length" alone), the process failure ("process:crash"), the error response code
("error:ADAPTER_FAILURE"), "nondeterministic:<fields>" or "trace:<field>". An UNSUPPORTED_INPUT
answer is classed by the instruction or request field its message names
("error:UNSUPPORTED_INPUT:MSTORE", "error:UNSUPPORTED_INPUT:allowed_operations"; see
conformance.fuzz.unsupported), "error:UNSUPPORTED_INPUT" alone when it names nothing known: a
partial VM's unsupported answers make one bucket per missing element, each shrunk to a request
whose only unsupported element is that one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from conformance.run import determinism
from conformance.run.compare import Mismatch, compare_reply
from conformance.fuzz.unsupported import UNSUPPORTED, unsupported_class
from conformance.run.tracediff import first_divergence

_INDEX = re.compile(r"\[[0-9]+\]")


@dataclass
class Divergence:
    kind: str                          # the class
    mismatches: list[Mismatch] = field(default_factory=list)
    detail: str = ""

    def lines(self, limit: int = 12) -> list[str]:
        out = [str(m) for m in self.mismatches[:limit]]
        if len(self.mismatches) > limit:
            out.append(f"... and {len(self.mismatches) - limit} more")
        if self.detail:
            out.append(self.detail)
        return out


def _fields(mismatches) -> str:
    """The class of field mismatches: their paths without list indices; a list whose length
    differs is named by its length alone (its elements then differ as a consequence, and which
    of them do depends on the program more than on the bug — keeping them in the class would
    keep the shrinker from removing what makes them differ)."""
    names = {_INDEX.sub("[]", m.field) for m in mismatches}
    lengths = tuple(n[:-len("length")] for n in names if n.endswith(".length"))
    cut = tuple(p[:-1] + "[]" for p in lengths)
    return ",".join(sorted(n for n in names if not n.startswith(cut) or n.endswith(".length")))


def compare(expected: Mapping[str, Any], vector_input: Mapping[str, Any], answer,
            reference_trace: list | None = None) -> Divergence | None:
    """The divergence of one answer from the reference's expected result, or None."""
    if answer.failure is not None and answer.failure != "protocol":
        return Divergence(f"process:{answer.failure}", detail=answer.detail)
    message = answer.message
    if answer.failure == "protocol":
        return Divergence("protocol", detail=answer.detail)
    if message.get("type") == "error":
        kind, text = f"error:{message.get('code')}", str(message.get("message", ""))[:200]
        return Divergence(unsupported_class(text) if kind == UNSUPPORTED else kind, detail=text)
    mismatches = compare_reply({"expected": expected, "input": vector_input}, message)
    if mismatches:
        return Divergence(_fields(mismatches), mismatches)
    if reference_trace is not None and isinstance(message.get("trace"), list):
        d = first_divergence(reference_trace, message["trace"])
        if d is not None:
            return Divergence(f"trace:{d.field}", detail=str(d))
    return None


def compare_runs(first, second) -> Divergence | None:
    """A second run of the same request (perturbed environment) against the first."""
    found = determinism.differences(first, second, "perturbed run")
    if not found:
        return None
    names = {m.field.split(": ", 1)[-1] for m in found}
    return Divergence("nondeterministic:" + ",".join(sorted(_INDEX.sub("[]", n) for n in names)), found)


def slug(text: str) -> str:
    """A class or command as a tag/id fragment: lower case letters, digits and underscores."""
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:80] or "x"
