"""A properties file (``rtwo-vm symbolic --properties FILE``), run only in confined children.

``load_file`` reads the file (Python source, at most 1 MiB) and runs it in a confined child
(spec/confined.py: its own session under a subreaper, resource limits, no file-system
change, every process of it killed at the end), which reports only what it declared: each
property's name, note and whether it has pre-conditions. A file that raises, exits, crashes
or outlives its deadline is a one-line error (exit 2) before anything is explored.

The properties returned are the parent's: their ``claims`` and ``assume`` never run the
user's code here. On the first check of an exploration, one more confined child runs the
file again and calls every property's functions over placeholders of the call (views.py):
the pre-conditions once, the claims on each path's end. It reports each part as SMT-LIB
text, the names the property read things by, the storage keys it read and the free
variables it made; the parent reads that text over its own declarations (claimtext.py,
which refuses anything outside the supported fragment by name) and solves the rebuilt
claims with its own solver (verdicts.py). A child that fails, lies or reports nonsense
gives ``error`` verdicts, never a hang, a leftover process or a claim proved that does not
hold.
"""

from __future__ import annotations

import hashlib
import sys
import types
import weakref
from pathlib import Path

import z3

from proofs.symbolic import claimtext, views
from proofs.symbolic.properties import (
    _DECLARED, Call, Property, PropertyError, _named, as_claims,
)
from spec import confined

MAX_FILE = 1 << 20
LOAD_SECONDS = 300.0        # the child that loads the file
CLAIMS_SECONDS = 1800.0     # the child that builds every property's claims on every path
MAX_NOTE = 2000


def limits(seconds: float | None, memory: int | None, default: float) -> confined.Limits:
    base = confined.Limits()
    return confined.Limits(seconds=seconds or default, memory=memory or base.memory)


def load_file(path: str | Path, seconds: float | None = None,
              memory: int | None = None) -> list[Property]:
    """The properties a file declares, found by running it in a confined child: ``seconds``
    (each child's wall-clock safety net) and ``memory`` (bytes of address space it may add)
    default to LOAD_SECONDS / CLAIMS_SECONDS and confined.Limits' memory."""
    from spec.files import FileRefused, read_bounded
    file = Path(path)
    try:
        source = read_bounded(file, MAX_FILE, "properties file")
    except FileRefused as err:
        raise PropertyError(f"--properties: {err}") from None
    module = "rtwo_user_properties_" + hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]

    def declared() -> dict:
        return {"declared": [{"name": p.name, "note": p.note, "assume": p.assume is not None}
                             for p in _run_source(str(file), source, module)]}
    try:
        report = confined.run(declared, limits(seconds, memory, LOAD_SECONDS))
    except confined.ChildLate as late:
        raise PropertyError(f"--properties: {file}: loading the file {late}") from None
    except confined.ChildEnded as ended:
        raise PropertyError(f"--properties: {file}: loading the file ended its process "
                            f"({ended}) before it reported its properties") from None
    if "error" in report:
        raise PropertyError(f"--properties: {file}: {str(report['error'])[:300]}")
    found = _declarations(report.get("declared"), file)
    user = UserFile(file, source, module, limits(seconds, memory, CLAIMS_SECONDS),
                    [name for name, _, _ in found])
    return [Property(name, _Part(user, name, "claims"),
                     _Part(user, name, "assume") if has_assume else None, note, module)
            for name, note, has_assume in found]


def _declarations(items, file: Path) -> list[tuple[str, str, bool]]:
    if not isinstance(items, list) or not all(
            isinstance(d, dict) and isinstance(d.get("name"), str) and
            isinstance(d.get("note"), str) and isinstance(d.get("assume"), bool) for d in items):
        raise PropertyError(f"--properties: {file}: the child's report is malformed")
    names = [d["name"] for d in items]
    if not names:
        raise PropertyError(f"--properties: {file} declares no property "
                            "(proofs.symbolic.properties.contract_property)")
    bad = [n for n in names if not (0 < len(n) <= 200 and n.replace("_", "").replace("-", "").isalnum())]
    if bad:
        raise PropertyError(f"--properties: {file}: a property name is letters, digits, _ and "
                            f"-: {bad[0][:40]!r}")
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})[0]
        raise PropertyError(f"--properties: {file}: two properties are named {twice!r}")
    return [(d["name"], d["note"][:MAX_NOTE], d["assume"]) for d in items]


