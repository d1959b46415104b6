"""Shrinking a divergent sequence while it keeps its divergence class (conformance.fuzz.sequence_check).

First the sequence, to the shortest that still diverges the same way:

1. *drop steps*: each step removed in turn (last first), repeated until no single removal keeps
   the class (a sequence keeps at least MIN_STEPS steps: a divergence one call shows alone is
   the single-call campaign's);
2. *drop earlier steps' effects into the pre-state*: the first step replaced by what it left —
   the pre-state becomes the reference's state after it (chapter 11.9.2) — when the class
   survives: a step whose only part in the divergence was to write storage goes, a step whose
   part was something the state does not carry (transient storage, a failed step's undone
   writes) stays.

Then the smallest programs: the single-call shrinker (conformance.fuzz.shrink.Shrinker) on the
contracts with the first step as its message — rows, operands, callee contracts, storage slots
of the pre-state, data — and then every step's call data, caller, context, policy and limits
set to the simplest values that keep the class. The rounds repeat until one changes nothing
(``minimal``) or the test budget is spent. Everything is deterministic: candidates are tried in
a fixed order and a candidate already tested is answered from memory.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from conformance.corpus.vector import default_isolation
from conformance.fuzz.build import CALLER
from conformance.fuzz.program import FuzzInput, default_limits, default_policy
from conformance.fuzz.sequence import MIN_STEPS, SequenceInput, _step_of
from conformance.fuzz.shrink import Shrinker


class _Spent(Exception):
    pass


def _key(seq: SequenceInput) -> bytes:
    return hashlib.blake2b(json.dumps(seq.to_json(), separators=(",", ":")).encode(), digest_size=16).digest()


def folded(seq: SequenceInput) -> SequenceInput | None:
    """The sequence without its first step, whose effects (on the reference) are in the
    pre-state; None when the first step changes nothing (dropping it is the same candidate)."""
    from conformance.scenario.carry import run_steps
    run = run_steps(SequenceInput(seq.contracts, seq.steps[:1], seq.version).scenario_input())
    changes = run.results[0]["state_changes"]
    if not changes:
        return None
    out = seq.copy()
    for change in changes:
        address, key, after = int(change["address"], 16), int(change["key"], 16), int(change["after"], 16)
        code, storage = out.contracts[address]
        if after:
            storage[key] = after
        else:
            storage.pop(key, None)
    del out.steps[0]
    return out


class SequenceShrinker:
    def __init__(self, keeps: Callable[[SequenceInput], bool], budget: int = 600):
        self.keeps, self.budget, self.tests = keeps, budget, 0
        self.minimal = False
        self._seen: dict[bytes, bool] = {}

    def _try(self, cand: SequenceInput) -> bool:
        for step in cand.steps:
            step.fixed_isolation()
        key = _key(cand)
        if key in self._seen:
            return self._seen[key]
        if self.tests >= self.budget:
            raise _Spent
        self.tests += 1
        self._seen[key] = kept = self.keeps(cand)
        return kept

    def shrink(self, seq: SequenceInput) -> SequenceInput:
        best = seq.copy()
        self._seen[_key(best)] = True
        while True:
            start, before = _key(best), self.tests
            try:
                for phase in (self._drop_steps, self._fold, self._programs, self._step_fields):
                    best = phase(best)
            except _Spent as spent:
                return spent.args[0] if spent.args else best
            # a round that changed nothing, or ran no new candidate (it only moved between
            # sequences known to keep the class): a fixpoint
            if _key(best) == start or self.tests == before:
                self.minimal = True
                return best

    # -- the sequence ----------------------------------------------------------------------------
    def _drop_steps(self, seq: SequenceInput) -> SequenceInput:
        progress = True
        while progress and len(seq.steps) > MIN_STEPS:
            progress = False
            for i in reversed(range(len(seq.steps))):
                if len(seq.steps) <= MIN_STEPS:
                    break
                cand = seq.copy()
                del cand.steps[i]
                if self._kept(cand, seq):
                    seq, progress = cand, True
        return seq

    def _fold(self, seq: SequenceInput) -> SequenceInput:
        while len(seq.steps) > MIN_STEPS:
            cand = folded(seq)
            if cand is None or not self._kept(cand, seq):
                break
            seq = cand
        return seq

    def _kept(self, cand: SequenceInput, best: SequenceInput) -> bool:
        try:
            return self._try(cand)
        except _Spent:
            raise _Spent(best) from None

    # -- the programs and the steps' fields --------------------------------------------------------
    def _programs(self, seq: SequenceInput) -> SequenceInput:
        rest = [s.copy() for s in seq.steps[1:]]

        def rebuilt(inp: FuzzInput) -> SequenceInput:
            return SequenceInput({a: (c.copy(), dict(s)) for a, (c, s) in inp.contracts.items()},
                                 [_step_of(inp)] + [s.copy() for s in rest], seq.version)

        def keeps(inp: FuzzInput) -> bool:
            cand = rebuilt(inp)
            key = _key(cand)
            if key not in self._seen:
                self.tests += 1
                self._seen[key] = self.keeps(cand)
            return self._seen[key]

        left = self.budget - self.tests
        if left <= 0:
            raise _Spent(seq)
        inner = Shrinker(keeps, left)
        small = inner.shrink(seq.step_request(0))
        result = rebuilt(small)
        if not inner.minimal and self.tests >= self.budget:
            raise _Spent(result)
        return result

    def _step_fields(self, seq: SequenceInput) -> SequenceInput:
        for i in range(len(seq.steps)):
            for name, value in (("call_data", b""), ("caller", CALLER), ("block_time", 0),
                                ("random_seed", bytes(32)), ("limits", default_limits()),
                                ("policy", default_policy()), ("isolation", default_isolation(seq.version))):
                if getattr(seq.steps[i], name) == value:
                    continue
                cand = seq.copy()
                setattr(cand.steps[i], name, value)
                if self._kept(cand, seq):
                    seq = cand
            data = seq.steps[i].call_data
            while data:
                cand = seq.copy()
                cand.steps[i].call_data = data[:len(data) // 2]
                if not self._kept(cand, seq):
                    break
                seq, data = cand, cand.steps[i].call_data
        return seq
