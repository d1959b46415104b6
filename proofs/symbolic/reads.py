"""Where a path reads the call data past the lengths it explores (the call-data bound).

The run explores call data of every length up to B = ``max_calldata``. Longer call data (up
to the spec's call data size) is not explored; it is covered only where it behaves as a call
data the run explores. Take an input x longer than B and t, x cut to its first B bytes (t is
explored). Every instruction that reads the call data reads the same on x and on t unless
it reads its length (CALLDATASIZE) or a byte at or past B (CALLDATALOAD's word at offset o
when o + 8 > B; CALLDATACOPY's range [o, o + n) when n > 0 and o + n > B). So up to the
first such read, x follows t's path, and if t's path has none, x ends exactly as t does.

The explorer therefore asks, at each such instruction of the entry frame (the frame whose
call data is the input; a callee's call data is the caller's memory), whether an input of
exactly B bytes can reach it and read past the bound: the path condition, length = B, and
the read's condition above. If it can (or the query is undecided), call data longer than B
is not covered: the bound is named in every verdict (``max-calldata B``) unless a property's
pre-conditions exclude every call data longer than B. A property that itself reads the call
data past B is checked the same way (``verdicts.py``).
"""

from __future__ import annotations

import z3

from proofs.symbolic.world import W

READS = frozenset({"CALLDATASIZE", "CALLDATALOAD", "CALLDATACOPY"})


def past(s, mnemonic: str, bound: int):
    """The condition under which the instruction reads the call data at or past byte
    ``bound`` (or reads its length): a z3 Boolean, or None when it reads nothing (too few
    stack items: it halts first)."""
    height = z3.simplify(s.height).as_long()
    limit = W.cval(bound)
    if mnemonic == "CALLDATASIZE":
        return z3.BoolVal(True)
    if mnemonic == "CALLDATALOAD" and height >= 1:
        offset = W.widen(s.stack[0])
        return z3.UGT(offset + W.cval(W.size), limit)
    if mnemonic == "CALLDATACOPY" and height >= 3:
        length, offset = W.widen(s.stack[0]), W.widen(s.stack[1])
        return z3.And(length != W.cval(0), z3.UGT(offset + length, limit))
    return None


def atoms(term, length) -> list | None:
    """Subterms of ``term`` that decide how it reads the call data whose length is
    ``length``: if each has the same value on call data longer than the bound as on that
    call data cut to the bound, so has the term. Top down, the first Boolean subterm above
    each occurrence of the length that either reads nothing but the length (a guard
    ``j < length`` with a constant j, however z3 rewrote it) or reaches the length through
    non-Boolean terms only (a guard with a symbolic index, a comparison of the size). []
    when the term does not read the length; None when it does under a binder (a lambda:
    its subterms cannot be asked alone)."""
    holds: dict = {}                    # id -> (the length occurs below, something else does)
    order, todo = [], [term]
    while todo:
        u = todo.pop()
        if u.get_id() in holds:
            continue
        holds[u.get_id()] = (False, False)
        order.append(u)
        if z3.is_app(u):
            todo.extend(u.children())
        elif z3.is_quantifier(u):
            todo.append(u.body())
    for u in reversed(order):
        if u.eq(length):
            holds[u.get_id()] = (True, False)
        elif z3.is_app(u) and u.num_args() == 0:
            holds[u.get_id()] = (False, not z3.is_const(u) or
                                 u.decl().kind() == z3.Z3_OP_UNINTERPRETED)
        elif z3.is_app(u):
            kids = [holds[k.get_id()] for k in u.children()]
            holds[u.get_id()] = (any(k[0] for k in kids), any(k[1] for k in kids))
        else:                           # a binder or a bound variable
            inner = holds.get(u.body().get_id(), (False, True)) if z3.is_quantifier(u) \
                else (False, True)
            holds[u.get_id()] = (inner[0], True)
    if not holds[term.get_id()][0]:
        return []
    found: dict = {}
    seen, todo = set(), [term]
    while todo:
        u = todo.pop()
        if u.get_id() in seen or not holds[u.get_id()][0]:
            continue
        seen.add(u.get_id())
        if not z3.is_app(u):
            return None
        if z3.is_bool(u) and (not holds[u.get_id()][1] or _direct(u, length, holds)):
            found[u.get_id()] = u
            continue
        todo.extend(u.children())
    return [found[k] for k in sorted(found)]


def _direct(u, length, holds: dict) -> bool:
    """Whether ``length`` occurs below ``u`` through non-Boolean terms only."""
    todo, seen = list(u.children()), set()
    while todo:
        t = todo.pop()
        if t.get_id() in seen or not holds[t.get_id()][0]:
            continue
        seen.add(t.get_id())
        if t.eq(length):
            return True
        if z3.is_bool(t) or not z3.is_app(t):
            continue
        todo.extend(t.children())
    return False


def describe(mnemonic: str, pc: int, address: int, bound: int) -> str:
    what = "reads its length" if mnemonic == "CALLDATASIZE" else \
        f"may read byte {bound} or later"
    return (f"max-calldata {bound} ({mnemonic} at pc {pc} of {address:#x} {what}; longer "
            "call data is not explored)")
