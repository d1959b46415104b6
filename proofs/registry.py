"""The theorem registry, filled by declaration.

A theorem module declares what it proves — ``declare(Theorem(...))`` or the decorators
``theorem``, ``word_law`` and ``state_law`` — and the registry collects the declarations by
the module that made them. It never imports its members by name: ``builtin()`` imports every
module of the ``proofs`` package (so a new module with declarations is picked up like a new
``rtwo_vm/commands`` module), and ``load_file(path)`` runs a user's file of theorems, which
uses exactly the same API::

    from proofs.registry import word_law, words

    @word_law("add_commutes", "ADD", widths=(8, 64))
    def add_commutes(bits, op):
        a, b = words(bits, "a b")
        return [op("ADD", a, b) == op("ADD", b, a)]

A Theorem is (name, opcode, widths, builder); ``build(bits, model=None)`` returns a Query:
claims to be proved valid under assumptions, and the symbolic pre-state so that a
counterexample can be read back as concrete inputs and replayed. ``profile`` names the
solver budget profile of ``proofs/budgets.toml`` (default: "default").

Theorems are of a spec version: the built-in modules declare a function ``version ->
theorems`` (``declare_versions``), and ``builtin(version)`` calls each. A ``word_law`` or
``state_law`` declared without a version (a user's file) is ``versioned``: ``bind(th,
version)`` gives it the version of the run (its ``op``/``run`` step that version's models).
A plain ``theorem`` builder is called as ``build(bits, model=None)``: it states what it needs
itself (``proofs.words.width(bits, version)`` names a version).
"""

from __future__ import annotations

import hashlib
import importlib
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import z3


@dataclass
class _QueryFields:
    claims: list
    assumptions: list = field(default_factory=list)
    pre: object = None            # the fresh State a counterexample is read from
    mnemonic: str | None = None
    imm: object = None
    operands: tuple = ()          # word laws: the operand variables, bottom to top
    width: int = 64
    named: tuple = ()             # word laws: the variables the law made with words(), in order
    calls: tuple = ()             # word laws: (mnemonic, operand terms, pushed word) of op()
    version: str | None = None    # word laws: the spec version of their op (else pre's)


class Query(_QueryFields):
    """Prove every claim valid under the assumptions. One claim per branch: each is proved
    on its own (a conjunction over all branches is far harder for bit-blasting solvers
    than its conjuncts one by one). The assumptions are the theorem's premises: they are
    checked satisfiable by a query of their own, so that no theorem is proved vacuously.
    A keyword that is no field (``premises=``) is a one-line TypeError naming the field."""

    def __init__(self, *args, **kwargs):
        unknown = sorted(set(kwargs) - set(self.__dataclass_fields__))
        if unknown:
            hint = {"premises": "assumptions", "premise": "assumptions", "assume": "assumptions",
                    "assumption": "assumptions", "claim": "claims", "opcode": "mnemonic"}
            name = unknown[0]
            right = f"; the field is `{hint[name]}=`" if name in hint else ""
            raise TypeError(f"Query has no field {name!r}{right} (fields: "
                            f"{', '.join(self.__dataclass_fields__)})")
        super().__init__(*args, **kwargs)


@dataclass(frozen=True)
class Theorem:
    name: str
    opcode: str                   # a mnemonic, or "-" for theorems about no single opcode
    widths: tuple[int, ...]       # (0,) for a width-free theorem
    build: Callable[..., Query]   # build(bits, model_override=None) -> Query
    note: str = ""
    profile: str | None = None    # budget profile (proofs/budgets.toml), None: "default"
    source: str = ""              # the declaring module
    versioned: bool = False       # build takes version= (bind gives it the run's version)


_DECLARED: dict[str, list[Theorem]] = {}
_VERSIONED: dict[str, Callable[[str], list[Theorem]]] = {}


