"""Per-category laws the spec states (chapter 6), each with the widths it is proved at.

Word laws use the models' pushed values directly (``value``); state laws run whole steps
(execute.step) and quantify over their continuing branches. Every law is proved at 64 bits:
the multiplication and division identities, which bit-blasting does not close there, use
the budget profiles of proofs/budgets.toml that name cvc5's integer blasting, and the signed
division law is reduced to the unsigned one on magnitudes (``_divs``). The laws are declared
to the registry (proofs/registry.py) at import, as a user's file of theorems is.
"""

from __future__ import annotations

import dataclasses
import hashlib

import z3

from proofs.instructions.hash import sha256_symbol
from proofs.registry import (
    Theorem, declare_versions, state_law_theorem, value, word_law_theorem, words,
)
from proofs.words import byte_of, ceil_div, sgt, slt


def _arith(bits, op):
    a, b, c = words(bits, "a b c")
    return [op("ADD", a, b) == op("ADD", b, a),
            op("ADD", op("ADD", a, b), c) == op("ADD", a, op("ADD", b, c)),
            op("ADD", a, 0) == a, op("ADD", a, op("SUB", 0, a)) == 0,
            op("SUB", a, b) == op("ADD", a, op("ADD", op("NOT", b), 1))]


def _mul(bits, op):
    a, b, c = words(bits, "a b c")
    return [op("MUL", a, b) == op("MUL", b, a), op("MUL", a, 1) == a, op("MUL", a, 0) == 0,
            op("MUL", op("MUL", a, b), c) == op("MUL", a, op("MUL", b, c))]


def _mul_distributes(bits, op):
    a, b, c = words(bits, "a b c")
    return op("MUL", a, op("ADD", b, c)) == op("ADD", op("MUL", a, b), op("MUL", a, c))


def _mul_low_word(bits, op):
    a, b = words(bits, "a b")
    wide = z3.ZeroExt(bits, a) * z3.ZeroExt(bits, b)
    return op("MUL", a, b) == z3.Extract(bits - 1, 0, wide)


def _divu(bits, op):
    a, b = words(bits, "a b")
    q, r = op("DIVU", a, b), op("REMU", a, b)
    zq, zr, za, zb = (z3.ZeroExt(bits, x) for x in (q, r, a, b))
    return [a == q * b + r, z3.Implies(b != 0, z3.ULT(r, b)),
            z3.Implies(b != 0, z3.And(z3.ULE(zq * zb, za), z3.ULT(za, zq * zb + zb)))]


