"""Invariants over call sequences, declared in a Python file (``--invariant FILE``).

An invariant is a predicate over the storage of the given contracts that must hold after
every call of every sequence of calls from the initial state (``sequences.py`` explores
them)::

    from proofs.symbolic.invariants import invariant

    @invariant("total_supply_is_constant", note="a transfer moves balance, never makes it")
    def supply(s):
        return [s.total() == s.initial.total()]

``s`` is the state after a call: ``s.storage[key]`` (the contract at ``--address``),
``s.storage_at(address)[key]``, ``s.total(address=None)`` (the sum, as an integer, of the
slots *counted*: the slots pinned by the initial state and every slot a call of the sequence
wrote — with ``--concrete-storage`` every other slot is zero, so it is the sum of all
slots; without, ``s.total() - s.initial.total()`` is still the change of the sum of all
slots), ``s.before`` (the state before the last call: ``.storage``, ``.storage_at``,
``.total``), ``s.initial`` (the state before the first call), ``s.successes`` (the number of
successful calls so far, an integer), ``s.int(word)``, ``s.word(n)`` and ``s.any_key()`` (a
free word: the claim must hold for each of its values), as ``properties.Call`` has them.
Words are 64-bit z3 bit-vectors (``<`` on them is signed: use ``z3.ULT`` or ``s.int``).

``assume=`` gives pre-conditions on the initial state (its ``s`` is the initial state, with
no call made). The invariant itself is assumed of the initial state: with symbolic storage
every initial state that satisfies it (and the pre-conditions) is covered; when none does
the verdict is ``vacuous``.

The file never runs in ``rtwo-vm`` itself: one confined child (spec/confined.py) runs it and
calls every invariant over placeholders of the state (``rtwo_view_now_<address>`` and so on);
the claims come back as SMT-LIB text, read over the parent's own symbols (claimtext.py) and
rebuilt over each state's real terms (``State.reals``). The claims depend on no path, so the
file runs once, before anything is explored; anything wrong with it is one line, exit 2.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import z3

from proofs.symbolic import claimtext
from proofs.symbolic.properties import PropertyError, Storage, Words, as_claims
from proofs.symbolic.world import W
from spec import confined

MAX_FILE = 1 << 20
MAX_INVARIANTS = 100
LOAD_SECONDS = 300.0
MAX_NOTE = 2000
PREFIX = "rtwo_view_"
STATES = ("now", "before", "initial")


@dataclass(frozen=True)
class Declared:
    name: str
    claims: Callable
    assume: Callable | None
    note: str


_DECLARED: dict[str, list[Declared]] = {}


def invariant(name: str, assume: Callable | None = None, note: str = ""):
    """Decorator: ``claims(s)`` becomes a declared invariant."""
    if not isinstance(name, str) or not name.replace("_", "").replace("-", "").isalnum():
        raise PropertyError(f"an invariant name is letters, digits, _ and -: {str(name)[:40]!r}")

    def wrap(claims):
        _DECLARED.setdefault(claims.__module__, []).append(Declared(name, claims, assume, note))
        return claims
    return wrap


# -- the placeholders ------------------------------------------------------------------------

def placeholders(addresses) -> dict:
    """Slot key -> placeholder: each state's storage array and total per contract, and the
    count of successful calls."""
    out: dict = {"successes": z3.Int(PREFIX + "successes")}
    for a in sorted(addresses):
        for state in STATES:
            out[f"{state}_{a:#x}"] = z3.Array(f"{PREFIX}{state}_{a:#x}", z3.BitVecSort(W.bits),
                                              z3.BitVecSort(W.bits))
            out[f"total_{state}_{a:#x}"] = z3.Int(f"{PREFIX}total_{state}_{a:#x}")
    return out


class StateView:
    """One state of the sequence as an invariant reads it."""

    def __init__(self, made: dict, state: str, entry: int, addresses):
        self._made, self._state, self._entry = made, state, entry
        self._addresses = tuple(sorted(addresses))
        self._arrays = {a: made[f"{state}_{a:#x}"] for a in self._addresses}

    def _address(self, address) -> int:
        a = self._entry if address is None else address
        if a not in self._arrays:
            raise PropertyError(f"no contract at {a:#x} (deploy it with --contract)" if isinstance(a, int)
                                else f"not an address: {str(a)[:40]!r}")
        return a

    @property
    def storage(self) -> Storage:
        return Storage(self._arrays, self._entry, [], f"{self._state}.storage", {})

    def storage_at(self, address: int) -> Storage:
        return Storage(self._arrays, self._address(address), [],
                       f"{self._state}.storage_at", {})

    def total(self, address: int | None = None) -> z3.ArithRef:
        return self._made[f"total_{self._state}_{self._address(address):#x}"]


class Sequence(StateView, Words):
    """The state after a call (``now``), with the one before it and the initial one."""

    def __init__(self, made: dict, entry: int, addresses, now: str = "now"):
        super().__init__(made, now, entry, addresses)
        self.address = entry
        self.contracts = tuple(sorted(addresses))
        self.before = StateView(made, "before" if now == "now" else now, entry, addresses)
        self.initial = StateView(made, "initial", entry, addresses)
        self.successes = made["successes"] if now == "now" else z3.IntVal(0)
        self._fresh = 0



# -- in the child ----------------------------------------------------------------------------

def _built(file: str, source: bytes, module: str, entry: int, addresses: list) -> dict:
    from proofs.symbolic.userfile import _free, _run_source
    _DECLARED.pop(module, None)
    _run_source(file, source, module)
    declared = _DECLARED.get(module, [])
    made = placeholders(addresses)
    out = []
    for d in declared[:MAX_INVARIANTS + 1]:
        item: dict = {"name": d.name, "note": str(d.note)[:MAX_NOTE]}
        for part, fn, now in (("claims", d.claims, "now"), ("assume", d.assume, "initial")):
            if fn is None:
                item[part] = None
                continue
            try:
                claims = as_claims(fn(Sequence(made, entry, addresses, now)),
                                   f"invariant {d.name}")
            except PropertyError as err:
                return {"error": str(err)}
            except Exception as err:  # noqa: BLE001 - the user's code: one line, named
                text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
                return {"error": f"invariant {d.name}: {'its pre-condition' if now != 'now' else 'its claims'} "
                                 f"raised {text.splitlines()[0][:200]}"}
            item[part] = [c.sexpr() for c in claims]
            item[part + "_fresh"] = _free(claims)
        out.append(item)
    return {"invariants": out}


# -- in the parent ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Invariant:
    name: str
    note: str
    claims: tuple                # SMT-LIB texts over the placeholders
    assume: tuple
    fresh: tuple                 # (claims' free variables, pre-conditions'): as reported
    addresses: tuple             # the contracts whose placeholders the texts may name

    def build(self, reals: dict, part: str = "claims") -> tuple[list, list]:
        """(the claims, or the pre-conditions, rebuilt over ``reals`` (slot key -> term);
        their free variables)."""
        texts, fresh = (self.claims, self.fresh[0]) if part == "claims" else (
            self.assume, self.fresh[1])
        symbols = {p.decl().name(): (key, p) for key, p in placeholders(self.addresses).items()}
        reader = claimtext.Reader(symbols, claimtext.fresh_symbols(fresh), reals)
        what = f"invariant {self.name}: {'its claims' if part == 'claims' else 'its pre-condition'}"
        return [reader.term(t, what, True) for t in texts], list(reader.fresh_vars.values())


def load(path: str | Path, entry: int, addresses, seconds: float | None = None,
         memory: int | None = None) -> list[Invariant]:
    """The invariants a file declares, built by one confined child; PropertyError (one
    line) for anything wrong with the file or what its child reports."""
    from proofs.symbolic.userfile import limits
    from spec.files import FileRefused, read_bounded
    file = Path(path)
    try:
        source = read_bounded(file, MAX_FILE, "file of invariants")
    except FileRefused as err:
        raise PropertyError(f"--invariant: {err}") from None
    module = "rtwo_user_invariants_" + hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]
    addrs = sorted(addresses)
    try:
        report = confined.run(lambda: _built(str(file), source, module, entry, addrs),
                              limits(seconds, memory, LOAD_SECONDS))
    except confined.ChildLate as late:
        raise PropertyError(f"--invariant: {file}: loading the file {late}") from None
    except confined.ChildEnded as ended:
        raise PropertyError(f"--invariant: {file}: loading the file ended its process "
                            f"({ended}) before it reported its invariants") from None
    if not isinstance(report, dict):
        raise PropertyError(f"--invariant: {file}: the child's report is malformed")
    if "error" in report:
        raise PropertyError(f"--invariant: {file}: {str(report['error'])[:300]}")
    return _read(report.get("invariants"), file, addrs)


def _read(items, file: Path, addresses: list) -> list[Invariant]:
    bad = f"--invariant: {file}: the child's report is malformed"
    if not isinstance(items, list) or not all(isinstance(d, dict) for d in items):
        raise PropertyError(bad)
    if not items:
        raise PropertyError(f"--invariant: {file} declares no invariant "
                            "(proofs.symbolic.invariants.invariant)")
    if len(items) > MAX_INVARIANTS:
        raise PropertyError(f"--invariant: {file} declares more than {MAX_INVARIANTS} invariants")
    out, names = [], set()
    for d in items:
        name, note = d.get("name"), d.get("note")
        if not (isinstance(name, str) and isinstance(note, str) and 0 < len(name) <= 200
                and name.replace("_", "").replace("-", "").isalnum()):
            raise PropertyError(bad)
        if name in names:
            raise PropertyError(f"--invariant: {file}: two invariants are named {name!r}")
        names.add(name)
        parts: list = []
        for part in ("claims", "assume"):
            texts = d.get(part)
            if texts is None and part == "assume":
                parts.append(((), []))
                continue
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise PropertyError(bad)
            parts.append((tuple(texts), d.get(part + "_fresh")))
        inv = Invariant(name, note[:MAX_NOTE], parts[0][0], parts[1][0],
                        (parts[0][1], parts[1][1]), tuple(addresses))
        try:                     # read back once over the placeholders themselves
            identity = placeholders(addresses)
            inv.build(identity)
            _, free = inv.build(identity, "assume")
        except (claimtext.Refused, z3.Z3Exception, RecursionError, TypeError) as err:
            raise PropertyError(f"--invariant: {file}: {str(err).splitlines()[0][:300]}") from None
        if free:
            raise PropertyError(f"--invariant: {file}: invariant {name}: a pre-condition "
                                "cannot use any_key (it would be read as 'some key')")
        out.append(inv)
    return out
