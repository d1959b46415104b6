"""One vector input run by the proofs' models with its concrete inputs.

The symbolic executor (proofs/symbolic) is given every input of the vector as a value: the
caller, the call data, the block time, the seed and every storage slot (the slots the
pre-state does not hold are zero, ``concrete_storage``). It then follows exactly one path,
with the same step models the theorems and ``rtwo-vm symbolic`` use; the path's end,
evaluated in a model of its condition (SHA-256 and the random stream take their true values,
symbolic/solve.py), is the model's canonical result. Nothing of the reference interpreter's
execution is used: only its container validation (symbolic/world.admit, as everywhere in
proofs/).

The bounds of the exploration are set so that a vector never meets them (one path; as many
steps as the compute limit allows). A run that nonetheless ends otherwise (no path, several
paths, a bound or a safety net) is ``Undecided``: reported, never counted as agreement.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import spec
from proofs.oracle.request import Call, read, refused
from proofs.oracle.steps import Recorder
from proofs.symbolic import outcome
from proofs.symbolic.executor import explore
from proofs.symbolic.solve import SAT
from proofs.symbolic.world import MAX_DEADLINE, Refusal, Setup, admit

# A vector's run has one path: more than this is a model error, not a fork to follow.
MAX_PATHS = 1 << 16
MAX_WORK = 10 ** 13               # z3 work units per run: far above any vector's
# The wall-clock safety net as far away as a Setup allows: whether a vector's result is
# confirmed must not depend on the machine's load (the steps and work units bound the run).
DEADLINE = MAX_DEADLINE


class Undecided(Exception):
    """The model gave no single result for the input (the reason is the message)."""


@dataclass
class Run:
    """The model's canonical result of one input and, when asked, its steps."""

    result: dict
    steps: list = field(default_factory=list)    # StepView, in execution order


def refusal_result(refusal: Refusal) -> dict:
    """A request refused before execution (7.3.2): the status and code, error_pc null, empty
    output, no state changes, events or calls, usage all zero and fee 0."""
    return {"status": refusal.status, "error": refusal.error, "error_pc": None, "output": "0x",
            "state_changes": [], "events": [], "calls": [],
            "usage": {name: 0 for name in outcome.USAGE}, "fee": 0}


def _max_steps(call: Call, version: str) -> int:
    """A bound no vector meets: every instruction costs at least the cheapest positive base
    cost, except those that cost nothing and end their frame (STOP, TRAP), each frame but the
    entry's begun by a call that cost something."""
    cheapest = min(i.cost for i in spec.load(version).instructions if i.cost > 0)
    assert call.limits is not None
    return 2 * (call.limits.compute // cheapest) + 2


def model_run(doc: dict, version: str, steps: bool = False) -> Run:
    """The model's result for the vector input ``doc`` under ``version`` (with its steps when
    ``steps``). Raises Undecided, and request.NotAnInput for an input the sandbox refuses."""
    call = read(doc, version)
    if isinstance(call, Refusal):
        return Run(refusal_result(call))
    entry = admit(call.entry, call.codes[call.entry], call.policy, version)
    if isinstance(entry, Refusal):
        return Run(refusal_result(entry))
    if call.limits is None:
        return Run(refusal_result(refused("INVALID_LIMITS", version)))
    recorder = Recorder() if steps else None
    setup = Setup(call.entry, call.codes, version=version, policy=call.policy,
                  limits=call.limits, caller=call.caller, call_data=call.call_data,
                  time=call.block_time, seed=call.seed, storage=call.storage,
                  concrete_storage=True, max_steps=_max_steps(call, version),
                  max_paths=MAX_PATHS, max_work=MAX_WORK, loop_bound=MAX_PATHS, deadline=DEADLINE,
                  observe=recorder.observe if recorder is not None else None)
    x = explore(setup)
    # ``x.unexplored`` is not a problem here: the call data is fixed, and a callee the
    # pre-state does not hold has no code (the vector's pre-state is the whole world, 11.2.3).
    problems = [c.bound for c in x.cuts]
    if x.stopped:
        problems.append(f"stopped: {x.stopped}")
    if problems or len(x.ends) != 1:
        raise Undecided(f"{len(x.ends)} path end(s)" + "".join(f"; {p}" for p in problems))
    end = x.ends[0]
    assert x.solver is not None            # explore always gives its run's solver
    status, model = x.solver.consistent_model(end.conds, end.apps, "the vector's path")
    if status != SAT:
        raise Undecided(f"no model of the path: {status}")
    return Run(outcome.concretise(end, model),
               recorder.steps(model) if recorder is not None else [])
