"""Validating scenario vectors and scenario requests (chapter 11.9): the JSON Schema of
spec/schemas/scenario-vector.schema.json, then what a schema cannot express: versions known and
never decreasing, the content hash, names that must exist in the spec data, each expected
stage agreeing with errors.toml, and the expected post-state being the carried state.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Mapping

import spec
from conformance.corpus.schema import schema_problems, version_problem
from conformance.corpus.vector import bound_policy_fields, content_hash, error_stage
from conformance.scenario.carry import next_state

NAME = "scenario-vector"
_MEMBERS = ("pre_state", "message", "context", "policy", "sandbox")


@functools.cache
def _compiled(root: str):
    """The scenario schema compiled by fastschema, with its references into the vector schema
    resolved to local definitions (fastschema reads only local ``#/$defs`` references)."""
    from conformance.corpus.fastschema import compile_schema

    text = json.dumps(spec.schema(NAME))
    defs = dict(spec.schema("vector")["$defs"])
    for member in _MEMBERS:
        defs[f"input_{member}"] = defs["input"]["properties"][member]
        text = text.replace(f'"vector.schema.json#/$defs/input/properties/{member}"', f'"#/$defs/input_{member}"')
    defs["meta"] = spec.schema("vector")["properties"]["_meta"]
    text = text.replace('"vector.schema.json#/properties/_meta"', '"#/$defs/meta"')
    text = text.replace('"vector.schema.json#/$defs/', '"#/$defs/')
    document = json.loads(text)
    document["$defs"] = {**defs, **document["$defs"]}
    if root != "vector":
        document = {**document["$defs"][root], "$defs": document["$defs"]}
    return compile_schema(document)


def input_problems(scenario: Any) -> list[str]:
    """Problems of a scenario input against the schema, and its versions (11.9.1)."""
    found = _compiled("input")(scenario)
    if found:
        return found
    previous = None
    for index, step in enumerate(scenario["steps"]):
        problem = version_problem(step["spec_version"], f"steps/{index}/spec_version")
        if problem:
            return [problem]
        if previous is not None and spec.version(step["spec_version"]).number < spec.version(previous).number:
            return [f"steps/{index}/spec_version: {step['spec_version']} comes after {previous} "
                    "(versions may not decrease)"]
        previous = step["spec_version"]
        try:
            bound_policy_fields(step["policy"], step["sandbox"], step["spec_version"])
        except ValueError as err:
            return [f"steps/{index}: {err}"]
    return []


def vector_problems(vector: Any, version: str | None = None) -> list[str]:
    """Everything wrong with a scenario vector (of ``version``, when given)."""
    found = _compiled("vector")(vector)
    if found:
        return found
    found = input_problems(vector["input"])
    if found:
        return found
    meta = vector["_meta"]
    last = vector["input"]["steps"][-1]["spec_version"]
    if meta["spec_version"] != last:
        return [f"_meta/spec_version: {meta['spec_version']}, but the last step runs {last}"]
    if version is not None and meta["spec_version"] != version:
        return [f"_meta/spec_version: {meta['spec_version']} in the corpus of {version}"]
    if meta["content_hash"] != content_hash(vector):
        return ["_meta/content_hash does not match the vector"]
    steps, expected = vector["input"]["steps"], vector["expected"]["steps"]
    if len(steps) != len(expected):
        return [f"expected/steps: {len(expected)} results for {len(steps)} steps"]
    table = spec.load(meta["spec_version"])
    state = vector["input"]["pre_state"]
    for index, (step, want) in enumerate(zip(steps, expected)):
        result = want["result"]
        for code in {result["error"]} | {c["error"] for c in result["calls"]}:
            if code is not None and code not in spec.load(step["spec_version"]).errors:
                return [f"expected/steps/{index}: {code} is not a code of {step['spec_version']}"]
        if want["error_stage"] != error_stage(result["error"], step["spec_version"]):
            return [f"expected/steps/{index}/error_stage: not the stage of {result['error']}"]
        try:
            state = next_state(state, result)
        except ValueError as err:
            return [f"expected/steps/{index}: {err}"]
    if state != vector["expected"]["post_state"]:
        return ["expected/post_state is not the pre-state with the steps' state changes applied (11.9.2)"]
    for name in vector["tags"]["opcodes"]:
        if name not in table.by_mnemonic:
            return [f"tags/opcodes: {name} is not an instruction of {meta['spec_version']}"]
    return []


def authoritative_problems(vector: Any) -> list[str]:
    """The schema checked by jsonschema itself (the tests compare it with the compiled one)."""
    return schema_problems(NAME, vector, authoritative=True)


def request_problems(request: Mapping[str, Any]) -> list[str]:
    """Problems of a scenario request of the protocol (11.9.3) against runner-message.schema.json."""
    if set(request) - {"type", "id", "input"}:
        return [f"unknown member {sorted(set(request) - {'type', 'id', 'input'})[0]!r}"]
    if not isinstance(request.get("id"), str) or not request["id"]:
        return ["id: a non-empty string is required"]
    if "input" not in request:
        return ["input: required"]
    return input_problems(request["input"])
