"""Mutating a pool entry: one to four edits of its instructions, operands, call data,
storage, contracts, policy or limits, including placing a limit exactly at what the
reference used (-1, 0, +1): the boundary of each dimension for this very program.
"""

from __future__ import annotations

import random
from typing import Sequence

from conformance.fuzz.build import (
    EDGE_WORDS, ENTRY, JUMPS, KEYS, LIMIT_CHOICES, MASK, Builder, _call_data, _pick, fresh_rows, random_policy,
    recursive_rows, request_bound, snippet,
)
from conformance.fuzz.program import LIMITS, Code, FuzzInput, row


def _rows_contract(rng: random.Random, inp: FuzzInput) -> int | None:
    candidates = [a for a, (c, _) in sorted(inp.contracts.items()) if c.rows]
    return rng.choice(candidates) if candidates else None


def _context(inp: FuzzInput, address: int) -> tuple[list[int], int, int, str]:
    """What rows written into a contract draw from: the addresses, the call data and data
    sizes, and the contract's container version (its instruction set)."""
    code, _ = inp.contracts[address]
    return sorted(inp.contracts), len(inp.call_data), len(code.data), code.version


def _shift_targets(rows, at: int, by: int):
    """Jump targets after inserting (by > 0) or deleting (by < 0) rows at index ``at``."""
    out = []
    for m, t in rows:
        if m in JUMPS and t >= at:
            t = max(at, t + by) if by < 0 else t + by
        out.append((m, t))
    return out


def tune_limit(rng: random.Random, inp: FuzzInput) -> None:
    """Set one limit to what the reference used, minus one, or plus one."""
    from conformance.corpus.vector import run_reference
    from reference_vm.request import Limits
    name = rng.choice(Limits.DIMENSIONS)
    low, high = LIMITS["minimum"][name], LIMITS["maximum"][name]
    if not low <= inp.limits[name] <= high:
        inp.limits[name] = LIMITS["default"][name] if name != "compute" else 20000
    try:
        used = run_reference(inp.vector_input(), inp.version).usage
    except Exception:  # noqa: BLE001 - a malformed request: nothing to tune
        return
    value = getattr(used, name)
    inp.limits[name] = max(low, value + rng.choice((-1, 0, 0, 1)))


MUTATIONS = 16


def mutate_once(rng: random.Random, inp: FuzzInput, pool: Sequence[FuzzInput], kind: int | None = None) -> None:
    """One edit of ``inp`` in place; ``kind`` (0 .. MUTATIONS-1) forces the edit drawn (tests;
    a row edit of a request without rows becomes another edit, as a drawn one does)."""
    forced = kind
    kind = rng.randrange(MUTATIONS)
    if forced is not None:
        kind = forced
    address = _rows_contract(rng, inp)
    if address is None or kind >= 10:
        redrawn = 10 + rng.randrange(6)
        kind = forced if forced is not None and forced >= 10 else redrawn
    if kind < 10:
        assert address is not None          # row edits are drawn only when a contract has rows
        code, storage = inp.contracts[address]
        assert code.rows is not None        # _rows_contract picks only such a contract
        rows = list(code.rows)
        ctx = _context(inp, address)
        i = rng.randrange(max(1, len(rows) - 1))
        if kind <= 2:                                   # insert an instruction with operands
            new = snippet(rng, *ctx)
            rows = _shift_targets(rows, i, len(new))
            rows[i:i] = new
        elif kind == 3 and len(rows) > 1:               # delete a row
            del rows[i]
            rows = _shift_targets(rows, i + 1, -1)
        elif kind == 4:                                 # a boundary value into an immediate
            pushes = [j for j, (m, _) in enumerate(rows) if m.startswith("PUSH")]
            if pushes:
                j = rng.choice(pushes)
                b = Builder(rng, *ctx)
                rows[j] = (rows[j][0], b.value(rng.choice(("offset", "length", "shift", "word", "key", "compute"))))
        elif kind == 5 and len(rows) > 2:               # swap two rows
            j = rng.randrange(len(rows) - 1)
            rows[i], rows[j] = rows[j], rows[i]
        elif kind == 6:                                 # duplicate a row
            rows = _shift_targets(rows, i, 1)
            rows.insert(i, rows[i])
        elif kind == 7:                                 # splice rows from another entry
            picks = [pool[rng.randrange(len(pool))] for _ in range(4)] if pool else []
            donors = [c.rows for p in picks for _, (c, _s) in sorted(p.contracts.items())
                      if c.rows and len(c.rows) > 1 and c.version == code.version]
            if donors:
                donor = rng.choice(donors)
                a = rng.randrange(len(donor) - 1)
                piece = [(m, t) for m, t in donor[a:a + 1 + rng.randrange(6)] if m != "RETSUB"
                         and row(m).immediate_kind != "jump_target" and row(m).flow != "halt"]
                rows = _shift_targets(rows, i, len(piece))
                rows[i:i] = piece
        elif kind == 8:                                 # replace the halt
            b = Builder(rng, *ctx)
            b.halt()
            rows = rows[:-1] + b.rows
        else:                                           # a fresh contract body
            rows = fresh_rows(rng, *ctx[:3], version=code.version) if rng.random() < 0.9 \
                else recursive_rows(rng, code.version)
        inp.contracts[address] = (Code(rows=rows, data=code.data, version=code.version), storage)
    elif kind == 10:
        tune_limit(rng, inp)
    elif kind == 11:
        name = rng.choice(sorted(LIMIT_CHOICES))
        inp.limits[name] = rng.choice(LIMIT_CHOICES[name])
        if rng.random() < 0.1:
            request_bound(rng, inp)
    elif kind == 12:
        inp.policy, inp.isolation = random_policy(rng, inp.mnemonics(), inp.version)
    elif kind == 13:
        if rng.random() < 0.5 and inp.call_data:
            data = bytearray(inp.call_data)
            data[rng.randrange(len(data))] = rng.getrandbits(8)
            inp.call_data = bytes(data[:len(data) + rng.choice((-1, 0, 0, 1))])
        else:
            inp.call_data = _call_data(rng)
    elif kind == 14 and inp.contracts:             # a storage slot of a contract
        address = rng.choice(sorted(inp.contracts))
        code, storage = inp.contracts[address]
        storage = dict(storage)
        if storage and rng.random() < 0.4:
            del storage[rng.choice(sorted(storage))]
        else:
            storage[_pick(rng, KEYS)] = rng.choice(EDGE_WORDS[1:]) or 1
        inp.contracts[address] = (code, storage)
    else:                           # add or replace a callee contract (also: no contract yet)
        address = ENTRY + 1 + rng.randrange(3)
        addresses = sorted(set(inp.contracts) | {address})
        rows = fresh_rows(rng, addresses, len(inp.call_data), 0, callee=True, version=inp.version) \
            if rng.random() < 0.8 else recursive_rows(rng, inp.version)
        inp.contracts[address] = (Code(rows=rows, version=inp.version), {})


def mutate(rng: random.Random, inp: FuzzInput, pool: Sequence[FuzzInput]) -> FuzzInput:
    for _ in range(1 + rng.randrange(4)):
        mutate_once(rng, inp, pool)
    for name in inp.limits:
        if name == "compute" and inp.limits[name] > LIMITS["maximum"]["compute"] + 1:
            inp.limits[name] = MASK % (LIMITS["maximum"]["compute"] + 2)
    return inp
