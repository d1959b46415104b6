"""``rtwo-vm`` with a crash planted in the fuzzing workers: generating request N raises (or,
with --exit, ends the worker process) inside the worker, wherever the worker runs.

    python tests/fuzz_fixtures/planted_crash.py --crash-at N [--exit | --after] fuzz ARGS...

With --after, request N is generated and the crash comes when the worker converts it to its
vector input (so the crash record holds the request).

The campaign's worker factory is replaced by ``planted``, which patches the worker module's
``generate`` in the process that builds the worker (this one with one worker, a spawned
process with several — which imports this file as its main module — or a Ray actor, to which
the function travels by value) and then builds the ordinary worker. Nothing else changes:
the CLI, the campaign, the backend and the worker are the real ones.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import conformance.fuzz.worker as worker_module  # noqa: E402


def planted(index, config, crash_at, exit_process, after=False):
    import conformance.fuzz.worker as wm
    original = wm.generate

    def generate(seed, idx, pool=(), version="1.0"):
        if idx == crash_at:
            if exit_process:
                os._exit(9)
            if after:
                inp = original(seed, idx, pool, version)
                inp.vector_input = lambda: random.Random(seed).choice([])     # this request only
                return inp
            return random.Random(seed).choice([])     # a real IndexError, raised here in the worker
        return original(seed, idx, pool, version)
    wm.generate = generate
    return wm.Worker(index, config)


def main(argv: list[str]) -> int:
    import functools
    from rtwo_vm import cli
    assert argv[0] == "--crash-at", "usage: planted_crash.py --crash-at N [--exit] fuzz ARGS..."
    crash_at, rest = int(argv[1]), argv[2:]
    exit_process, after = rest[:1] == ["--exit"], rest[:1] == ["--after"]
    rest = rest[1:] if exit_process or after else rest
    worker_module.make_worker = functools.partial(planted, crash_at=crash_at, exit_process=exit_process,
                                                  after=after)
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