def declare_versions(theorems: Callable[[str], list[Theorem]], module: str | None = None) -> None:
    """Declare ``theorems(version)``: the module's theorems of each spec version."""
    module = module or sys._getframe(1).f_globals.get("__name__", "?")
    _VERSIONED[module] = theorems


def bind(th: Theorem, version: str) -> Theorem:
    """``th`` built under spec ``version`` (a versioned theorem's build given the version)."""
    if not th.versioned:
        return th
    import functools
    return Theorem(**{**th.__dict__, "build": functools.partial(th.build, version=version),
                      "versioned": False})


def declare(*theorems: Theorem, module: str | None = None) -> None:
    """Add ``theorems`` to the registry, under the module that declares them."""
    module = module or sys._getframe(1).f_globals.get("__name__", "?")
    for th in theorems:
        _DECLARED.setdefault(module, []).append(
            th if th.source else Theorem(**{**th.__dict__, "source": module}))


def theorem(name: str, opcode: str = "-", widths: tuple[int, ...] = (0,), note: str = "",
            profile: str | None = None):
    """Decorator: ``build(bits, model=None) -> Query`` becomes a declared theorem."""
    def wrap(build):
        declare(Theorem(name, opcode, tuple(widths), build, note, profile),
                module=build.__module__)
        return build
    return wrap


_MADE: list | None = None        # while a word law builds: the variables words() made


def words(bits: int, names: str):
    made = [z3.BitVec(n, bits) for n in names.split()]
    if _MADE is not None:
        _MADE.extend(made)
    return made


def value(mnemonic: str, bits: int, *args, version: str, model=None):
    """The word the model of spec ``version`` pushes for operands ``args`` (bottom to top)."""
    from proofs.instructions import models
    from proofs.machine import fresh_state
    from proofs.words import width
    w = width(bits, version)
    s = fresh_state(w, "v_")
    args = tuple(w.wval(x) if isinstance(x, int) else x for x in args)
    s = s.replace(stack=tuple(reversed(args)) + s.stack[len(args):])
    branches = (model or models(bits, version)[mnemonic])(s, None)
    term = branches[-1].state.stack[0]
    for b in reversed(branches[:-1]):
        term = z3.If(b.cond, b.state.stack[0], term)
    return term


class Op:
    """A word law's ``op``: ``op(mnemonic, *operands)`` is the word the model pushes; ``op.w``
    is the machine (width and spec version) the law is stated on."""

    def __init__(self, w, overrides: dict, calls: list):
        self.w, self.overrides, self.calls = w, overrides, calls

    def __call__(self, m, *a):
        pushed = value(m, self.w.bits, *a, version=self.w.version, model=self.overrides.get(m))
        self.calls.append((m, a, pushed))
        return pushed


def word_law_theorem(name, opcode, widths, make, note="", profile=None, *,
                     version: str | None = None) -> Theorem:
    """A law over the words the models push: ``make(bits, op)`` returns claims, where
    ``op(mnemonic, *operands)`` is the pushed word. Without ``version`` the theorem is
    ``versioned`` (bind gives it one)."""
    def build(bits, model=None, *, version=version):
        global _MADE
        from proofs.words import width
        overrides = {opcode: model} if model is not None else {}
        calls: list = []
        op = Op(width(bits, version), overrides, calls)
        outer, _MADE = _MADE, []
        try:
            claims = make(bits, op)
            named = tuple(_MADE)
        finally:
            _MADE = outer
        return Query(claims if isinstance(claims, list) else [claims], mnemonic=opcode,
                     operands=tuple(words(bits, "a b c")), width=bits, named=named,
                     calls=tuple(calls), version=op.w.version)
    return Theorem(name, opcode, tuple(widths), build, note, profile, versioned=version is None)


