"""The category laws of the instructions spec 1.1 adds (spec/versions/1.1/diff.toml N1, N2,
T1), declared for every version that has them (none under 1.0).

- MULHU, MULHS (6.3): with MUL's low word they are the whole 2W-bit product, unsigned and
  signed (every width); MULHS is MULHU corrected by the operands' signs (stated without a
  2W-bit product; at 8 bits, which no solver closes wider within budget); the spec's edge
  words.
- CLZ, CTZ, POPCNT (6.5): each characterised by what the spec's text says rather than by the
  model's decision over the bits: CLZ's count c puts the highest one bit at W - 1 - c
  (a >> (W - 1 - c) is exactly 1), CTZ's puts the lowest one bit at c with none below it,
  POPCNT counts by the recurrence popcnt(a) = popcnt(a >> 1) + (a & 1), popcnt(0) = 0 (which
  determines it, a >> 1 < a for a != 0); and the counts of 0 are W, W and 0.
- TLOAD, TSTORE (6.13): a stored value is read back, no other transient slot and no storage
  slot changes, the slots alive change by one when a slot becomes non-zero or zero, and
  TLOAD pushes the executing contract's slot at its key.

Word laws at 8, 16, 32 and 64 bits (but the sign correction); the transient law at 64
bits. Every row's claims get the suite's vacuity checks (proofs/vacuity.py).
"""

from __future__ import annotations

import z3

from proofs.registry import Theorem, declare_versions, state_law_theorem, word_law_theorem, words
from proofs.words import slt, width


def _mulh_product(bits, op):
    a, b = words(bits, "a b")
    wide_u = z3.ZeroExt(bits, a) * z3.ZeroExt(bits, b)
    wide_s = z3.SignExt(bits, a) * z3.SignExt(bits, b)
    return [z3.Concat(op("MULHU", a, b), op("MUL", a, b)) == wide_u,
            z3.Concat(op("MULHS", a, b), op("MUL", a, b)) == wide_s]


def _mulh_signs(bits, op):
    """MULHS(a, b) = MULHU(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0) (mod 2^W): the signed
    operand a reads a - 2^W when negative, which takes b (and a) from the high word."""
    a, b = words(bits, "a b")
    zero = z3.BitVecVal(0, bits)
    return [op("MULHS", a, b) == op("MULHU", a, b) - z3.If(slt(a, 0), b, zero)
            - z3.If(slt(b, 0), a, zero)]


def _mulh_edges(bits, op):
    w = op.w
    a = z3.BitVec("a", bits)
    mx, mn, m1 = w.wval(w.mask), w.wval(w.min_signed), w.wval(-1)
    return [op("MULHU", a, 0) == 0, op("MULHS", a, 0) == 0, op("MULHU", a, 1) == 0,
            op("MULHS", a, 1) == z3.If(slt(a, 0), m1, w.wval(0)),
            op("MULHU", mx, mx) == w.wval(w.mask - 1), op("MULHS", m1, m1) == 0,
            op("MULHS", mn, mn) == w.wval(1 << (bits - 2)), op("MULHU", mn, 2) == 1,
            op("MULHS", mn, 2) == m1]


def _clz(bits, op):
    a = z3.BitVec("a", bits)
    c = op("CLZ", a)
    return [op("CLZ", 0) == bits,
            z3.Implies(a != 0, z3.LShR(a, z3.BitVecVal(bits - 1, bits) - c) == 1)]


def _ctz(bits, op):
    a = z3.BitVec("a", bits)
    c = op("CTZ", a)
    return [op("CTZ", 0) == bits,
            z3.Implies(a != 0, z3.LShR(a, c) & 1 == 1),
            z3.Implies(a != 0, a << (z3.BitVecVal(bits, bits) - c) == 0)]


def _popcnt(bits, op):
    a = z3.BitVec("a", bits)
    return [op("POPCNT", 0) == 0,
            op("POPCNT", a) == op("POPCNT", z3.LShR(a, 1)) + (a & 1),
            op("POPCNT", a) + op("POPCNT", ~a) == bits]


def _transient(w, pre, run):
    key, val, other = pre.stack[1], pre.stack[0], w.word("other_key")
    one, none = w.cval(1), w.cval(0)
    claims = [z3.Implies(c.cond, c.state.stack[0] == pre.transient[pre.stack[0]])
              for c in run(pre, "TLOAD")]
    for b in run(pre, "TSTORE"):
        t = b.state
        alive = (pre.transient_alive + z3.If(val != 0, one, none)
                 - z3.If(pre.transient[key] != 0, one, none))
        claims += [z3.Implies(z3.And(b.cond, other != key),
                              t.transient[other] == pre.transient[other]),
                   z3.Implies(b.cond, z3.And(t.storage == pre.storage,
                                             t.transient_alive == alive))]
        for c in run(t.push(key), "TLOAD"):
            claims.append(z3.Implies(z3.And(b.cond, c.cond), c.state.stack[0] == val))
    return claims


WORD_WIDTHS = (8, 16, 32, 64)
PROFILE_NOTE = "z3 first, then cvc5's integer blasting (bit-blasting alone does not close it)"


def theorems(version: str) -> list[Theorem]:
    """The laws of 1.1's new instructions that spec ``version`` has."""
    table = width(None, version).spec.by_mnemonic

    def word_law(*args) -> Theorem:
        return word_law_theorem(*args, version=version)
    out = []
    if "MULHU" in table:
        out += [word_law("mulh_high_words_of_product", "MULHU", WORD_WIDTHS, _mulh_product,
                         "z3 proves it; the integer-blasting re-check is left unknown within budget",
                         "portfolio"),
                word_law("mulhs_is_mulhu_sign_corrected", "MULHS", (8,), _mulh_signs,
                         "at 8 bits only: neither bit-blasting nor integer blasting closes it "
                         "wider within budget (mulh_high_words_of_product pins MULHS at every "
                         "width)"),
                word_law("mulh_edge_cases", "MULHS", WORD_WIDTHS, _mulh_edges)]
    if "CLZ" in table:
        out += [word_law("clz_highest_one_bit", "CLZ", WORD_WIDTHS, _clz),
                word_law("ctz_lowest_one_bit", "CTZ", WORD_WIDTHS, _ctz),
                word_law("popcnt_recurrence", "POPCNT", WORD_WIDTHS, _popcnt, PROFILE_NOTE,
                         "portfolio")]
    if "TSTORE" in table:
        out.append(state_law_theorem("tstore_then_tload_and_frame", "TSTORE", (64,),
                                     _transient, version=version))
    return out


declare_versions(theorems)
