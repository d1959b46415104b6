"""Concrete evaluation of z3 terms, outside z3's Python objects.

``compile_term`` turns a term into a Python function of some of its constants, with
SMT-LIB's semantics (bvudiv by zero is all ones, shifts by >= width give 0 or the sign fill):
exhaustive.py runs a word operation's result term on every 8-bit operand tuple with it, and
concrete.py and branches.py read memory and byte strings at many indices with it (a
function of the index). ``constant`` reads a term's value through z3's C API. Both are
checked against z3's simplifier and model evaluation by tests.
"""

from __future__ import annotations

import z3
from z3 import z3core


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


def _select(array, index):
    return array[0].get(index, array[1])


def compile_term(term, variables):
    """A Python function of the variables' values computing ``term``.

    Subterms free of the variables are computed once, when the function is made, and the
    function body computes the rest. Arrays free of the variables (Store chains over a
    constant array: initial memory, byte strings) become {index: value} tables with a
    default, read by select. Anything else raises NotImplementedError (for example an
    uninterpreted function, a constant that is not one of the variables, or an array that
    depends on a variable), and so does a term too deep to walk. The term is walked through
    z3's C API (its subterms live as long as ``term``): building a Python object per
    subterm is what made compiling slow."""
    try:
        return _Compiler(term, variables).function()
    except RecursionError as err:
        raise NotImplementedError("term too deep to compile") from err


_NARY = {z3.Z3_OP_BADD: "+", z3.Z3_OP_BMUL: "*", z3.Z3_OP_BAND: "&", z3.Z3_OP_BOR: "|",
         z3.Z3_OP_BXOR: "^"}