def state_law_theorem(name, opcode, widths, make, note="", profile=None, *,
                      version: str | None = None) -> Theorem:
    """A law over whole steps: ``make(w, pre, run)`` returns claims, where ``run(state,
    mnemonic, imm=None)`` gives the continuing branches of one step from ``state``. Without
    ``version`` the theorem is ``versioned`` (bind gives it one)."""
    from proofs.execute import step
    from proofs.machine import RUNNING, fresh_state, well_formed
    from proofs.words import width

    def build(bits, model=None, *, version=version):
        w = width(bits, version)
        pre = fresh_state(w)
        overrides = {opcode: model} if model is not None else {}
        run = lambda s, m, imm=None: [  # noqa: E731
            b for b in step(s, m, imm, overrides.get(m)) if b.status == RUNNING]
        claims = make(w, pre, run)
        return Query(claims, [well_formed(pre)], pre, opcode)
    return Theorem(name, opcode, tuple(widths), build, note, profile, versioned=version is None)


def word_law(name: str, opcode: str, widths: tuple[int, ...] = (64,), note: str = "",
             profile: str | None = None):
    """Decorator form of ``word_law_theorem``: declares the law ``make(bits, op)``."""
    def wrap(make):
        declare(word_law_theorem(name, opcode, widths, make, note, profile),
                module=make.__module__)
        return make
    return wrap


def state_law(name: str, opcode: str, widths: tuple[int, ...] = (64,), note: str = "",
              profile: str | None = None):
    """Decorator form of ``state_law_theorem``: declares the law ``make(w, pre, run)``."""
    def wrap(make):
        declare(state_law_theorem(name, opcode, widths, make, note, profile),
                module=make.__module__)
        return make
    return wrap


def builtin(version: str) -> list[Theorem]:
    """Every theorem the modules of the ``proofs`` package declare for spec ``version``, in a
    fixed order. Raises versions.UnmodelledVersion for a version without models."""
    import proofs
    from proofs.instructions import models
    models(64, version)  # coverage against the table: raises if an opcode has no model
    names = sorted(f"proofs.{m.name}" for m in pkgutil.iter_modules(proofs.__path__))
    for name in names:
        importlib.import_module(name)
    out = []
    for name in names:
        out += [bind(th, version) for th in _DECLARED.get(name, ())]
        if name in _VERSIONED:
            out += [th if th.source else Theorem(**{**th.__dict__, "source": name})
                    for th in _VERSIONED[name](version)]
    return out


class TheoremFileError(ValueError):
    """A user's theorem file that cannot be loaded (one line, for the CLI)."""


MAX_FILE = 1 << 20          # bytes of a user's theorem file
WIDTHS = (8, 16, 32, 64, 0)


def load_file(path: str | Path, seconds: float | None = None,
              memory: int | None = None) -> list[Theorem]:
    """What a user's Python file of theorem declarations declares (any file name: it is read
    as Python source, at most ``MAX_FILE`` bytes, through spec.files.read_bounded).

    The file's code never runs in this process: it is run in a confined child
    (spec/confined.py; ``seconds``, its wall-clock safety net, default
    usertasks.LOAD_SECONDS; ``memory``, the bytes of address space it may add), which
    reports what it declared (name, opcode, widths, note, profile); a child that ends
    without its report (``os._exit(0)`` in the file, a crash, a kill, its deadline) is a
    TheoremFileError, and so are two theorems of one name. Each returned Theorem's ``build``
    runs the file again in the process that calls it (a proof task's own process, a
    confined child too: proofs/usertasks.py) and builds that theorem there."""
    from spec.files import FileRefused, read_bounded
    file = Path(path)
    try:
        source = read_bounded(file, MAX_FILE, "theorem file")
    except FileRefused as err:
        raise TheoremFileError(f"--theorems: {err}") from None
    digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]
    module_name = f"rtwo_user_theorems_{digest}"
    declared = _declared_in_child(file, source, module_name, seconds, memory)
    if not declared:
        raise TheoremFileError(f"--theorems: {file} declares no theorem "
                               "(use proofs.registry.declare, theorem, word_law or state_law)")
    seen: set[str] = set()
    out = []
    for name, opcode, widths, note, profile in declared:
        if name in seen:
            raise TheoremFileError(f"--theorems: {file}: two theorems are named {name!r} "
                                   "(each theorem needs a name of its own)")
        seen.add(name)
        if not widths or not set(widths) <= set(WIDTHS):
            raise TheoremFileError(f"--theorems: {name}: widths must be among 8, 16, 32, "
                                   f"64 (or 0 for width-free), not {tuple(widths)}")
        out.append(Theorem(name, opcode, tuple(widths), _Deferred(str(file), source, module_name, name),
                           note, profile, module_name, versioned=True))
    return out


