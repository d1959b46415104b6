"""Properties of one call of a contract, declared in a Python file (``--properties FILE``).

The API has the style of ``rtwo-vm prove --theorems`` (proofs/registry.py): a file declares
properties with a decorator; each returns z3 claims, proved valid on every path::

    import z3
    from proofs.symbolic.properties import contract_property

    def sender_is_not_recipient(c):             # a pre-condition: pre-state and input only
        return [c.caller != c.calldata.word(0)]

    @contract_property("transfer_conserves", assume=sender_is_not_recipient)
    def transfer_conserves(c):                 # a post-condition, on every path
        to = c.calldata.word(0)
        before = c.int(c.pre.storage[c.caller]) + c.int(c.pre.storage[to])
        after = c.int(c.post.storage[c.caller]) + c.int(c.post.storage[to])
        return [z3.Implies(c.success, before == after)]

``c`` is a ``Call``: the inputs (``caller``, ``calldata``, ``block_time``, ``seed``), the
pre-state (``pre.storage[key]``, ``pre.storage_at(address)[key]``), and on a path's end the
result (``status``, ``error``, ``success``, ``reverted``, ``output``, ``events``, ``usage``,
``fee``) and the post-state (``post.storage``). Words are 64-bit z3 bit-vectors (z3's ``<``
on them is signed: use ``z3.ULT`` or ``c.int(x)``, the unsigned value as an integer); usage
counts and the fee are integers. A free variable of a claim (``c.any_key()``) is universally
quantified: the claim must hold for each of its values. The pre-conditions are the
property's premises; premises that contradict each other make the verdict ``vacuous``.

The file never runs in ``rtwo-vm`` itself (proofs/symbolic/userfile.py): it is loaded, and
its functions are called, in confined child processes (spec/confined.py) over placeholders
of the call's terms (views.py); what they return comes back as SMT-LIB text, which the
parent reads over its own declarations (claimtext.py) and decides with its own solver.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Callable

import z3

from proofs.symbolic.world import W
from proofs.words import little_endian_word

FAILURES = ("invalid", "fault", "exhausted", "violation")


class PropertyError(Exception):
    """A property file or property that cannot be used (one line for the CLI)."""


@dataclass(frozen=True)
class Property:
    name: str
    claims: Callable               # claims(c) -> a claim or a list of claims
    assume: Callable | None = None  # assume(c) -> pre-conditions over the pre-state and input
    note: str = ""
    source: str = ""


_DECLARED: dict[str, list[Property]] = {}


def contract_property(name: str, assume: Callable | None = None, note: str = ""):
    """Decorator: ``claims(c)`` becomes a declared property."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise PropertyError(f"a property name is letters, digits, _ and -: {str(name)[:40]!r}")

    def wrap(claims):
        module = claims.__module__
        _DECLARED.setdefault(module, []).append(Property(name, claims, assume, note, module))
        return claims
    return wrap


def _no_failure(c) -> list:
    return [z3.BoolVal(c.status not in FAILURES)]


NO_FAILURE = Property(
    "no_failure", _no_failure,
    note=f"no path ends in {', '.join(FAILURES)} (any failure but a revert) under the limits")


class Bytes:
    """A byte string of the call (call data, output, event data)."""

    def __init__(self, data, label: str = "bytes", names: dict | None = None):
        self._data, self._label, self._names = data, label, names if names is not None else {}

    @property
    def size(self) -> z3.ArithRef:
        return _named(self._names, z3.BV2Int(self._data.length), f"{self._label}.size")

    def byte(self, j) -> z3.BitVecRef:
        """Byte ``j`` (0 past the end)."""
        return _named(self._names, self._data.read(_index(j)),
                      f"{self._label}.byte({render(j, self._names)})")

    def word(self, offset) -> z3.BitVecRef:
        """The little-endian word at byte ``offset`` (bytes past the end read 0), as
        CALLDATALOAD reads it."""
        return _named(self._names, little_endian_word(self._data.read, _index(offset), W.size),
                      f"{self._label}.word({render(offset, self._names)})")


