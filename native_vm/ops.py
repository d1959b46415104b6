"""The operations the native code computes, as llvmlite IR (spec sections 6.3 to 6.5; MULHU,
MULHS, CLZ, CTZ and POPCNT from version 1.1).

Every function takes the IR builder and W-bit integer values (W the word width: i8, i16, i32
or i64) and returns a W-bit value. LLVM's integer operations wrap modulo 2^W, which is the
spec's arithmetic; what LLVM leaves undefined is excluded before it can happen: a divisor of
zero, and MIN / -1 in signed division, are replaced by 1 before dividing and the spec's result
selected; shift amounts are reduced below W before shifting and the out-of-range result
selected; rotates use the funnel-shift intrinsics, whose amount is taken modulo W, as the spec's.
The high products multiply at 2W bits (where nothing wraps) and keep the top W; the bit counts
are LLVM's ctlz, cttz (told a zero operand is defined: the result is then W) and ctpop.
"""

from __future__ import annotations

from llvmlite import ir


def _bool(b: ir.IRBuilder, bit, ty: ir.IntType):
    return b.zext(bit, ty)


def _safe_divisor(b: ir.IRBuilder, a, d, signed: bool):
    """(divisor to divide by, d == 0): 1 where d is 0 or where a / d overflows (MIN / -1)."""
    ty = d.type
    zero, one = ir.Constant(ty, 0), ir.Constant(ty, 1)
    is_zero = b.icmp_unsigned("==", d, zero)
    bad = is_zero
    if signed:
        minimum = ir.Constant(ty, 1 << (ty.width - 1))
        overflow = b.and_(b.icmp_unsigned("==", a, minimum),
                          b.icmp_unsigned("==", d, ir.Constant(ty, (1 << ty.width) - 1)))
        bad = b.or_(is_zero, overflow)
    return b.select(bad, one, d), is_zero


def divu(b, a, d):
    safe, zero = _safe_divisor(b, a, d, False)
    return b.select(zero, ir.Constant(a.type, (1 << a.type.width) - 1), b.udiv(a, safe))


def remu(b, a, d):
    safe, zero = _safe_divisor(b, a, d, False)
    return b.select(zero, a, b.urem(a, safe))


def divs(b, a, d):
    # MIN / -1 divides by 1 instead: MIN, the spec's result; a / 0 is -1 (all ones).
    safe, zero = _safe_divisor(b, a, d, True)
    return b.select(zero, ir.Constant(a.type, (1 << a.type.width) - 1), b.sdiv(a, safe))


def rems(b, a, d):
    # MIN % -1 takes the remainder by 1 instead: 0, the spec's result; a % 0 is a. LLVM's
    # srem has the sign of the dividend, as the spec's remainder.
    safe, zero = _safe_divisor(b, a, d, True)
    return b.select(zero, a, b.srem(a, safe))


def _shift_amount(b, s):
    bits = s.type.width
    in_range = b.icmp_unsigned("<", s, ir.Constant(s.type, bits))
    return b.and_(s, ir.Constant(s.type, bits - 1)), in_range


def shl(b, a, s):
    amount, in_range = _shift_amount(b, s)
    return b.select(in_range, b.shl(a, amount), ir.Constant(a.type, 0))


def shru(b, a, s):
    amount, in_range = _shift_amount(b, s)
    return b.select(in_range, b.lshr(a, amount), ir.Constant(a.type, 0))


def shrs(b, a, s):
    top = ir.Constant(s.type, s.type.width - 1)
    amount = b.select(b.icmp_unsigned("<", s, top), s, top)
    return b.ashr(a, amount)


def _funnel(b, name: str, a, s):
    ty = a.type
    return b.call(_intrinsic(b, name, ty, [ty, ty, ty]), [a, a, s])


def _high_product(b, x, y, signed: bool):
    """The high W bits of the 2W-bit product (MULHU, MULHS): both operands extended to 2W bits
    (with zeros, or with the sign), multiplied (no 2W-bit product wraps), shifted down by W."""
    ty = x.type
    wide = ir.IntType(2 * ty.width)
    extend = b.sext if signed else b.zext
    product = b.mul(extend(x, wide), extend(y, wide))
    return b.trunc(b.lshr(product, ir.Constant(wide, ty.width)), ty)


def _intrinsic(b, name: str, ty: ir.IntType, types: list):
    module = b.module
    full = f"llvm.{name}.i{ty.width}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ty, types), name=full)
    return fn


def _count_zeros(name: str):
    # ctlz/cttz with is_zero_poison false: W for a zero operand, the spec's result.
    def op(b, x):
        fn = _intrinsic(b, name, x.type, [x.type, ir.IntType(1)])
        return b.call(fn, [x, ir.Constant(ir.IntType(1), 0)])
    return op


def popcnt(b, x):
    return b.call(_intrinsic(b, "ctpop", x.type, [x.type]), [x])


def rotl(b, a, s):
    return _funnel(b, "fshl", a, s)


def rotr(b, a, s):
    return _funnel(b, "fshr", a, s)


def _compare(predicate: str, signed: bool):
    def op(b, x, y):
        bit = b.icmp_signed(predicate, x, y) if signed else b.icmp_unsigned(predicate, x, y)
        return _bool(b, bit, x.type)
    return op


BINARY = {
    "ADD": lambda b, x, y: b.add(x, y),
    "SUB": lambda b, x, y: b.sub(x, y),
    "MUL": lambda b, x, y: b.mul(x, y),
    "DIVU": divu, "DIVS": divs, "REMU": remu, "REMS": rems,
    "EQ": _compare("==", False), "LTU": _compare("<", False), "GTU": _compare(">", False),
    "LTS": _compare("<", True), "GTS": _compare(">", True),
    "AND": lambda b, x, y: b.and_(x, y),
    "OR": lambda b, x, y: b.or_(x, y),
    "XOR": lambda b, x, y: b.xor(x, y),
    "SHL": shl, "SHRU": shru, "SHRS": shrs, "ROTL": rotl, "ROTR": rotr,
    "MULHU": lambda b, x, y: _high_product(b, x, y, False),
    "MULHS": lambda b, x, y: _high_product(b, x, y, True),
}

UNARY = {
    "ISZERO": lambda b, x: _bool(b, b.icmp_unsigned("==", x, ir.Constant(x.type, 0)), x.type),
    "NOT": lambda b, x: b.xor(x, ir.Constant(x.type, (1 << x.type.width) - 1)),
    "CLZ": _count_zeros("ctlz"), "CTZ": _count_zeros("cttz"), "POPCNT": popcnt,
}


def resize(b: ir.IRBuilder, value, ty: ir.IntType):
    """value zero-extended or truncated to ty (the low bits: a mask)."""
    width = value.type.width
    if width == ty.width:
        return value
    return b.zext(value, ty) if width < ty.width else b.trunc(value, ty)