def _run_source(file: str, source: bytes, module_name: str) -> list[Theorem]:
    """Run the file's source as module ``module_name`` in this process; what it declared."""
    import types
    module = types.ModuleType(module_name)
    module.__file__ = file
    _DECLARED.pop(module_name, None)
    sys.modules[module_name] = module
    try:
        exec(compile(source, file, "exec"), module.__dict__)  # noqa: S102 - the user's own theorems
    except BaseException:
        sys.modules.pop(module_name, None)
        raise
    return list(_DECLARED.get(module_name, []))


def _declaration(th: Theorem) -> list:
    """A declared theorem as plain data, its fields' types checked."""
    widths = th.widths
    if not (isinstance(th.name, str) and isinstance(th.opcode, str) and isinstance(th.note, str)
            and (th.profile is None or isinstance(th.profile, str))
            and isinstance(widths, tuple) and all(type(w) is int for w in widths)):
        raise TypeError(f"theorem {str(th.name)[:80]!r}: name, opcode, note and profile must be "
                        "strings and widths a tuple of integers")
    return [th.name, th.opcode, list(widths), th.note, th.profile]


def _declared_in_child(file: Path, source: bytes, module_name: str, seconds: float | None,
                       memory: int | None) -> list:
    """Run the file in a confined child; the declarations it reports, or TheoremFileError."""
    from proofs import usertasks
    from spec import confined
    bounds = usertasks.limits(seconds, memory, usertasks.LOAD_SECONDS)
    try:
        reported = confined.run(lambda: {"declared": [
            _declaration(th) for th in _run_source(str(file), source, module_name)]}, bounds)
    except confined.ChildLate as late:
        raise TheoremFileError(f"--theorems: {file}: loading the file {late}") from None
    except confined.ChildEnded as ended:
        raise TheoremFileError(f"--theorems: {file}: loading the file ended its process ({ended}) "
                               "before it reported its theorems") from None
    if "error" in reported:
        raise TheoremFileError(f"--theorems: {file}: {str(reported['error'])[:300]}")
    declared = reported.get("declared")
    if not isinstance(declared, list) or not all(
            isinstance(d, list) and len(d) == 5 and isinstance(d[0], str) and isinstance(d[1], str)
            and isinstance(d[2], list) and all(type(w) is int for w in d[2])
            and isinstance(d[3], str) and (d[4] is None or isinstance(d[4], str)) for d in declared):
        raise TheoremFileError(f"--theorems: {file}: the child's report is malformed")
    return [(d[0], d[1], tuple(d[2]), d[3], d[4]) for d in declared]


_LOADED: dict[str, list[Theorem]] = {}     # module name -> what the file declared, in this process


class _Deferred:
    """The ``build`` of a user's theorem: runs the file in this process (once) and builds."""

    def __init__(self, file: str, source: bytes, module_name: str, name: str):
        self.file, self.source, self.module_name, self.name = file, source, module_name, name

    def __call__(self, bits: int, *model, version: str) -> Query:
        declared = _LOADED.get(self.module_name)
        if declared is None:
            declared = _LOADED[self.module_name] = _run_source(self.file, self.source, self.module_name)
        found = [th for th in declared if th.name == self.name]
        if len(found) != 1:
            raise TheoremFileError(f"--theorems: {self.file}: theorem {self.name!r} is not declared "
                                   "when the file runs again")
        if found[0].versioned:
            return found[0].build(bits, *model, version=version)
        return found[0].build(bits, *model)