class Names(dict):
    """z3 term id -> the name a property read it by (``pre.storage[caller]``); ``terms``
    keeps the terms themselves (a child reports them as text, userfile.py)."""

    def __init__(self):
        super().__init__()
        self.terms: dict = {}


def _named(names: dict, term, name: str):
    names.setdefault(term.get_id(), name)
    if isinstance(names, Names):
        names.terms.setdefault(term.get_id(), term)
    return term


def _index(j):
    return W.cval(j) if isinstance(j, int) else W.widen(j)


class Storage:
    """A contract's storage before or after the call; keys read are remembered so that a
    counterexample's request gives them values."""

    def __init__(self, arrays: dict, address: int, keys: list, label: str, names: dict):
        self._arrays, self._address, self._keys = arrays, address, keys
        self._label, self._names = label, names

    def __getitem__(self, key) -> z3.BitVecRef:
        k = W.wval(key) if isinstance(key, int) else key
        self._keys.append((self._address, k))
        return _named(self._names, self._arrays[self._address][k],
                      f"{self._label}[{render(key, self._names)}]")


class State:
    def __init__(self, arrays: dict, entry: int, keys: list, label: str, names: dict):
        self._arrays, self._entry, self._keys = arrays, entry, keys
        self._label, self._names = label, names

    @property
    def storage(self) -> Storage:
        return Storage(self._arrays, self._entry, self._keys, f"{self._label}.storage",
                       self._names)

    def storage_at(self, address: int) -> Storage:
        if address not in self._arrays:
            raise PropertyError(f"no contract at {address:#x} (deploy it with --contract)")
        return Storage(self._arrays, address, self._keys,
                       f"{self._label}.storage_at({address:#x})", self._names)


class Words:
    """The word helpers of the user-file APIs (a property's call, an invariant's sequence)."""

    _fresh = 0

    @staticmethod
    def int(word) -> z3.ArithRef:
        """The unsigned value of a word, as an integer (sums do not wrap)."""
        return z3.BV2Int(word)

    @staticmethod
    def word(value: builtins.int) -> z3.BitVecRef:
        return W.wval(value)

    def any_key(self, name: str = "k") -> z3.BitVecRef:
        """A fresh word: a claim holds for every value of it."""
        self._fresh += 1
        return z3.BitVec(f"{name}__{self._fresh}", W.bits)


class Call(Words):
    """What a property sees of one call: inputs and pre-state always; the result and the
    post-state on a path's end (a pre-condition that reads them is an error)."""

    def __init__(self, exploration, end=None):
        inputs = exploration.inputs
        self.exploration = exploration
        self._end, self.keys, self.names = end, [], Names()
        self.address = exploration.setup.entry
        self.caller = _named(self.names, inputs.caller, "caller")
        self.calldata = Bytes(inputs.call_data, "calldata", self.names)
        self.block_time = _named(self.names, inputs.block_time, "block_time")
        self.seed = inputs.seed
        self.pre = State(inputs.storage, self.address, self.keys, "pre", self.names)
        self._fresh = 0

    @property
    def end(self):
        """The path's end (None for a pre-condition's view of the call)."""
        return self._end

    def _result(self, what: str):
        if self._end is None:
            raise PropertyError(f"a pre-condition reads only the pre-state and the input, "
                                f"not {what}")
        return self._end

    @property
    def post(self) -> State:
        return State(self._result("the post-state").post, self.address, self.keys, "post",
                     self.names)

    @property
    def status(self) -> str:
        return self._result("the status").status

    @property
    def error(self) -> str | None:
        return self._result("the error").error

    @property
    def success(self) -> z3.BoolRef:
        return z3.BoolVal(self.status == "success")

    @property
    def reverted(self) -> z3.BoolRef:
        return z3.BoolVal(self.status == "reverted")

    @property
    def output(self) -> Bytes:
        return Bytes(self._result("the output").output, "output", self.names)

    @property
    def events(self) -> list:
        """(address, topics, data) of each event, in order."""
        return [(e.address, e.topics, Bytes(e.data, f"events[{n}].data", self.names))
                for n, e in enumerate(self._result("the events").events)]

    @property
    def usage(self) -> dict:
        return {k: _named(self.names, z3.BV2Int(v), f"usage.{k}")
                for k, v in self._result("the usage").usage.items()}

    @property
    def fee(self) -> z3.ArithRef:
        return _named(self.names, z3.BV2Int(self._result("the fee").fee), "fee")


    def unchanged_except(self, *keys, address: builtins.int | None = None) -> z3.BoolRef:
        """Every slot of the contract (default: the called one) but ``keys`` keeps its value."""
        k = self.any_key("other_slot")
        pre = self.pre.storage if address is None else self.pre.storage_at(address)
        post = self.post.storage if address is None else self.post.storage_at(address)
        others = z3.And([k != (W.wval(x) if isinstance(x, int) else x) for x in keys])
        return z3.Implies(others, post[k] == pre[k])


