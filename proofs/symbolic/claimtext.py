"""A property's claims read back from a child's SMT-LIB text, over the parent's own symbols.

The child that ran a properties file (userfile.py) reports each claim, pre-condition, named
quantity and storage key as the text of one SMT-LIB term over the call's placeholders
(views.py) and the free variables the user made (``c.any_key()``). Nothing of it is trusted:

- each text must be exactly one s-expression (so ``(assert TEXT)`` cannot hold a second
  command), of bounded size and nesting, parsed by z3 with the parent's declarations only;
- every symbol of the parsed term must be a placeholder of this view or a free variable the
  child listed, declared here under a name of its own (``user_...``: a free variable can
  never be an input or any other symbol of the exploration, whatever it is called) with a
  sort of the supported fragment (Bool, Int, a bit-vector);
- every operator must be in the supported fragment: Booleans, bit-vector arithmetic,
  comparisons, shifts and slices, storage reads and writes, and integers as properties use
  them (``c.int(word)``, numerals, ``+``, ``-``, ``*``, comparisons; integers.py solves them
  as wide bit-vectors). Anything else — ``z3.Int2BV``, integer division, reals, quantifiers,
  functions of the user's — is refused by its name, never passed to the solver;
- the term is then rebuilt over the real terms of the path: a placeholder by what it stands
  for, a byte string's byte at an index by the real ``read`` at the rebuilt index.

The parent decides the rebuilt claims with its own solver: nothing the child does can make a
claim hold that does not.
"""

from __future__ import annotations

import re

import z3

from proofs.machine import Bytes

MAX_TEXT = 4 << 20          # characters of one term's text
MAX_DEPTH = 1000            # nesting of its parentheses
MAX_NODES = 200_000         # distinct subterms of one parsed term
MAX_FRESH = 1000            # free variables of one part
FRESH_PREFIX = "user_"
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]{0,63}\Z")
_BV_SORT = re.compile(r"\(_ BitVec ([1-9][0-9]{0,4})\)\Z")

_ALLOWED = frozenset(getattr(z3, "Z3_OP_" + name) for name in """
    TRUE FALSE EQ DISTINCT ITE AND OR IFF XOR NOT IMPLIES
    ANUM LE GE LT GT ADD SUB UMINUS MUL BV2INT
    BNUM BIT1 BIT0 BNEG BADD BSUB BMUL BSDIV BUDIV BSREM BUREM BSMOD ULEQ SLEQ UGEQ SGEQ ULT
    SLT UGT SGT BAND BOR BNOT BXOR BNAND BNOR BXNOR CONCAT SIGN_EXT ZERO_EXT EXTRACT REPEAT
    BREDOR BREDAND BCOMP BSHL BLSHR BASHR ROTATE_LEFT ROTATE_RIGHT EXT_ROTATE_LEFT
    EXT_ROTATE_RIGHT SELECT STORE CONST_ARRAY""".split())
_SHOWN = {getattr(z3, "Z3_OP_" + op): text for op, text in (
    ("INT2BV", "int_to_bv (z3.Int2BV)"), ("IDIV", "integer division (/ on integers)"),
    ("MOD", "mod (% on integers)"), ("REM", "rem"), ("POWER", "a power (**)"),
    ("TO_REAL", "to_real (z3.ToReal)"), ("TO_INT", "to_int (z3.ToInt)"),
    ("IS_INT", "is_int (z3.IsInt)")) if hasattr(z3, "Z3_OP_" + op)}
FRAGMENT = ("the supported fragment: words and their bit-vector operations, storage reads, "
            "Booleans, and integers as c.int(word), numerals, +, -, * and comparisons")


class Refused(ValueError):
    """A text that is not a term of the supported fragment over the view (one line)."""


def single_expression(text: str) -> bool:
    """Whether ``text`` is one SMT-LIB s-expression (an atom or a parenthesised list, with
    quoted symbols, strings and comments), nested at most MAX_DEPTH deep."""
    if not isinstance(text, str) or len(text) > MAX_TEXT or "\0" in text:
        return False
    depth, items, i, n = 0, 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch == ";":
            newline = text.find("\n", i)
            i = n if newline < 0 else newline + 1
            continue
        if ch.isspace():
            i += 1
            continue
        if depth == 0:
            items += 1
            if items > 1:
                return False
        if ch == "(":
            depth += 1
            if depth > MAX_DEPTH:
                return False
            i += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                return False
            i += 1
        elif ch == "|":
            close = text.find("|", i + 1)
            if close < 0:
                return False
            i = close + 1
        elif ch == '"':
            i += 1
            while True:
                close = text.find('"', i)
                if close < 0:
                    return False
                if text.startswith('""', close):
                    i = close + 2
                    continue
                i = close + 1
                break
        else:
            while i < n and not text[i].isspace() and text[i] not in '();|"':
                i += 1
    return depth == 0 and items == 1


