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
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import pkgutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import z3


@dataclass
class Query:
    """Prove every claim valid under the assumptions. One claim per branch: each is proved
    on its own (a conjunction over all branches is far harder for bit-blasting solvers
    than its conjuncts one by one). The assumptions are the theorem's premises: they are
    checked satisfiable by a query of their own, so that no theorem is proved vacuously."""

    claims: list
    assumptions: list = field(default_factory=list)
    pre: object = None            # the fresh State a counterexample is read from
    mnemonic: str | None = None
    imm: object = None
    operands: tuple = ()          # word laws: the operand variables, bottom to top
    width: int = 64


@dataclass(frozen=True)
class Theorem:
    name: str
    opcode: str                   # a mnemonic, or "-" for theorems about no single opcode
    widths: tuple[int, ...]       # (0,) for a width-free theorem
    build: Callable[..., Query]   # build(bits, model_override=None) -> Query
    note: str = ""
    profile: str | None = None    # budget profile (proofs/budgets.toml), None: "default"
    source: str = ""              # the declaring module


_DECLARED: dict[str, list[Theorem]] = {}


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


def words(bits: int, names: str):
    return [z3.BitVec(n, bits) for n in names.split()]


def value(mnemonic: str, bits: int, *args, model=None):
    """The word the model pushes for operands ``args`` (bottom to top)."""
    from proofs.instructions import models
    from proofs.machine import fresh_state
    from proofs.words import width
    w = width(bits)
    s = fresh_state(w, "v_")
    args = tuple(w.wval(x) if isinstance(x, int) else x for x in args)
    s = s.replace(stack=tuple(reversed(args)) + s.stack[len(args):])
    branches = (model or models(bits)[mnemonic])(s, None)
    term = branches[-1].state.stack[0]
    for b in reversed(branches[:-1]):
        term = z3.If(b.cond, b.state.stack[0], term)
    return term


def word_law_theorem(name, opcode, widths, make, note="", profile=None) -> Theorem:
    """A law over the words the models push: ``make(bits, op)`` returns claims, where
    ``op(mnemonic, *operands)`` is the pushed word."""
    def build(bits, model=None):
        overrides = {opcode: model} if model is not None else {}
        op = lambda m, *a: value(m, bits, *a, model=overrides.get(m))  # noqa: E731
        claims = make(bits, op)
        return Query(claims if isinstance(claims, list) else [claims], mnemonic=opcode,
                     operands=tuple(words(bits, "a b c")), width=bits)
    return Theorem(name, opcode, tuple(widths), build, note, profile)


def state_law_theorem(name, opcode, widths, make, note="", profile=None) -> Theorem:
    """A law over whole steps: ``make(w, pre, run)`` returns claims, where ``run(state,
    mnemonic, imm=None)`` gives the continuing branches of one step from ``state``."""
    from proofs.execute import step
    from proofs.machine import RUNNING, fresh_state, well_formed
    from proofs.words import width

    def build(bits, model=None):
        w = width(bits)
        pre = fresh_state(w)
        overrides = {opcode: model} if model is not None else {}
        run = lambda s, m, imm=None: [  # noqa: E731
            b for b in step(s, m, imm, overrides.get(m)) if b.status == RUNNING]
        claims = make(w, pre, run)
        return Query(claims, [well_formed(pre)], pre, opcode)
    return Theorem(name, opcode, tuple(widths), build, note, profile)


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


def builtin() -> list[Theorem]:
    """Every theorem the modules of the ``proofs`` package declare, in a fixed order."""
    import proofs
    from proofs.instructions import models
    models(64)  # coverage against the table: raises if an opcode has no model
    names = sorted(f"proofs.{m.name}" for m in pkgutil.iter_modules(proofs.__path__))
    for name in names:
        importlib.import_module(name)
    return [th for name in names for th in _DECLARED.get(name, ())]


class TheoremFileError(ValueError):
    """A user's theorem file that cannot be loaded (one line, for the CLI)."""


def load_file(path: str | Path) -> list[Theorem]:
    """Run a user's Python file of theorem declarations and return what it declared."""
    file = Path(path)
    if not file.is_file():
        raise TheoremFileError(f"--theorems: no file {file}")
    if file.stat().st_size > 1 << 20:
        raise TheoremFileError(f"--theorems: {file} is larger than 1 MiB")
    digest = hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:12]
    module_name = f"rtwo_user_theorems_{digest}"
    spec = importlib.util.spec_from_file_location(module_name, file)
    module = importlib.util.module_from_spec(spec)
    _DECLARED.pop(module_name, None)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as err:  # noqa: BLE001 - a broken file: a one-line error
        sys.modules.pop(module_name, None)
        raise TheoremFileError(f"--theorems: {file}: {type(err).__name__}: {err}") from None
    declared = _DECLARED.get(module_name, [])
    if not declared:
        raise TheoremFileError(f"--theorems: {file} declares no theorem "
                               "(use proofs.registry.declare, theorem, word_law or state_law)")
    widths = {8, 16, 32, 64, 0}
    for th in declared:
        if not th.widths or not set(th.widths) <= widths:
            raise TheoremFileError(f"--theorems: {th.name}: widths must be among 8, 16, 32, "
                                   f"64 (or 0 for width-free), not {th.widths}")
    return list(declared)
