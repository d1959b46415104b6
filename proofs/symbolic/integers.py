"""Integer arithmetic of properties, solved as bit-vectors of a width that cannot overflow.

Properties state sums of balances as integers (``c.int(x)`` is z3's BV2Int), which z3 solves
poorly mixed with bit-vectors (a token's conservation claim stays ``unknown`` at 200 million
work units). Every integer term of a property is built from words (BV2Int), numerals, +, -, *
and if-then-else, so its magnitude is bounded: ``as_bitvectors`` rewrites a formula into
two's-complement bit-vectors wide enough for every intermediate value (the widest bound plus
a sign bit), where +, -, * and the signed comparisons are exactly the integer ones. The
rewritten formula has the same variables and the same models: an equisatisfiable query that
bit-blasting decides. A formula with anything else of integer sort (a free integer, division)
is left as it is (``None``).
"""

from __future__ import annotations

import ctypes

import z3

MAX_BITS = 1024
_INT_OPS = {z3.Z3_OP_ADD, z3.Z3_OP_SUB, z3.Z3_OP_MUL, z3.Z3_OP_UMINUS, z3.Z3_OP_ANUM,
            z3.Z3_OP_BV2INT, z3.Z3_OP_ITE}
_COMPARE = {z3.Z3_OP_LE: lambda a, b: a <= b, z3.Z3_OP_LT: lambda a, b: a < b,
            z3.Z3_OP_GE: lambda a, b: a >= b, z3.Z3_OP_GT: lambda a, b: a > b}


class Unsupported(Exception):
    pass


def _bits(term, memo: dict) -> int:
    """A bound on the bits of |value| of an integer term."""
    key = term.get_id()
    if key in memo:
        return memo[key]
    if not z3.is_app(term) or term.decl().kind() not in _INT_OPS:
        raise Unsupported(str(term.decl()) if z3.is_app(term) else "a quantifier")
    kind = term.decl().kind()
    if kind == z3.Z3_OP_ANUM:
        out = max(1, abs(term.as_long()).bit_length())
    elif kind == z3.Z3_OP_BV2INT:
        out = term.arg(0).size()
    elif kind == z3.Z3_OP_ITE:
        out = max(_bits(term.arg(1), memo), _bits(term.arg(2), memo))
    elif kind == z3.Z3_OP_MUL:
        out = sum(_bits(a, memo) for a in term.children())
    elif kind == z3.Z3_OP_UMINUS:
        out = _bits(term.arg(0), memo)
    else:
        parts = [_bits(a, memo) for a in term.children()]
        out = max(parts) + max(1, (len(parts) - 1).bit_length())
    if out > MAX_BITS:
        raise Unsupported("too wide")
    memo[key] = out
    return out


def _has_int(term, memo: dict) -> bool:
    key = term.get_id()
    if key not in memo:
        if z3.is_quantifier(term):           # a lambda (memory read as an array)
            memo[key] = _has_int(term.body(), memo)
        else:
            memo[key] = z3.is_int(term) or (z3.is_app(term) and any(
                _has_int(c, memo) for c in term.children()))
    return memo[key]


def _width(formulas) -> int:
    memo: dict = {}
    widest = 1
    todo, seen = list(formulas), set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_int(t):
            widest = max(widest, _bits(t, memo))
        elif z3.is_app(t):
            todo.extend(t.children())
    return -(-(widest + 2) // 8) * 8


def as_bitvectors(formulas) -> list | None:
    """The formulas with integer arithmetic as bit-vectors; None when some integer term is
    not of the bounded kind (then solve the formulas as they are)."""
    has: dict = {}
    try:
        if not any(_has_int(f, has) for f in formulas):
            return list(formulas)
        width = _width(formulas)
        memo: dict = {}
        return [_rewrite(f, width, memo, has) for f in formulas]
    except (Unsupported, RecursionError, ctypes.ArgumentError):
        # too deep for these recursive walks (ctypes reports a RecursionError raised in an
        # argument conversion as an ArgumentError): solved as it is
        return None


def _rewrite(t, width: int, memo: dict, has: dict):
    key = t.get_id()
    if key in memo:
        return memo[key]
    if not _has_int(t, has):
        out = t
    elif z3.is_quantifier(t):
        raise Unsupported("integers under a binder")
    elif z3.is_int(t):
        out = _int(t, width, memo, has)
    else:
        kind = t.decl().kind()
        kids = t.children()
        if kind in _COMPARE or (kind in (z3.Z3_OP_EQ, z3.Z3_OP_DISTINCT) and z3.is_int(kids[0])):
            args = [_int(k, width, memo, has) for k in kids]
            if kind == z3.Z3_OP_EQ:
                out = args[0] == args[1]
            elif kind == z3.Z3_OP_DISTINCT:
                out = z3.Distinct(*args)
            else:
                out = _COMPARE[kind](args[0], args[1])
        else:
            out = t.decl()(*[_rewrite(k, width, memo, has) for k in kids]) if kids else t
    memo[key] = out
    return out


def _int(t, width: int, memo: dict, has: dict):
    key = ("int", t.get_id())
    if key in memo:
        return memo[key]
    kind = t.decl().kind()
    kids = t.children()
    if kind == z3.Z3_OP_ANUM:
        out = z3.BitVecVal(t.as_long(), width)
    elif kind == z3.Z3_OP_BV2INT:
        x = kids[0]
        out = z3.ZeroExt(width - x.size(), x)
    elif kind == z3.Z3_OP_ITE:
        out = z3.If(_rewrite(kids[0], width, memo, has), _int(kids[1], width, memo, has),
                    _int(kids[2], width, memo, has))
    elif kind == z3.Z3_OP_UMINUS:
        out = -_int(kids[0], width, memo, has)
    else:
        args = [_int(k, width, memo, has) for k in kids]
        out = args[0]
        for a in args[1:]:
            out = out + a if kind == z3.Z3_OP_ADD else out - a if kind == z3.Z3_OP_SUB else out * a
    memo[key] = out
    return out
