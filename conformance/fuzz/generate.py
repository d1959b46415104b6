"""Generating requests: request ``index`` of campaign ``seed`` is a fresh request
(conformance.fuzz.build) or a mutation of a pool entry (conformance.fuzz.mutate), sometimes
malformed, as a function of (seed, index, pool) only: its random source is seeded from SHA-256 of
(seed, index). A share of the mutations places a limit exactly at (-1, 0, +1 around) what the
reference used.
"""

from __future__ import annotations

import hashlib
import random
from typing import Sequence

from conformance.corpus.vector import BASE
from conformance.fuzz.build import CALLS, fresh, has_loop, malform
from conformance.fuzz.mutate import mutate
from conformance.fuzz.program import LIMITS, FuzzInput

MALFORMED_SHARE = 0.08
FRESH_SHARE = 0.35


def rng_for(seed: int, index: int, salt: str = "") -> random.Random:
    digest = hashlib.sha256(f"rtwo-fuzz/{seed}/{index}/{salt}".encode()).digest()
    return random.Random(int.from_bytes(digest[:16], "little"))


def generate(seed: int, index: int, pool: Sequence[FuzzInput] = (), version: str = BASE) -> FuzzInput:
    """The request number ``index`` of the campaign ``seed`` of spec ``version`` given the pool
    at its epoch (whose entries are of that version)."""
    rng = rng_for(seed, index)
    if pool and rng.random() >= FRESH_SHARE:
        inp = mutate(rng, pool[rng.randrange(len(pool))].copy(), pool)
    else:
        inp = fresh(rng, version)
    if rng.random() < MALFORMED_SHARE:
        malform(rng, inp)
    if has_loop(inp):
        inp.limits["compute"] = min(inp.limits["compute"], 20000)
    elif inp.limits["compute"] > 100000 and rng.random() < 0.9 and set(CALLS) & set(inp.mnemonics()):
        # contracts calling each other (or themselves) twice per frame make call trees that
        # grow until the compute runs out: keep most of them small
        inp.limits["compute"] = 100000
    if inp.limits.get("memory_pages", 0) > 4096 and inp.limits["memory_pages"] != LIMITS["maximum"]["memory_pages"]:
        inp.limits["memory_pages"] = 4096
    return inp.fixed_isolation()
