"""Shrinking a divergent request while it keeps its divergence class.

Delta debugging (ddmin-style chunk removal, halving the chunk size) over the instruction rows of
every contract, then simplification passes over everything else a request holds: callee
contracts, operands (immediates to 0, 1 or a smaller PUSH), call data, storage slots, data
sections, the policy (each field to its default), the isolation level, the limits (to their
defaults) and the context words. Passes repeat until a whole round leaves the request as it
was — a fixpoint: no reduction applies, the request is *minimal* (``Shrinker.minimal``) — or
the budget of tests is spent. A candidate equal to one already tested (or to the request being
shrunk: a policy field set to its default that the isolation level narrows back, say) is
answered from memory without a test, so a request that cannot get smaller costs one round of
tests, never the budget. The predicate runs the candidate on the reference and on the
implementation and says whether the class is still the same; jump targets are row indices and
are moved with the rows, so removing rows keeps every program valid unless the removal itself
breaks it (which changes the class and is rejected).
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from conformance.fuzz.build import CALLER, has_loop
from conformance.fuzz.program import Code, FuzzInput, default_limits, default_policy, row, version_name
from conformance.corpus.vector import default_isolation
from reference_vm.container import parse
from reference_vm.decode import decode
from reference_vm.errors import InvalidCode
from reference_vm.rules import rules


# Candidates already known (no test) still cost a copy and a digest: a pass over thousands of
# rows that only meets known candidates is bounded by this many looks per test of the budget.
LOOKS_PER_TEST = 8


class _Spent(Exception):
    """The test budget is spent: the shrink ends where it stands."""


class Shrinker:
    def __init__(self, keeps: Callable[[FuzzInput], bool], budget: int = 600):
        self.keeps, self.budget, self.tests = keeps, budget, 0
        self.minimal = False          # the shrink ended at a fixpoint, not at the budget
        self._seen: dict[bytes, bool] = {}
        self._refused = False         # a candidate went untested: the budget was spent
        self._last_kept: FuzzInput | None = None   # the round's last newly tested candidate that kept the class
        self._looks = 0               # candidates looked at, tested or already known

    def _try(self, candidate: FuzzInput) -> bool:
        self._looks += 1
        if self.tests >= self.budget or self._looks > LOOKS_PER_TEST * self.budget:
            # The budget bounds the work, not only the tests: a pass over thousands of rows
            # would otherwise go on copying and digesting candidates it can no longer try.
            self._refused = True
            raise _Spent
        candidate.fixed_isolation()
        key = _key(candidate)
        if key in self._seen:
            return self._seen[key]
        self.tests += 1
        self._seen[key] = kept = self.keeps(candidate)
        if kept:
            self._last_kept = candidate      # built on the round's best so far: at least as small
        return kept

    def shrink(self, inp: FuzzInput) -> FuzzInput:
        best = inp.copy()
        self._seen[_key(best.copy().fixed_isolation())] = True     # the request itself keeps its class
        while self.tests < self.budget:
            start, before = _key(best), self.tests
            self._last_kept = None
            try:
                for step in (self._contracts, self._rows, self._simpler_ops, self._stops, self._immediates,
                             self._call_data, self._storage, self._data, self._policy, self._limits,
                             self._context):
                    result = step(best)
                    if result is not None:
                        best = result
            except _Spent:
                # the budget ran out inside a pass: keep what that pass had already won
                return self._last_kept if self._last_kept is not None else best
            # a whole round changed nothing (or ran no new candidate: it only moved between
            # requests already known to keep the class): a fixpoint
            if _key(best) == start or self.tests == before:
                self.minimal = not self._refused
                break
        return best

    # -- passes: each returns a smaller input that keeps the class, or None ------------------
    def _contracts(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for address in sorted(inp.contracts):
            if address == inp.to:
                continue
            cand = (improved or inp).copy()
            del cand.contracts[address]
            if self._try(cand):
                improved = cand
        return improved

    def _rows(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for address in sorted(inp.contracts):
            current = improved or inp
            code, storage = current.contracts[address]
            if code.rows is None or len(code.rows) <= 1:
                continue
            rows = list(code.rows)
            chunk = max(1, len(rows) // 2)
            while chunk >= 1 and self.tests < self.budget:
                i, progress = 0, False
                while i < len(rows) and len(rows) > 1:
                    n = min(chunk, len(rows) - i)
                    trial = _remove(rows, i, n)
                    cand = current.copy()
                    cand.contracts[address] = (Code(rows=trial, data=code.data, version=code.version), dict(storage))
                    if trial and self._try(cand):
                        rows, current, progress = trial, cand, True
                        improved = cand
                    else:
                        i += n
                if not progress:
                    chunk //= 2
            # then windows of 2 and 3 rows at every position (a push and its consumer are
            # often neighbours that only go together, and ddmin's aligned chunks miss them)
            for n in (2, 3):
                i = 0
                while i + n <= len(rows) and len(rows) > n and self.tests < self.budget:
                    trial = _remove(rows, i, n)
                    cand = current.copy()
                    cand.contracts[address] = (Code(rows=trial, data=code.data, version=code.version), dict(storage))
                    if self._try(cand):
                        rows, current, improved = trial, cand, cand
                    else:
                        i += 1
        return improved

    def _simpler_ops(self, inp: FuzzInput) -> FuzzInput | None:
        """Each row replaced by a simpler instruction of its family (LOG4 -> LOG0, DUP9 -> DUP1,
        a jump -> NOP), which lets the row pass remove the operands it no longer needs."""
        improved = None
        for address in sorted(inp.contracts):
            current = improved or inp
            code, storage = current.contracts[address]
            if code.rows is None:
                continue
            rows = list(code.rows)
            i = 0
            while i < len(rows):
                m = rows[i][0]
                for simpler in _simpler_ops(m):
                    trial = list(rows)
                    trial[i] = (simpler, 0)
                    drop = row(m).inputs - row(simpler).inputs
                    if m.startswith("LOG") and drop and i >= drop and all(r[0].startswith("PUSH")
                                                                          for r in rows[i - drop:i]):
                        trial = _remove(trial, i - drop, drop)   # and the topics pushed just before it
                    cand = current.copy()
                    cand.contracts[address] = (Code(rows=trial, data=code.data, version=code.version), dict(storage))
                    if self._try(cand):
                        rows, current, improved = trial, cand, cand
                        break
                i += 1
        return improved

    def _stops(self, inp: FuzzInput) -> FuzzInput | None:
        """A halting row (RETURN, REVERT, TRAP) and a code's only row replaced by STOP, and raw
        code bytes by the rows they decode to (jumps to row 0) or by a STOP: what is
        left of a program after the row pass may be an instruction kept only because a code
        cannot be empty or must end, and it need not be the one the class is about."""
        improved = None
        for address in sorted(inp.contracts):
            current = improved or inp
            code, storage = current.contracts[address]
            if code.rows is None:               # raw bytes: its instructions as rows, or a STOP
                decoded, version = _rows_of_raw(code.raw or b"", inp.version)
                for rows in decoded, [("STOP", 0)]:
                    cand = current.copy()
                    cand.contracts[address] = (Code(rows=rows, version=version), dict(storage))
                    if rows and self._try(cand):
                        current = improved = cand
                        break
                continue
            rows = list(code.rows)
            for i, (m, _imm) in enumerate(rows):
                if m == "STOP" or (row(m).flow != "halt" and len(rows) > 1):
                    continue
                trial = list(rows)
                trial[i] = ("STOP", 0)
                cand = current.copy()
                cand.contracts[address] = (Code(rows=trial, data=code.data, version=code.version), dict(storage))
                if self._try(cand):
                    rows, current, improved = trial, cand, cand
        return improved

    def _immediates(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for address in sorted(inp.contracts):
            current = improved or inp
            code, storage = current.contracts[address]
            if code.rows is None:
                continue
            rows = list(code.rows)
            for i, (m, imm) in enumerate(rows):
                if not m.startswith("PUSH"):
                    continue
                for value, size in _simpler(m, imm):
                    trial = list(rows)
                    trial[i] = (f"PUSH{size}", value)
                    cand = current.copy()
                    cand.contracts[address] = (Code(rows=trial, data=code.data, version=code.version), dict(storage))
                    if self._try(cand):
                        rows, current, improved = trial, cand, cand
                        break
        return improved

    def _call_data(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        while (improved or inp).call_data and self.tests < self.budget:
            data = (improved or inp).call_data
            for trial in (b"", data[:len(data) // 2], data[:-1], bytes(len(data))):
                if trial == data:
                    continue
                cand = (improved or inp).copy()
                cand.call_data = trial
                if self._try(cand):
                    improved = cand
                    break
            else:
                break
        return improved

    def _storage(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for address in sorted(inp.contracts):
            for key in sorted((improved or inp).contracts[address][1]):
                cand = (improved or inp).copy()
                del cand.contracts[address][1][key]
                if self._try(cand):
                    improved = cand
        return improved

    def _data(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for address in sorted(inp.contracts):
            code, storage = (improved or inp).contracts[address]
            if code.rows is not None and code.data:
                cand = (improved or inp).copy()
                cand.contracts[address] = (Code(rows=list(code.rows), version=code.version), dict(storage))
                if self._try(cand):
                    improved = cand
        return improved

    def _policy(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        defaults = default_policy()
        for name in defaults:
            if (improved or inp).policy[name] != defaults[name]:
                cand = (improved or inp).copy()
                cand.policy[name] = defaults[name]
                if self._try(cand):
                    improved = cand
        if (improved or inp).isolation != default_isolation(inp.version):
            cand = (improved or inp).copy()
            cand.isolation = default_isolation(inp.version)
            if self._try(cand):
                improved = cand
        return improved

    def _limits(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        defaults = default_limits()
        for name, value in defaults.items():
            current = improved or inp
            if current.limits[name] == value or (name == "compute" and has_loop(current)):
                continue
            cand = current.copy()
            cand.limits[name] = value
            if self._try(cand):
                improved = cand
        return improved

    def _context(self, inp: FuzzInput) -> FuzzInput | None:
        improved = None
        for name, value in (("caller", CALLER), ("block_time", 0), ("random_seed", bytes(32))):
            if getattr(improved or inp, name) != value:
                cand = (improved or inp).copy()
                setattr(cand, name, value)
                if self._try(cand):
                    improved = cand
        return improved


def _rows_of_raw(blob: bytes, version: str) -> tuple[list[tuple[str, int]], str]:
    """The rows a raw container's code decodes to under spec ``version`` (every jump to row 0)
    and its container version; ([], ``version``) when it does not decode."""
    try:
        parsed = parse(blob, rules(version))
        table = rules(version).instruction_set(parsed.version)
        return ([(d.instruction.mnemonic, 0 if d.instruction.immediate_kind == "jump_target" else d.immediate)
                 for d in decode(parsed.code, table)], version_name(parsed.version))
    except InvalidCode:
        return [], version


def _key(inp: FuzzInput) -> bytes:
    """A candidate's identity (its canonical JSON, digested)."""
    return hashlib.blake2b(json.dumps(inp.to_json(), separators=(",", ":")).encode(), digest_size=16).digest()


def _remove(rows, i: int, n: int):
    """rows without rows[i:i+n], jump targets into the removed part moved to row i."""
    out = []
    for m, t in rows[:i] + rows[i + n:]:
        if row(m).immediate_kind == "jump_target":
            t = t if t < i else max(i, t - n)
        out.append((m, t))
    return out


def _simpler_ops(mnemonic: str) -> list[str]:
    for family in ("LOG", "DUP", "SWAP"):
        if mnemonic.startswith(family) and mnemonic[len(family):].isdigit():
            n = int(mnemonic[len(family):])
            low = 0 if family == "LOG" else 1
            return [f"{family}{k}" for k in range(low, n)]
    if mnemonic in ("JUMP", "JUMPI", "CALLSUB"):
        return ["NOP"] if mnemonic == "JUMP" else ["POP"] if mnemonic == "JUMPI" else ["NOP"]
    return []


def _simpler(mnemonic: str, imm: int):
    size = row(mnemonic).immediate_size
    value = imm % (1 << (8 * size))
    out = []
    for v in (0, 1):
        if value != v:
            out.append((v, 1))
    for smaller in (1, 2, 4):
        if smaller < size and value < 1 << (8 * smaller):
            out.append((value, smaller))
    return out
