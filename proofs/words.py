"""Words and the VM's arithmetic rules as z3 terms (spec 1.5.1, 6.3, 6.5).

Pitfalls designed out here, once: in z3py ``/``, ``%``, ``>>`` and ``<`` are the *signed*
operations. This module never uses ``/``, ``%`` or ``>>``; it uses UDiv, URem and LShR and
wraps each division and shift in the VM's own rule for a zero divisor or an amount >= W
(SMT-LIB's bvudiv/bvsdiv by zero results are not the VM's). Signed comparisons are spelled
``slt`` so that every signed use is deliberate. Rotations are built from standard shifts:
z3's RotateLeft with a symbolic amount is a z3-only operator that SMT-LIB lacks.

Counters (offsets + lengths, pages, compute, heights) live in a wider *counter* sort so that
the exact, unbounded arithmetic of spec 1.5.3 never wraps: max(W + 2, 48) bits holds every
offset + length + page rounding (< 2^(W+1) + 2^12), every limit (< 2^40) and every sum of
charges the model forms (at most ~2^63 at W = 64). Narrower counters are faster to prove.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import z3

import spec
from proofs import versions
from spec import Spec as SpecTable

WIDTHS = (8, 16, 32, 64)
COUNTER_FLOOR, COUNTER_MARGIN = 48, 2


@dataclass(frozen=True)
class Numbers:
    """The numbers of one spec version the models read (chapters 1.5, 5 and 6): each is the
    version's table value, read once here so that no model writes one twice."""

    word_bits: int
    stack_depth: int
    return_stack_depth: int
    call_depth: int
    code_size: int
    data_size: int
    call_data_size: int
    machine: dict
    maximum: dict
    minimum: dict
    page_size: int
    page_cost: int
    copy_word_size: int
    copy_word_cost: int
    hash_block_size: int
    hash_block_cost: int
    digest_size: int
    new_slot_cost: int
    read_units: int
    write_units: int
    new_slot_units: int
    seed_size: int
    counter_size: int
    fee: dict
    transient_slots: int | None = None          # from 1.1 (spec 2.3.3): else None
    transient_new_slot_cost: int | None = None  # from 1.1 (spec 5.6.8)

    def transient(self) -> tuple[int, int]:
        """(machine.transient_slots, transient.new_slot_cost) of a version with transient
        storage (1.1 on); ValueError under one without."""
        if self.transient_slots is None or self.transient_new_slot_cost is None:
            raise ValueError("this spec version has no transient storage")
        return self.transient_slots, self.transient_new_slot_cost


@functools.cache
def numbers(version: str) -> Numbers:
    table = spec.load(version)
    machine, schedule = table.limits["machine"], table.schedule
    return Numbers(
        word_bits=machine["word_bits"], stack_depth=machine["stack_depth"],
        return_stack_depth=machine["return_stack_depth"], call_depth=machine["call_depth"],
        code_size=machine["code_size"], data_size=machine["data_size"],
        call_data_size=machine["call_data_size"], machine=dict(machine),
        maximum=dict(table.limits["maximum"]), minimum=dict(table.limits["minimum"]),
        page_size=schedule["memory"]["page_size"], page_cost=schedule["memory"]["page_cost"],
        copy_word_size=schedule["copy"]["word_size"], copy_word_cost=schedule["copy"]["word_cost"],
        hash_block_size=schedule["hash"]["block_size"],
        hash_block_cost=schedule["hash"]["block_cost"], digest_size=schedule["hash"]["digest_size"],
        new_slot_cost=schedule["storage"]["new_slot_cost"],
        read_units=schedule["storage"]["read_units"], write_units=schedule["storage"]["write_units"],
        new_slot_units=schedule["storage"]["new_slot_units"],
        seed_size=schedule["randomness"]["seed_size"],
        counter_size=schedule["randomness"]["counter_size"], fee=dict(schedule["fee"]),
        transient_slots=machine.get("transient_slots"),
        transient_new_slot_cost=schedule.get("transient", {}).get("new_slot_cost"))