def _divs(bits, op):
    """DIVS/REMS: a == q*b + r, |r| < |b|, r has a's sign, and q is truncated toward zero
    (|q| = floor(|a| / |b|), q's sign that of a/b), proved by reduction to the unsigned
    operations on magnitudes, in claims that close at 64 bits:

    1. the model's DIVS and REMS equal the unsigned DIVU and REMU of the magnitudes, with
       the signs fixed (q negated when the signs differ, r when a is negative);
    2. the unsigned identity, remainder bound and floor bounds (``_divu``, every a, b);
    3. the ring law (-x)*y == -(x*y) == x*(-y) and (-x)*(-y) == x*y;
    4. for every a, b and every Q, R satisfying 2 for |a|, |b| (with 3's instances), the
       signed results of 1 built from Q, R satisfy the signed identity (one claim per sign
       case), the remainder bound and sign, and |q| == Q with q's sign that of a/b.

    Instantiating 4 with Q = DIVU(|a|, |b|), R = REMU(|a|, |b|) (true by 2 and 3) and
    rewriting with 1 gives the signed law for the model's own DIVS and REMS."""
    w = op.w
    a, b, q_, r_, x, y = words(bits, "a b Q R x y")
    mag = w.abs_unsigned
    big, bigb = mag(a), mag(b)
    negative = z3.Xor(slt(a, 0), slt(b, 0))
    fix_q = lambda q: z3.If(b == 0, w.wval(-1), z3.If(negative, -q, q))  # noqa: E731
    fix_r = lambda r: z3.If(b == 0, a, z3.If(slt(a, 0), -r, r))  # noqa: E731
    claims = [op("DIVS", a, b) == fix_q(op("DIVU", big, bigb)),
              op("REMS", a, b) == fix_r(op("REMU", big, bigb))]
    claims += _divu(bits, op)
    claims += [(-x) * y == -(x * y), x * (-y) == -(x * y), (-x) * (-y) == x * y]
    za, zb, zq = (z3.ZeroExt(bits, v) for v in (big, bigb, q_))
    # What 2 and 3 give for |a|, |b|, each claim premised on only what it needs.
    ring = z3.And(big == q_ * bigb + r_, (-q_) * bigb == -(q_ * bigb),
                  q_ * (-bigb) == -(q_ * bigb), (-q_) * (-bigb) == q_ * bigb)
    below = z3.ULT(r_, bigb)
    floor = z3.And(z3.ULE(zq * zb, za), z3.ULT(za, zq * zb + zb))
    q, r = fix_q(q_), fix_r(r_)
    sr, sb = z3.SignExt(bits, r), z3.SignExt(bits, b)
    smag = lambda v: z3.If(slt(v, 0), -v, v)  # noqa: E731
    for sign_a in (False, True):
        for sign_b in (False, True):
            if (sign_a, sign_b) == (False, True):
                claims += _divs_nonnegative_by_negative(a, b, q_, r_, big, bigb, q, r)
                continue
            case = z3.And(b != 0, ring, slt(a, 0) == sign_a, slt(b, 0) == sign_b)
            claims.append(z3.Implies(case, a == q * b + r))
    not_min = z3.Not(z3.And(a == 1 << (bits - 1), b == -1))
    claims += [z3.Implies(z3.And(b != 0, below), slt(smag(sr), smag(sb))),
               z3.Implies(z3.And(b != 0, below), z3.Or(r == 0, slt(r, 0) == slt(a, 0))),
               z3.Implies(z3.And(b != 0, floor, not_min), mag(q) == q_),
               z3.Implies(z3.And(b != 0, floor, not_min), z3.Or(q == 0, slt(q, 0) == negative))]
    return claims


def _divs_nonnegative_by_negative(a, b, q_, r_, big, bigb, q, r):
    """The sign case a >= 0, b < 0 of _divs's identity claim, split so that integer blasting
    closes it (as one claim it does not, and only z3 did): (i) in this case |a| = a,
    |b| = -b, q = -Q and r = R (no multiplication); (ii) from a == Q*(-b) + R (the unsigned
    identity for |a|, |b|, rewritten by i) and the ring-law instances (-Q)*b == -(Q*b) and
    Q*(-b) == -(Q*b) (claim 3 at x = Q, y = b), a == (-Q)*b + R, which is a == q*b + r by i."""
    case = z3.And(b != 0, z3.Not(slt(a, 0)), slt(b, 0))
    return [z3.Implies(case, z3.And(big == a, bigb == -b, q == -q_, r == r_)),
            z3.Implies(z3.And(a == q_ * (-b) + r_, (-q_) * b == -(q_ * b),
                              q_ * (-b) == -(q_ * b)), a == (-q_) * b + r_)]


def _division_edges(bits, op):
    a = z3.BitVec("a", bits)
    w = op.w
    mn, m1, mask = w.wval(w.min_signed), w.wval(-1), w.wval(w.mask)
    return [op("DIVU", a, 0) == mask, op("REMU", a, 0) == a, op("DIVS", a, 0) == m1,
            op("REMS", a, 0) == a, op("DIVS", mn, m1) == mn, op("REMS", mn, m1) == 0,
            op("DIVS", w.wval(-7), 2) == w.wval(-3), op("REMS", w.wval(-7), 2) == w.wval(-1),
            op("REMS", 7, w.wval(-2)) == 1, op("DIVU", 7, 0) == mask, op("REMU", 7, 0) == 7]


