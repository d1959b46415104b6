"""What the self-test's checks share: asking for an error, showing the adapter is alive,
editing a request (conformance.run.selftest and its check modules)."""

from __future__ import annotations

import copy
import subprocess
from typing import Any, Mapping

from conformance.protocol import execute_request

UNSUPPORTED = "UNSUPPORTED_INPUT"


def expect_error(session: Any, message, code: str, what: str, echoed: str | None = None) -> str | None:
    reply = session.ask(message, what)
    if reply is None or reply.get("type") != "error" or reply.get("code") != code:
        return f"{what}: expected an error {code}, got {str(reply)[:200]}"
    if echoed is not None and reply.get("id") != echoed:
        return f"{what}: the error must echo id {echoed!r}, got {reply.get('id')!r}"
    return None


def answers(session: Any, samples, probe: str) -> str | None:
    after = session.ask(execute_request(probe, samples[0]["input"]), f"{probe!r}")
    if not answered(after, probe):
        return f"did not answer {probe!r} with a result or an error {UNSUPPORTED} (got {str(after)[:200]})"
    return None


def answered(reply: Mapping[str, Any] | None, rid: str) -> bool:
    """A result with the id, or an error UNSUPPORTED_INPUT with it: either shows the adapter
    read the request and answered it (how much of the VM it has is no protocol question)."""
    return (reply is not None and reply.get("id") == rid
            and (reply.get("type") == "result" or (reply.get("type") == "error" and reply.get("code") == UNSUPPORTED)))


def changed(vector_input: Mapping[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(vector_input))
    target = out
    for key in path[:-1]:
        target = target[key]
    if value is DELETE:
        del target[path[-1]]
    elif isinstance(value, Rename):
        target[value.to] = target.pop(path[-1])
    else:
        target[path[-1]] = value
    return out


DELETE = object()


class Rename:
    """An edit of ``changed``: the member at the path moves to the name ``to``."""

    def __init__(self, to: str):
        self.to = to


def exit_problem(session: Any, expected: int, after: str) -> str | None:
    """Why the adapter did not exit with status ``expected`` within the timeout after ``after``
    (None when it did): an adapter that stays is a failure of the check, never of the selftest."""
    from conformance.run.process import describe_exit
    try:
        code = session.proc.proc.wait(timeout=session.settings.timeout)
    except subprocess.TimeoutExpired:
        return (f"the adapter did not exit within {session.settings.timeout:g} s after {after} "
                f"(expected exit status {expected})")
    return None if code == expected else f"{describe_exit(code)}, expected exit status {expected}"
