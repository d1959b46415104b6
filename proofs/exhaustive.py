"""Every operand of every unary and binary word operation at 8 bits: agreement as a proof.

The model's result term (all branches folded into one ite) is compiled to a Python function
by ``compile_term`` — an evaluator of the SMT-LIB bit-vector operators the model uses, with
SMT-LIB's own semantics (bvudiv by zero is all ones, shifts by >= width give 0 or the sign
fill) — and compared with the interpreter's handler on all 2^8 or 2^16 operand tuples. The
evaluator is itself checked against z3's simplifier on sampled inputs (tests). Stack checks
and charges are the same for all operands and are covered by the branch replays.
"""

from __future__ import annotations

import types

import z3

from proofs.instructions import models
from proofs.machine import fresh_state
from proofs.words import SPEC, width

WORD_TYPES = ("arithmetic", "comparison", "bitwise")
BITS = 8


def word_operations() -> list[str]:
    return [i.mnemonic for i in SPEC.instructions
            if i.type in WORD_TYPES and i.outputs == 1 and i.inputs in (1, 2)]


def result_term(mnemonic: str, bits: int = BITS, model=None):
    """(operand variables bottom to top, the pushed value as one term)."""
    w = width(bits)
    s = fresh_state(w, "x_")
    ins = SPEC.by_mnemonic[mnemonic]
    model = model or models(bits)[mnemonic]
    branches = model(s, None)
    term = branches[-1].state.stack[0]
    for b in reversed(branches[:-1]):
        term = z3.If(b.cond, b.state.stack[0], term)
    return list(reversed(s.stack[:ins.inputs])), term


_BINARY = {
    z3.Z3_OP_BADD: "({0} + {1}) & {m}", z3.Z3_OP_BSUB: "({0} - {1}) & {m}",
    z3.Z3_OP_BMUL: "({0} * {1}) & {m}", z3.Z3_OP_BAND: "({0} & {1})",
    z3.Z3_OP_BOR: "({0} | {1})", z3.Z3_OP_BXOR: "({0} ^ {1})",
    z3.Z3_OP_BUDIV: "(({0} // {1}) if {1} else {m})", z3.Z3_OP_BUDIV_I: "(({0} // {1}) if {1} else {m})",
    z3.Z3_OP_BUREM: "(({0} % {1}) if {1} else {0})", z3.Z3_OP_BUREM_I: "(({0} % {1}) if {1} else {0})",
    z3.Z3_OP_BSHL: "((({0} << {1}) & {m}) if {1} < {n} else 0)",
    z3.Z3_OP_BLSHR: "(({0} >> {1}) if {1} < {n} else 0)",
    z3.Z3_OP_BASHR: "((_s({0}, {n}) >> min({1}, {n})) & {m})",
    z3.Z3_OP_ULT: "({0} < {1})", z3.Z3_OP_ULEQ: "({0} <= {1})",
    z3.Z3_OP_UGT: "({0} > {1})", z3.Z3_OP_UGEQ: "({0} >= {1})",
    z3.Z3_OP_SLT: "(_s({0}, {n}) < _s({1}, {n}))", z3.Z3_OP_SLEQ: "(_s({0}, {n}) <= _s({1}, {n}))",
    z3.Z3_OP_SGT: "(_s({0}, {n}) > _s({1}, {n}))", z3.Z3_OP_SGEQ: "(_s({0}, {n}) >= _s({1}, {n}))",
    z3.Z3_OP_EQ: "({0} == {1})",
    z3.Z3_OP_BSDIV: "_sdiv({0}, {1}, {n})", z3.Z3_OP_BSDIV_I: "_sdiv({0}, {1}, {n})",
    z3.Z3_OP_BSREM: "_srem({0}, {1}, {n})", z3.Z3_OP_BSREM_I: "_srem({0}, {1}, {n})",
}


def _signed(v: int, n: int) -> int:
    return v - (1 << n) if v >> (n - 1) else v


def _sdiv(a: int, b: int, n: int) -> int:
    """SMT-LIB bvsdiv: truncating; by zero, all ones for a >= 0 and 1 for a < 0."""
    sa, sb = _signed(a, n), _signed(b, n)
    if sb == 0:
        return 1 if sa < 0 else (1 << n) - 1
    q = abs(sa) // abs(sb)
    return (-q if (sa < 0) != (sb < 0) else q) & ((1 << n) - 1)


def _srem(a: int, b: int, n: int) -> int:
    """SMT-LIB bvsrem: the sign of the dividend; by zero, a."""
    sa, sb = _signed(a, n), _signed(b, n)
    if sb == 0:
        return a
    r = abs(sa) % abs(sb)
    return (-r if sa < 0 else r) & ((1 << n) - 1)