def _compare(bits, op):
    a, b, c = words(bits, "a b c")
    w = op.w
    flip = w.wval(w.min_signed)
    t = lambda x: x == 1  # noqa: E731
    results = [op(m, a, b) for m in ("EQ", "LTU", "LTS", "GTU", "GTS")] + [op("ISZERO", a)]
    return [z3.And([z3.Or(r == 0, r == 1) for r in results]),
            op("LTU", a, b) + op("EQ", a, b) + op("GTU", a, b) == 1,
            op("LTS", a, b) + op("EQ", a, b) + op("GTS", a, b) == 1,
            op("GTU", a, b) == op("LTU", b, a), op("GTS", a, b) == op("LTS", b, a),
            op("LTS", a, b) == op("LTU", a ^ flip, b ^ flip),
            t(op("LTU", a, b)) == z3.ULT(a, b), t(op("GTS", a, b)) == sgt(a, b),
            op("ISZERO", a) == op("EQ", a, 0),
            z3.Implies(z3.And(t(op("LTU", a, b)), t(op("LTU", b, c))), t(op("LTU", a, c))),
            z3.Implies(z3.And(t(op("LTS", a, b)), t(op("LTS", b, c))), t(op("LTS", a, c))),
            op("LTS", w.wval(-1), 0) == 1, op("LTU", w.wval(-1), 0) == 0]


def _boolean(bits, op):
    a, b, c = words(bits, "a b c")
    return [op("NOT", op("NOT", a)) == a, op("XOR", a, a) == 0,
            op("NOT", op("AND", a, b)) == op("OR", op("NOT", a), op("NOT", b)),
            op("AND", a, op("OR", a, b)) == a, op("OR", a, b) == op("OR", b, a),
            op("AND", op("AND", a, b), c) == op("AND", a, op("AND", b, c)),
            op("XOR", a, b) == op("AND", op("OR", a, b), op("NOT", op("AND", a, b)))]


def _per_amount(bits, op, mnemonic, formula, beyond):
    """One claim per shift amount s < W (the spec's formula with a constant 2^s), and one
    for every s >= W at once."""
    a, s = words(bits, "a s")
    claims = [op(mnemonic, a, k) == formula(a, k) for k in range(bits)]
    claims.append(z3.Implies(z3.UGE(s, bits), op(mnemonic, a, s) == beyond(a)))
    return claims


def _shl(bits, op):
    return _per_amount(bits, op, "SHL", lambda a, k: a * (1 << k), lambda a: 0)


def _shru(bits, op):
    return _per_amount(bits, op, "SHRU", lambda a, k: z3.UDiv(a, 1 << k), lambda a: 0)


def _shrs(bits, op):
    w = op.w

    def floor_division(a, k):
        # q = ⌊sa / 2^k⌋ characterised in 2W-bit signed arithmetic: q·2^k <= sa < (q+1)·2^k.
        q = z3.SignExt(bits, op("SHRS", a, k))
        sa, p = z3.SignExt(bits, a), z3.BitVecVal(1 << k, 2 * bits)
        return z3.And(q * p <= sa, sa < (q + 1) * p)

    a, s = words(bits, "a s")
    claims = [floor_division(a, k) for k in range(bits)]
    claims.append(z3.Implies(z3.UGE(s, bits), op("SHRS", a, s) == z3.If(
        slt(a, 0), w.wval(-1), w.wval(0))))
    return claims


def _rotate(bits, op):
    w = op.w
    a, s = words(bits, "a s")
    r = z3.URem(s, bits)
    claims = []
    for k in range(bits):
        left = a * (1 << k) + (z3.UDiv(a, 1 << (bits - k)) if k else 0)
        right = z3.UDiv(a, 1 << k) + (a * (1 << (bits - k)) if k else 0)
        claims.append(z3.Implies(r == k, z3.And(op("ROTL", a, s) == left,
                                                op("ROTR", a, s) == right)))
    claims += [op("ROTR", op("ROTL", a, s), s) == a, op("ROTL", a, s) == op("ROTL", a, r)]
    if bits == 64:
        claims += [op("ROTL", 1, 65) == 2, op("ROTR", 1, 1) == w.wval(1 << 63)]
    return claims