def _run_source(file: str, source: bytes, module_name: str) -> list[Property]:
    """Run the file's source as module ``module_name`` (in a child); what it declared."""
    module = types.ModuleType(module_name)
    module.__file__ = file
    _DECLARED.pop(module_name, None)
    sys.modules[module_name] = module
    exec(compile(source, file, "exec"), module.__dict__)  # noqa: S102 - the user's own file, in a confined child
    return list(_DECLARED.get(module_name, []))


class UserFile:
    """A loaded properties file: its source, and the claims its child built for the last
    exploration checked (one child per exploration)."""

    def __init__(self, file: Path, source: bytes, module: str, bounds: confined.Limits,
                 names: list[str]):
        self.file, self.source, self.module, self.bounds, self.names = (
            file, source, module, bounds, names)
        self._for: weakref.ref | None = None
        self._report: dict | str = {}
        self._views: dict = {}

    def part(self, call: Call, name: str) -> tuple[dict, dict, dict]:
        """(the child's part for ``call``: the pre-conditions without an end, else the claims
        on its end; the symbols to read it; what they stand for); PropertyError when there
        is none."""
        exploration = call.exploration
        if self._for is None or self._for() is not exploration:
            view = views.describe(exploration)
            self._views = {"view": view}
            self._report = self._build(view)
            self._for = weakref.ref(exploration)
        if isinstance(self._report, str):
            raise PropertyError(f"property {name}: {self._report}")
        entry = self._report.get(name)
        index = None if call.end is None else next(
            (k for k, e in enumerate(exploration.ends) if e is call.end), None)
        if not isinstance(entry, dict) or (call.end is not None and index is None):
            raise PropertyError(f"property {name}: the child's report is malformed")
        part = entry.get("assume") if index is None else (
            entry["ends"][index] if isinstance(entry.get("ends"), list)
            and len(entry["ends"]) == len(exploration.ends) else None)
        if not isinstance(part, dict):
            raise PropertyError(f"property {name}: the child's report is malformed")
        if "error" in part:
            raise PropertyError(str(part["error"])[:500])
        if (index, "symbols") not in self._views:
            self._views[(index, "symbols")] = views.symbols(self._views["view"], index)
            self._views[(index, "reals")] = views.reals(exploration, call.end)
        return part, self._views[(index, "symbols")], self._views[(index, "reals")]

    def _build(self, view: views.View) -> dict | str:
        """Every property's parts, built by a confined child: {name: {"assume": part,
        "ends": [part per end]}}, or the one-line reason there are none."""
        file, source, module = str(self.file), self.source, self.module
        try:
            report = confined.run(lambda: _parts(file, source, module, view), self.bounds)
        except confined.ChildLate as late:
            return f"the properties file's child {late} while building the claims"
        except confined.ChildEnded as ended:
            return f"the properties file's child ended ({ended}) while building the claims"
        if "error" in report:
            return f"the properties file: {str(report['error'])[:300]}"
        got = report.get("properties")
        if not isinstance(got, dict) or sorted(got) != sorted(self.names):
            return "the properties file declares other properties when run again"
        return got


