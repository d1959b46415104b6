"""``rtwo-vm conformance selftest``: checks an adapter against the protocol before any vector
(spec chapter 11.5). An implementer runs this first; every check names what it expects.

Checks (every adapter rule of 11.5): handshake, a handful of vectors of every outcome kind,
pipelined requests answered in order, error responses to malformed and unknown requests (and
staying alive after them), the nesting bound (32 levels read, 33 refused), an execute before
the hello, execute requests that are not a vector input's (BAD_MESSAGE), an unknown
trace_format with trace true and false, a limit written with a fraction (its binary64 value), traces
when claimed (on vectors with jumps, subroutine calls, nested ones and nested calls too), the
EIP-3155 form when trace_eip3155 is claimed and UNSUPPORTED_INPUT for it otherwise, scenarios when
"scenario" is (conformance.run.selftest_scenario), shutdown and end-of-input exit behaviour,
refusing an unknown protocol version and spec version.

The protocol is checked apart from coverage: a partial VM passes. The protocol checks send a
program of one STOP (``PROBE_ID``) and take a result or an error ``UNSUPPORTED_INPUT`` with the
request's id as the answer that shows the adapter is alive; the sample and trace checks take a
well-formed ``UNSUPPORTED_INPUT`` as no failure and count it in the check's note ("samples: 2
answered, 10 unsupported (not failures)"), while a wrong answer still fails them.

Each check runs in its own adapter process (started and handshaken afresh), so a stray line
or a lost response in one check never shows up as another check's failure; a failing check
names its own problem and ends with the tail of that process's stderr. A selftest is for one
spec version, named by every hello; its samples are that version's vectors.
"""

from __future__ import annotations

import secrets
import shlex
import spec
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from conformance.run import selftest_messages, selftest_scenario
from conformance.run.selftest_base import (
    DELETE, UNSUPPORTED, answered, answers, changed, exit_problem, expect_error,
)
from conformance.run.compare import compare_reply
from conformance.protocol import (
    EXIT_UNSUPPORTED, MAX_DEPTH, ProtocolError, decode, encode, execute_request, hello_problems,
)
from conformance.run.process import AdapterProcess, Settings, StartError
from conformance.run.requests import request_id
from conformance.run.tracediff import eip3155_trace, first_divergence, reference_trace

# Traces are checked on the samples and on these: backward and conditional jumps, a
# subroutine call, nested subroutine calls, and calls nested three frames deep.
TRACE_IDS = ("control/JUMP/backward_loop", "control/JUMPI/cond_min", "control/CALLSUB/happy",
             "control/CALLSUB/nested_three", "call/CALL/grandchild_writes_undone", "call/CALL/records_in_start_order")
