"""Files the conformance tools read back from outside: a replay bundle (the normative schema
``spec/schemas/replay-bundle.schema.json``, chapter 11.6) and the members of a previous
``report.json`` that ``run --last-failed`` uses (the tool format ``last-failed.schema.json``
beside this module).

Both are hostile: read through :mod:`spec.files` (regular files only, the size capped while
reading, nesting capped), checked against their schema with jsonschema, and every number
used checked again against its range (jsonschema calls 5.0 an integer). Each refusal is a
:class:`spec.files.FileRefused` with one line naming the file and the first problem.

The runner's own maxima live in these schemas, so that a run never writes a report or a
bundle that cannot be read back: the largest ``--repeat`` (a bundle's passes, less the main
pass), ``--fresh`` and ``--seed``.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import spec
from spec.files import FileRefused, check_int, read_json

BUNDLE_SCHEMA = "replay-bundle"                     # spec/schemas/replay-bundle.schema.json
SCENARIO_BUNDLE_SCHEMA = "scenario-bundle"          # spec/schemas/scenario-bundle.schema.json (11.9)
REPORT_SCHEMA = Path(__file__).with_name("last-failed.schema.json")
BUNDLE_LIMIT = 16 << 20     # bytes of a bundle read at most (written below 512 KiB, the vector whole)
REPORT_LIMIT = 64 << 20     # bytes of a report.json read at most (the runner writes at most 16 MiB)
MAX_DEPTH = 64              # nesting of either file
PYTHONHASHSEED_MAX = (1 << 32) - 1   # Python's own range for PYTHONHASHSEED
SHOWN = 200                 # characters of a problem shown


@functools.cache
def _report_schema() -> dict[str, Any]:
    return json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))


_BUNDLE = spec.schema(BUNDLE_SCHEMA)
BUNDLE_FORMATS: tuple[str, ...] = tuple(_BUNDLE["properties"]["bundle"]["enum"])
BUNDLE_FORMAT = BUNDLE_FORMATS[-1]                   # what a run writes
SCENARIO_BUNDLE_FORMAT: str = spec.schema(SCENARIO_BUNDLE_SCHEMA)["properties"]["bundle"]["const"]
MAX_PASSES: int = _BUNDLE["properties"]["passes"]["maxItems"]
# The main pass, its second attempt after the safety net, one record per determinism pass.
MAX_REPEAT = MAX_PASSES - 2                         # --repeat of a run or a replay
_PASS = _BUNDLE["$defs"]["pass"]["properties"]
MAX_ORDER_SEED: int = _PASS["order_seed"]["oneOf"][1]["maximum"]
MAX_PRECEDED: int = _PASS["preceded_count"]["maximum"]
MAX_SEED: int = _report_schema()["$defs"]["seed"]["maximum"]
MAX_FRESH: int = _report_schema()["$defs"]["fresh"]["maximum"]


def printable(text: str) -> str:
    """``text`` with its control and other unprintable characters escaped (\\x1b, \\n)."""
    return text if text.isprintable() else "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


def one_line(text: Any, limit: int = SHOWN) -> str:
    """``text`` on one line, printable (control characters escaped), at most ``limit`` characters."""
    whole = str(text)
    shown = printable(whole[:2 * limit])
    return shown if len(shown) <= limit and len(whole) <= 2 * limit else shown[:limit] + "…"


def _validator(schema: dict[str, Any]):
    from referencing import Registry, Resource

    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (
        spec.schema(name) for name in ("vector", "scenario-vector", BUNDLE_SCHEMA))])
    from spec import ecma   # the schemas' patterns are ECMA-262 ones (11.2.1)
    return ecma.validator(schema, registry=registry)


@functools.cache
def _bundle_validator():
    return _validator(dict(_BUNDLE))


@functools.cache
def _scenario_bundle_validator():
    return _validator(dict(spec.schema(SCENARIO_BUNDLE_SCHEMA)))


def is_scenario_bundle(bundle: Any) -> bool:
    """Whether a bundle (read by :func:`read_bundle`) is a scenario's (11.9)."""
    return isinstance(bundle, dict) and bundle.get("bundle") == SCENARIO_BUNDLE_FORMAT


@functools.cache
def _report_validator():
    return _validator(_report_schema())


def _first_problem(validator, document: Any) -> str | None:
    from jsonschema.exceptions import best_match
    error = best_match(itertools.islice(validator.iter_errors(document), 100))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path) or "(top)"
    return f"{one_line(where, 80)}: {one_line(error.message)}"


def bundle_version(bundle: Any) -> str:
    """The spec version a bundle's vector ran under: its ``spec_version`` (format 3), else its
    vector's ``_meta.spec_version``, else the first version (bundles of formats 1 and 2 were
    all written by runs of version 1.0)."""
    if isinstance(bundle.get("spec_version"), str) or is_scenario_bundle(bundle):
        return bundle["spec_version"]
    meta = bundle["vector"].get("_meta")
    return meta["spec_version"] if isinstance(meta, dict) else spec.names()[0]


