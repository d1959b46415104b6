"""``rtwo-vm conformance selftest``: checks an adapter against the protocol before any vector
(spec chapter 11.5). An implementer runs this first; every check names what it expects.

Checks: handshake, a handful of vectors of every outcome kind, pipelined requests answered in
order, error responses to malformed and unknown requests (and staying alive after them),
traces when the capability is claimed, shutdown and end-of-input exit behaviour, refusing an
unknown protocol version.
"""

from __future__ import annotations

import shlex
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance.compare import compare_reply
from conformance.protocol import (
    EXIT_UNSUPPORTED, ProtocolError, decode, encode, execute_request, hello_problems,
)
from conformance.runner import AdapterProcess, Settings, StartError
from conformance.tracediff import first_divergence, reference_trace

# One vector of each kind of outcome, picked from the corpus by id.
SAMPLE_IDS = (
    "arithmetic/ADD/one__one", "control/REVERT/one_word", "control/TRAP/alone",
    "storage/SSTORE/sorted_changes", "event/LOG2/order_in_frame", "call/CALL/callee_revert_with_output",
    "memory/MLOAD/offset_max_word", "validation/BAD_MAGIC/zeros", "policy/TIME/gate_closed",
    "request/INVALID_REQUEST/seed_31_bytes", "request/compute.maximum/limit+1", "context/RANDOM/three_words_counting_seed",
)


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""


class _Session:
    """One adapter process driven one message at a time."""

    def __init__(self, argv: list[str], settings: Settings, logs: Path):
        self.settings = settings
        self.proc = AdapterProcess(argv, settings, logs, 0)

    def ask(self, message: Mapping[str, Any] | bytes) -> dict[str, Any] | None:
        self.proc.send(message if isinstance(message, bytes) else encode(message))
        self.proc.flush()
        line = self.proc.wait_line(time.monotonic() + self.settings.timeout)
        if line is None:
            return None
        return decode(line)

    def close(self) -> None:
        self.proc.kill()


def run_selftest(command: str, vectors: Mapping[str, Mapping[str, Any]], timeout: float = 10.0) -> list[Check]:
    argv = shlex.split(command)
    settings = Settings(timeout=timeout, handshake_timeout=timeout)
    checks: list[Check] = []

    def check(name: str, test: Callable[[], str | None]) -> None:
        try:
            problem = test()
        except (ProtocolError, StartError, OSError) as err:
            problem = str(err)
        checks.append(Check(name, problem is None, problem or ""))

    samples = [vectors[i] for i in SAMPLE_IDS if i in vectors]
    with tempfile.TemporaryDirectory(prefix="rtwo-selftest-") as logs:
        try:
            session = _Session(argv, settings, Path(logs))
        except StartError as err:
            return [Check("adapter starts", False, str(err))]
        state: dict[str, Any] = {}
        try:
            def handshake():
                state["hello"] = session.proc.handshake()
                return None
            check("handshake: answers hello with name, version, spec 1.0, capabilities", handshake)
            if "hello" not in state:
                return checks
            check("hello passes the protocol schema", lambda: _schema_problem("adapter-message", state["hello"], hello=True))
            check(f"executes {len(samples)} sample vectors of every outcome kind exactly",
                  lambda: _samples(session, samples))
            check("answers 40 pipelined requests in order with their ids", lambda: _pipelined(session, samples))
            check("answers a line that is not JSON with an error BAD_MESSAGE, and stays alive",
                  lambda: _error_then_alive(session, b"{not json\n", "BAD_MESSAGE", samples))
            check("answers an unknown message type with an error UNKNOWN_TYPE (id echoed)",
                  lambda: _error_then_alive(session, {"type": "frobnicate", "id": "x-1"}, "UNKNOWN_TYPE", samples, "x-1"))
            check("answers an execute without input with an error BAD_MESSAGE (id echoed)",
                  lambda: _error_then_alive(session, {"type": "execute", "id": "x-2"}, "BAD_MESSAGE", samples, "x-2"))
            if "trace" in state["hello"].get("capabilities", []):
                check("capability trace: step traces equal the reference's", lambda: _traces(session, samples))
            check("shutdown: answers bye and exits with status 0", lambda: _shutdown(session))
        finally:
            session.close()
        check("end of input: exits with status 0 without output", lambda: _eof(argv, settings, Path(logs)))
        check("unknown protocol version: error UNSUPPORTED_PROTOCOL, exit status 3",
              lambda: _bad_protocol(argv, settings, Path(logs)))
    return checks


