"""Seeded random valid programs: operands primed on the stack, random instructions with jump
targets on instruction boundaries, then a halt; random small limits and call data. The same
program is also deployed at a second address so that CALLs have something to run.

Only ``random.Random(seed)`` methods whose sequences Python keeps stable across versions are
used (randrange, choice, getrandbits), so the programs are the same on every machine.

Each spec version has its seed (SEEDS): its programs draw from its instruction table, in its
containers, and are valid from it on; so the corpus of 1.1 holds 1.0's programs (1.0
containers, filled under 1.1) and its own, which use 1.1's instructions.
"""

from __future__ import annotations

import random
from typing import Callable, Iterator

import spec
from conformance.corpus.definitions.common import BASE, MASK, MIN, OPEN, SMAX, VERSIONS, build
from conformance.corpus.vector import Case

SEED = 20260101                 # the first version's
# The seed and number of programs of each version: the first version's 300 programs are in
# every version's corpus, each later version's own from it on.
SEEDS = {"1.0": (SEED, 300), "1.1": (20261101, 120)}
COUNT = SEEDS[BASE][1]
OTHER = 0x101
HALTS = ("STOP", "RETURN", "REVERT", "TRAP")
EDGE_WORDS = (0, 1, 2, 7, 8, 31, 63, 64, 65, 255, 4095, 4096, 2 ** 31, SMAX, MIN, MASK, MASK - 1)


def _immediate(rng: random.Random, size: int) -> int:
    kind = rng.randrange(3)
    value = rng.choice(EDGE_WORDS) if kind == 0 else rng.getrandbits(64) if kind == 1 else rng.randrange(65)
    return value % (1 << (8 * size))


def encode(rows, target: Callable[[list[int]], int], immediate: Callable[[int], int]) -> bytes:
    """The code section of ``rows``: each jump target chosen by ``target`` among the rows'
    offsets (so always an instruction boundary), each other immediate by ``immediate(size)``
    (reduced to the immediate's size). Shared with the hypothesis program strategy."""
    offsets, pc = [], 0
    for row in rows:
        offsets.append(pc)
        pc += row.size
    code = bytearray()
    for row in rows:
        code.append(row.opcode)
        if row.immediate_kind == "jump_target":
            code += target(offsets).to_bytes(row.immediate_size, "little")
        elif row.immediate_size:
            value = immediate(row.immediate_size) % (1 << (8 * row.immediate_size))
            code += value.to_bytes(row.immediate_size, "little")
    return bytes(code)


def program(rng: random.Random, max_length: int = 40, version: str = BASE) -> tuple[bytes, list[str]]:
    """A valid container of spec version ``version`` and the mnemonics it holds (drawn from
    that version's table)."""
    table = spec.load(version)
    rows = [table.by_mnemonic["PUSH8"]] * rng.randrange(17)
    rows += [rng.choice(table.instructions) for _ in range(1 + rng.randrange(max_length))]
    rows.append(table.by_mnemonic[rng.choice(HALTS)])
    code = encode(rows, rng.choice, lambda size: _immediate(rng, size))
    data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(17)))
    return (build(code, data, version),
            sorted({r.mnemonic for r in rows}, key=lambda m: table.by_mnemonic[m].opcode))


def random_case(rng: random.Random, case_id: str, description: str,
                compute_max: int = 5000, version: str = BASE) -> Case:
    """One random valid program of spec version ``version`` with its limits, call data,
    storage, time and seed, drawn from ``rng`` in this order (the committed random vectors
    depend on it); valid from that version on."""
    code, mnemonics = program(rng, version=version)
    limits = {"compute": rng.randrange(compute_max + 1), "memory_pages": rng.randrange(5),
              "storage_units": rng.randrange(80)}
    call_data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(25)))
    storage = {rng.choice(EDGE_WORDS): rng.getrandbits(64) | 1 for _ in range(rng.randrange(3))}
    return Case(id=case_id, description=description,
                code=code, opcodes=tuple(mnemonics), categories=("random",), source="random",
                contracts={OTHER: code}, storage=storage, call_data=call_data,
                block_time=rng.getrandbits(64), random_seed=bytes(rng.getrandbits(8) for _ in range(32)),
                policy=OPEN, limits=limits, since=version)


def programs(seed: int, count: int, version: str) -> Iterator[Case]:
    """``count`` random programs of ``version`` drawn from ``seed``, ids random/<seed>/<n>."""
    rng = random.Random(seed)
    for n in range(count):
        yield random_case(rng, f"random/{seed}/{n:04d}", f"Random valid program {n} of seed {seed}.",
                          version=version)


def cases(seeds: dict[str, tuple[int, int]] | None = None) -> Iterator[Case]:
    """The programs of every version (SEEDS: version -> (seed, count)), each valid from its version."""
    for version in VERSIONS:
        yield from programs(*(seeds or SEEDS)[version], version)