class _Compiler:
    def __init__(self, term, variables):
        self.term, self.ref = term, term.ctx.ref()
        self.positions = {z3core.Z3_get_ast_id(self.ref, v.as_ast()): k
                          for k, v in enumerate(variables)}
        self.arity = len(variables)
        self.ground: list[str] = []
        self.lines: list[str] = []
        self.names: dict[int, str] = {}
        self.free: set[str] = set()

    def function(self):
        result = self.emit(self.term.as_ast())
        params = ", ".join(f"v{k}" for k in range(self.arity))
        source = "\n".join([*self.ground, f"def f({params}):", *self.lines,
                            f"    return int({result})"]) + "\n"
        scope = {"_s": _signed, "_sdiv": _sdiv, "_srem": _srem, "_select": _select}
        exec(compile(source, "<model>", "exec"), scope)  # noqa: S102 - our own generated code
        return scope["f"]

    def bind(self, key: int, code: str, depends: bool) -> str:
        name = f"t{len(self.names)}"
        self.names[key] = name
        if depends:
            self.free.add(name)
            self.lines.append(f"    {name} = {code}")
        else:
            self.ground.append(f"{name} = {code}")
        return name

    def sort_kind(self, a) -> int:
        return z3core.Z3_get_sort_kind(self.ref, z3core.Z3_get_sort(self.ref, a))

    def bv_size(self, a) -> int:
        sort = z3core.Z3_get_sort(self.ref, a)
        if z3core.Z3_get_sort_kind(self.ref, sort) != z3.Z3_BV_SORT:
            return 0
        return z3core.Z3_get_bv_sort_size(self.ref, sort)

    def decl_kind(self, a) -> int:
        if z3core.Z3_get_ast_kind(self.ref, a) != z3.Z3_APP_AST:
            return -1
        return z3core.Z3_get_decl_kind(self.ref, z3core.Z3_get_app_decl(self.ref, a))

    def args(self, a) -> list:
        r = self.ref
        return [z3core.Z3_get_app_arg(r, a, i) for i in range(z3core.Z3_get_app_num_args(r, a))]

    def unsupported(self, a, what: str = ""):
        text = z3core.Z3_ast_to_string(self.ref, a)
        return NotImplementedError(f"no evaluator for {what}{text[:80]}")

    def emit(self, a) -> str:
        r = self.ref
        key = z3core.Z3_get_ast_id(r, a)
        if key in self.names:
            return self.names[key]
        kind = z3core.Z3_get_ast_kind(r, a)
        if kind == z3.Z3_NUMERAL_AST:
            if self.sort_kind(a) != z3.Z3_BV_SORT:
                raise self.unsupported(a, "the numeral ")
            self.names[key] = z3core.Z3_get_numeral_string(r, a)  # a literal
            return self.names[key]
        if kind == z3.Z3_VAR_AST and key in self.positions:  # a de Bruijn variable
            return self.bind(key, f"v{self.positions[key]}", True)
        if kind != z3.Z3_APP_AST:
            raise self.unsupported(a)
        if self.sort_kind(a) == z3.Z3_ARRAY_SORT:
            return self.emit_array(a, key)
        decl = z3core.Z3_get_app_decl(r, a)
        k = z3core.Z3_get_decl_kind(r, decl)
        children = self.args(a)
        if k != z3.Z3_OP_SELECT and any(self.sort_kind(c) == z3.Z3_ARRAY_SORT
                                        for c in children):
            raise self.unsupported(a, "arrays in ")
        if k == z3.Z3_OP_UNINTERPRETED and not children:
            if key not in self.positions:
                raise self.unsupported(a, "the free constant ")
            return self.bind(key, f"v{self.positions[key]}", True)
        args = [self.emit(c) for c in children]
        n = self.bv_size(a) or (self.bv_size(children[0]) if children else 0)
        m = (1 << n) - 1 if n else 0
        if k in (z3.Z3_OP_TRUE, z3.Z3_OP_FALSE):
            self.names[key] = str(k == z3.Z3_OP_TRUE)
            return self.names[key]
        if k == z3.Z3_OP_SELECT and len(args) == 2:
            code = f"_select({args[0]}, {args[1]})"
        elif k in _BINARY and len(args) == 2:
            code = _BINARY[k].format(*args, m=m, n=n)
        elif k in _NARY and args:
            code = f"(({f' {_NARY[k]} '.join(args)}) & {m})"
        elif k == z3.Z3_OP_BNEG:
            code = f"((-{args[0]}) & {m})"
        elif k == z3.Z3_OP_BNOT:
            code = f"({args[0]} ^ {m})"
        elif k == z3.Z3_OP_ITE:
            code = f"({args[1]} if {args[0]} else {args[2]})"
        elif k == z3.Z3_OP_AND and args:
            code = f"({' and '.join(args)})"
        elif k == z3.Z3_OP_OR and args:
            code = f"({' or '.join(args)})"
        elif k == z3.Z3_OP_NOT:
            code = f"(not {args[0]})"
        elif k == z3.Z3_OP_XOR and len(args) == 2:
            code = f"({args[0]} != {args[1]})"
        elif k == z3.Z3_OP_DISTINCT and len(args) == 2:
            code = f"({args[0]} != {args[1]})"
        elif k == z3.Z3_OP_EXTRACT:
            hi, lo = (z3core.Z3_get_decl_int_parameter(r, decl, i) for i in (0, 1))
            code = f"(({args[0]} >> {lo}) & {(1 << (hi - lo + 1)) - 1})"
        elif k == z3.Z3_OP_CONCAT:
            code, shift = "0", 0
            for child, text in reversed(list(zip(children, args))):
                code = f"({code} | ({text} << {shift}))"
                shift += self.bv_size(child)
        elif k == z3.Z3_OP_ZERO_EXT:
            code = args[0]
        elif k == z3.Z3_OP_SIGN_EXT:
            code = f"(_s({args[0]}, {self.bv_size(children[0])}) & {m})"
        else:
            raise self.unsupported(a)
        return self.bind(key, code, any(x in self.free for x in args))

    def emit_array(self, a, key: int) -> str:
        """A variable-free array: (table, default) built once, stores applied in order
        (the outermost store of an index is its value)."""
        chain = []
        while self.decl_kind(a) == z3.Z3_OP_STORE:
            _, index, value = self.args(a)
            chain.append((index, value))
            a = self.args(a)[0]
        if self.decl_kind(a) != z3.Z3_OP_CONST_ARRAY:
            raise self.unsupported(a, "the array ")
        (default_term,) = self.args(a)
        if self.sort_kind(default_term) == z3.Z3_ARRAY_SORT:
            raise self.unsupported(a, "the array ")
        default = self.emit(default_term)
        pairs = [(self.emit(i), self.emit(v)) for i, v in reversed(chain)]
        if default in self.free or any(i in self.free or v in self.free for i, v in pairs):
            raise self.unsupported(a, "an array that depends on a variable: ")
        entries = ", ".join(f"({i}, {v})" for i, v in pairs)
        return self.bind(key, f"(dict([{entries}]), {default})", False)


def constant(ctx, ast) -> int | None:
    """The value of a bit-vector numeral or of true / false (1 / 0), else None. ``ast`` is
    a raw term of ``ctx`` that something keeps alive while this runs (a Python term, or
    z3's last result, which the calls here replace: it is referenced while they run)."""
    r = ctx.ref()
    z3core.Z3_inc_ref(r, ast)
    try:
        if (z3core.Z3_get_ast_kind(r, ast) == z3.Z3_NUMERAL_AST
                and z3core.Z3_get_sort_kind(r, z3core.Z3_get_sort(r, ast)) == z3.Z3_BV_SORT):
            return int(z3core.Z3_get_numeral_string(r, ast))
        truth = z3core.Z3_get_bool_value(r, ast)
    finally:
        z3core.Z3_dec_ref(r, ast)
    return 1 if truth == z3.Z3_L_TRUE else 0 if truth == z3.Z3_L_FALSE else None
