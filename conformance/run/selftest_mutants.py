"""Adapter mutants: the reference adapter with one rule of chapter 11.5 broken each, run as a
real adapter process (``python -m conformance.run.selftest_mutants NAME``), for the selftest's
strength (``rtwo-vm conformance selftest --strength``): every mutant must fail the selftest,
and fail exactly the check of its rule (``MUTANTS[name].check``, the start of that check's
name). A rule whose mutant survives is a rule the selftest does not check.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from typing import Any

import conformance.adapter as adapter_module
from conformance.adapter import Adapter


@dataclass(frozen=True)
class Mutant:
    rule: str          # the rule broken, in the spec's words, with its section
    check: str         # the start of the name of the selftest check that must fail
    also: tuple[str, ...] = ()   # other checks the same fault fails (the rule is theirs too)
    exact: bool = True           # False: every check that runs an execute sees the fault too


FORMS = "answers 7 execute requests that do not have the schema's form"
MORE_FORMS = "answers 11 execute requests outside the schema's form"
MESSAGES = "answers a request without a string type"
MUTANTS: dict[str, Mutant] = {
    "execute-before-hello": Mutant("11.5.3: an execute before the hello is BAD_MESSAGE",
                                   "answers an execute before the hello"),
    "any-protocol": Mutant("11.5.3: a hello of another major protocol version is UNSUPPORTED_PROTOCOL",
                           "unknown protocol version"),
    "any-spec-version": Mutant("11.5.3: a spec version not implemented is UNSUPPORTED_SPEC_VERSION",
                               "unknown spec version", ("refuses a hello without spec_version",)),
    "stays-after-refusal": Mutant("11.5.3: after a refused handshake the adapter exits with status 3",
                                  "unknown spec version", ("unknown protocol version", "refuses a hello")),
    "loose-hello": Mutant("11.5.4: a hello not of its form is BAD_MESSAGE, then exit 3",
                          "refuses a hello without spec_version", ("refuses a hello with an unknown member",)),
    "no-depth-bound": Mutant("11.5.1: a line nested deeper than 32 levels is refused unread",
                             "answers a line nested 100,000 levels deep",
                             ("answers a line nested 32 levels deep", MESSAGES)),
    "stdout-chatter": Mutant("11.5.1: the adapter writes nothing else to standard output",
                             "executes", exact=False),
    "lenient-input": Mutant("11.5.4: an execute not of the schema's form is BAD_MESSAGE", FORMS, (MORE_FORMS,)),
    "traced-format-only": Mutant("11.5.4: trace_format is checked whatever trace is",
                                 "answers an unknown trace_format", (MORE_FORMS,)),
    "extra-member": Mutant("11.5.4: an execute with an unknown member is BAD_MESSAGE", MORE_FORMS),
    "empty-id": Mutant("11.5.4: an execute's id is a non-empty string", MORE_FORMS),
    "null-trace-format": Mutant("11.5.4: a null trace_format is BAD_MESSAGE", MORE_FORMS),
    "python-patterns": Mutant("11.2.1: patterns are ECMA-262 ones (\"0x100\\n\" is no word)", MORE_FORMS),
    "duplicate-members": Mutant("11.5.4: a line with two members of one name is BAD_MESSAGE", MESSAGES),
    "untyped-request": Mutant("11.5.4: a request without a string type is BAD_MESSAGE", MESSAGES),
    "loose-shutdown": Mutant("11.5.4: a shutdown with another member is BAD_MESSAGE", MESSAGES),
    "unknown-type-bad-message": Mutant("11.5.4: an unknown type is UNKNOWN_TYPE",
                                       "answers an unknown message type", ("answers a line nested 32 levels deep",)),
    "no-id-echo": Mutant("11.5.4: an error response echoes the request's id",
                         "answers an unknown message type",
                         ("answers an execute without input", "answers an execute before the hello", FORMS,
                          "answers an unknown trace_format", MORE_FORMS, "capability scenario: answers malformed")),
    "dies-after-error": Mutant("11.5.4: after an error response the adapter goes on reading",
                               "answers a line that is not JSON", exact=False),
    "exact-decimal": Mutant("7.3.2: a number written with a fraction has its binary64 value",
                            "reads a compute limit written"),
    "no-bye": Mutant("11.5.6: a shutdown is answered bye, then exit 0", "shutdown"),
    "eof-chatter": Mutant("11.5.6: at the end of its input the adapter exits 0 writing nothing",
                          "end of input"),
    "eip3155-native": Mutant("11.5.5: trace_format eip3155 gives the EIP-3155 form",
                             "capability trace_eip3155"),
    "eip3155-unclaimed": Mutant("11.5.5: without the capability trace_eip3155, trace_format eip3155 "
                                "is UNSUPPORTED_INPUT", "without capability trace_eip3155"),
}


def _without_final_newlines(value: Any) -> Any:
    """``value`` with one final newline removed from every string (Python's ``$``)."""
    if isinstance(value, dict):
        return {_without_final_newlines(k): _without_final_newlines(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_without_final_newlines(v) for v in value]
    return value[:-1] if isinstance(value, str) and value.endswith("\n") else value


class MutantAdapter(Adapter):
    """The reference adapter with the rule of one mutant broken."""

    def __init__(self, mutant: str):
        super().__init__()
        self.mutant = mutant
        self.traced_native = mutant in ("eip3155-native", "eip3155-unclaimed")
        if mutant == "eip3155-unclaimed":
            self.capabilities = tuple(c for c in self.capabilities if c != "trace_eip3155")

    def error(self, request_id: Any, code: str, message: str) -> dict[str, Any]:   # type: ignore[override]
        return Adapter.error(None if self.mutant == "no-id-echo" else request_id, code, message)

    def handle(self, line: bytes) -> tuple[dict[str, Any] | None, bool]:
        m = self.mutant
        if m == "execute-before-hello":
            self.spec_version = self.spec_version or self.spec_versions[-1]
            self.greeted = True
        if m in ("untyped-request", "loose-shutdown", "unknown-type-bad-message"):
            try:
                request = json.loads(line)
            except (ValueError, RecursionError):
                request = None
            kind = request.get("type") if isinstance(request, dict) else ""
            if m == "untyped-request" and isinstance(request, dict) and not isinstance(kind, str):
                return self.error(request.get("id"), "UNKNOWN_TYPE", f"unknown type {kind!r}"), True
            if m == "loose-shutdown" and kind == "shutdown":
                return {"type": "bye"}, False
            if m == "unknown-type-bad-message" and kind not in ("hello", "execute", "scenario", "shutdown", ""):
                return self.error(request.get("id"), "BAD_MESSAGE", "unknown type"), True
        if m == "no-bye" and line.strip() == b'{"type":"shutdown"}':
            return None, False
        reply, go_on = super().handle(line)
        if m == "dies-after-error" and reply is not None and reply.get("code") == "BAD_MESSAGE":
            return reply, False
        return reply, go_on

    def hello(self, request):
        m = self.mutant
        if m == "any-protocol":
            request = {**request, "protocol": "rtwo-conformance/1"}
        if m == "any-spec-version" and request.get("spec_version") not in self.spec_versions:
            request = {**request, "spec_version": self.spec_versions[-1]}
        reply, go_on = super().hello(request)
        return reply, go_on or m == "stays-after-refusal"

    def request_problem(self, request):
        m = self.mutant
        if m == "lenient-input":
            return None if request.get("trace_format", "native") in ("native", "eip3155") else "trace_format"
        if m == "traced-format-only" and request.get("trace") is not True:
            request = {k: v for k, v in request.items() if k != "trace_format"}
        if m == "extra-member":
            request = {k: v for k, v in request.items() if k in ("type", "id", "input", "trace", "trace_format")}
        if m == "empty-id" and request.get("id") == "":
            request = {**request, "id": "x"}
        if m == "null-trace-format" and request.get("trace_format", "") is None:
            request = {k: v for k, v in request.items() if k != "trace_format"}
        if m == "python-patterns":
            request = _without_final_newlines(request)
        return super().request_problem(request)

    def unsupported(self, request):
        return None if self.mutant == "eip3155-unclaimed" else super().unsupported(request)

    def execute(self, vector_id, vector_input, trace):
        if self.mutant == "python-patterns":
            vector_input = _without_final_newlines(vector_input)
        if self.traced_native:
            self.trace_format = "native"
        reply = super().execute(vector_id, vector_input, trace)
        if self.mutant == "stdout-chatter":
            sys.stdout.buffer.write(b"executing " + str(vector_id).encode() + b"\n")
        return reply

    def serve(self, stdin, stdout) -> int:
        status = super().serve(stdin, stdout)
        if self.mutant == "eof-chatter" and status == 0:
            stdout.write(b'{"type":"bye"}\n')
            stdout.flush()
        return status


def _patch(mutant: str) -> None:
    """Mutants that replace a reader of the reference adapter's module."""
    if mutant == "no-depth-bound":
        adapter_module.loads_bounded = json.loads          # type: ignore[assignment]
    if mutant == "duplicate-members":
        from conformance.protocol import MAX_DEPTH, nesting_depth

        def last_wins(line: bytes):
            if nesting_depth(line) > MAX_DEPTH:           # the depth bound as before
                raise ValueError("nested too deeply")
            return json.loads(line)                        # the fault: the last value wins
        adapter_module.loads_bounded = last_wins           # type: ignore[assignment]
    if mutant == "loose-hello":
        adapter_module.hello_request_problems = lambda request: []
    if mutant == "exact-decimal":
        from decimal import Decimal
        from fractions import Fraction
        bounded = adapter_module.loads_bounded

        def exact(text: str):
            value = Decimal(text)
            return int(value) if value == value.to_integral_value() else Fraction(value)

        def loads(line):
            bounded(line)
            return json.loads(line, parse_float=exact)
        adapter_module.loads_bounded = loads               # type: ignore[assignment]


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in MUTANTS:
        print(f"usage: python -m conformance.run.selftest_mutants NAME ({', '.join(MUTANTS)})", file=sys.stderr)
        return 2
    _patch(args[0])
    return MutantAdapter(args[0]).serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
