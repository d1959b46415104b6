"""Validating vectors: the JSON Schema of spec/schemas/vector.schema.json, then the checks a
schema cannot express (names that must exist in the spec data, the content hash, the
expected stage agreeing with errors.toml).

Also validates the other JSON documents of chapter 11 against their schemas (protocol
messages, known-failure lists, the corpus manifest).
"""

from __future__ import annotations

import functools
from typing import Any, Iterable, Mapping

import spec
from conformance.corpus.vector import content_hash, error_stage, isolation_levels

# The JSON Schemas of chapter 11, in spec/schemas.
SCHEMAS = ("vector", "vector-manifest", "known-failures", "adapter-message", "runner-message",
           "scenario-vector")


@functools.cache
def validator(name: str):
    """A compiled Draft 2020-12 validator for spec/schemas/<name>.schema.json."""
    import jsonschema  # only the checkers need it, not the runner's hot path
    from referencing import Registry, Resource

    schema = spec.schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    # The protocol schemas refer to the vector schema by its $id.
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in map(spec.schema, SCHEMAS))
    from spec import ecma   # the schemas' patterns are ECMA-262 ones (11.2.1)
    return ecma.validator(schema, registry=registry)


@functools.cache
def fast_validator(name: str):
    from conformance.corpus.fastschema import compile_schema
    return compile_schema(spec.schema(name))


def schema_problems(name: str, document: Any, authoritative: bool = False) -> list[str]:
    """Problems of a document against spec/schemas/<name>.schema.json: with jsonschema when
    ``authoritative``, else with the compiled validator (same rules, much faster)."""
    if not authoritative:
        return fast_validator(name)(document)
    out = []
    for err in validator(name).iter_errors(document):
        path = "/".join(str(p) for p in err.absolute_path) or "(top)"
        out.append(f"{path}: {err.message}")
    return out


def version_problem(version: Any, where: str = "_meta/spec_version") -> str | None:
    """Why ``version`` is not a version of spec/versions.toml (None when it is)."""
    if version in spec.names():
        return None
    shown = version if isinstance(version, str) and len(version) <= 40 else repr(version)[:40]
    return f"{where}: {shown!r} is not a version of spec/versions.toml ({', '.join(spec.names())})"


def _reference_problems(vector: Mapping[str, Any]) -> list[str]:
    out = []
    version = vector["_meta"]["spec_version"]
    problem = version_problem(version)
    if problem:
        return [problem]
    table = spec.load(version)
    tags = vector["tags"]
    for m in tags["opcodes"]:
        if m not in table.by_mnemonic:
            out.append(f"tags/opcodes: unknown mnemonic {m}")
    outcomes = [tags["outcome"], *tags["call_outcomes"]]
    result = vector["expected"]["result"]
    codes = [result["error"], *(c["error"] for c in result["calls"])]
    for code in [*outcomes, *codes]:
        if code is not None and code not in ("success", "reverted") and code not in table.errors:
            out.append(f"unknown outcome code {code}")
    if result["error"] is not None and result["error"] in table.errors:
        if table.errors[result["error"]].kind != result["status"]:
            out.append(f"expected/result: status {result['status']} is not the kind of {result['error']}")
        if vector["expected"]["error_stage"] != error_stage(result["error"], version):
            out.append("expected/error_stage: disagrees with errors.toml")
    elif vector["expected"]["error_stage"] is not None:
        out.append("expected/error_stage: must be null when there is no error")
    stage = vector["expected"]["error_stage"]
    if stage is not None and stage not in {s["name"] for s in table.lifecycle["stage"]}:
        out.append(f"expected/error_stage: unknown stage {stage}")
    sandbox = vector["input"]["sandbox"]
    level = isolation_levels(version).get(sandbox["isolation_level"])
    order = table.raw("sandbox")["sandbox"]["storage_access_order"]
    if level is None:
        out.append(f"input/sandbox/isolation_level: unknown level {sandbox['isolation_level']}")
    elif sandbox["storage_access"] not in order:
        out.append(f"input/sandbox/storage_access: unknown value {sandbox['storage_access']}")
    elif order.index(sandbox["storage_access"]) > order.index(level["max_storage_access"]):
        out.append("input/sandbox/storage_access: wider than the isolation level allows")
    if vector["_meta"]["content_hash"] != content_hash(vector):
        out.append("_meta/content_hash: does not match the vector's content")
    return out


def vector_problems(vector: Any, authoritative: bool = False) -> list[str]:
    """Every problem of one vector; empty when it is valid on its own (for the version it names)."""
    problems = schema_problems("vector", vector, authoritative)
    if problems:
        return problems
    return _reference_problems(vector)


def corpus_problems(vectors: Iterable[Mapping[str, Any]], version: str | None = None,
                    authoritative: bool = False) -> list[str]:
    """Problems of each vector, prefixed with its id, and of the set (duplicate ids); with
    ``version``, a vector of another version is a problem too (chapter 11.3: every vector of a
    corpus has the corpus's version)."""
    out, seen = [], set()
    for index, vector in enumerate(vectors):
        vid = vector.get("id", f"#{index}") if isinstance(vector, Mapping) else f"#{index}"
        if vid in seen:
            out.append(f"{vid}: duplicate id")
        seen.add(vid)
        found = vector_problems(vector, authoritative)
        if not found and version is not None and vector["_meta"]["spec_version"] != version:
            found = [f"_meta/spec_version: {vector['_meta']['spec_version']}, in the corpus of spec {version}"]
        out.extend(f"{vid}: {p}" for p in found)
    return out


@functools.cache
def execute_validator():
    """The runner-message schema's execute message (chapter 11.5.2), compiled by fastschema:
    its reference to the vector schema's input is resolved to a local one. An execute request
    with a problem here is not a vector input's request and is answered BAD_MESSAGE (11.5.4)."""
    import json

    from conformance.corpus.fastschema import compile_schema
    execute = json.loads(json.dumps(spec.schema("runner-message")["$defs"]["execute"])
                         .replace('"vector.schema.json#/$defs/input"', '"#/$defs/input"'))
    return compile_schema({**execute, "$defs": spec.schema("vector")["$defs"]})


@functools.cache
def hello_validator():
    """The runner-message schema's hello form (11.5.3), compiled by fastschema."""
    from conformance.corpus.fastschema import compile_schema
    return compile_schema(spec.schema("runner-message")["$defs"]["hello"])


def hello_request_problems(request: Any) -> list[str]:
    """Problems of a runner's hello against its form (11.5.4: BAD_MESSAGE, then exit 3)."""
    return hello_validator()(request)


def execute_problems(request: Any) -> list[str]:
    """Problems of an execute request against runner-message.schema.json (its execute form)."""
    return execute_validator()(request)