def compile_term(term, variables):
    """A Python function of the variables' values computing ``term``."""
    lines, names = [], {}

    def emit(e) -> str:
        key = e.get_id()
        if key in names:
            return names[key]
        k = e.decl().kind()
        args = [emit(a) for a in e.children()]
        n = e.size() if z3.is_bv(e) else (e.arg(0).size() if e.num_args() and z3.is_bv(e.arg(0)) else 0)
        m = (1 << n) - 1 if n else 0
        if z3.is_bv_value(e):
            code = str(e.as_long())
        elif z3.is_true(e) or z3.is_false(e):
            code = str(z3.is_true(e))
        elif k == z3.Z3_OP_UNINTERPRETED and e.num_args() == 0:
            code = f"v{[v.get_id() for v in variables].index(e.get_id())}"
        elif k in _BINARY and len(args) == 2:
            code = _BINARY[k].format(*args, m=m, n=n)
        elif k in (z3.Z3_OP_BADD, z3.Z3_OP_BMUL, z3.Z3_OP_BAND, z3.Z3_OP_BOR, z3.Z3_OP_BXOR):
            op = {z3.Z3_OP_BADD: "+", z3.Z3_OP_BMUL: "*", z3.Z3_OP_BAND: "&",
                  z3.Z3_OP_BOR: "|", z3.Z3_OP_BXOR: "^"}[k]
            code = f"(({f' {op} '.join(args)}) & {m})"
        elif k == z3.Z3_OP_BNEG:
            code = f"((-{args[0]}) & {m})"
        elif k == z3.Z3_OP_BNOT:
            code = f"({args[0]} ^ {m})"
        elif k == z3.Z3_OP_ITE:
            code = f"({args[1]} if {args[0]} else {args[2]})"
        elif k == z3.Z3_OP_AND:
            code = f"({' and '.join(args)})"
        elif k == z3.Z3_OP_OR:
            code = f"({' or '.join(args)})"
        elif k == z3.Z3_OP_NOT:
            code = f"(not {args[0]})"
        elif k == z3.Z3_OP_XOR:
            code = f"({args[0]} != {args[1]})"
        elif k == z3.Z3_OP_DISTINCT:
            code = f"({args[0]} != {args[1]})"
        elif k == z3.Z3_OP_EXTRACT:
            hi, lo = e.params()
            code = f"(({args[0]} >> {lo}) & {(1 << (hi - lo + 1)) - 1})"
        elif k == z3.Z3_OP_CONCAT:
            code, shift = "0", 0
            for child, text in reversed(list(zip(e.children(), args))):
                code = f"({code} | ({text} << {shift}))"
                shift += child.size()
        elif k == z3.Z3_OP_ZERO_EXT:
            code = args[0]
        elif k == z3.Z3_OP_SIGN_EXT:
            inner = e.arg(0).size()
            code = f"(_s({args[0]}, {inner}) & {m})"
        else:
            raise NotImplementedError(f"no evaluator for {e.decl()}")
        name = f"t{len(names)}"
        names[key] = name
        lines.append(f"    {name} = {code}")
        return name

    result = emit(term)
    params = ", ".join(f"v{k}" for k in range(len(variables)))
    source = f"def f({params}):\n" + "\n".join(lines) + f"\n    return int({result})\n"
    scope = {"_s": _signed, "_sdiv": _sdiv, "_srem": _srem}
    exec(compile(source, "<model>", "exec"), scope)  # noqa: S102 - our own generated code
    return scope["f"]


def check_operation(mnemonic: str, handler=None, model=None, bits: int = BITS) -> list[dict]:
    """Every operand tuple at ``bits``; returns the disagreeing inputs (at most 5)."""
    from reference_vm.instructions import table
    from reference_vm.words import word

    variables, term = result_term(mnemonic, bits, model)
    evaluate = compile_term(term, variables)
    ins = SPEC.by_mnemonic[mnemonic]
    handler = handler or table(word(bits))[ins.opcode]
    frame = types.SimpleNamespace(stack=None)
    found = []
    values = range(1 << bits)
    tuples = ((a,) for a in values) if ins.inputs == 1 else ((a, b) for a in values for b in values)
    for operands in tuples:
        frame.stack = list(operands)
        try:
            handler(frame, 0)
            got = frame.stack[-1] if len(frame.stack) == 1 else ("stack", list(frame.stack))
        except Exception as err:  # noqa: BLE001 - a crashing handler is a disagreement
            got = f"raised {type(err).__name__}"
        expected = evaluate(*operands)
        if got != expected:
            found.append({"mnemonic": mnemonic, "width": bits, "stack": list(operands),
                          "model": expected, "interpreter": got})
            if len(found) >= 5:
                break
    return found