@dataclass(frozen=True)
class Sorts:
    """Sorts and constants of W-bit words and counters, and the VM's word arithmetic: what
    does not depend on a spec version (a ``Width`` adds the version)."""

    bits: int

    @property
    def counter_bits(self) -> int:
        return max(self.bits + COUNTER_MARGIN, COUNTER_FLOOR)

    @property
    def size(self) -> int:
        return self.bits // 8

    @property
    def mask(self) -> int:
        return (1 << self.bits) - 1

    @property
    def min_signed(self) -> int:
        return 1 << (self.bits - 1)

    # --- constructors -----------------------------------------------------------------
    def word(self, name: str) -> z3.BitVecRef:
        return z3.BitVec(name, self.bits)

    def wval(self, value: int) -> z3.BitVecRef:
        return z3.BitVecVal(value & self.mask, self.bits)

    def counter(self, name: str) -> z3.BitVecRef:
        return z3.BitVec(name, self.counter_bits)

    def cval(self, value: int) -> z3.BitVecRef:
        if value < 0 or value >= 1 << self.counter_bits:
            raise ValueError(f"counter value {value} out of range")
        return z3.BitVecVal(value, self.counter_bits)

    def widen(self, w: z3.BitVecRef) -> z3.BitVecRef:
        """A word (or any narrower bit-vector) read unsigned as a counter."""
        return z3.ZeroExt(self.counter_bits - w.size(), w)

    def narrow(self, c: z3.BitVecRef) -> z3.BitVecRef:
        """A counter reduced modulo 2^W (spec: 'pushes ... mod 2^W')."""
        return z3.Extract(self.bits - 1, 0, c)

    # --- VM arithmetic (spec 6.3) -----------------------------------------------------
    def divu(self, a, b):
        return z3.If(b == 0, self.wval(self.mask), z3.UDiv(a, b))

    def remu(self, a, b):
        return z3.If(b == 0, a, z3.URem(a, b))

    def abs_unsigned(self, a):
        """|sa| as an unsigned word; |MIN| = 2^(W-1) is representable unsigned."""
        return z3.If(slt(a, 0), -a, a)

    def divs(self, a, b):
        """Quotient rounded toward zero, from unsigned division of magnitudes (not bvsdiv,
        whose zero-divisor result depends on the dividend's sign)."""
        q = z3.UDiv(self.abs_unsigned(a), self.abs_unsigned(b))
        negative = z3.Xor(slt(a, 0), slt(b, 0))
        return z3.If(b == 0, self.wval(-1), z3.If(negative, -q, q))

    def rems(self, a, b):
        r = z3.URem(self.abs_unsigned(a), self.abs_unsigned(b))
        return z3.If(b == 0, a, z3.If(slt(a, 0), -r, r))

    # --- shifts and rotates (spec 6.5) -------------------------------------------------
    def shl(self, a, s):
        return z3.If(z3.UGE(s, self.bits), self.wval(0), a << s)

    def shru(self, a, s):
        return z3.If(z3.UGE(s, self.bits), self.wval(0), z3.LShR(a, s))

    def shrs(self, a, s):
        # Arithmetic shift by min(s, W-1): copies of the sign bit fill every position.
        amount = z3.If(z3.UGE(s, self.bits), self.wval(self.bits - 1), s)
        return ashr(a, amount)

    def rotate_amount(self, s):
        return z3.URem(s, self.wval(self.bits))

    def rotl(self, a, s):
        r = self.rotate_amount(s)
        # For r = 0 the right shift is by W, which SMT-LIB defines as 0: the result is a.
        return (a << r) | z3.LShR(a, self.wval(self.bits) - r)

    def rotr(self, a, s):
        r = self.rotate_amount(s)
        return z3.LShR(a, r) | (a << (self.wval(self.bits) - r))

    # --- comparisons (spec 6.4) ---------------------------------------------------------
    def flag(self, condition):
        return z3.If(condition, self.wval(1), self.wval(0))


@dataclass(frozen=True)
class Width(Sorts):
    """Sorts and constants of a W-bit machine of one spec version (``version``: the models
    read that version's table and numbers through ``spec`` and ``num``)."""

    version: str

    @property
    def spec(self) -> SpecTable:
        return spec.load(self.version)

    @property
    def num(self) -> Numbers:
        return numbers(self.version)


def slt(a, b):
    """Signed less-than (z3py's ``<`` on bit-vectors is bvslt)."""
    return a < b


def sgt(a, b):
    return a > b


def ashr(a, s):
    """Arithmetic shift right (z3py's ``>>`` on bit-vectors is bvashr)."""
    return a >> s


def width(bits: int | None, version: str) -> Width:
    """The W-bit machine of spec ``version`` (the version's word width for ``bits`` None).
    Raises versions.UnmodelledVersion (a ValueError, one line) for a version without models."""
    versions.check(version)
    bits = numbers(version).word_bits if bits is None else bits
    if bits not in WIDTHS:
        raise ValueError(f"unsupported word width {bits}; use one of {WIDTHS}")
    return Width(bits, version)


def ceil_div(n, d: int):
    """⌈n / d⌉ for a bit-vector n and a positive constant d. A power of two divides by a
    shift: bit-blasting a divider at counter width is what makes solvers slow."""
    if d & (d - 1) == 0:
        return z3.LShR(n + (d - 1), d.bit_length() - 1)
    return z3.UDiv(n + (d - 1), d)


def little_endian_word(byte_at, base, count: int):
    """The word whose byte k (least significant first) is byte_at(base + k)."""
    parts = [byte_at(base + k) for k in range(count)]
    return parts[0] if count == 1 else z3.Concat(*reversed(parts))


def byte_of(value, k: int):
    return z3.Extract(8 * k + 7, 8 * k, value)
