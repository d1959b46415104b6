"""The execution lifecycle (lifecycle.toml, spec chapter 8): bounded model checking of the
stage graph, and the stage paths the interpreter's outcomes imply.

Stages are numbered in file order; a path is STEPS + 1 stages joined by allowed transitions
(iterated in sorted order, so the text does not depend on the hash seed), staying at
finalized once there. Proved over every path from requested: it is at finalized after STEPS
steps, visits no stage twice, commits only after executed and accounted, and an execution
that fails at a stage errors.toml names (leaves it other than forward) never commits and
reaches rolled_back before finalized — an SMT property of the paths, not a graph search.
"""

from __future__ import annotations

import z3

from proofs.registry import Query, Theorem, declare
from proofs.words import SPEC

STAGES = tuple(s["name"] for s in SPEC.lifecycle["stage"])
ALLOWED = {(t["from"], to) for t in SPEC.lifecycle["transition"] for to in t["to"]}
STEPS = 9
FINAL = "finalized"


def _index(name: str) -> int:
    return STAGES.index(name)


def _path():
    """A path of STEPS + 1 stages from requested. The allowed moves are iterated in sorted
    order: the text of the query must not depend on a set's (hash-seeded) order."""
    stages = [z3.BitVec(f"stage{k}", 4) for k in range(STEPS + 1)]
    moves = [z3.Or([z3.And(a == _index(x), b == _index(y)) for x, y in sorted(ALLOWED)]
                   + [z3.And(a == _index(FINAL), b == _index(FINAL))])
             for a, b in zip(stages, stages[1:])]
    return stages, z3.And([stages[0] == _index("requested")] + moves)


def _terminates_acyclic(bits=0, model=None) -> Query:
    stages, path = _path()
    final = _index(FINAL)
    claims = [stages[-1] == final]
    for j in range(len(stages)):
        for k in range(j + 1, len(stages)):
            claims.append(z3.Or(stages[j] != stages[k], stages[j] == final))
    return Query(claims, [path])


def _commit_only_after_accounting(bits=0, model=None) -> Query:
    """A path that commits (at any position) has executed and accounted before it: one
    claim whose antecedent, "the path commits", is checked satisfiable like every other."""
    stages, path = _path()
    committed = _index("committed")
    after = []
    for k, s in enumerate(stages):
        before = stages[:k]
        after.append(z3.Implies(s == committed, z3.And(
            z3.Or([b == _index("executed") for b in before] + [z3.BoolVal(False)]),
            z3.Or([b == _index("accounted") for b in before] + [z3.BoolVal(False)]))))
    return Query([z3.Implies(z3.Or([s == committed for s in stages]), z3.And(after))], [path])


def error_stages() -> list[str]:
    """The stages errors.toml names, in stage order."""
    named = {e.stage for e in SPEC.errors.values()}
    return [s for s in STAGES if s in named]


def _error_stages_roll_back(bits=0, model=None) -> Query:
    """On every path, an execution that fails at an error stage (leaves it by any move but
    the forward one to the next stage in order) never commits afterwards, and reaches
    rolled_back before finalized. One claim per stage named by errors.toml, over every
    path and every position of the failure (``fail``, symbolic): its antecedent "the path
    fails at this stage" is checked satisfiable."""
    stages, path = _path()
    fail = z3.BitVec("fail_at", 4)
    claims = []
    for stage in error_stages():
        forward = STAGES[_index(stage) + 1]
        fails, then = [], []
        for k in range(len(stages) - 1):
            here = z3.And(fail == k, stages[k] == _index(stage),
                          stages[k + 1] != _index(forward))
            fails.append(here)
            later = stages[k + 1:]
            rolled = [z3.And(later[j] == _index("rolled_back"),
                             *[x != _index(FINAL) for x in later[:j]])
                      for j in range(len(later))]
            then.append(z3.Implies(here, z3.And(
                z3.Or(rolled + [z3.BoolVal(False)]),
                *[x != _index("committed") for x in later])))
        claims.append(z3.Implies(z3.Or(fails), z3.And(then)))
    return Query(claims, [path])


def outcome_path(status: str, code: str | None) -> list[str]:
    """The stage path an interpreter result implies."""
    if status in ("success",):
        tail = ["executing", "executed", "accounted", "committed", FINAL]
        return list(STAGES[:_index("state_loaded") + 1]) + tail
    if code is not None and SPEC.errors[code].stage != "executing":
        stop = SPEC.errors[code].stage
        return list(STAGES[:_index(stop) + 1]) + ["rolled_back", FINAL]
    return list(STAGES[:_index("state_loaded") + 1]) + [
        "executing", "executed", "accounted", "rolled_back", FINAL]


def check_interpreter_paths() -> list[str]:
    """Run requests ending at every pre-execution stage and during execution; each implied
    path must use allowed transitions only, and nothing may be charged before executing."""
    from reference_vm import Contract, Limits, Message, Policy, WorldState, execute
    from reference_vm.container import build

    op = {i.mnemonic: i.opcode for i in SPEC.instructions}
    stop, trap, revert = bytes([op["STOP"]]), bytes([op["TRAP"]]), bytes(
        [op["PUSH1"], 0, op["PUSH1"], 0, op["REVERT"]])
    cases: dict[str, tuple[bytes, dict[int, int], Policy, Limits]] = {
        "success": (build(stop), {}, Policy(), Limits()),
        "reverted": (build(revert), {}, Policy(), Limits()),
        "fault": (build(trap), {}, Policy(), Limits()),
        "invalid": (build(bytes([0xFF])), {}, Policy(), Limits()),
        "violation": (build(bytes([op["TIME"], op["STOP"]])), {}, Policy(), Limits()),
        "rejected limits": (build(stop), {}, Policy(), Limits(compute=-1)),
        "exhausted": (build(revert), {}, Policy(), Limits(compute=1)),
    }
    problems = []
    for name, (code, _, policy, limits) in cases.items():
        result = execute(WorldState({0x100: Contract(code)}), Message(0x100, 1), None, policy,
                         limits)
        path = outcome_path(result.status, result.error)
        bad = [(a, b) for a, b in zip(path, path[1:]) if (a, b) not in ALLOWED]
        if bad:
            problems.append(f"{name}: transitions {bad} are not allowed")
        ran = "executing" in path
        if not ran and result.usage.compute + result.usage.memory_pages + \
                result.usage.storage_units != 0:
            problems.append(f"{name}: charged before executing: {result.usage}")
    missing = execute(WorldState({}), Message(0x100, 1))
    if outcome_path(missing.status, missing.error)[-2:] != ["rolled_back", FINAL]:
        problems.append("missing contract does not roll back")
    return problems


def theorems() -> list[Theorem]:
    return [
        Theorem("lifecycle_terminates_without_revisiting", "-", (0,), _terminates_acyclic,
                f"every path of {STEPS} steps from requested"),
        Theorem("lifecycle_commits_only_after_accounting", "-", (0,),
                _commit_only_after_accounting, f"every path of {STEPS} steps"),
        Theorem("lifecycle_error_stages_roll_back", "-", (0,), _error_stages_roll_back,
                f"every path of {STEPS} steps, failing at every stage errors.toml names"),
    ]


declare(*theorems())
