"""``rtwo-vm`` with a fault planted in the workers of a fanned-out run (fanout/tasks.py):

    python tests/fanout_fixtures/planted_worker.py --exit-at N DIR prove ARGS...
    python tests/fanout_fixtures/planted_worker.py --hold-on-node DIR prove ARGS...

``--exit-at N``: the worker that starts the N-th task of the run (counted across every
worker by exclusive marker files DIR/task-1, DIR/task-2, ...) ends its process with
``os._exit(9)`` before running it: a real worker death, once. ``--hold-on-node``: a task on
a node whose raylet was started with RTWO_TEST_NODE=second writes DIR/holding and sleeps, so
that the test can kill that node while the task runs there. Elsewhere the task runs as
shipped. The planted function replaces ``proofs.distributed.ray_task`` in this process (the
driver) and travels to the workers by value; the CLI, the fan-out and the task are the real
ones.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def planted(entries, payload, *, mode: str, folder: str, at: int):
    import proofs.distributed as d
    if mode == "--exit-at":
        n = 1
        while True:
            try:
                os.close(os.open(os.path.join(folder, f"task-{n}"), os.O_CREAT | os.O_EXCL))
                break
            except FileExistsError:
                n += 1
        if n == at:
            os._exit(9)
    elif os.environ.get("RTWO_TEST_NODE") == "second":
        Path(folder, "holding").write_text(str(os.getpid()))
        time.sleep(300)
    return d.ray_task(entries, payload)


def main(argv: list[str]) -> int:
    import functools

    import proofs.distributed
    from rtwo_vm import cli
    mode = argv[0]
    at = int(argv[1]) if mode == "--exit-at" else 0
    folder, rest = (argv[2], argv[3:]) if mode == "--exit-at" else (argv[1], argv[2:])
    proofs.distributed.ray_task = functools.partial(planted, mode=mode, folder=folder, at=at)
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
