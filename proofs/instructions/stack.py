"""Stack manipulation (spec 6.2): PUSHn, POP, DUPn, SWAPn."""

from __future__ import annotations

import z3

from proofs.accounting import running
from proofs.words import Width

FAMILY = 16


def models(w: Width) -> dict:
    table = {"POP": lambda s, imm: [running(s.pop(1)[1])]}
    for ins in w.spec.instructions:
        if ins.type == "stack" and ins.mnemonic.startswith("PUSH"):
            table[ins.mnemonic] = _push(w)
    for n in range(1, FAMILY + 1):
        table[f"DUP{n}"] = _dup(n)
        table[f"SWAP{n}"] = _swap(n)
    return table


def _push(w: Width):
    def PUSH(s, imm):
        # Zero-extended, never sign-extended. Only at reduced widths can an immediate be
        # wider than the word; it is then reduced modulo 2^W, as every pushed value is.
        bits = imm.size()
        value = z3.ZeroExt(w.bits - bits, imm) if bits <= w.bits else z3.Extract(
            w.bits - 1, 0, imm)
        return [running(s.push(value))]
    return PUSH


def _dup(n: int):
    def DUP(s, imm):
        return [running(s.push(s.stack[n - 1]))]
    return DUP


def _swap(n: int):
    def SWAP(s, imm):
        items = list(s.stack)
        items[0], items[n] = items[n], items[0]
        return [running(s.replace(stack=tuple(items)))]
    return SWAP
