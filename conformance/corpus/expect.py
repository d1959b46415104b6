"""Author expectations: what the author of a definition states its result must be, checked when
the definition is filled. A definition whose expectations fail does not fill
(ExpectationFailed, one line per problem naming the definition, the version and what differs).

The reference interpreter fills every vector's expected result; an expectation is the author's
own statement of the part that is the point of the definition (the code an error vector is
for, the side of a limit a boundary vector sits on, the slots an undo leaves), derived by hand
from the spec's text and data, never copied from a fill. Where the reference disagrees, the
fill stops, so a reference bug cannot silently become the corpus's answer.

One concept for both kinds of definition: a single-call definition
(conformance.corpus.vector.Case) states an ``Expect`` for its one result; a scenario step
(conformance.scenario.case.Step) states its outcome (or a whole ``Expect``) and the scenario
the slots after its last step, checked by the same functions here.

An ``Expect`` holds in every version the definition is filled for; when the answer differs
between versions (a repricing), the definition gives a mapping version -> Expect instead, each
holding from its version until the next one named.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import spec


class ExpectationFailed(ValueError):
    """A definition's result is not what its author states (the definition does not fill).
    The message has one line per problem: ``<id> (<version>): <what differs>``."""

    def __init__(self, lines: Sequence[str]):
        super().__init__("\n".join(lines))
        self.lines = tuple(lines)


@functools.cache
def usage_names() -> tuple[str, ...]:
    """The usage fields of a result (the vector schema's, chapter 7.5) and ``fee`` (5.5): the
    names a usage expectation may bound."""
    usage = spec.schema("vector")["$defs"]["result"]["properties"]["usage"]["required"]
    return (*usage, "fee")


@functools.cache
def statuses_without_code() -> tuple[str, ...]:
    """The outcomes that are statuses without a code (the schema's ``outcome``)."""
    return tuple(spec.schema("vector")["$defs"]["outcome"]["oneOf"][0]["enum"])


def outcome_of(result_json: Mapping[str, Any]) -> str:
    """The outcome label of a result: its status when it has no code, else the code."""
    return result_json["error"] or result_json["status"]


@dataclass(frozen=True)
class Expect:
    """What the author expects of one result. Every field left at its default states nothing."""

    # "success", "reverted" or an outcome code of errors.toml: the outcome of the result.
    outcome: str | None = None
    # The outcome of each call record, in start order (chapter 7.5): how many calls started and
    # how each ended (CALL_DEPTH_EXCEEDED, for one, is only ever a call record's).
    calls: tuple[str, ...] | None = None
    output: bytes | None = None
    # Slots after the call, {address: {key: value}}; 0 means absent (undone, deleted, never set).
    storage: Mapping[int, Mapping[int, int]] = field(default_factory=dict)
    # Usage fields (usage_names(): the result's usage and its fee): exact values and bounds.
    usage: Mapping[str, int] = field(default_factory=dict)
    at_most: Mapping[str, int] = field(default_factory=dict)
    at_least: Mapping[str, int] = field(default_factory=dict)


Expectation = Expect | Mapping[str, Expect]


def expect_for(expectation: Expectation | None, version: str) -> Expect | None:
    """The Expect that holds in ``version``: the one given, or in a mapping the one of the
    newest version named that is not newer than ``version`` (None before the first)."""
    if expectation is None or isinstance(expectation, Expect):
        return expectation
    at = spec.version(version).number
    named = [v for v in expectation if spec.version(v).number <= at]
    return expectation[max(named, key=lambda v: spec.version(v).number)] if named else None


def _unknown_outcomes(by_version: Mapping[str, Expect]) -> list[str]:
    unknown: dict[tuple[str, str], list[str]] = {}      # (what, name) -> the versions without it
    for version, expect in by_version.items():
        codes = spec.load(version).errors
        calls = () if isinstance(expect.calls, str) else expect.calls or ()
        for what, name in [("outcome", expect.outcome), *(("call outcome", c) for c in calls)]:
            if name is not None and name not in statuses_without_code() and name not in codes:
                unknown.setdefault((what, name), []).append(version)
    return [f"unknown {what} {name!r} in the expectation (spec {', '.join(versions)}: not "
            f"{' or '.join(statuses_without_code())} nor a code of errors.toml)"
            for (what, name), versions in unknown.items()]


def definition_problems(expectation: Expectation | None, versions: Iterable[str]) -> list[str]:
    """What is wrong with a definition's expectation before anything runs: not an Expect, a
    version named that the definition is not filled for, an unknown outcome or usage name, a
    negative bound or a slot that is not a word. ``versions``: every version the definition is
    filled for (each outcome is checked against that version's codes)."""
    if expectation is None:
        return []
    versions = list(versions)
    if isinstance(expectation, Expect):
        by_version = {v: expectation for v in versions}
    elif isinstance(expectation, Mapping) and all(isinstance(e, Expect) for e in expectation.values()):
        stray = [v for v in expectation if v not in versions]
        if stray:
            return [f"the expectation names {', '.join(map(str, stray))}, not a version the definition is filled for"]
        by_version = {v: e for v in versions if (e := expect_for(expectation, v)) is not None}
    else:
        return ["expect must be an Expect or a mapping version -> Expect"]
    out = _unknown_outcomes(by_version)
    for expect in {id(e): e for e in by_version.values()}.values():
        for kind in ("usage", "at_most", "at_least"):
            for name, value in getattr(expect, kind).items():
                if name not in usage_names():
                    out.append(f"unknown usage name {name!r} in {kind} (one of {', '.join(usage_names())})")
                elif not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    out.append(f"{kind}[{name!r}] must be a count, not {value!r}")
        if expect.output is not None and not isinstance(expect.output, bytes):
            out.append(f"output must be bytes, not {type(expect.output).__name__}")
        if isinstance(expect.calls, str):
            out.append(f"calls must be a tuple of outcomes, not the string {expect.calls!r}")
        mask = 2 ** spec.load(versions[0]).limits["machine"]["word_bits"] - 1 if versions else None
        words = [w for a, slots in expect.storage.items() for k, v in slots.items() for w in (a, k, v)]
        if mask is not None and any(not isinstance(w, int) or not 0 <= w <= mask for w in words):
            out.append("storage names an address, key or value that is not a word")
    return out


def _usage_of(result: Mapping[str, Any], name: str) -> int:
    return result["fee"] if name == "fee" else result["usage"][name]


def result_problems(expect: Expect, result: Mapping[str, Any]) -> list[str]:
    """Where ``result`` (a canonical result, chapter 7.5) differs from what ``expect`` states of
    it: outcome, call outcomes, output and usage. (Slots: storage_problems.)"""
    found = []
    if expect.outcome is not None and outcome_of(result) != expect.outcome:
        found.append(f"expected {expect.outcome}, the reference gives {outcome_of(result)}")
    if expect.calls is not None:
        calls = tuple(outcome_of(c) for c in result["calls"])
        if calls != tuple(expect.calls):
            found.append(f"expected call outcomes [{', '.join(expect.calls)}], the reference gives "
                         f"[{', '.join(calls)}]")
    if expect.output is not None and result["output"] != "0x" + expect.output.hex():
        found.append(f"expected output 0x{expect.output.hex()}, the reference gives {result['output']}")
    checks: tuple[tuple[str, Callable[[int, int], bool], Mapping[str, int]], ...] = (
        ("", lambda got, want: got == want, expect.usage),
        ("at most ", lambda got, want: got <= want, expect.at_most),
        ("at least ", lambda got, want: got >= want, expect.at_least))
    for words, holds, bounds in checks:
        for name, want in bounds.items():
            got = _usage_of(result, name)
            if not holds(got, want):
                found.append(f"expected {name} {words}{want}, the reference gives {got}")
    return found


def storage_problems(expected: Mapping[int, Mapping[int, int]], slot: Callable[[int, int], int]) -> list[str]:
    """Where the slots ``slot(address, key)`` reads differ from ``expected`` ({address: {key:
    value}}, 0 for absent)."""
    found = []
    for address, slots in expected.items():
        for key, value in slots.items():
            got = slot(address, key)
            if got != value:
                found.append(f"expected slot {hex(key)} of {hex(address)} = {hex(value)}, the reference gives {hex(got)}")
    return found


def state_slots(state: Mapping[str, Any]) -> Callable[[int, int], int]:
    """The slot reader of a state in its JSON form (a pre- or post-state, chapter 11.2.3)."""
    contracts = state["contracts"]

    def slot(address: int, key: int) -> int:
        body = contracts.get(hex(address))
        return 0 if body is None else int(body["storage"].get(hex(key), "0x0"), 16)
    return slot


def after_call(pre_state: Mapping[str, Any], result: Mapping[str, Any]) -> Callable[[int, int], int]:
    """The slot reader of the state after a single call: its pre-state with the result's state
    changes (each slot at most once, its ``after`` value, chapter 7.5)."""
    changed = {(int(c["address"], 16), int(c["key"], 16)): int(c["after"], 16) for c in result["state_changes"]}
    before = state_slots(pre_state)
    return lambda address, key: changed.get((address, key), before(address, key))


def problems(expect: Expect, vector_input: Mapping[str, Any], result: Mapping[str, Any]) -> list[str]:
    """Where a single call's result differs from ``expect`` (its input gives the pre-state)."""
    return result_problems(expect, result) + storage_problems(expect.storage,
                                                              after_call(vector_input["pre_state"], result))


def failure(id: str, version: str, found: Iterable[str]) -> ExpectationFailed:
    """The ExpectationFailed of definition ``id`` filled for ``version``: one line a problem."""
    return ExpectationFailed([f"{id} ({version}): {problem}" for problem in found])
