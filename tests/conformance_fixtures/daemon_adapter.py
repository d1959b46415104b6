"""The reference adapter, correct in every answer, that leaves a daemon behind at start.

    python tests/conformance_fixtures/daemon_adapter.py DIR

Before serving, it double-forks; the middle process calls ``setsid`` and exits, and the
grandchild re-executes itself (``--daemon DIR``) with an EMPTY environment (no token of the
runner survives that), ignores SIGTERM, SIGHUP and SIGINT, writes its pid to
``DIR/daemon-PID.pid`` (the adapter serves only once it has) and then, every 20 ms for an hour, its pid and a counter into
``DIR/heartbeat-PID``. A runner that tracks its adapters by their environment, session or
process group loses the daemon; the tests check that none is alive after the run and that
no heartbeat moves any more.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def daemon(folder: Path, ready: int) -> None:
    for number in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(number, signal.SIG_IGN)
    me = os.getpid()
    (folder / f"daemon-{me}.pid").write_text(str(me))
    os.write(ready, b"!")                # the adapter serves only once the daemon is on record
    os.close(ready)
    beat = folder / f"heartbeat-{me}"
    for count in range(180_000):
        beat.write_text(f"{me} {count}\n")
        time.sleep(0.02)


def leave_a_daemon(folder: Path) -> None:
    ready_r, ready_w = os.pipe()
    first = os.fork()
    if first:
        os.close(ready_w)
        os.waitpid(first, 0)          # the middle process exits at once: the daemon is orphaned
        os.read(ready_r, 1)
        os.close(ready_r)
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    os.set_inheritable(ready_w, True)
    os.execve(sys.executable, [sys.executable, os.path.abspath(__file__), "--daemon", str(folder), str(ready_w)], {})


def main() -> int:
    if sys.argv[1] == "--daemon":
        daemon(Path(sys.argv[2]), int(sys.argv[3]))
        return 0
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from conformance.adapter import Adapter
    leave_a_daemon(Path(sys.argv[1]))
    return Adapter().serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
