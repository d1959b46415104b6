"""Field-by-field comparison of an implementation's result with the expected one.

Every difference is reported, not only the first: each mismatch names its field path (for
example ``usage.compute`` or ``state_changes[1].after``), the expected and the actual value,
and a category used by the summaries:

- ``result``: status, error, error_pc, output, state changes, events, call records;
- ``resource``: a usage dimension or the fee;
- ``resource_bound``: reported usage above the request's limit (never allowed, chapter 5.1);
- ``stage``: the lifecycle stage the adapter reported for the error;
- ``internal``: INTERNAL_ERROR, which is never a conforming outcome (chapter 7.4);
- ``disagreement`` (set by the cross-implementation comparison): ``expected`` holds the other
  implementation's value, ``actual`` this one's.
"""

from __future__ import annotations

import json
import reprlib
from dataclasses import dataclass
from typing import Any, Mapping

from conformance.protocol import RESULT_FIELDS

RESOURCE_FIELDS = ("usage", "fee")
LIST_FIELDS = ("state_changes", "events", "calls")
BOUNDS = (("compute", "compute"), ("memory_pages", "memory_pages"), ("storage_units", "storage_units"))


@dataclass(frozen=True)
class Mismatch:
    field: str
    expected: Any
    actual: Any
    category: str

    def to_json(self) -> dict[str, Any]:
        return {"field": bounded(self.field, 300), "expected": bounded(self.expected),
                "actual": bounded(self.actual), "category": self.category}

    def __str__(self) -> str:
        if self.category == "disagreement":   # expected: the other implementation's value
            return f"{self.field}: theirs {_short(self.expected)}, ours {_short(self.actual)}"
        return f"{self.field}: expected {_short(self.expected)}, got {_short(self.actual)}"


_MISSING = "<missing>"
VALUE_LIMIT = 1000          # characters of one value kept in a report (the rest is cut, with a marker)
_REPR = reprlib.Repr()      # repr without walking all of a huge value
_REPR.maxstring = _REPR.maxother = 200
_REPR.maxlist = _REPR.maxdict = 20
MISMATCH_LIMIT = 50         # mismatches kept per vector


def bounded(value: Any, limit: int = VALUE_LIMIT) -> Any:
    """``value`` itself when its JSON is short, else a string of its start with a marker."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    try:
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    if len(text) <= limit:
        return value
    return text[:limit] + f"... [truncated: {len(text)} characters]"


def capped(mismatches: list["Mismatch"], limit: int = MISMATCH_LIMIT) -> list["Mismatch"]:
    """At most ``limit`` mismatches, the last saying how many more there were."""
    if len(mismatches) <= limit:
        return mismatches
    extra = len(mismatches) - limit + 1
    return mismatches[:limit - 1] + [Mismatch(f"... and {extra} more mismatches", "", "", mismatches[-1].category)]


def _short(value: Any, limit: int = 100) -> str:
    text = _REPR.repr(value) if value is not _MISSING else value
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _category(top: str) -> str:
    return "resource" if top in RESOURCE_FIELDS else "result"


def _diff(expected: Any, actual: Any, path: str, top: str, out: list[Mismatch]) -> None:
    if expected == actual and type(expected) is type(actual):
        return
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in expected:
            _diff(expected[key], actual.get(key, _MISSING), f"{path}.{key}", top, out)
        for key in actual:
            if key not in expected:
                out.append(Mismatch(f"{path}.{key}", _MISSING, actual[key], _category(top)))
        return
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            out.append(Mismatch(f"{path}.length", len(expected), len(actual), _category(top)))
        for i, (e, a) in enumerate(zip(expected, actual)):
            _diff(e, a, f"{path}[{i}]", top, out)
        return
    out.append(Mismatch(path, expected, actual, _category(top)))


def compare_result(expected: Mapping[str, Any], actual: Any) -> list[Mismatch]:
    """Every difference between the expected and the actual result object."""
    if expected == actual:
        return []
    if not isinstance(actual, dict):
        return [Mismatch("result", "an object", actual, "result")]
    out: list[Mismatch] = []
    for name in RESULT_FIELDS:
        if name not in actual:
            out.append(Mismatch(name, expected.get(name), _MISSING, _category(name)))
        else:
            _diff(expected.get(name), actual[name], name, name, out)
    for name in actual:
        if name not in RESULT_FIELDS:
            out.append(Mismatch(name, _MISSING, actual[name], "result"))
    if actual.get("status") == "internal" or actual.get("error") == "INTERNAL_ERROR":
        out.append(Mismatch("status", expected.get("status"), "internal", "internal"))
    return out


def bound_violations(actual: Any, limits: Mapping[str, int]) -> list[Mismatch]:
    """Usage dimensions an implementation reports above the request's limit."""
    usage = actual.get("usage") if isinstance(actual, dict) else None
    if not isinstance(usage, dict):
        return []
    out = []
    for used, limit in BOUNDS:
        value = usage.get(used)
        bound = limits.get(limit)
        if isinstance(value, int) and isinstance(bound, int) and bound >= 0 and value > bound:
            out.append(Mismatch(f"usage.{used}", f"at most {bound} (the limit)", value, "resource_bound"))
    return out


def compare_reply(vector: Mapping[str, Any], reply: Mapping[str, Any]) -> list[Mismatch]:
    """Mismatches of one result response against its vector: result, bounds and stage."""
    expected = vector["expected"]
    actual = reply.get("result")
    out = compare_result(expected["result"], actual)
    out.extend(bound_violations(actual, vector["input"]["sandbox"]["limits"]))
    if "stage" in reply and reply["stage"] != expected["error_stage"]:
        out.append(Mismatch("stage", expected["error_stage"], reply["stage"], "stage"))
    return out
