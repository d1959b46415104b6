"""How ``rtwo-vm symbolic`` (one call, or ``--invariant`` sequences) solves its queries after
each exploration: ``solving(args)`` gives the run's solver, its queries solved apart
(proofs/symbolic/apart.py: a fresh context each) by the driver, ahead in ``--jobs`` worker
processes or on ``--ray`` (proofs/symbolic/spread.py), its answers kept in ``--resume DIR``;
and says on stderr what was spread and kept. The report is the same in every case.
"""

from __future__ import annotations

import ctypes
import gc
import json
import os
import sys
from contextlib import contextmanager
from pathlib import Path

from rtwo_vm.arguments.inputs import CliError


def could_not_run() -> tuple:
    """The errors after which a run says "could not run" (exit 3): the models cannot go on,
    a term too deep for Python's stack, or a worker's answer that is not one."""
    from proofs.symbolic.apart import Unfaithful
    from proofs.symbolic.executor import ModelError
    return (ModelError, RecursionError, ctypes.ArgumentError, Unfaithful)


def solver_of(args, spread=None):
    from proofs.symbolic.solve import Solver
    return Solver(args.rlimit, args.budgets, spread=spread)


@contextmanager
def solving(args):
    """The run's solver, within the cluster (and the paused cycle collector) of ``_cluster``;
    Ray that cannot be reached, or workers that keep dying, end the run in one line."""
    from fanout.ray_setup import RayUnavailable
    from proofs.symbolic.spread import LostQueries
    spread = _spread(args)
    solver = solver_of(args, spread)
    kept = _resume(args, solver) if args.resume else None
    try:
        with _cluster(spread):
            yield solver
    except (RayUnavailable, LostQueries) as err:
        raise CliError(str(err)) from None
    if kept is not None:
        print(f"resume: {kept[0]} answers solved and kept in {args.resume}", file=sys.stderr)
    if spread.ahead:
        where = f"Ray ({args.ray})" if spread.ray else f"{spread.jobs} worker processes"
        print(f"spread: {spread.solved} queries solved ahead on {where}, "
              f"{spread.retried} retried" + ("; per node " + ", ".join(
                  f"{n}: {c}" for n, c in sorted(spread.per_node.items()))
                  if spread.per_node else ""), file=sys.stderr)


class _Digests:
    """Every task id a symbolic state may hold: a query's digest (64 hex digits)."""

    def __contains__(self, task) -> bool:
        return isinstance(task, str) and len(task) == 64 and all(c in "0123456789abcdef" for c in task)


def _resume(args, solver) -> list:
    """``--resume DIR``: the answers kept before are taken as solved (each line sealed with
    the local key, or refused and solved again), and every new answer is kept as it comes.
    The state is one of the same z3, per-query rlimit and solving code (an answer is a
    function of its text and these), refused as a whole otherwise. Returns the count of
    answers kept by this run (one item, updated as they come)."""
    import hashlib

    import z3
    from proofs.symbolic import apart
    from rtwo_vm.arguments import cluster
    run = hashlib.sha256(json.dumps(
        ["rtwo-vm symbolic answers", z3.get_version_string(), solver.rlimit,
         hashlib.sha256(Path(apart.__file__).read_bytes()).hexdigest()]).encode()).hexdigest()
    state = cluster.resume_state(args.resume, None, None)(run)
    from fanout.resume import StateError
    try:
        loaded = state.load(_Digests())
    except StateError as err:
        raise CliError(str(err)) from None
    answers = {d: apart.answer_of(doc) for d, doc in loaded.items()}
    good = {d: a for d, a in answers.items() if a is not None}
    solver.known.update(good)
    refused = state.refused + len(answers) - len(good)
    print(f"resume: {len(good)} answers kept before" + (
        f"; {refused} state lines refused (not sealed by this machine's key, or cut short): "
        "their queries are solved again" if refused else ""), file=sys.stderr, flush=True)
    kept = [0]

    def keep(digest: str, answer) -> None:
        state.record(digest, apart.answer_json(answer))
        kept[0] += 1
    solver.keep = keep
    return kept


def _spread(args):
    """The symbolic command's queries after the exploration are solved apart (a fresh
    context each, proofs/symbolic/apart.py): in the driver, in --jobs worker processes or on
    --ray, with the same report."""
    from rtwo_vm.arguments.cluster import ray_address
    from proofs.symbolic.spread import Spread
    address = ray_address(args)

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)
    jobs = args.jobs or ((os.cpu_count() or 1) if address == "local" else 1)
    return Spread(jobs, address, say=say)


class _cluster:
    """The Ray cluster of a run with --ray, joined (or started) once for all its batches and
    left at the end (a joined cluster keeps running; a private one stops); and, whatever the
    run's spreading, Python's cycle collector paused while it runs: a z3 term held in a
    reference cycle is released when the collector runs, which depends on every allocation
    of the process (Ray's and the pool's threads allocate too), and z3 gives a released
    term's id to the next new one, which orders the operands of simplified terms. Paused,
    every term is released at the same point of the run in every mode."""

    def __init__(self, spread):
        self.spread, self.collecting = spread, gc.isenabled()
        self.joined, self.quiet = False, None

    def __enter__(self):
        gc.disable()
        try:
            if self.spread.ray is not None:
                import contextlib

                import ray
                from fanout.ray_setup import connect
                # Ray's driver threads print the cluster's own messages (a worker or node
                # lost) to stdout: while it runs they go to stderr, so stdout is the report.
                self.quiet = contextlib.redirect_stdout(sys.stderr)
                self.quiet.__enter__()
                self.joined = not ray.is_initialized()
                connect(self.spread.ray, max(1, self.spread.jobs))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.spread.close()
            if self.joined:
                import ray
                ray.shutdown()
        finally:
            if self.quiet is not None:
                self.quiet.__exit__(None, None, None)
            if self.collecting:
                gc.enable()
