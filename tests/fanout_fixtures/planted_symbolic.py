"""``rtwo-vm symbolic`` with a fault planted in the workers that solve its queries ahead
(proofs/symbolic/spread.py):

    python tests/fanout_fixtures/planted_symbolic.py --exit-at N DIR symbolic ARGS...
    python tests/fanout_fixtures/planted_symbolic.py --hold-on-node DIR symbolic ARGS...
    python tests/fanout_fixtures/planted_symbolic.py --lie-sat DIR symbolic ARGS...
    python tests/fanout_fixtures/planted_symbolic.py --inject DIR symbolic ARGS...

``--exit-at N``: the worker that starts the N-th query of the run (counted across every
worker by exclusive marker files DIR/task-1, DIR/task-2, ...) ends its process with
``os._exit(9)`` before solving it: a real worker death, once. ``--hold-on-node``: a query on
a node whose raylet was started with RTWO_TEST_NODE=second writes DIR/holding and sleeps,
so that the test can kill that node while the query runs there. ``--lie-sat``: the worker
answers ``sat`` (with no values) to every query it finds unsatisfiable. ``--inject``: every
satisfiable answer carries a "value" that would close the pinning assertion and add
``(assert false)``. Otherwise the query
is solved as shipped. The planted task replaces the run's ``Spread.task``
(rtwo_vm/commands/symbolic/spreading.py) in this process (the driver) and travels to the
workers (by value to Ray, by this script's name to local worker processes); the CLI, the
spreading and the solving are the real ones.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def planted(item, *, mode: str, folder: str, at: int):
    from proofs.symbolic import apart
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
    elif mode == "--hold-on-node" and os.environ.get("RTWO_TEST_NODE") == "second":
        Path(folder, "holding").write_text(str(os.getpid()))
        time.sleep(300)
    answer = apart.solve_item(item)
    if mode == "--lie-sat" and answer.status == apart.UNSAT:
        return apart.Answer(apart.SAT, answer.spent, ())
    if mode == "--inject" and answer.status == apart.SAT:
        c, v = answer.pins[0]
        return apart.Answer(apart.SAT, answer.spent, ((c, v + ")) (assert false) (assert (= true true"),))
    return answer


def main(argv: list[str]) -> int:
    import functools

    from rtwo_vm import cli
    from rtwo_vm.commands.symbolic import spreading
    mode = argv[0]
    at = int(argv[1]) if mode == "--exit-at" else 0
    folder, rest = (argv[2], argv[3:]) if mode == "--exit-at" else (argv[1], argv[2:])
    shipped = spreading._spread

    def spread(args):
        s = shipped(args)
        s.task = functools.partial(planted, mode=mode, folder=folder, at=at)
        return s
    spreading._spread = spread
    return cli.main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