def bundle_problem(bundle: Any) -> str | None:
    """The first reason ``bundle`` is not a replay bundle (None when it is one)."""
    if not isinstance(bundle, dict):
        return f"a JSON {type(bundle).__name__}, not an object"
    if bundle.get("bundle") not in (*BUNDLE_FORMATS, SCENARIO_BUNDLE_FORMAT):
        return (f"format {one_line(repr(bundle.get('bundle')), 80)}, not one of "
                f"{', '.join((*BUNDLE_FORMATS, SCENARIO_BUNDLE_FORMAT))}")
    validator = _scenario_bundle_validator() if is_scenario_bundle(bundle) else _bundle_validator()
    found = _first_problem(validator, bundle)
    if found:
        return found
    if is_scenario_bundle(bundle):
        found = _scenario_problem(bundle["scenario"])
        if found:
            return found
    version = bundle_version(bundle)
    if version not in spec.names():
        return (f"spec_version: {one_line(repr(version), 40)} is not a version of spec/versions.toml "
                f"({', '.join(spec.names())})")
    try:
        for k, record in enumerate(bundle.get("passes") or []):
            where = f"passes/{k}"
            if record.get("order_seed") is not None:
                check_int(record["order_seed"], 0, MAX_ORDER_SEED, f"{where}/order_seed")
            preceded = record.get("preceded_by") or []
            if "preceded_count" in record:
                check_int(record["preceded_count"], len(preceded), MAX_PRECEDED, f"{where}/preceded_count")
            seed = (record.get("environment") or {}).get("PYTHONHASHSEED")
            if seed not in (None, "random") and int(seed) > PYTHONHASHSEED_MAX:
                return f"{where}/environment/PYTHONHASHSEED: must be \"random\" or at most {PYTHONHASHSEED_MAX}"
    except FileRefused as err:
        return str(err)
    return None


def _scenario_problem(scenario: Any) -> str | None:
    """What the schema cannot say of a bundle's scenario: its steps' versions, sandboxes, and the
    expected results carried from step to step (11.9.1, 11.9.2)."""
    from conformance.scenario.carry import next_state
    from conformance.scenario.schema import input_problems
    found = input_problems(scenario["input"])
    if found:
        return f"scenario/input: {one_line(found[0])}"
    expected = scenario["expected"]["steps"]
    if len(expected) != len(scenario["input"]["steps"]):
        return f"scenario/expected/steps: {len(expected)} results for {len(scenario['input']['steps'])} steps"
    state = scenario["input"]["pre_state"]
    try:
        for want in expected:
            state = next_state(state, want["result"])
    except ValueError as err:
        return f"scenario/expected: {one_line(err)}"
    return None


def read_bundle(path: str | os.PathLike[str]) -> dict[str, Any]:
    """The replay bundle in the regular file ``path``; FileRefused (one line) when it is not one."""
    name = os.fspath(path)
    bundle = read_json(name, BUNDLE_LIMIT, MAX_DEPTH, "replay bundle")
    problem = bundle_problem(bundle)
    if problem:
        raise FileRefused(f"{one_line(name, 300)}: not a replay bundle ({problem})")
    return bundle


@dataclass(frozen=True)
class Previous:
    """What ``--last-failed`` takes from the previous report."""

    failed: frozenset[str]     # every implementation's failing ids
    seed: int | None           # the run's seed
    fresh: int                 # the size of its fresh sample
    # id -> the failure kinds and categories it had in any implementation; None for a
    # report without failure summaries (written before they existed)
    kinds: dict[str, frozenset[str]] | None = None


def read_previous(path: str | os.PathLike[str]) -> Previous:
    """The previous ``report.json`` at ``path``; FileRefused (one line) when it is not one."""
    name = os.fspath(path)
    doc = read_json(name, REPORT_LIMIT, MAX_DEPTH, "conformance report")
    if not isinstance(doc, dict):
        raise FileRefused(f"{one_line(name, 300)}: not a conformance report (a JSON {type(doc).__name__})")
    problem = _first_problem(_report_validator(), doc)
    try:
        if problem is None:
            seed = doc.get("seed")
            if seed is not None:
                check_int(seed, 0, MAX_SEED, "seed")
            fresh = doc["fresh_requested"] if "fresh_requested" in doc else doc.get("fresh", 0)
            check_int(fresh, 0, MAX_FRESH, "fresh_requested" if "fresh_requested" in doc else "fresh")
    except FileRefused as err:
        problem = str(err)
    if problem:
        raise FileRefused(f"{one_line(name, 300)}: not a conformance report ({problem})")
    failed = frozenset(i for run in doc["implementations"] for i in run["failed_ids"])
    kinds: dict[str, frozenset[str]] | None = None
    if doc["implementations"] and all("failure_summaries" in run for run in doc["implementations"]):
        kinds = {}
        for run in doc["implementations"]:
            for entry in run["failure_summaries"]:
                kinds[entry["id"]] = kinds.get(entry["id"], frozenset()) | {entry["kind"], *entry["categories"]}
    return Previous(failed, seed, fresh, kinds)
