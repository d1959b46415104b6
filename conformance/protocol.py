"""The adapter protocol, version 1 (spec chapter 11.5): JSON lines over stdin/stdout.

The runner starts the implementation's adapter as a long-running process and writes one JSON
object per line to its stdin; the adapter answers each with exactly one line on stdout, in
request order. Logs go to stderr, never to stdout.

    runner -> adapter                         adapter -> runner
    {"type":"hello", protocol, spec_version}  {"type":"hello", protocol, implementation,
                                               spec_versions, capabilities}
    {"type":"execute", id, input, trace}      {"type":"result", id, result[, stage][, trace]}
                                              or {"type":"error", id, code, message}
    {"type":"shutdown"}                       {"type":"bye"}, then exit status 0

End of input on stdin means shutdown without the bye. The runner may send several requests
before reading their responses (pipelining), so an adapter must read and answer in order.

A session runs one spec version, the one of the runner's hello (chapter 11.5.3): a runner that
checks several versions runs one session per version, and learns the adapter's versions from
its hello's ``spec_versions`` (or those of an UNSUPPORTED_SPEC_VERSION error).
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Mapping

import spec
from conformance.constants import PROTOCOL

PROTOCOL_MAJOR = int(PROTOCOL.rsplit("/", 1)[1])
NAME_LIMIT = 200      # characters of an implementation name, version or capability
CAPABILITIES = ("trace",)
# Error codes an adapter may answer with. Every one is a failure of the vector it answers
# (UNSUPPORTED_INPUT included: a conforming implementation executes every valid input).
ERROR_CODES = ("BAD_MESSAGE", "UNKNOWN_TYPE", "UNSUPPORTED_PROTOCOL", "UNSUPPORTED_SPEC_VERSION",
               "UNSUPPORTED_INPUT", "ADAPTER_FAILURE")
EXIT_OK = 0
EXIT_UNSUPPORTED = 3  # the adapter refused the handshake
RESULT_FIELDS = ("status", "error", "error_pc", "output", "state_changes", "events", "calls",
                 "usage", "fee")


# The deepest nesting of a valid message: a result nests 4 levels (result, calls, call
# record, state change), a traced result 4 (trace, step, stack); anything deeper is refused
# before it is parsed, so no line can make a decoder recurse without bound (chapter 11.5.1).
MAX_DEPTH = 32
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')     # a string: '"', then characters or escapes, '"'
_NOT_BRACKET = re.compile(rb"[^\[\]{}]+")
_STEP = tuple(1 if c in b"[{" else -1 if c in b"]}" else 0 for c in range(256))   # a byte's change of depth


class ProtocolError(Exception):
    """A line on the adapter's stdout that is not a valid protocol message."""


