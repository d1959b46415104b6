"""The upgrade check: would a deployed contract behave the same under a newer spec version?

A contract records the spec version it was deployed under (``contracts.spec_version``); its
calls run under that version. Before it is moved to another one, ``check(rt, address, to)``
asks the symbolic executor (proofs/symbolic/equivalence.py ``across``) whether its container
gives the same result under both versions' rules on every input within the bounds: any
caller, any call data up to ``max_calldata`` bytes, every storage slot of every contract a
free word (so the answer holds from any state the contract may reach), time and randomness
allowed and symbolic, calls to the other deployed contracts run symbolically (up to
MAX_CONTRACTS of them, in address order; a call to one left out is named and makes the
answer ``unknown``). The answer:

- ``proved-equal``: no input within the bounds gives a different result in a compared field;
- ``differs``: an input on which they differ, with the reference interpreter's result under
  each version (``results``), replayed there, not taken from the models;
- ``unknown``: a bound was reached, a query was undecided, a safety net stopped the run, or
  the models and the reference disagreed (each named in ``reasons``).

It only reads: nothing is recorded and the contract is not moved. The answer depends on the
contract, the versions, the compared fields, the limits and the budgets only — deterministic
budgets (paths, instructions, z3 work units), never the wall clock: the deadline and z3's
memory are safety nets whose stop is ``unknown``, said so. z3 is not safe to use from two
threads at once: one check runs at a time in a process (``LOCK``); a check that cannot start
within its own deadline is refused (RuntimeBusy).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import spec
from proofs.symbolic import bounds
from reference_vm import Limits, Policy
from rtwo_vm.runtime import stored
from rtwo_vm.runtime.execution import RuntimeBusy
from rtwo_vm.runtime.records import InvalidInput, UnknownRecord
from rtwo_vm.runtime.store import DamagedRecord, word_text
from rtwo_vm.runtime.tools import Z3_LOCK

FIELDS = ("status", "error", "error_pc", "output", "storage", "events", "calls", "usage", "fee")
MAX_CONTRACTS = 16
LOCK = Z3_LOCK      # shared with the instruction registry's probe of the models (tools.py)
ANSWERS = {"equivalent": "proved-equal", "different": "differs"}


@dataclass(frozen=True)
class Budget:
    """The bounds of one check: defaults and caps are the symbolic executor's defaults
    (proofs/symbolic/bounds.py), so a request can ask for less work, never more."""

    max_calldata: int = bounds.DEFAULT_MAX_CALLDATA
    loop_bound: int = bounds.DEFAULT_LOOP_BOUND
    max_paths: int = bounds.DEFAULT_MAX_PATHS
    max_steps: int = bounds.DEFAULT_MAX_STEPS
    max_work: int = bounds.DEFAULT_MAX_WORK
    deadline: float = bounds.DEFAULT_DEADLINE       # a safety net, not a bound

    def checked(self) -> "Budget":
        caps = Budget()
        for name in ("max_calldata", "loop_bound", "max_paths", "max_steps", "max_work"):
            value = getattr(self, name)
            low = 0 if name == "max_calldata" else 1
            if type(value) is not int or not low <= value <= getattr(caps, name):
                raise InvalidInput(f"{name} must be an integer in [{low}, {getattr(caps, name)}]")
        if not isinstance(self.deadline, (int, float)) or not 0 < self.deadline <= caps.deadline:
            raise InvalidInput(f"deadline must be in (0, {caps.deadline:g}] seconds")
        return self

    def to_json(self) -> dict[str, Any]:
        return {"maxCalldata": self.max_calldata, "loopBound": self.loop_bound,
                "maxPaths": self.max_paths, "maxSteps": self.max_steps,
                "maxWork": self.max_work, "deadlineSeconds": self.deadline}


@dataclass
class UpgradeCheck:
    address: str
    from_version: str
    to_version: str
    answer: str                   # proved-equal | differs | unknown
    verdict: str                  # the equivalence verdict (equivalent, different, bounded, ...)
    compared: tuple
    budget: Budget
    limits: Limits
    contracts: list               # the deployed contracts given to the exploration
    left_out: int = 0             # deployed contracts past MAX_CONTRACTS
    paths: tuple = (0, 0)
    queries: int = 0
    reasons: list = field(default_factory=list)
    differing: list = field(default_factory=list)
    witness: dict | None = None
    results: dict | None = None   # version -> the reference's result on the witness

    def to_json(self) -> dict[str, Any]:
        return {"address": self.address, "fromVersion": self.from_version,
                "toVersion": self.to_version, "answer": self.answer, "verdict": self.verdict,
                "compared": list(self.compared), "budget": self.budget.to_json(),
                "limits": {n: getattr(self.limits, n) for n in Limits.DIMENSIONS},
                "contracts": self.contracts, "contractsLeftOut": self.left_out,
                "paths": list(self.paths), "queries": self.queries, "reasons": self.reasons,
                "differing": self.differing, "witness": self.witness, "results": self.results}


def compare_fields(names) -> tuple:
    """The compared fields (``storage`` may be named ``state_changes``), in FIELDS order."""
    if names is None:
        return FIELDS
    given = ["storage" if n == "state_changes" else n for n in names]
    bad = [n for n in given if n not in FIELDS]
    if bad or not given:
        raise InvalidInput(f"compare: {str(bad[0])[:40] if bad else 'nothing'!r} is not a field "
                           f"({', '.join(FIELDS)})")
    return tuple(n for n in FIELDS if n in given)


def _deployed(rt, address: int) -> tuple[bytes, str, dict]:
    """The contract's code and version, and the other deployed contracts' code (address ->
    code, up to MAX_CONTRACTS in all, in address order) with how many were left out."""
    addr = word_text(address)
    row = rt.store.one("SELECT code, spec_version FROM contracts WHERE address = ?", (addr,))
    if row is None:
        raise UnknownRecord(f"no contract at {addr}")
    try:
        version = stored.one_of(row["spec_version"], spec.names(), "contracts", addr,
                                "spec_version")
    except DamagedRecord as err:
        raise InvalidInput(f"the contract's record is damaged: {err}") from None
    others: dict = {}
    for r in rt.store.all("SELECT address, code FROM contracts WHERE address != ?", (addr,)):
        try:
            other = stored.word(r["address"], "contracts", r["address"], "address")
        except DamagedRecord:
            continue                  # not an address: no call can reach it
        if isinstance(r["code"], bytes):
            others[other] = r["code"]
    return bytes(row["code"]), version, others


def check(rt, address: int, to_version: str | None = None, *, compare=None,
          limits: Limits | None = None, budget: Budget | None = None) -> UpgradeCheck:
    """Whether the contract at ``address`` gives the same result under ``to_version``
    (default: the newest spec version) as under its own (module docstring)."""
    from proofs import versions
    from proofs.symbolic.world import Setup, limits_problem, policy_problem

    fields = compare_fields(compare)
    budget = (budget or Budget()).checked()
    limits = limits or Limits()
    code, version, others = _deployed(rt, address)
    to = to_version or spec.latest()
    for v in (version, to):
        try:
            versions.check(v, versions.SYMBOLIC)
        except versions.UnmodelledVersion as err:
            raise InvalidInput(str(err)) from None
    if to == version:
        raise InvalidInput(f"the contract at {word_text(address)} is deployed under {version} "
                           "already")
    policy = Policy(time_access="allowed", randomness="seeded")
    for v in (version, to):
        problem = limits_problem(limits, v) or policy_problem(policy, v)
        if problem:
            raise InvalidInput(f"limits under {v}: {problem}")
    given = sorted(others)[:MAX_CONTRACTS - 1]
    codes = {a: others[a] for a in given}
    codes[address] = code
    setup = Setup(entry=address, codes=codes, version=version, policy=policy, limits=limits,
                  max_calldata=budget.max_calldata, loop_bound=budget.loop_bound,
                  max_paths=budget.max_paths, max_steps=budget.max_steps,
                  max_work=budget.max_work, deadline=budget.deadline)
    out = UpgradeCheck(word_text(address), version, to, "unknown", "unknown", fields, budget,
                       limits, [word_text(a) for a in sorted(codes)], len(others) - len(given))
    if not LOCK.acquire(timeout=budget.deadline):
        raise RuntimeBusy("another upgrade check is running; retry")
    try:
        _run(setup, to, fields, out)
    finally:
        LOCK.release()
    return out


def _run(setup, to: str, fields: tuple, out: UpgradeCheck) -> None:
    from proofs.symbolic.equivalence import across
    from proofs.symbolic.executor import ModelError
    from proofs.symbolic.solve import Solver
    from proofs.symbolic.witness import Witness
    try:
        result = across(setup, to, fields, Solver(setup.rlimit))
    except (ModelError, RecursionError) as err:
        text = str(err).splitlines()[0][:200] if str(err) else type(err).__name__
        out.reasons.append(f"could not run: {text}")
        return
    out.verdict = result.verdict
    out.answer = ANSWERS.get(result.verdict, "unknown")
    out.paths, out.queries = result.paths, result.queries
    out.reasons = (list(result.bounds) + list(result.undecided)
                   + ([f"stopped by a safety net: {result.stopped}"] if result.stopped else [])
                   + [f"MODEL DISAGREEMENT: {d}" for d in result.disagreements])
    if isinstance(result.witness, Witness):
        out.witness = result.witness.to_json()
        out.results = dict(zip(result.versions, result.results))
        out.differing = list(result.differing)
