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

import functools

import z3

import spec
from proofs.registry import Query, Theorem, declare_versions

STEPS = 9
FINAL = "finalized"


@functools.cache
def graph(version: str) -> tuple[tuple[str, ...], frozenset[tuple[str, str]]]:
    """(stages in file order, allowed transitions) of spec ``version``'s lifecycle.toml."""
    lifecycle = spec.load(version).lifecycle
    return (tuple(s["name"] for s in lifecycle["stage"]),
            frozenset((t["from"], to) for t in lifecycle["transition"] for to in t["to"]))


def _index(name: str, version: str) -> int:
    return graph(version)[0].index(name)


def _path(version: str):
    """A path of STEPS + 1 stages from requested. The allowed moves are iterated in sorted
    order: the text of the query must not depend on a set's (hash-seeded) order."""
    ix = functools.partial(_index, version=version)
    stages = [z3.BitVec(f"stage{k}", 4) for k in range(STEPS + 1)]
    moves = [z3.Or([z3.And(a == ix(x), b == ix(y)) for x, y in sorted(graph(version)[1])]
                   + [z3.And(a == ix(FINAL), b == ix(FINAL))])
             for a, b in zip(stages, stages[1:])]
    return stages, z3.And([stages[0] == ix("requested")] + moves)


def _terminates_acyclic(version: str, bits=0, model=None) -> Query:
    stages, path = _path(version)
    final = _index(FINAL, version)
    claims = [stages[-1] == final]
    for j in range(len(stages)):
        for k in range(j + 1, len(stages)):
            claims.append(z3.Or(stages[j] != stages[k], stages[j] == final))
    return Query(claims, [path])


def _commit_only_after_accounting(version: str, bits=0, model=None) -> Query:
    """A path that commits (at any position) has executed and accounted before it: one
    claim whose antecedent, "the path commits", is checked satisfiable like every other."""
    stages, path = _path(version)
    ix = graph(version)[0].index
    committed = ix("committed")
    after = []
    for k, s in enumerate(stages):
        before = stages[:k]
        after.append(z3.Implies(s == committed, z3.And(
            z3.Or([b == ix("executed") for b in before] + [z3.BoolVal(False)]),
            z3.Or([b == ix("accounted") for b in before] + [z3.BoolVal(False)]))))
    return Query([z3.Implies(z3.Or([s == committed for s in stages]), z3.And(after))], [path])


def error_stages(version: str) -> list[str]:
    """The stages errors.toml names, in stage order."""
    named = {e.stage for e in spec.load(version).errors.values()}
    return [s for s in graph(version)[0] if s in named]


def _error_stages_roll_back(version: str, bits=0, model=None) -> Query:
    """On every path, an execution that fails at an error stage (leaves it by any move but
    the forward one to the next stage in order) never commits afterwards, and reaches
    rolled_back before finalized. One claim per stage named by errors.toml, over every
    path and every position of the failure (``fail``, symbolic): its antecedent "the path
    fails at this stage" is checked satisfiable."""
    stages, path = _path(version)
    STAGES = graph(version)[0]
    ix = graph(version)[0].index
    fail = z3.BitVec("fail_at", 4)
    claims = []
    for stage in error_stages(version):
        forward = STAGES[ix(stage) + 1]
        fails, then = [], []
        for k in range(len(stages) - 1):
            here = z3.And(fail == k, stages[k] == ix(stage),
                          stages[k + 1] != ix(forward))
            fails.append(here)
            later = stages[k + 1:]
            rolled = [z3.And(later[j] == ix("rolled_back"),
                             *[x != ix(FINAL) for x in later[:j]])
                      for j in range(len(later))]
            then.append(z3.Implies(here, z3.And(
                z3.Or(rolled + [z3.BoolVal(False)]),
                *[x != ix("committed") for x in later])))
        claims.append(z3.Implies(z3.Or(fails), z3.And(then)))
    return Query(claims, [path])


def outcome_path(status: str, code: str | None, version: str) -> list[str]:
    """The stage path an interpreter result implies."""
    STAGES, errors = graph(version)[0], spec.load(version).errors
    ix = STAGES.index
    if status in ("success",):
        tail = ["executing", "executed", "accounted", "committed", FINAL]
        return list(STAGES[:ix("state_loaded") + 1]) + tail
    if code is not None and errors[code].stage != "executing":
        stop = errors[code].stage
        return list(STAGES[:ix(stop) + 1]) + ["rolled_back", FINAL]
    return list(STAGES[:ix("state_loaded") + 1]) + [
        "executing", "executed", "accounted", "rolled_back", FINAL]


def check_interpreter_paths(version: str) -> list[str]:
    """Run requests ending at every pre-execution stage and during execution under spec
    ``version``; each implied path must use allowed transitions only, and nothing may be
    charged before executing."""
    from reference_vm import Contract, Limits, Message, Policy, WorldState, execute
    from reference_vm.container import build as container

    table = spec.load(version)
    build = lambda code: container(code, b"", table.number)  # noqa: E731
    ALLOWED = graph(version)[1]
    op = {i.mnemonic: i.opcode for i in table.instructions}
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
                         limits, version=version)
        path = outcome_path(result.status, result.error, version)
        bad = [(a, b) for a, b in zip(path, path[1:]) if (a, b) not in ALLOWED]
        if bad:
            problems.append(f"{name}: transitions {bad} are not allowed")
        ran = "executing" in path
        if not ran and result.usage.compute + result.usage.memory_pages + \
                result.usage.storage_units != 0:
            problems.append(f"{name}: charged before executing: {result.usage}")
    missing = execute(WorldState({}), Message(0x100, 1), version=version)
    if outcome_path(missing.status, missing.error, version)[-2:] != ["rolled_back", FINAL]:
        problems.append("missing contract does not roll back")
    return problems


def theorems(version: str) -> list[Theorem]:
    return [
        Theorem("lifecycle_terminates_without_revisiting", "-", (0,),
                functools.partial(_terminates_acyclic, version),
                f"every path of {STEPS} steps from requested"),
        Theorem("lifecycle_commits_only_after_accounting", "-", (0,),
                functools.partial(_commit_only_after_accounting, version),
                f"every path of {STEPS} steps"),
        Theorem("lifecycle_error_stages_roll_back", "-", (0,),
                functools.partial(_error_stages_roll_back, version),
                f"every path of {STEPS} steps, failing at every stage errors.toml names"),
    ]


declare_versions(theorems)