def fresh_symbols(listed) -> dict:
    """Symbol text -> the parent's constant for each free variable the child listed as
    [name, sort text, arity]; Refused for anything else."""
    if not isinstance(listed, list) or len(listed) > MAX_FRESH:
        raise Refused("a malformed list of free variables")
    out: dict = {}
    for item in listed:
        if not (isinstance(item, list) and len(item) == 3 and isinstance(item[0], str)
                and isinstance(item[1], str) and isinstance(item[2], int)):
            raise Refused("a malformed free variable")
        name, sort, arity = item
        shown = name[:64]
        if arity != 0:
            raise Refused(f"a function of its own, {shown!r}, is outside {FRAGMENT}")
        if not _NAME.match(name) or name.startswith("rtwo_view_"):
            raise Refused(f"a free variable's name {shown!r} is not letters, digits, _ . - "
                          "(at most 64, starting with a letter)")
        if sort == "Bool":
            made = z3.Bool(FRESH_PREFIX + name)
        elif sort == "Int":
            made = z3.Int(FRESH_PREFIX + name)
        elif (bits := _BV_SORT.match(sort)) is not None:
            made = z3.BitVec(FRESH_PREFIX + name, int(bits.group(1)))
        else:
            raise Refused(f"the free variable {shown!r} of sort {sort[:40]} is outside "
                          f"{FRAGMENT}")
        if name in out:
            raise Refused(f"two free variables are named {shown!r}")
        out[name] = made
    return out


class Reader:
    """Reads the terms of one part (a pre-condition's or one path's claims) over ``symbols``
    (views.symbols) plus the free variables, and rebuilds them over ``reals``
    (views.reals); one memo for the part (parsed term id -> (parsed term, rebuilt term)),
    so a named subterm rebuilds to the very term inside the claim."""

    def __init__(self, symbols: dict, fresh: dict, reals: dict):
        self.decls = {text: obj for text, (_, obj) in symbols.items()}
        self.decls.update(fresh)
        self.placeholders = {_key(obj): key for key, obj in symbols.values()}
        self.fresh = {_key(obj) for obj in fresh.values()}
        self.fresh_vars = dict(fresh)
        self.reals = reals
        self.memo: dict = {}

    def term(self, text, what: str, boolean: bool = False):
        if not single_expression(text):
            raise Refused(f"{what}: not one SMT-LIB term (at most {MAX_TEXT} characters, "
                          f"nested at most {MAX_DEPTH} deep)")
        try:
            parsed = z3.parse_smt2_string(f"(assert (= {text}\n {text}\n))", decls=self.decls)
        except z3.Z3Exception as err:
            reason = " ".join(str(err).split())[:160]
            raise Refused(f"{what}: not a term over the call ({reason})") from None
        if len(parsed) != 1 or not z3.is_eq(parsed[0]) or parsed[0].num_args() != 2:
            raise Refused(f"{what}: not one term")
        term = parsed[0].arg(0)
        self._check(term, what)
        if boolean and not z3.is_bool(term):
            raise Refused(f"{what}: not a Boolean claim")
        return self._rebuild(term)

    def _check(self, root, what: str) -> None:
        seen, todo = set(), [root]
        while todo:
            t = todo.pop()
            if t.get_id() in seen:
                continue
            seen.add(t.get_id())
            if len(seen) > MAX_NODES:
                raise Refused(f"{what}: more than {MAX_NODES} subterms")
            if z3.is_quantifier(t) or not z3.is_app(t):
                raise Refused(f"{what}: a quantifier or lambda is outside {FRAGMENT}")
            _check_sort(t.sort(), what)
            kind = t.decl().kind()
            if kind == z3.Z3_OP_UNINTERPRETED:
                k = _key(t.decl() if t.num_args() else t)
                if k not in self.placeholders and k not in self.fresh:
                    raise Refused(f"{what}: a symbol that is neither the call's nor a "
                                  f"free variable: {t.decl().name()[:64]}")
            elif kind not in _ALLOWED:      # (a real numeral's sort is refused above)
                name = _SHOWN.get(kind, t.decl().name()[:64])
                raise Refused(f"{what}: {name} is outside {FRAGMENT}")
            todo.extend(t.children())

    def _rebuild(self, root):
        """The term with each placeholder replaced by its real term (post-order, no recursion)."""
        memo = self.memo
        todo = [(root, False)]
        while todo:
            t, ready = todo.pop()
            key = t.get_id()
            if key in memo:
                continue
            kids = t.children()
            if not ready:
                todo.append((t, True))
                todo.extend((k, False) for k in kids if k.get_id() not in memo)
                continue
            # the parsed term is kept with its rebuilt one: z3 reuses a freed term's id
            memo[key] = (t, self._replace(t, [memo[k.get_id()][1] for k in kids]))
        return memo[root.get_id()][1]

    def _replace(self, t, kids: list):
        if t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            slot = self.placeholders.get(_key(t.decl() if kids else t))
            if slot is None:
                return t                                  # a free variable: the parent's own
            real = self.reals[slot]
            if isinstance(real, Bytes):
                return real.read(kids[0])
            return real
        return t.decl()(*kids) if kids else t


def _key(obj) -> tuple:
    """A symbol's identity: name, arity and sorts (a constant's and a function's alike)."""
    decl = obj if isinstance(obj, z3.FuncDeclRef) else obj.decl()
    return (decl.name(), tuple(decl.domain(i).sexpr() for i in range(decl.arity())),
            decl.range().sexpr())


def _check_sort(sort, what: str) -> None:
    kind = sort.kind()
    if kind in (z3.Z3_BOOL_SORT, z3.Z3_INT_SORT, z3.Z3_BV_SORT):
        return
    if kind == z3.Z3_ARRAY_SORT and sort.domain().kind() == z3.Z3_BV_SORT and \
            sort.range().kind() == z3.Z3_BV_SORT:
        return
    raise Refused(f"{what}: the sort {sort.sexpr()[:40]} is outside {FRAGMENT}")