def _mstore_mload(w, pre, run):
    off, val = pre.stack[1], pre.stack[0]
    claims = []
    # One claim per MSTORE branch, over every MLOAD branch after it (some pairs cannot
    # happen: the MLOAD never grows the memory the MSTORE covered; vacuity.py).
    for b in run(pre, "MSTORE"):
        claims.append(z3.Implies(b.cond, z3.And([
            z3.Implies(c.cond, c.state.stack[0] == val)
            for c in run(b.state.push(off), "MLOAD")])))
    return claims


def _mstore_frame(w, pre, run, mnemonic="MSTORE", count=None):
    count = count or w.size
    off, val, i = w.widen(pre.stack[1]), pre.stack[0], w.counter("i")
    claims = []
    for b in run(pre, mnemonic):
        m = b.state.memory
        inside = z3.And(z3.ULE(off, i), z3.ULT(i, off + count))
        claims.append(z3.Implies(z3.And(b.cond, z3.Not(inside)), m.read(i) == pre.memory.read(i)))
        claims += [z3.Implies(b.cond, m.read(off + k) == byte_of(val, k)) for k in range(count)]
    return claims


def _mstore8(w, pre, run):
    off, val = pre.stack[1], pre.stack[0]
    claims = _mstore_frame(w, pre, run, "MSTORE8", 1)
    for b in run(pre, "MSTORE8"):
        claims.append(z3.Implies(b.cond, z3.And([
            z3.Implies(c.cond, c.state.stack[0] == val & 0xFF)
            for c in run(b.state.push(off), "MLOAD8")])))
    return claims


def _mload(w, pre, run):
    off = w.widen(pre.stack[0])
    return [z3.Implies(b.cond, byte_of(b.state.stack[0], k) == pre.memory.read(off + k))
            for b in run(pre, "MLOAD") for k in range(w.size)]


def _mcopy(w, pre, run):
    length, src, dst = (w.widen(v) for v in pre.stack[:3])
    i, j = w.counter("i"), w.counter("j")
    claims = []
    for b in run(pre, "MCOPY"):
        m = b.state.memory
        inside = z3.And(z3.ULE(dst, i), z3.ULT(i, dst + length))
        if b.label != "empty range":    # no byte j < 0 to copy (vacuity.py)
            claims.append(z3.Implies(z3.And(b.cond, z3.ULT(j, length)),
                                     m.read(dst + j) == pre.memory.read(src + j)))
        claims.append(z3.Implies(z3.And(b.cond, z3.Not(inside)),
                                 m.read(i) == pre.memory.read(i)))
    return claims


def _sstore_sload(w, pre, run):
    key, val, other = pre.stack[1], pre.stack[0], w.word("other_key")
    claims = []
    for b in run(pre, "SSTORE"):
        t = b.state
        claims.append(z3.Implies(z3.And(b.cond, other != key),
                                 t.storage[other] == pre.storage[other]))
        for c in run(t.push(key), "SLOAD"):
            claims.append(z3.Implies(z3.And(b.cond, c.cond), c.state.stack[0] == val))
    return claims


def _jumpi(w, pre, run):
    imm = z3.BitVec("imm", 32)
    return [z3.Implies(b.cond, b.state.pc == z3.If(pre.stack[0] != 0, w.widen(imm),
                                                   pre.pc + w.cval(5)))
            for b in run(pre, "JUMPI", imm)]


def _callsub_retsub(w, pre, run):
    imm = z3.BitVec("imm", 32)
    claims = []
    size = w.spec.by_mnemonic["CALLSUB"].size
    for b in run(pre, "CALLSUB", imm):
        claims.append(z3.Implies(b.cond, b.state.pc == w.widen(imm)))
        for c in run(b.state, "RETSUB"):
            claims.append(z3.Implies(z3.And(b.cond, c.cond), z3.And(
                c.state.pc == pre.pc + w.cval(size), c.state.rheight == pre.rheight)))
    return claims