def as_claims(value, what: str) -> list:
    items = value if isinstance(value, (list, tuple)) else [value]
    out = []
    for item in items:
        if isinstance(item, bool):
            item = z3.BoolVal(item)
        if not z3.is_bool(item):
            raise PropertyError(f"{what} must return z3 Boolean claims, not {type(item).__name__}")
        out.append(item)
    return out


_INFIX = {z3.Z3_OP_ADD: "+", z3.Z3_OP_BADD: "+", z3.Z3_OP_SUB: "-", z3.Z3_OP_BSUB: "-",
          z3.Z3_OP_MUL: "*", z3.Z3_OP_BMUL: "*", z3.Z3_OP_EQ: "==", z3.Z3_OP_LE: "<=",
          z3.Z3_OP_LT: "<", z3.Z3_OP_GE: ">=", z3.Z3_OP_GT: ">", z3.Z3_OP_ULEQ: "<=u",
          z3.Z3_OP_ULT: "<u", z3.Z3_OP_UGEQ: ">=u", z3.Z3_OP_UGT: ">u", z3.Z3_OP_AND: "and",
          z3.Z3_OP_OR: "or", z3.Z3_OP_IMPLIES: "implies", z3.Z3_OP_DISTINCT: "!="}


def render(term, names: dict, limit: int = 200) -> str:
    """A claim for people: the inputs and storage reads by the names the property used
    (``calldata.word(0)``, ``pre.storage[caller]``), words in hex."""
    if isinstance(term, int):
        return hex(term)
    text = _render(term, names, 0)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _render(t, names: dict, depth: int) -> str:
    if t.get_id() in names:
        return names[t.get_id()]
    if z3.is_bv_value(t) or z3.is_int_value(t):
        return hex(t.as_long())
    if z3.is_true(t) or z3.is_false(t):
        return str(t).lower()
    if depth > 12 or not z3.is_app(t):
        return " ".join(str(t).split())
    kind, kids = t.decl().kind(), t.children()
    sub = [_render(k, names, depth + 1) for k in kids]
    if kind == z3.Z3_OP_BV2INT:
        return sub[0]
    if kind == z3.Z3_OP_SELECT:
        return f"{sub[0]}[{sub[1]}]"
    if kind == z3.Z3_OP_STORE:
        return f"{sub[0]} with [{sub[1]}] = {sub[2]}"
    if kind == z3.Z3_OP_NOT:
        return f"not ({sub[0]})"
    if kind in _INFIX and len(kids) >= 2:
        return "(" + f" {_INFIX[kind]} ".join(sub) + ")"
    if kind == z3.Z3_OP_UNINTERPRETED and not kids:
        return str(t)
    return f"{t.decl().name()}({', '.join(sub)})"
