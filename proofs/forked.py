"""What a user's file declares, found by running it in a forked child first.

A theorems file (``rtwo-vm prove --theorems``) or a properties file (``rtwo-vm symbolic
--properties``) is the user's own code: it may loop, exit, crash or flood. ``report_of`` runs
``produce`` in a child forked from this process and reads back the JSON object it reports,
bounded in size (``max_bytes``) and time (``seconds``, a safety net: a child killed by it is
reported as such, never taken for an answer). The child ends with ``os._exit`` right after
reporting, so nothing else of the parent runs in it.
"""

from __future__ import annotations

import json
import os
import select
import time
from typing import Callable


class ChildLate(Exception):
    """The child did not report within the time allowed (it was killed)."""


class ChildEnded(Exception):
    """The child ended without a whole report; the message says how it ended."""


def report_of(produce: Callable[[], dict], *, seconds: float, max_bytes: int) -> dict:
    """The object ``produce()`` returns in a forked child, or ``{"error": its exception's
    first line}``; ChildLate or ChildEnded when there is no such report."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                      # the child: report, then end without running anything else
        code = 1
        try:
            os.close(read_end)
            try:
                doc = produce()
            except BaseException as err:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
                text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                doc = {"error": text.splitlines()[0][:500]}
            data = json.dumps(doc).encode()
            while data:
                data = data[os.write(write_end, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    chunks, total, deadline, late = [], 0, time.monotonic() + seconds, False
    try:
        while total <= max_bytes:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                os.kill(pid, 9)
                late = True
                break
            chunk = os.read(read_end, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
    finally:
        os.close(read_end)
        if total > max_bytes:
            os.kill(pid, 9)
        _, status = os.waitpid(pid, 0)
    if late:
        raise ChildLate(f"took more than {seconds:g} s")
    try:
        reported = json.loads(b"".join(chunks)) if total <= max_bytes else None
    except ValueError:
        reported = None
    if not isinstance(reported, dict):
        raise ChildEnded(f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                         else f"exit status {os.waitstatus_to_exitcode(status)}")
    return reported
