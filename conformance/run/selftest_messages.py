"""The self-test's checks of the request forms of 11.5.4 that a runner never sends by accident:
an execute whose id is empty, with an unknown top-level member or a ``null`` trace_format; a
word of the input followed by a newline (the schemas' patterns are ECMA-262 ones, 11.2.1, in
which ``$`` is the very end); a request without a string type, a shutdown with a member, a line
with two members of the same name; and a hello that is not of its form (BAD_MESSAGE, then exit
status 3). Each must be answered as 11.5.4 says, the adapter alive afterwards where it goes on.
"""

from __future__ import annotations

from typing import Any, Mapping

from conformance.protocol import EXIT_UNSUPPORTED, execute_request
from conformance.run.selftest_base import Rename, answers, changed, exit_problem, expect_error

SLOT = "0x1"     # a storage slot the forms below add to the probe's contract, then break
# (what, path in the execute request, value): each leaves the execute form of 11.5.4.
EXECUTE_FORMS = (
    ("an empty id", ("id",), ""),
    ("an unknown top-level member", ("extra",), 1),
    ("a null trace_format", ("trace_format",), None),
    ("a to followed by a newline", ("input", "message", "to"), "0x100\n"),
    ("a caller followed by a newline", ("input", "message", "caller"), "0xca11e7\n"),
    ("a block_time followed by a newline", ("input", "context", "block_time"), "0x0\n"),
    ("call data followed by a newline", ("input", "message", "call_data"), "0x\n"),
    ("a time_access followed by a newline", ("input", "policy", "time_access"), "allowed\n"),
)


def _probe_request(probe: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The probe's execute request with one storage slot, and its contract's address."""
    request = execute_request("x", probe["input"])
    address = request["input"]["message"]["to"]
    request = changed(request, ("input", "pre_state", "contracts", address, "storage", SLOT), "0x2")
    return request, address


def execute_forms(session: Any, samples) -> str | None:
    base, address = _probe_request(samples[0])
    contract = ("input", "pre_state", "contracts", address)
    forms = EXECUTE_FORMS + (
        ("contract code followed by a newline", (*contract, "code"),
         base["input"]["pre_state"]["contracts"][address]["code"] + "\n"),
        ("a storage slot key followed by a newline", (*contract, "storage", SLOT), Rename(SLOT + "\n")),
        ("a contract address followed by a newline", contract, Rename(address + "\n")),
    )
    for i, (what, path, value) in enumerate(forms):
        rid = f"execute-form-{i}"
        request = changed({**base, "id": rid}, path, value)
        echoed = request["id"] if isinstance(request.get("id"), str) else None
        problem = expect_error(session, request, "BAD_MESSAGE", f"an execute with {what}", echoed)
        if problem:
            return problem
    return answers(session, samples, "alive-after-execute-forms")


def message_forms(session: Any, samples) -> str | None:
    lines = (
        ({"id": "no-type"}, "a request without a type"),
        ({"type": 7, "id": "number-type"}, "a request whose type is a number"),
        ({"type": "shutdown", "now": True}, "a shutdown with a member besides type"),
        (b'{"type":"frobnicate","type":"shutdown"}\n', "a line with two members named type"),
    )
    for message, what in lines:
        problem = expect_error(session, message, "BAD_MESSAGE", what)
        if problem:
            return problem
    return answers(session, samples, "alive-after-message-forms")


def hello_form(session: Any, hello: Mapping[str, Any], what: str) -> str | None:
    problem = expect_error(session, dict(hello), "BAD_MESSAGE", what)
    if problem:
        return problem
    problem = exit_problem(session, EXIT_UNSUPPORTED, f"refusing {what}")
    return f"{what}: {problem}" if problem else None


def hello_forms(version: str) -> list[tuple[str, dict[str, Any]]]:
    """(what, hello) of hellos that are not of the form of 11.5.3."""
    good = {"type": "hello", "protocol": "rtwo-conformance/1", "spec_version": version}
    no_version = {k: v for k, v in good.items() if k != "spec_version"}
    return [("a hello without spec_version", no_version),
            ("a hello with an unknown member", {**good, "session": 1})]


def register(checks: Any, probe, version: str) -> None:
    """The checks of this module, in the order the self-test prints them."""
    checks.run(f"answers {len(EXECUTE_FORMS) + 3} execute requests outside the schema's form (an "
               "empty id, an unknown member, a null trace_format, words followed by a newline) "
               "with an error BAD_MESSAGE each", lambda s: execute_forms(s, probe))
    checks.run("answers a request without a string type, a shutdown with a member and a line with "
               "two members of one name with an error BAD_MESSAGE each, and stays alive",
               lambda s: message_forms(s, probe))
    for what, hello in hello_forms(version):
        checks.run(f"refuses {what} with an error BAD_MESSAGE and exits with status {EXIT_UNSUPPORTED}",
                   lambda s, hello=hello, what=what: hello_form(s, hello, what), handshake=False)