def _schema_problem(name: str, document: Any, hello: bool = False) -> str | None:
    from conformance.schema import schema_problems
    problems = schema_problems(name, document, authoritative=True) + (hello_problems(document) if hello else [])
    return "; ".join(problems) or None


def _samples(session: _Session, samples: Sequence[Mapping[str, Any]]) -> str | None:
    for v in samples:
        reply = session.ask(execute_request(v["id"], v["input"]))
        if reply is None:
            return f"{v['id']}: no response"
        if reply.get("type") != "result" or reply.get("id") != v["id"]:
            return f"{v['id']}: expected a result with its id, got {str(reply)[:200]}"
        mismatches = compare_reply(v, reply)
        if mismatches:
            return f"{v['id']}: " + "; ".join(str(m) for m in mismatches[:5])
        problem = _schema_problem("adapter-message", reply)
        if problem:
            return f"{v['id']}: response does not pass the protocol schema: {problem}"
    return None


def _pipelined(session: _Session, samples: Sequence[Mapping[str, Any]]) -> str | None:
    ids = [f"pipelined-{i}" for i in range(40)]
    for i, vid in enumerate(ids):
        session.proc.send(encode(execute_request(vid, samples[i % len(samples)]["input"])))
    session.proc.flush()
    for vid in ids:
        line = session.proc.wait_line(time.monotonic() + session.settings.timeout)
        if line is None:
            return f"no response for {vid}"
        got = decode(line).get("id")
        if got != vid:
            return f"expected the response to {vid}, got {got!r}"
    return None


def _error_then_alive(session: _Session, message, code: str, samples, echoed: str | None = None) -> str | None:
    reply = session.ask(message)
    if reply is None or reply.get("type") != "error" or reply.get("code") != code:
        return f"expected an error {code}, got {str(reply)[:200]}"
    if echoed is not None and reply.get("id") != echoed:
        return f"the error must echo id {echoed!r}, got {reply.get('id')!r}"
    probe = samples[0]
    after = session.ask(execute_request(probe["id"], probe["input"]))
    if after is None or after.get("id") != probe["id"]:
        return "did not answer the next request after the error"
    return None


def _traces(session: _Session, samples) -> str | None:
    for v in samples:
        reply = session.ask(execute_request(v["id"], v["input"], trace=True))
        if reply is None or not isinstance(reply.get("trace"), list):
            return f"{v['id']}: no trace list in the result"
        divergence = first_divergence(reference_trace(v["input"]), reply["trace"])
        if divergence is not None:
            return f"{v['id']}: {divergence}"
    return None


def _shutdown(session: _Session) -> str | None:
    stray, problem = session.proc.shutdown(timeout=session.settings.timeout)
    if stray:
        return f"extra output before bye: {stray[0][:120]!r}"
    return problem


def _eof(argv, settings: Settings, logs: Path) -> str | None:
    proc = AdapterProcess(argv, settings, logs, 1)
    try:
        proc.handshake()
        proc.proc.stdin.close()
        line = proc.wait_line(time.monotonic() + settings.timeout)
        if line is not None:
            return f"unexpected output after end of input: {line[:120]!r}"
        code = proc.proc.wait(timeout=settings.timeout)
        return None if code == 0 else f"exit status {code}"
    finally:
        proc.kill()


def _bad_protocol(argv, settings: Settings, logs: Path) -> str | None:
    proc = AdapterProcess(argv, settings, logs, 2)
    try:
        proc.send(encode({"type": "hello", "protocol": "rtwo-conformance/999", "spec_version": "1.0"}))
        proc.flush()
        line = proc.wait_line(time.monotonic() + settings.timeout)
        reply = decode(line) if line else None
        if reply is None or reply.get("type") != "error" or reply.get("code") != "UNSUPPORTED_PROTOCOL":
            return f"expected an error UNSUPPORTED_PROTOCOL, got {str(reply)[:200]}"
        code = proc.proc.wait(timeout=settings.timeout)
        return None if code == EXIT_UNSUPPORTED else f"exit status {code}, expected {EXIT_UNSUPPORTED}"
    finally:
        proc.kill()
