"""Gated context reads (spec 6.12). The random stream is an uninterpreted function symbol
``random_word(seed, k)`` with the stated axiom that, instance by instance, it is the first
W/8 bytes of SHA-256(seed || k as counter_size bytes little-endian), read little-endian
(evaluated in concrete replay by ``random_value``)."""

from __future__ import annotations

import hashlib

import z3

from proofs.accounting import running
from proofs.instructions.hash import as_int
from proofs.words import Width


def random_value(w: Width, seed, counter):
    s, k = as_int(seed), as_int(counter)
    if s is not None and k is not None:
        block = s.to_bytes(32, "little") + k.to_bytes(w.num.counter_size, "little")
        return w.wval(int.from_bytes(hashlib.sha256(block).digest()[:w.size], "little"))
    symbol = z3.Function(f"random_word_w{w.bits}", z3.BitVecSort(256),
                         z3.BitVecSort(w.counter_bits), z3.BitVecSort(w.bits))
    return symbol(seed, counter)


def models(w: Width) -> dict:
    def TIME(s, imm):
        return [running(s.push(s.env.block_time))]

    def RANDOM(s, imm):
        value = random_value(w, s.env.seed, s.random_counter)
        return [running(s.replace(random_counter=s.random_counter + w.cval(1)).push(value))]

    return {"TIME": TIME, "RANDOM": RANDOM}