# One vector of each kind of outcome, picked from the corpus by id.
SAMPLE_IDS = (
    "arithmetic/ADD/one__one", "control/REVERT/one_word", "control/TRAP/alone",
    "storage/SSTORE/sorted_changes", "event/LOG2/order_in_frame", "call/CALL/callee_revert_with_output",
    "memory/MLOAD/offset_max_word", "validation/BAD_MAGIC/zeros", "policy/TIME/gate_closed",
    "request/INVALID_REQUEST/seed_31_bytes", "request/compute.maximum/limit+1", "context/RANDOM/three_words_counting_seed",
)
# The protocol checks' probe: a program of one STOP, which even a VM that implements almost
# nothing runs, so a protocol check never depends on how much of the instruction set a VM has.
PROBE_ID = "control/STOP/happy"
# What a version adds to the samples (ids of its corpus): its new instructions, its read-only
# frames and its transient storage.
VERSION_SAMPLE_IDS = {
    "1.1": ("arithmetic/MULHS/min__minus_one", "bitwise/CLZ/zero", "call/STATICCALL/callee_sstore_read_only_write",
            "transient/TSTORE/then_tload", "transient/TSTORE/read_back_in_callee"),
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    note: str = ""        # what a passing check did not judge (the samples answered UNSUPPORTED_INPUT)


class _Ended(Exception):
    """The adapter closed its stdout while a response was awaited."""


class _Session:
    """One adapter process driven one message at a time."""

    def __init__(self, argv: list[str], settings: Settings, logs: Path | None, index: int = 0):
        self.settings = settings
        self.proc = AdapterProcess(argv, settings, logs, index)
        self.note = ""

    def ask(self, message: Mapping[str, Any] | bytes, waiting_for: str = "") -> dict[str, Any] | None:
        self.proc.send(message if isinstance(message, bytes) else encode(message))
        self.proc.flush()
        return self.read(waiting_for)

    def read(self, waiting_for: str = "") -> dict[str, Any] | None:
        """The next message; None at end of output or timeout; ProtocolError for a non-message."""
        line = self.proc.wait_line(time.monotonic() + self.settings.timeout)
        if line is None and self.proc.oversized:
            raise ProtocolError(f"a line longer than {self.proc.line_limit()} bytes on stdout"
                                + (f" where the response to {waiting_for} was expected" if waiting_for else ""))
        if line is None and self.proc.eof and waiting_for:
            raise _Ended(f"the adapter closed its stdout ({self.proc.exit_description()}) where the response "
                         f"to {waiting_for} was expected")
        if line is None:
            return None
        try:
            return decode(line)
        except ProtocolError as err:
            where = f" where the response to {waiting_for} was expected" if waiting_for else ""
            raise ProtocolError(f"a line on stdout that is not a protocol message{where}: {err}") from None

    def close(self) -> None:
        self.proc.kill()


class _Checks:
    """Runs each check in a fresh, handshaken adapter process and collects the verdicts."""

    def __init__(self, argv: list[str], settings: Settings, logs: Path | None):
        self.argv, self.settings, self.logs = argv, settings, logs
        self.results: list[Check] = []
        self.started = 0

    def fresh(self) -> _Session:
        self.started += 1
        return _Session(self.argv, self.settings, self.logs, self.started)

    def run(self, name: str, test: Callable[[_Session], str | None], handshake: bool = True) -> None:
        """A check against a fresh adapter process (handshaken first unless ``handshake`` is false)."""
        session = None
        try:
            session = self.fresh()
            if handshake:
                session.proc.handshake()
            problem = test(session)
        except (ProtocolError, StartError, OSError, _Ended) as err:
            problem = str(err)
        finally:
            if session is not None:
                session.close()
        if problem and session is not None and "stderr:" not in problem:
            problem += session.proc.stderr_tail(3)
        self.results.append(Check(name, problem is None, problem or "", session.note if session is not None else ""))

    def judge(self, name: str, test: Callable[[], str | None]) -> None:
        """A check of what an earlier check received, with no adapter process of its own."""
        try:
            problem = test()
        except (ProtocolError, StartError, OSError, _Ended) as err:
            problem = str(err)
        self.results.append(Check(name, problem is None, problem or "", ""))


def run_selftest(command: str, vectors: Mapping[str, Mapping[str, Any]], version: str,
                 timeout: float = 10.0, scenarios: Sequence[Mapping[str, Any]] = ()) -> list[Check]:
    """The checks of an adapter in sessions of spec ``version``, with that version's vectors."""
    argv = shlex.split(command)
    settings = Settings(version, timeout=timeout, handshake_timeout=timeout)
    wanted = SAMPLE_IDS + VERSION_SAMPLE_IDS.get(version, ())
    samples = [vectors[i] for i in wanted if i in vectors]
    traced = samples + [vectors[i] for i in TRACE_IDS if i in vectors]
    probe = [vectors[PROBE_ID]] if PROBE_ID in vectors else samples[:1]
    token = secrets.token_hex(6)
    checks = _Checks(argv, settings, None)
    state: dict[str, Any] = {}

    def handshake(session: _Session) -> str | None:
        state["hello"] = session.proc.handshake()
        return None
    checks.run(f"handshake: answers hello with name, version, spec {version}, capabilities", handshake,
               handshake=False)
    if "hello" not in state:
        return checks.results
    checks.judge("hello passes the protocol schema",
                 lambda: _schema_problem("adapter-message", state["hello"], hello=version))
    checks.run(f"executes {len(samples)} sample vectors of every outcome kind exactly",
               lambda s: _samples(s, samples, token))
    checks.run("answers 40 pipelined requests in order with their ids", lambda s: _pipelined(s, samples))
    checks.run("answers a line that is not JSON with an error BAD_MESSAGE, and stays alive",
               lambda s: _error_then_alive(s, b"{not json\n", "BAD_MESSAGE", probe))
    checks.run("answers a line nested 100,000 levels deep with an error BAD_MESSAGE, and stays alive",
               lambda s: _error_then_alive(s, b"[" * 100_000 + b"\n", "BAD_MESSAGE", probe))
    checks.run("answers an unknown message type with an error UNKNOWN_TYPE (id echoed)",
               lambda s: _error_then_alive(s, {"type": "frobnicate", "id": "x-1"}, "UNKNOWN_TYPE", probe, "x-1"))
    checks.run("answers an execute without input with an error BAD_MESSAGE (id echoed)",
               lambda s: _error_then_alive(s, {"type": "execute", "id": "x-2"}, "BAD_MESSAGE", probe, "x-2"))
    checks.run(f"answers a line nested {MAX_DEPTH} levels deep as usual and one nested {MAX_DEPTH + 1} levels deep "
               "with an error BAD_MESSAGE", lambda s: _nesting_bound(s, probe))
    checks.run("answers an execute before the hello with an error BAD_MESSAGE (id echoed), then the hello "
               "and executes", lambda s: _execute_before_hello(s, probe), handshake=False)
    checks.run(f"answers {len(NOT_VECTOR_INPUTS)} execute requests that do not have the schema's form "
               "(upper-case hex, trace not a boolean or missing, null or string limit, unknown level, "
               "unknown member) with an error BAD_MESSAGE each", lambda s: _not_vector_inputs(s, probe))
    checks.run("answers an unknown trace_format with an error BAD_MESSAGE, with trace true and false",
               lambda s: _unknown_trace_format(s, probe))
    selftest_messages.register(checks, probe, version)
    checks.run("reads a compute limit written 1000000000000.00000001 as its binary64 value 10^12 (7.3.2)",
               lambda s: _binary64_limit(s, probe, version))
    capabilities = state["hello"].get("capabilities", [])
    if "trace" in capabilities:
        checks.run("capability trace: step traces equal the reference's (jumps, subroutine calls, "
                   "nested calls)", lambda s: _traces(s, traced, token, version))
    if "trace_eip3155" in capabilities:
        checks.run("capability trace_eip3155: EIP-3155 traces equal the reference's",
                   lambda s: _traces(s, traced, token, version, "eip3155"))
    else:
        checks.run("without capability trace_eip3155: answers trace_format eip3155 with an error UNSUPPORTED_INPUT",
                   lambda s: _eip3155_unsupported(s, probe))
    if "scenario" in capabilities:    # 11.9.4: a scenario answered in form, malformed ones refused
        selftest_scenario.add(checks, scenarios, probe, version, _schema_problem, _error_then_alive)
    checks.run("shutdown: answers bye and exits with status 0", _shutdown)
    checks.run("end of input: exits with status 0 without output", _eof)
    checks.run("unknown protocol version: error UNSUPPORTED_PROTOCOL, exit status 3",
               lambda s: _bad_protocol(s, version), handshake=False)
    checks.run("unknown spec version: error UNSUPPORTED_SPEC_VERSION (passing the protocol schema), exit status 3",
               _bad_spec_version, handshake=False)
    return checks.results


def _schema_problem(name: str, document: Any, hello: str | None = None) -> str | None:
    """The schema's problems with ``document``, and with ``hello`` (a version) a hello's."""
    from conformance.corpus.schema import schema_problems
    problems = schema_problems(name, document, authoritative=True) + (
        hello_problems(document, hello) if hello is not None else [])
    return "; ".join(problems) or None


def _rid(token: str, vector_id: str) -> str:
    return request_id(token, "selftest", vector_id)


def _samples(session: _Session, samples: Sequence[Mapping[str, Any]], token: str) -> str | None:
    """Each sample answered exactly, or answered an error UNSUPPORTED_INPUT with its id (a VM
    that does not have an instruction yet says so: no failure, counted in the check's note)."""
    unsupported: list[tuple[str, str]] = []
    for v in samples:
        rid = _rid(token, v["id"])
        reply = session.ask(execute_request(rid, v["input"]), v["id"])
        if reply is None:
            return f"{v['id']}: no response"
        problem = _unsupported_problem(reply, rid)
        if problem == "":
            unsupported.append(_unsupported_entry(v["id"], reply))
            continue
        if problem is not None:
            return f"{v['id']}: {problem}"
        if reply.get("type") != "result" or reply.get("id") != rid:
            return f"{v['id']}: expected a result with its id, got {str(reply)[:200]}"
        mismatches = compare_reply(v, reply)
        if mismatches:
            return f"{v['id']}: " + "; ".join(str(m) for m in mismatches[:5])
        problem = _schema_problem("adapter-message", reply)
        if problem:
            return f"{v['id']}: response does not pass the protocol schema: {problem}"
    session.note = _coverage_note("samples", len(samples), unsupported)
    return None


def _unsupported_problem(reply: Mapping[str, Any], rid: str) -> str | None:
    """"" for a well-formed error UNSUPPORTED_INPUT answering ``rid``; what is wrong with an
    error UNSUPPORTED_INPUT that is not well formed; None for any other reply."""
    if reply.get("type") != "error" or reply.get("code") != UNSUPPORTED:
        return None
    if reply.get("id") != rid:
        return f"an error {UNSUPPORTED} must echo the request's id {rid!r}, got {reply.get('id')!r}"
    problem = _schema_problem("adapter-message", reply)
    return f"the error {UNSUPPORTED} does not pass the protocol schema: {problem}" if problem else ""


def _unsupported_entry(vector_id: str, reply: Mapping[str, Any]) -> tuple[str, str]:
    return vector_id, " ".join(str(reply.get("message", "")).split())[:100]


def _coverage_note(what: str, total: int, unsupported: list[tuple[str, str]], verb: str = "answered") -> str:
    """"samples: 2 answered, 10 unsupported (not failures)", then one line per message the
    adapter gave (most vectors first) with the vectors it gave it for. Empty when every one
    was answered: a complete VM's output is unchanged."""
    if not unsupported:
        return ""
    by_message: dict[str, list[str]] = {}
    for vector_id, message in unsupported:
        by_message.setdefault(message, []).append(vector_id)
    lines = [f"{what}: {total - len(unsupported)} {verb}, {len(unsupported)} unsupported (not failures)"]
    for message, ids in sorted(by_message.items(), key=lambda item: -len(item[1])):
        lines.append(f"  {message or 'UNSUPPORTED_INPUT without a message'}: {', '.join(ids)}")
    return "\n".join(lines)


def _pipelined(session: _Session, samples: Sequence[Mapping[str, Any]]) -> str | None:
    ids = [f"pipelined-{i}" for i in range(40)]
    for i, vid in enumerate(ids):
        session.proc.send(encode(execute_request(vid, samples[i % len(samples)]["input"])))
    session.proc.flush()
    for vid in ids:
        reply = session.read(vid)
        if reply is None:
            return f"no response for {vid}"
        if reply.get("id") != vid:
            return f"expected the response to {vid}, got {reply.get('id')!r}"
    return None


def _error_then_alive(session: _Session, message, code: str, samples, echoed: str | None = None) -> str | None:
    reply = session.ask(message, f"the malformed request (an error {code})")
    if reply is None or reply.get("type") != "error" or reply.get("code") != code:
        return f"expected an error {code}, got {str(reply)[:200]}"
    if echoed is not None and reply.get("id") != echoed:
        return f"the error must echo id {echoed!r}, got {reply.get('id')!r}"
    probe = "alive-after-error"   # an id of its own: a fault tied to a sample vector stays in its own check
    after = session.ask(execute_request(probe, samples[0]["input"]), f"{probe!r} sent after the error")
    if not answered(after, probe):
        return f"did not answer the next request after the error (got {str(after)[:200]})"
    return None


def _traces(session: _Session, samples, token: str, version: str, trace_format: str = "native") -> str | None:
    unsupported: list[tuple[str, str]] = []
    for v in samples:
        rid = _rid(token, v["id"])
        request = execute_request(rid, v["input"], trace=True)
        if trace_format != "native":
            request["trace_format"] = trace_format
        reply = session.ask(request, f"{v['id']} (traced)")
        if reply is None:
            return f"{v['id']}: no response"
        problem = _unsupported_problem(reply, rid)
        if problem == "":
            unsupported.append(_unsupported_entry(v["id"], reply))
            continue
        if problem is not None:
            return f"{v['id']}: {problem}"
        if not isinstance(reply.get("trace"), list):
            return f"{v['id']}: no trace list in the result"
        if trace_format != "native":
            expected = eip3155_trace(v["input"], version)
            if reply["trace"] != expected:
                step = next((i for i, (a, b) in enumerate(zip(expected, reply["trace"])) if a != b),
                            min(len(expected), len(reply["trace"])))
                return (f"{v['id']}: the EIP-3155 trace differs at line {step}: expected "
                        f"{str(expected[step:step + 1])[:160]}, got {str(reply['trace'][step:step + 1])[:160]}")
            continue
        divergence = first_divergence(reference_trace(v["input"], version), reply["trace"])
        if divergence is not None:
            return f"{v['id']}: {divergence}"
    session.note = _coverage_note("traces", len(samples), unsupported, "compared")
    return None


def _nesting_bound(session: _Session, samples) -> str | None:
    # An object holding MAX_DEPTH - 1 (then MAX_DEPTH) nested arrays: MAX_DEPTH levels may be
    # read (an unknown type), one more must be refused unread (11.5.1).
    for depth, code in ((MAX_DEPTH, "UNKNOWN_TYPE"), (MAX_DEPTH + 1, "BAD_MESSAGE")):
        line = b'{"type":"frobnicate","id":"deep","x":' + b"[" * (depth - 1) + b"]" * (depth - 1) + b"}\n"
        problem = expect_error(session, line, code, f"the line nested {depth} levels deep")
        if problem:
            return problem
    return answers(session, samples, "alive-after-nesting")


def _execute_before_hello(session: _Session, samples) -> str | None:
    problem = expect_error(session, execute_request("early", samples[0]["input"]), "BAD_MESSAGE",
                            "an execute sent before the hello", "early")
    if problem:
        return problem
    session.proc.handshake()
    return answers(session, samples, "after-hello")


# (what, path in the execute request, value): each makes the request leave the execute form of
# runner-message.schema.json, so it is not a vector input's request (11.5.4).
NOT_VECTOR_INPUTS = (
    ("a to in upper-case hex", ("input", "message", "to"), "0x1AB"),
    ("trace \"yes\"", ("trace",), "yes"),
    ("no trace member", ("trace",), DELETE),
    ("a null compute limit", ("input", "sandbox", "limits", "compute"), None),
    ("a string compute limit", ("input", "sandbox", "limits", "compute"), "1000"),
    ("an unknown isolation level", ("input", "sandbox", "isolation_level"), "sealed"),
    ("an unknown member of the input", ("input", "extra"), 1),
)


def _not_vector_inputs(session: _Session, samples) -> str | None:
    base = execute_request("x", samples[0]["input"])
    for i, (what, path, value) in enumerate(NOT_VECTOR_INPUTS):
        rid = f"not-a-vector-input-{i}"
        request = changed({**base, "id": rid}, path, value)
        problem = expect_error(session, request, "BAD_MESSAGE", f"an execute with {what}", rid)
        if problem:
            return problem
    return answers(session, samples, "alive-after-bad-inputs")


def _unknown_trace_format(session: _Session, samples) -> str | None:
    for trace in (True, False):
        rid = f"trace-format-{str(trace).lower()}"
        request = {**execute_request(rid, samples[0]["input"], trace=trace), "trace_format": "json"}
        problem = expect_error(session, request, "BAD_MESSAGE", f"trace_format \"json\" with trace {trace}", rid)
        if problem:
            return problem
    return answers(session, samples, "alive-after-trace-format")


def _binary64_limit(session: _Session, samples, version: str) -> str | None:
    import copy

    from conformance.corpus.vector import run_reference
    maximum = spec.load(version).limits["maximum"]["compute"]
    vector_input = copy.deepcopy(dict(samples[0]["input"]))
    vector_input["sandbox"]["limits"]["compute"] = maximum
    expected = run_reference(vector_input, version).to_json()
    line = encode(execute_request("binary64", vector_input))
    written = line.replace(f'"compute":{maximum},'.encode(), f'"compute":{maximum}.00000001,'.encode())
    if written == line:
        return "internal: the compute limit was not found in the request line"
    reply = session.ask(written, "the request with a compute limit of 1000000000000.00000001")
    if reply is None or reply.get("type") != "result" or reply.get("result") != expected:
        return f"expected the result of compute limit {maximum} ({expected['status']}), got {str(reply)[:200]}"
    return None


def _eip3155_unsupported(session: _Session, samples) -> str | None:
    request = {**execute_request("eip3155", samples[0]["input"], trace=True), "trace_format": "eip3155"}
    return (expect_error(session, request, "UNSUPPORTED_INPUT", "trace_format eip3155", "eip3155")
            or answers(session, samples, "alive-after-eip3155"))


def _shutdown(session: _Session) -> str | None:
    stray, problem = session.proc.shutdown(timeout=session.settings.timeout)
    if stray:
        return f"extra output before bye: {stray[0][:120]!r}"
    return problem


def _eof(session: _Session) -> str | None:
    proc = session.proc
    assert proc.proc.stdin is not None, "adapter processes start with a pipe on stdin"
    proc.proc.stdin.close()
    line = proc.wait_line(time.monotonic() + session.settings.timeout)
    if line is not None:
        return f"unexpected output after end of input: {line[:120]!r}"
    return exit_problem(session, 0, "the end of its input")


def _bad_spec_version(session: _Session) -> str | None:
    reply = session.ask({"type": "hello", "protocol": "rtwo-conformance/1", "spec_version": "9.9"},
                        "the hello of spec version 9.9")
    if reply is None or reply.get("type") != "error" or reply.get("code") != "UNSUPPORTED_SPEC_VERSION":
        return f"expected an error UNSUPPORTED_SPEC_VERSION, got {str(reply)[:200]}"
    problem = _schema_problem("adapter-message", reply)
    if problem:
        return f"the error UNSUPPORTED_SPEC_VERSION does not pass the protocol schema: {problem}"
    return exit_problem(session, EXIT_UNSUPPORTED, "refusing the handshake")


def _bad_protocol(session: _Session, version: str) -> str | None:
    reply = session.ask({"type": "hello", "protocol": "rtwo-conformance/999", "spec_version": version},
                        "the hello of protocol 999")
    if reply is None or reply.get("type") != "error" or reply.get("code") != "UNSUPPORTED_PROTOCOL":
        return f"expected an error UNSUPPORTED_PROTOCOL, got {str(reply)[:200]}"
    return exit_problem(session, EXIT_UNSUPPORTED, "refusing the handshake")