def _calldataload(w, pre, run):
    off, data = w.widen(pre.stack[0]), pre.env.call_data
    return [z3.Implies(b.cond, byte_of(b.state.stack[0], k) == z3.If(
        z3.ULT(off + k, data.length), data.read(off + k), z3.BitVecVal(0, 8)))
        for b in run(pre, "CALLDATALOAD") for k in range(w.size)]


def _computeleft(w, pre, run):
    cost = w.spec.by_mnemonic["COMPUTELEFT"].cost
    return [z3.Implies(b.cond, b.state.stack[0] == w.narrow(
        pre.compute_limit - pre.compute - w.cval(cost))) for b in run(pre, "COMPUTELEFT")]


def _log(w, pre, run, mnemonic="LOG2"):
    n = w.spec.by_mnemonic[mnemonic].inputs - 2
    off, j = w.widen(pre.stack[n + 1]), w.counter("j")
    claims = []
    for b in run(pre, mnemonic):
        event = b.state.events[-1]
        claims.append(z3.Implies(b.cond, z3.And(
            event.address == pre.env.address, event.data.length == w.widen(pre.stack[n]),
            *[event.topics[k] == pre.stack[n - 1 - k] for k in range(n)],
            z3.Implies(z3.ULT(j, event.data.length), event.data.read(j) == pre.memory.read(off + j)))))
    return claims


def _sha256(w, pre, run):
    length, src, dst = (w.widen(v) for v in pre.stack[:3])
    array, size = pre.memory.hash_key
    digest = sha256_symbol(w)(array, size, src, length)
    claims = []
    for b in run(pre, "SHA256"):
        claims += [z3.Implies(b.cond, b.state.memory.read(dst + k) == byte_of(digest, k))
                   for k in range(32)]
    return claims


# Concrete (seed, counter) instances of the random stream: seeds with distinct bytes and
# counters whose byte orders differ, up to the counters' bound 2^40 (machine.SMALL_BITS).
RANDOM_INSTANCES = ((bytes(32), 0), (bytes(range(32)), 1), (bytes(range(255, 223, -1)), 258),
                    (bytes([7] * 31 + [0x80]), (1 << 39) + 5))


