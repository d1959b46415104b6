"""Sequence requests (``rtwo-vm fuzz --sequences K``): a scenario of 2..K top-level calls on one
shared pre-state (spec chapter 11.9), sent to an implementation as one scenario request.

A ``SequenceInput`` holds the contracts of the pre-state (code and storage, as a ``FuzzInput``
holds them) and its steps, each a ``FuzzInput`` without contracts: caller, target, call data,
context, policy, isolation and limits of one call. ``scenario_input`` is the chapter 11.9 form;
``step_request`` is step i as a single-call request on given contracts (the pool, the program
shrinker and coverage work on those).

Request ``index`` of campaign ``seed`` is a function of (seed, index, pool, version, K) only,
as a single-call request is (conformance.fuzz.generate): its first step and contracts are the
single-call request ``generate(seed, index, pool)``; the rest is drawn from a second random
source seeded from (seed, index): storage-touching contracts (SSTORE/SLOAD, TSTORE/TLOAD in a
version that has them, calls between the contracts, halts that revert or fault), the number of
steps and each step's caller, target, call data and limits.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from conformance.fuzz.build import (
    CALLER, CALLS, ENTRY, LIMIT_CHOICES, MASK, Builder, _call_data, has_loop, random_limits, random_policy,
    vocabulary,
)
from conformance.fuzz.generate import generate, rng_for
from conformance.fuzz.program import Code, FuzzInput, default_limits, default_policy, disassemble
from conformance.corpus.vector import default_isolation
from conformance.scenario.carry import MAX_STEPS

MIN_STEPS = 2
STATEFUL = ("SLOAD", "SLOAD", "SSTORE", "SSTORE", "SSTORE", "CALL")
TRANSIENT = ("TLOAD", "TLOAD", "TSTORE", "TSTORE")
CALLERS = (CALLER, CALLER, 0, 1, 0xB0B, MASK)


@dataclass
class SequenceInput:
    contracts: dict[int, tuple[Code, dict[int, int]]]
    steps: list[FuzzInput]                 # each without contracts
    version: str

    def copy(self) -> "SequenceInput":
        return SequenceInput({a: (c.copy(), dict(s)) for a, (c, s) in self.contracts.items()},
                             [s.copy() for s in self.steps], self.version)

    def step_request(self, index: int, contracts: Mapping[int, tuple[Code, dict[int, int]]] | None = None) -> FuzzInput:
        """Step ``index`` as a single-call request on ``contracts`` (default: the pre-state's)."""
        inp = self.steps[index].copy()
        source = self.contracts if contracts is None else contracts
        inp.contracts = {a: (c.copy(), dict(s)) for a, (c, s) in source.items()}
        return inp

    def scenario_input(self) -> dict[str, Any]:
        """The scenario input of chapter 11.9.1: the pre-state and the steps, each under the
        campaign's version."""
        pre = FuzzInput(self.contracts, version=self.version).vector_input()["pre_state"]
        steps = []
        for step in self.steps:
            vi = FuzzInput({}, step.to, step.caller, step.call_data, step.block_time, step.random_seed,
                           step.policy, step.isolation, step.limits, self.version).vector_input()
            steps.append({"message": vi["message"], "context": vi["context"], "policy": vi["policy"],
                          "sandbox": vi["sandbox"], "spec_version": self.version})
        return {"pre_state": pre, "steps": steps}

    def to_json(self) -> dict[str, Any]:
        first = FuzzInput(self.contracts, version=self.version).to_json()
        out: dict[str, Any] = {"contracts": first["contracts"],
                               "steps": [{k: v for k, v in s.to_json().items() if k not in ("contracts", "version")}
                                         for s in self.steps]}
        if "version" in first:
            out["version"] = first["version"]
        return out

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "SequenceInput":
        extra = {"version": j["version"]} if "version" in j else {}
        base = FuzzInput.from_json({**_EMPTY_STEP, "contracts": j["contracts"], **extra})
        steps = [FuzzInput.from_json({**s, "contracts": [], **extra}) for s in j["steps"]]
        if not MIN_STEPS <= len(steps) <= MAX_STEPS:
            raise ValueError(f"a sequence has {MIN_STEPS} to {MAX_STEPS} steps, not {len(steps)}")
        return cls(base.contracts, steps, base.version)

    def mnemonics(self) -> list[str]:
        return FuzzInput(self.contracts, version=self.version).mnemonics()

    def size(self) -> int:
        """Instructions in all contracts (as FuzzInput.size)."""
        return FuzzInput(self.contracts, version=self.version).size()


_EMPTY_STEP = FuzzInput({}).to_json()


def _step_of(inp: FuzzInput) -> FuzzInput:
    step = inp.copy()
    step.contracts = {}
    return step


def stateful_rows(rng: random.Random, addresses: Sequence[int], cds: int, version: str) -> list[tuple[str, int]]:
    """A program that reads and writes storage (and transient storage where the version has it),
    maybe calls the other contracts, and most often returns what it read."""
    b = Builder(rng, addresses, cds, 0, version)
    table = vocabulary(version).table.by_mnemonic
    choices = STATEFUL + (TRANSIENT if "TLOAD" in table else ())
    for _ in range(rng.choice((1, 2, 2, 3, 4, 6))):
        b.emit(rng.choice(choices) if rng.random() < 0.85 else rng.choice(vocabulary(version).body).mnemonic)
    if rng.random() < 0.6:
        end = b.observe()                       # what it read, returned
        b.push(0)
        b.push(end)
        b.rows.append(("RETURN" if rng.random() < 0.8 else "REVERT", 0))
    else:
        b.halt()                                # STOP, RETURN, REVERT or TRAP
    return b.finish()


def _steps(rng: random.Random, first: FuzzInput, count: int) -> list[FuzzInput]:
    addresses = sorted(first.contracts) or [first.to]
    steps = [_step_of(first)]
    for _ in range(count - 1):
        step = _step_of(first) if rng.random() < 0.25 else FuzzInput({}, version=first.version)
        r = rng.random()
        step.to = first.to if r < 0.5 else rng.choice(addresses)
        step.caller = rng.choice(CALLERS) if rng.random() < 0.8 else rng.getrandbits(64)
        if rng.random() < 0.7:
            step.call_data = _call_data(rng)
        if rng.random() < 0.3:
            step.block_time = rng.choice((0, 1, 1700000000, MASK))
            step.random_seed = bytes(rng.getrandbits(8) for _ in range(32))
        r = rng.random()
        if r < 0.3:
            step.limits = random_limits(rng)
        elif r < 0.4:
            name = rng.choice(sorted(LIMIT_CHOICES))
            step.limits[name] = rng.choice(LIMIT_CHOICES[name])
        if rng.random() < 0.15:
            step.policy, step.isolation = random_policy(rng, first.mnemonics(), first.version)
        steps.append(step.fixed_isolation())
    return steps


def generate_sequence(seed: int, index: int, pool: Sequence[FuzzInput], version: str, most: int) -> SequenceInput:
    """Sequence request ``index`` of campaign ``seed`` (2 to ``most`` steps) given the pool at its
    epoch."""
    first = generate(seed, index, pool, version)
    rng = rng_for(seed, index, "sequence")
    addresses = sorted(set(first.contracts) | {first.to if 0 <= first.to <= MASK else ENTRY})
    if rng.random() < 0.35 and len(addresses) < 4:
        addresses.append(max(addresses) + 1)          # one more contract, a stateful one
    contracts = dict(first.contracts)
    for address in addresses:
        code = contracts.get(address, (None, {}))[0]
        if code is None or (code.rows is not None and rng.random() < 0.45):
            rows = stateful_rows(rng, addresses, len(first.call_data), version)
            contracts[address] = (Code(rows=rows, version=version), contracts.get(address, (None, {}))[1])
    first.contracts = contracts
    count = MIN_STEPS + rng.randrange(max(1, most - MIN_STEPS + 1))
    sequence = SequenceInput(contracts, _steps(rng, first, count), version)
    loops, calls = has_loop(first), bool(set(CALLS) & set(first.mnemonics()))
    for step in sequence.steps:           # as generate keeps a request's run short
        if loops:
            step.limits["compute"] = min(step.limits["compute"], 20000)
        elif calls and step.limits["compute"] > 100000:
            step.limits["compute"] = 100000
        if step.limits.get("memory_pages", 0) > 4096:
            step.limits["memory_pages"] = 4096
    return repaired(sequence)


def repaired(sequence: SequenceInput) -> SequenceInput:
    """The sequence with each step that is no scenario step (chapter 11.9.1: an unknown isolation
    level or storage access) given the default policy and isolation."""
    from conformance.scenario.schema import input_problems
    if not input_problems(sequence.scenario_input()):
        return sequence
    for step in sequence.steps:
        if step.policy["storage_access"] not in ("none", "read_only", "read_write") or \
                not isinstance(step.policy["storage_access"], str):
            step.policy = default_policy()
            step.isolation = default_isolation(sequence.version)
    if input_problems(sequence.scenario_input()):
        for step in sequence.steps:
            step.policy, step.isolation, step.limits = default_policy(), default_isolation(sequence.version), \
                default_limits()
    return sequence


def sequence_text(sequence: SequenceInput) -> list[str]:
    """The contracts (disassembled) and one line per step."""
    out = []
    for address in sorted(sequence.contracts):
        code, storage = sequence.contracts[address]
        head = f"contract {address:#x}"
        if storage:
            head += "  storage " + ", ".join(f"{k:#x}={v:#x}" for k, v in sorted(storage.items()))
        out.append(head)
        out += ["  " + line for line in disassemble(code)]
    for i, s in enumerate(sequence.steps):
        limits = ", ".join(f"{k}={v}" for k, v in s.limits.items() if v != default_limits()[k])
        out.append(f"step {i}: {s.caller:#x} -> {s.to:#x}, call data 0x{s.call_data[:24].hex()}"
                   f"{'...' if len(s.call_data) > 24 else ''}" + (f"; limits {limits}" if limits else "")
                   + ("" if s.policy == default_policy() else "; policy " + ", ".join(
                       f"{k}={v}" for k, v in s.policy.items() if v != default_policy()[k])))
    return out