def nesting_depth(line: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (strings skipped)."""
    if line.count(b"[") + line.count(b"{") <= MAX_DEPTH:    # the common case: too few to matter
        return MAX_DEPTH
    if b"\\" not in line and line.count(b'"') % 2 == 0:
        outside = b"".join(line.split(b'"')[::2])   # no escapes: strings end at the next quote
    else:
        outside = _STRING.sub(b"", line)
    return max(itertools.accumulate(map(_STEP.__getitem__, _NOT_BRACKET.sub(b"", outside))), default=0)


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, ValueError when two have the same name (spec 11.5.4: such a line
    is not a message, and no reader picks one of the values)."""
    members = dict(pairs)
    if len(members) != len(pairs):
        seen: set[str] = set()
        twice = next(k for k, _ in pairs if k in seen or seen.add(k))   # type: ignore[func-returns-value]
        raise ValueError(f"two members named {twice[:40]!r} in one object")
    return members


def loads_bounded(line: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """json.loads with a nesting limit (ValueError, never RecursionError, beyond it) that
    refuses an object with two members of the same name (ValueError)."""
    raw = line.encode("utf-8", "surrogatepass") if isinstance(line, str) else line
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise ValueError(f"nested {depth} levels deep (at most {max_depth} allowed)")
    try:
        return json.loads(raw, object_pairs_hook=_unique_members)
    except RecursionError:
        raise ValueError(f"nested too deeply (at most {max_depth} levels allowed)") from None


# json.dumps(message, separators=(",", ":"), ensure_ascii=False), without building the
# encoder again for every message (json.dumps does, for any non-default option).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode(message: Mapping[str, Any]) -> bytes:
    return (_ENCODER.encode(message) + "\n").encode()


def decode(line: bytes) -> dict[str, Any]:
    """Parse one line from an adapter; ProtocolError if it is not a JSON object with a type."""
    try:
        message = loads_bounded(line)
    except (ValueError, UnicodeDecodeError) as err:
        raise ProtocolError(f"not JSON ({str(err)[:80]}): {_shown(line)}") from None
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise ProtocolError(f"not a protocol message (an object with a type): {_shown(line)}")
    return message


def _shown(line: bytes, limit: int = 120) -> str:
    text = line.decode("utf-8", "replace").rstrip("\n")
    return repr(text if len(text) <= limit else text[:limit] + "...")


def hello_request(version: str) -> dict[str, Any]:
    """The runner's hello of a session of spec version ``version``."""
    return {"type": "hello", "protocol": PROTOCOL, "spec_version": version}


def execute_request(request_id: str, vector_input: Mapping[str, Any], trace: bool = False) -> dict[str, Any]:
    """An execute request; the runner's ids are opaque per-run tokens, never corpus ids (11.5.2)."""
    return {"type": "execute", "id": request_id, "input": vector_input, "trace": trace}


SHUTDOWN = {"type": "shutdown"}


def announced_versions(message: Mapping[str, Any]) -> list[str] | None:
    """The ``spec_versions`` of an adapter's hello, or of its UNSUPPORTED_SPEC_VERSION error,
    when it is a list of strings (None otherwise: not said)."""
    versions = message.get("spec_versions")
    if isinstance(versions, list) and versions and all(isinstance(v, str) for v in versions):
        return list(versions)
    return None


def hello_problems(hello: Mapping[str, Any], version: str) -> list[str]:
    """Why an adapter's hello to a session of spec version ``version`` is not acceptable
    (empty when it is): it must list that version, and only versions of spec/versions.toml."""
    out = []
    if hello.get("type") != "hello":
        return [f"expected a hello, got type {hello.get('type')!r}"]
    protocol = hello.get("protocol")
    if not isinstance(protocol, str) or protocol.rsplit("/", 1)[-1] != str(PROTOCOL_MAJOR):
        out.append(f"protocol {protocol!r} is not {PROTOCOL}")
    impl = hello.get("implementation")
    if not (isinstance(impl, dict) and isinstance(impl.get("name"), str) and impl["name"]
            and isinstance(impl.get("version"), str)):
        out.append("implementation must be an object with a non-empty name and a version")
    elif len(impl["name"]) > NAME_LIMIT or len(impl["version"]) > NAME_LIMIT:
        out.append(f"implementation name and version must be at most {NAME_LIMIT} characters")
    versions = hello.get("spec_versions")
    if not isinstance(versions, list) or version not in versions:
        out.append(f"spec_versions must list {version}, the version of this session")
    elif any(v not in spec.names() for v in versions):
        unknown = next(v for v in versions if v not in spec.names())
        out.append(f"spec_versions lists {str(unknown)[:40]!r}, not a version of spec/versions.toml "
                   f"({', '.join(spec.names())})")
    caps = hello.get("capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        out.append("capabilities must be a list of strings")
    elif len(caps) > 64 or any(len(c) > NAME_LIMIT for c in caps):
        out.append(f"capabilities must be at most 64 names of at most {NAME_LIMIT} characters")
    if isinstance(versions, list) and len(versions) > 64:
        out.append("spec_versions must list at most 64 versions")
    return out


def reply_problems(reply: Mapping[str, Any], expected_id: str, traced: bool) -> list[str]:
    """Why a reply to an execute request is malformed (a result is judged by run/compare.py)."""
    kind = reply.get("type")
    if kind == "error":
        if reply.get("code") not in ERROR_CODES:
            return [f"error response with unknown code {reply.get('code')!r}"]
        return []
    if kind != "result":
        return [f"expected a result or an error, got type {kind!r}"]
    if not isinstance(reply.get("result"), dict):
        return ["result response without a result object"]
    if traced and not isinstance(reply.get("trace"), list):
        return ["trace requested but the result has no trace list"]
    return []
