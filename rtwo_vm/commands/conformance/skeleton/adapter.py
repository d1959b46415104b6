"""An RTWO VM conformance adapter skeleton (protocol rtwo-conformance/1, spec chapter 11.5),
written by ``rtwo-vm conformance init --lang python``. It passes ``rtwo-vm conformance
selftest`` as it is and answers UNSUPPORTED_INPUT for every input your VM does not run yet.

Run it with ``python adapter.py``; it needs only the Python standard library and the files
init wrote beside it: ``schemas/`` (the protocol and vector schemas) and ``rtwo-spec.json``
(the spec version, its request limits, isolation levels, seed size, word size and
policy values).

Your VM goes into ``run_vm``: it gets a vector input (chapter 11.2.3) and returns a result
(chapter 7.5), or raises ``Unsupported("what is missing")`` for an input it cannot run yet (say
what is missing: the conformance report groups the unsupported vectors by that message). Out
of the box it runs one program: a container whose code is a single STOP, under a plain request.
Logs go to stderr, never stdout.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

HERE = Path(__file__).resolve().parent
SPEC = json.loads((HERE / "rtwo-spec.json").read_text())
SCHEMAS = {name: json.loads((HERE / "schemas" / name).read_text())
           for name in ("runner-message.schema.json", "vector.schema.json")}
MAX_DEPTH = 32                              # 11.5.1: a line nested deeper is BAD_MESSAGE
MAX_LINE = 16 << 20                         # bytes of one request line read at most
STOP_ONLY = "0x5254574f01000000010000000000000000"   # magic, version 1, code size 1, data 0, STOP


class Unsupported(Exception):
    """An input this VM cannot run yet: answered UNSUPPORTED_INPUT with the message."""


def zero_usage() -> dict[str, int]:
    return {"compute": 0, "memory_pages": 0, "storage_reads": 0, "storage_writes": 0,
            "storage_new_slots": 0, "storage_units": 0}


def run_vm(vector_input: dict[str, Any]) -> dict[str, Any]:
    """Your VM: a vector input -> a result of chapter 7.5. This skeleton runs a single STOP."""
    contracts = vector_input["pre_state"]["contracts"]
    message, policy, sandbox = vector_input["message"], vector_input["policy"], vector_input["sandbox"]
    limits = sandbox["limits"]
    seed = vector_input["context"]["random_seed"]
    plain = (len(seed) == 2 + 2 * SPEC["seed_size"] and len(contracts) == 1
             and message["to"] in contracts and message["call_data"] == "0x"
             and all(int(w, 16) < 2 ** SPEC["word_bits"]
                     for w in (message["to"], message["caller"], vector_input["context"]["block_time"]))
             and all(policy[k] in SPEC["policy_values"][k] for k in ("time_access", "randomness", "external_call"))
             and policy["allowed_operations"] is None and not policy["forbidden_operations"]
             and sandbox["isolation_level"] == "standard" and sandbox["storage_access"] == "read_write"
             and all(isinstance(limits[k], (int, float)) and not isinstance(limits[k], bool)
                     and float(limits[k]).is_integer()
                     and SPEC["minimum"][k] <= limits[k] <= SPEC["maximum"][k] for k in SPEC["maximum"]))
    entry = contracts.get(message["to"], {})
    if not plain or entry.get("code") != STOP_ONLY or entry.get("storage"):
        raise Unsupported("not implemented yet: only a single STOP under a plain request runs")
    return {"status": "success", "error": None, "error_pc": None, "output": "0x", "state_changes": [],
            "events": [], "calls": [], "usage": zero_usage(), "fee": 0}


# --- the protocol (you should not need to change what follows) -----------------------------

def _resolve(ref: str, base: str) -> tuple[dict[str, Any], str]:
    name, _, pointer = ref.partition("#")
    name = name or base
    node: Any = SCHEMAS[name]
    for part in pointer.split("/")[1:]:
        node = node[part]
    return node, name


def _type_ok(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    return {"string": isinstance(value, str), "boolean": isinstance(value, bool), "null": value is None,
            "object": isinstance(value, dict), "array": isinstance(value, list),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool)}[kind]


def _pattern(pattern: str, value: str) -> bool:         # ECMA-262: "$" is the very end (11.2.1)
    return re.search(pattern.replace("$", r"\Z"), value) is not None


def problems(value: Any, schema: Any, base: str) -> Iterator[str]:
    """The problems of ``value`` against ``schema`` (the keywords the protocol schemas use)."""
    if schema is True or schema == {}:
        return
    if schema is False:
        yield "not allowed"
        return
    if "$ref" in schema:
        target, name = _resolve(schema["$ref"], base)
        yield from problems(value, target, name)
    kinds = schema.get("type")
    if kinds is not None and not any(_type_ok(value, k) for k in ([kinds] if isinstance(kinds, str) else kinds)):
        yield f"not of type {kinds}"
        return
    if "const" in schema and value != schema["const"]:
        yield f"not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        yield "not one of the allowed values"
    if "oneOf" in schema and sum(not any(problems(value, s, base)) for s in schema["oneOf"]) != 1:
        yield "not exactly one of the allowed forms"
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0) or len(value) > schema.get("maxLength", len(value)):
            yield "a string of the wrong length"
        if "pattern" in schema and not _pattern(schema["pattern"], value):
            yield f"{value[:40]!r} does not match {schema['pattern']}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            yield "below the minimum"
        if "maximum" in schema and value > schema["maximum"]:
            yield "above the maximum"
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get("maxItems", len(value)):
            yield "a list of the wrong length"
        if schema.get("uniqueItems") and len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            yield "items not unique"
        for item in value if "items" in schema else ():
            yield from problems(item, schema["items"], base)
    if isinstance(value, dict):
        yield from _object_problems(value, schema, base)


def _object_problems(value: dict[str, Any], schema: dict[str, Any], base: str) -> Iterator[str]:
    if len(value) < schema.get("minProperties", 0):
        yield "too few members"
    for key in schema.get("required", ()):
        if key not in value:
            yield f"no member {key}"
    for key, member in value.items():
        if "propertyNames" in schema:
            yield from problems(key, schema["propertyNames"], base)
        matched = False
        if key in schema.get("properties", {}):
            matched = True
            yield from problems(member, schema["properties"][key], base)
        for pattern, sub in schema.get("patternProperties", {}).items():
            if _pattern(pattern, key):
                matched = True
                yield from problems(member, sub, base)
        if not matched and "additionalProperties" in schema:
            yield from problems(member, schema["additionalProperties"], base)


EXECUTE = {"$ref": "runner-message.schema.json#/$defs/execute"}
HELLO = {"$ref": "runner-message.schema.json#/$defs/hello"}


def send(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def error(rid: Any, code: str, text: str) -> None:
    send({"type": "error", "id": rid if isinstance(rid, str) else None, "code": code, "message": text})


def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("two members of one name")
    return dict(pairs)


def too_deep(line: str) -> bool:
    depth, in_string, escaped = 0, False, False
    for ch in line:
        if in_string:
            in_string, escaped = (ch != '"' or escaped), (ch == "\\" and not escaped)
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif ch in "]}":
            depth -= 1
    return False


def request_lines():
    """stdin's lines, each read with a bound: a longer one is skipped to its end, never held,
    and given as None."""
    while True:
        raw = sys.stdin.buffer.readline(MAX_LINE + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = sys.stdin.buffer.readline(1 << 20)
            yield None
            continue
        yield raw.decode("utf-8", errors="replace")


def main() -> int:
    greeted, version = False, SPEC["spec_version"]
    for line in request_lines():
        try:
            msg = None if line is None or too_deep(line) else json.loads(line, object_pairs_hook=unique)
        except ValueError:
            msg = None
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            error(None, "BAD_MESSAGE", "not a JSON object with a string type, or nested too deeply")
            continue
        kind, rid = msg["type"], msg.get("id")
        if kind == "hello":
            protocol = msg.get("protocol")
            if isinstance(protocol, str) and not protocol.endswith("/1"):
                error(None, "UNSUPPORTED_PROTOCOL", "this adapter speaks rtwo-conformance/1")
                return 3
            if any(problems(msg, HELLO, "runner-message.schema.json")):
                error(None, "BAD_MESSAGE", "not a hello of rtwo-conformance/1")
                return 3
            if msg["spec_version"] != version:
                send({"type": "error", "id": None, "code": "UNSUPPORTED_SPEC_VERSION",
                      "message": f"this adapter implements spec {version}", "spec_versions": [version]})
                return 3
            greeted = True
            send({"type": "hello", "protocol": "rtwo-conformance/1", "spec_versions": [version],
                  "implementation": {"name": SPEC["name"], "version": "0.1.0"}, "capabilities": []})
        elif kind == "execute":
            problem = "execute before hello" if not greeted else next(
                problems(msg, EXECUTE, "runner-message.schema.json"), None)
            if problem is None and msg["input"]["sandbox"]["isolation_level"] not in SPEC["isolation_levels"]:
                problem = "an unknown isolation level (10.2)"
            if problem is not None:
                error(rid, "BAD_MESSAGE", problem[:200])
            elif msg["trace"] and msg.get("trace_format") == "eip3155":
                error(rid, "UNSUPPORTED_INPUT", "no EIP-3155 traces here")
            else:
                try:
                    send({"type": "result", "id": rid, "result": run_vm(msg["input"])})
                except Unsupported as err:
                    error(rid, "UNSUPPORTED_INPUT", str(err)[:500])
                except Exception as err:  # noqa: BLE001 - never die on one request
                    print(f"{rid}: {err!r}", file=sys.stderr, flush=True)
                    error(rid, "ADAPTER_FAILURE", repr(err)[:500])
        elif kind == "shutdown":
            if set(msg) != {"type"}:
                error(None, "BAD_MESSAGE", "a shutdown has no other member")
                continue
            send({"type": "bye"})
            return 0
        else:
            error(rid, "UNKNOWN_TYPE", f"unknown message type {kind[:40]!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