def stream_word(seed: bytes, counter: int, bits: int, size: int) -> int:
    """Chapter 6.12 with hashlib: the first W/8 bytes, read little-endian, of
    SHA-256(seed || counter as ``size`` (schedule.toml counter_size) bytes little-endian)."""
    digest = hashlib.sha256(seed + counter.to_bytes(size, "little")).digest()
    return int.from_bytes(digest[:bits // 8], "little")


def _context(w, pre, run):
    """TIME pushes the block time. RANDOM advances the counter by 1, and on concrete seeds
    and counters (the model evaluated on them) pushes the stream word chapter 6.12 defines,
    computed here by hashlib (the seed word holds the seed's 32 bytes little-endian)."""
    claims = [z3.Implies(b.cond, b.state.stack[0] == pre.env.block_time)
              for b in run(pre, "TIME")]
    for b in run(pre, "RANDOM"):
        claims.append(z3.Implies(b.cond, b.state.random_counter == pre.random_counter + w.cval(1)))
    for seed, counter in RANDOM_INSTANCES:
        env = dataclasses.replace(pre.env, seed=z3.BitVecVal(int.from_bytes(seed, "little"), 256))
        at = pre.replace(env=env, random_counter=w.cval(counter))
        for b in run(at, "RANDOM"):
            claims.append(z3.Implies(b.cond, b.state.stack[0] == w.wval(
                stream_word(seed, counter, w.bits, w.num.counter_size))))
    return claims


def _call(w, pre, run):
    """ok is 0 or 1; a failed call leaves storage as it was; compute used stays within the
    callee's limit min(caller's limit, used after the call-data touch + compute) (5.2.1)."""
    length, offset, compute = (w.widen(v) for v in pre.stack[:3])
    after_base = pre.compute + w.cval(w.spec.by_mnemonic["CALL"].cost)
    page_cost = w.num.page_cost
    grown = after_base + (ceil_div(offset + length, w.num.page_size) - pre.memory.pages) * page_cost
    claims = []
    for b in run(pre, "CALL"):
        t = b.state
        start = grown if "memory grows" in b.label else after_base
        claims.append(z3.Implies(b.cond, z3.And(
            z3.Or(t.stack[0] == 0, t.stack[0] == 1), z3.ULE(t.compute, start + compute),
            z3.Implies(t.stack[0] == 0, t.storage == pre.storage))))
    return claims


def theorems(version: str) -> list[Theorem]:
    """The category laws of spec ``version``."""
    def word_law(*args) -> Theorem:
        return word_law_theorem(*args, version=version)

    def state_law(*args) -> Theorem:
        return state_law_theorem(*args, version=version)
    return [
        word_law("ring_laws_add_sub", "ADD", (64,), _arith),
        word_law("ring_laws_mul", "MUL", (64,), _mul),
        word_law("mul_distributes_over_add", "MUL", (8, 16, 32, 64), _mul_distributes),
        word_law("mul_is_low_word_of_product", "MUL", (8, 16, 32, 64), _mul_low_word,
                 "z3 proves it; re-checked by cvc5 with integer blasting"),
        word_law("divu_remu_identity_and_floor", "DIVU", (8, 16, 32, 64), _divu,
                 "proved by cvc5 with integer blasting (solve-bv-as-int=sum), re-checked with "
                 "solve-bv-as-int=bitwise; bit-blasting (z3, bitwuzla) does not close it"),
        word_law("divs_rems_identity_and_truncation", "DIVS", (8, 16, 32, 64), _divs,
                 "by reduction to DIVU/REMU on magnitudes (see _divs in proofs/laws.py)"),
        word_law("division_edge_cases", "DIVS", (8, 64), _division_edges),
        word_law("comparison_orders", "LTS", (8, 64), _compare),
        word_law("boolean_algebra", "XOR", (64,), _boolean),
        word_law("shl_every_amount", "SHL", (8, 64), _shl),
        word_law("shru_every_amount", "SHRU", (8, 64), _shru),
        word_law("shrs_every_amount", "SHRS", (8, 64), _shrs),
        word_law("rotate_every_amount", "ROTL", (8, 64), _rotate),
        state_law("mstore_then_mload_reads_value", "MSTORE", (64,), _mstore_mload),
        state_law("mstore_writes_only_its_bytes", "MSTORE", (64,), _mstore_frame),
        state_law("mstore8_then_mload8_low_byte", "MSTORE8", (64,), _mstore8),
        state_law("mload_is_little_endian", "MLOAD", (64,), _mload),
        state_law("mcopy_copies_through_buffer", "MCOPY", (64,), _mcopy),
        state_law("sstore_then_sload_and_frame", "SSTORE", (64,), _sstore_sload),
        state_law("jumpi_taken_iff_nonzero", "JUMPI", (64,), _jumpi),
        state_law("callsub_retsub_round_trip", "CALLSUB", (64,), _callsub_retsub),
        state_law("calldataload_zero_past_end", "CALLDATALOAD", (64,), _calldataload),
        state_law("computeleft_after_own_cost", "COMPUTELEFT", (64,), _computeleft),
        state_law("log_event_contents", "LOG2", (64,), _log),
        state_law("sha256_writes_digest", "SHA256", (64,), _sha256),
        state_law("time_and_random_stream", "RANDOM", (64,), _context),
        state_law("call_flag_limit_and_undo", "CALL", (64,), _call),
    ]


declare_versions(theorems)

__all__ = ["value", "words", "theorems"]
