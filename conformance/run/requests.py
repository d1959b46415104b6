"""Execute requests of a run: opaque ids (spec chapter 11.8.1), the response bound of each
vector (11.5.1), and the encoded inputs shared by every pass and implementation of a run."""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Mapping, Sequence

from conformance.run.process import Job, Settings
from conformance.protocol import encode, execute_request

SLACK = 8192                # a response may exceed twice its expected result by this much


def request_id(seed: int | str, label: str, vector_id: str) -> str:
    """The opaque id of a vector's request in one pass of one run: nothing an adapter can look
    a corpus entry up by."""
    return "r" + hashlib.sha256(f"{seed}\0{label}\0{vector_id}".encode()).hexdigest()[:20]


def response_limit(vector: Mapping[str, Any], settings: Settings) -> int:
    """The longest acceptable response line for a vector (chapter 11.5.1): twice its expected
    result plus SLACK; a longer line cannot hold the right result. Settings.max_line bounds
    only requests without an expected result: a correct answer larger than it (thousands of
    call records) must not fail as oversized, and the corpus that states the size is bounded
    when it is read."""
    size = len(json.dumps(vector["expected"]["result"], separators=(",", ":")))
    return 2 * size + SLACK


def trace_response_limit(vector: Mapping[str, Any], settings: Settings) -> int:
    """The longest acceptable traced response: twice the reference's trace and result plus
    SLACK, and never below Settings.max_line (a trace of a deep stack can take megabytes)."""
    from conformance.run.tracediff import reference_trace
    size = len(json.dumps(reference_trace(vector["input"], settings.spec_version), separators=(",", ":")))
    return max(settings.max_line, 2 * size + response_limit(vector, settings))


def jobs(vectors: Sequence[Mapping[str, Any]], trace: bool = False, seed: int | str | None = None,
         label: str = "main", settings: Settings | None = None) -> list[Job]:
    """Execute requests for ``vectors`` with opaque ids (from ``seed``; a fresh token without)."""
    seed = os.urandom(8).hex() if seed is None else seed
    out = []
    for v in vectors:
        rid = request_id(seed, label, v["id"])
        if settings is None or "expected" not in v:
            limit = None
        else:
            limit = (trace_response_limit if trace else response_limit)(v, settings)
        out.append(Job(v["id"], encode(execute_request(rid, v["input"], trace)), rid, limit))
    return out


class Prepared:
    """Each vector's input encoded once and its response bound, for the untraced requests of
    every pass: a request line is then two concatenations."""

    def __init__(self, vectors: Sequence[Mapping[str, Any]], settings: Settings):
        self.inputs = {v["id"]: json.dumps(v["input"], separators=(",", ":"), ensure_ascii=False).encode()
                       for v in vectors}
        self.limits = {v["id"]: response_limit(v, settings) for v in vectors if "expected" in v}

    def jobs(self, vectors: Sequence[Mapping[str, Any]], seed: int | str, label: str) -> list[Job]:
        out = []
        for v in vectors:
            vid = v["id"]
            rid = request_id(seed, label, vid)
            line = b'{"type":"execute","id":"' + rid.encode() + b'","input":' + self.inputs[vid] + b',"trace":false}\n'
            out.append(Job(vid, line, rid, self.limits.get(vid)))
        return out