class _Part:
    """A parent-side ``claims`` or ``assume`` of a user's property: the child's text for
    this call, read back over the parent's symbols and rebuilt over the real terms."""

    def __init__(self, user: UserFile, name: str, which: str):
        self.user, self.name, self.which = user, name, which

    def __call__(self, call: Call) -> list:
        what = "its pre-condition" if self.which == "assume" else "its claims"
        part, symbols, reals = self.user.part(call, self.name)
        try:
            reader = claimtext.Reader(symbols, claimtext.fresh_symbols(part.get("fresh")), reals)
            claims = [reader.term(t, f"property {self.name}: {what}", True)
                      for t in _texts(part.get("claims"))]
            for text, label in _pairs(part.get("names")):     # _named keeps the term alive
                _named(call.names, reader.term(text, "a name"), str(label)[:200])
            for name, made in reader.fresh_vars.items():   # shown by the user's own name
                _named(call.names, made, name)
            deployed = set(call.exploration.inputs.storage)
            for address, text in _pairs(part.get("keys")):
                key = reader.term(text, "a storage key")
                if not (isinstance(address, int) and address in deployed and z3.is_bv(key)):
                    raise claimtext.Refused("a storage key of no deployed contract")
                call.keys.append((address, key))
        except claimtext.Refused as err:
            message = str(err)
            raise PropertyError(message if message.startswith("property ")
                                else f"property {self.name}: {what}: {message}") from None
        except (z3.Z3Exception, RecursionError) as err:
            raise PropertyError(f"property {self.name}: {what} cannot be read back "
                                f"({type(err).__name__}: {str(err)[:200]})") from None
        return claims


def _texts(items) -> list[str]:
    if not isinstance(items, list) or not all(isinstance(t, str) for t in items):
        raise claimtext.Refused("a malformed list of claims")
    return items


def _pairs(items) -> list[list]:
    if not isinstance(items, list) or not all(isinstance(p, list) and len(p) == 2 for p in items):
        raise claimtext.Refused("a malformed list of names or keys")
    return items


# -- in the child ---------------------------------------------------------------------------

def _parts(file: str, source: bytes, module: str, view: views.View) -> dict:
    """Run the file, then each property's functions over the view's placeholders."""
    declared = _run_source(file, source, module)
    start = views.objects(view)
    out: dict = {}
    for prop in declared:
        entry: dict = {"assume": None, "ends": []}
        if prop.assume is not None:
            entry["assume"] = _part(prop, "its pre-condition", "a pre-condition", start[0], None)
        for k in range(len(view.ends)):
            entry["ends"].append(_part(prop, "its claims", f"property {prop.name}",
                                       *views.objects(view, k)))
        out[prop.name] = entry
    return {"properties": out}


def _part(prop: Property, what: str, label: str, exploration, end) -> dict:
    call = Call(exploration, end)
    fn = prop.claims if end is not None else prop.assume
    assert fn is not None       # a pre-condition's part is asked only of a property with one
    try:
        claims = as_claims(fn(call), label)
    except PropertyError as err:
        return {"error": str(err)}
    except Exception as err:  # noqa: BLE001 - the user's code: one line, named
        text = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
        return {"error": f"property {prop.name}: {what} raised {text.splitlines()[0][:200]}"}
    terms = list(claims) + list(call.names.terms.values()) + [k for _, k in call.keys]
    return {"claims": [c.sexpr() for c in claims],
            "names": [[call.names.terms[i].sexpr(), label] for i, label in call.names.items()],
            "keys": [[address, k.sexpr()] for address, k in call.keys],
            "fresh": _free(terms)}


def _free(terms) -> list:
    """[name, sort, arity] of every symbol in ``terms`` that is not a placeholder."""
    out: dict = {}
    seen, todo = set(), list(terms)
    while todo:
        t = todo.pop()
        if t.get_id() in seen:
            continue
        seen.add(t.get_id())
        if z3.is_app(t):
            d = t.decl()
            if d.kind() == z3.Z3_OP_UNINTERPRETED and not d.name().startswith(views.PREFIX):
                out[(d.name(), d.range().sexpr(), d.arity())] = None
            todo.extend(t.children())
        elif z3.is_quantifier(t):
            todo.append(t.body())
    return [list(k) for k in sorted(out)]
