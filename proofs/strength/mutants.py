"""Mutants of the opcode models and the reference handlers, generated from syntax trees.

Operators (kinds), each the class of a bug the audit found:

- ``compare``: a boundary shift, ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``, and in
  z3 models ``UGE`` <-> ``UGT``, ``ULE`` <-> ``ULT``;
- ``constant``: an integer constant plus one and minus one;
- ``index``: the wrong item, a constant subscript off by one (``stack[-1]`` -> ``stack[-2]``),
  and the first two names of a tuple unpacking swapped (``(length, offset), s = s.pop(2)``);
- ``byteorder``: ``"little"`` <-> ``"big"``;
- ``statement``: a dropped effect, an expression statement (``frame.undo.append(...)``, a
  release) or an augmented assignment removed;
- ``stale``: in a function with a ``Frame`` argument, a ``b""`` in a return or raise becomes
  ``<frame>.return_data``.

Docstrings, annotations, imports, module-level code and the messages of raised errors are
never mutated. A mutant's id is ``root/module:function:kind:key`` with key a short hash of
the first line of the mutated statement before and after (``.n`` for the n-th identical
one): the id names the mutated text, not its position, so a reason written for it cannot
land on another mutant. Duplicated from conformance/strength/mutants.py (which proofs may
not import): this id scheme (``_key``), the skipped-node rule and the ``[[mutant]]`` reasons
reader; the operators are this package's own.
"""

from __future__ import annotations

import ast
import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

ROOT = Path(__file__).resolve().parents[2]      # the tree the mutants are generated from
HERE = Path(__file__).resolve().parent
ROOTS = ("proofs/instructions", "reference_vm/instructions")
# Beyond the handlers: the interpreter's frame and segment machinery (reference_vm/execute.py),
# mutated in these functions only (run.FRAME_UNITS gives each its unit): nested calls, their
# undo and records, a frame's end and memory release, the segment fast path and the defining
# per-instruction path, the random stream; and the models' read-only rule (proofs/accounting.py,
# from 1.1: SSTORE, TSTORE and LOGn fault in a read-only frame).
FRAME_FUNCTIONS = {"reference_vm/execute.py": ("Execution.call", "Execution.run_frame",
                                               "Execution.run_segment", "Execution.step",
                                               "Execution.next_random"),
                   "proofs/accounting.py": ("unless_read_only",)}
KINDS = ("compare", "constant", "index", "byteorder", "statement", "stale")
CMPOPS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
          ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
Z3CMP = {"UGE": "UGT", "UGT": "UGE", "ULE": "ULT", "ULT": "ULE"}
MAX_REASONS = 1 << 20


@dataclass(frozen=True)
class Mutant:
    id: str
    path: str            # relative to the tree, e.g. "proofs/instructions/control.py"
    function: str        # e.g. "models.returning.model"
    kind: str
    description: str
    line: int
    before: str
    after: str
    source: str          # the whole mutated module
    node_line: int = 0   # the line of the mutated node (0: not known, a planted mutant)

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @classmethod
    def from_json(cls, doc: dict) -> "Mutant":
        return cls(**{k: doc[k] for k in cls.__dataclass_fields__ if k in doc})


def modules() -> list[str]:
    return [f"{root}/{p.name}" for root in ROOTS for p in sorted((ROOT / root).glob("*.py"))
            if p.name != "__init__.py"] + list(FRAME_FUNCTIONS)


def _in_scope(path: str, function: str) -> bool:
    """Whether ``function`` of ``path`` is mutated (every function of a handler or model
    module; only FRAME_FUNCTIONS, and what they define, elsewhere)."""
    chosen = FRAME_FUNCTIONS.get(path)
    return chosen is None or any(function == f or function.startswith(f + ".") for f in chosen)


def _skipped(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            out.update(id(n) for n in ast.walk(body[0]))
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                out.update(id(n) for n in ast.walk(ann))
        if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
            for arg in node.exc.args:
                if isinstance(arg, ast.JoinedStr) or (isinstance(arg, ast.Constant)
                                                       and isinstance(arg.value, str)):
                    out.update(id(n) for n in ast.walk(arg))
        if isinstance(node, (ast.JoinedStr, ast.Import, ast.ImportFrom)):
            out.update(id(n) for n in ast.walk(node))
    return out


def _frames(function: ast.FunctionDef | ast.ClassDef) -> list[str]:
    if isinstance(function, ast.ClassDef):
        return []
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args)
            if isinstance(a.annotation, ast.Name) and a.annotation.id == "Frame"]


class _Points(ast.NodeVisitor):
    """(function, statement index, node index, kind, variant) of every mutation point."""

    def __init__(self, skipped: set[int], order: dict[int, int]):
        self.skipped, self.order = skipped, order
        self.function = "<module>"
        self.frames: list[str] = []
        self.statement: ast.stmt | None = None
        self.points: list[tuple[str, int, int, str, Any]] = []

    def visit_FunctionDef(self, node):
        outer, frames = self.function, self.frames
        self.function = node.name if outer == "<module>" else f"{outer}.{node.name}"
        self.frames = _frames(node) or frames
        for child in node.body:
            self.visit(child)
        self.function, self.frames = outer, frames

    visit_ClassDef = visit_FunctionDef

    def visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            outer, self.statement = self.statement, node
            self._point(node)
            super().visit(node)
            self.statement = outer
            return None
        if self.statement is not None:
            self._point(node)
        return super().visit(node)

    def _point(self, node):
        if id(node) in self.skipped or self.function == "<module>" or self.statement is None:
            return

        def add(kind, variant=None):
            self.points.append((self.function, self.order[id(self.statement)], self.order[id(node)],
                                kind, variant))
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMPOPS:
            add("compare")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in Z3CMP:
            add("compare")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and type(node.slice.value) is int:
            add("index")
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.UnaryOp) \
                and isinstance(node.slice.operand, ast.Constant) and type(node.slice.operand.value) is int:
            add("index")
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            add("constant", +1)
            add("constant", -1)
        elif isinstance(node, ast.Constant) and node.value in ("little", "big"):
            add("byteorder")
        elif isinstance(node, ast.Constant) and node.value == b"" and self.frames \
                and isinstance(self.statement, (ast.Return, ast.Raise)):
            add("stale", self.frames[0])
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Tuple):
            names = node.targets[0].elts
            if isinstance(names[0], ast.Tuple) and len(names[0].elts) >= 2:
                add("index", "swap")
        if isinstance(node, ast.AugAssign) or (isinstance(node, ast.Expr)
                                               and not isinstance(node.value, ast.Constant)):
            add("statement")


def _subscript_index(node: ast.Subscript) -> int:
    """The index of s[2] or s[-1] (_Points finds no other "index" point)."""
    s = node.slice
    constant = s.operand if isinstance(s, ast.UnaryOp) else s
    assert isinstance(constant, ast.Constant) and type(constant.value) is int, "an integer index"
    return -constant.value if isinstance(s, ast.UnaryOp) else constant.value


def _mutate(tree: ast.AST, statement: Any, node: Any, kind: str, variant: Any, parents) -> str:
    """Change node (in tree) in place; return a description."""
    if kind == "compare" and isinstance(node, ast.Compare):
        old = type(node.ops[0])
        node.ops = [CMPOPS[old]()]
        return f"{SYMBOL[old]} -> {SYMBOL[CMPOPS[old]]}"
    if kind == "compare":
        old = node.func.attr
        node.func.attr = Z3CMP[old]
        return f"{old} -> {Z3CMP[old]}"
    if kind == "constant":
        node.value = node.value + variant
        return f"{node.value - variant} -> {node.value}"
    if kind == "index" and variant == "swap":
        names = node.targets[0].elts[0].elts
        names[0], names[1] = names[1], names[0]
        return "the first two stack items swapped"
    if kind == "index":
        was = _subscript_index(node)
        new = was - 1 if was < 0 else was + 1
        node.slice = ast.Constant(new) if new >= 0 else ast.UnaryOp(ast.USub(), ast.Constant(-new))
        return f"[{was}] -> [{new}] (the wrong item)"
    if kind == "byteorder":
        old, node.value = node.value, "big" if node.value == "little" else "little"
        return f"{old!r} -> {node.value!r}"
    if kind == "stale":
        parent, field, index = parents[id(node)]
        replacement = ast.parse(f"{variant}.return_data", mode="eval").body
        if index is None:
            setattr(parent, field, replacement)
        else:
            getattr(parent, field)[index] = replacement
        return f'b"" -> {variant}.return_data (stale return data)'
    if kind == "statement":
        parent, field, index = parents[id(node)]
        getattr(parent, field)[index] = ast.Pass()
        return f"drop `{ast.unparse(node).splitlines()[0][:60]}`"
    raise AssertionError(kind)


def _parents(tree: ast.AST) -> dict[int, tuple[ast.AST, str, int | None]]:
    out: dict[int, tuple[ast.AST, str, int | None]] = {}
    for parent in ast.walk(tree):
        for field, value in ast.iter_fields(parent):
            if isinstance(value, list):
                for i, child in enumerate(value):
                    if isinstance(child, ast.AST):
                        out[id(child)] = (parent, field, i)
            elif isinstance(value, ast.AST):
                out[id(value)] = (parent, field, None)
    return out


def _key(kind: str, before: str, after: str) -> str:
    return hashlib.sha256(f"{kind}\0{before}\0{after}".encode()).hexdigest()[:8]


def _header(node: ast.AST) -> str:
    return ast.unparse(node).split("\n", 1)[0]


def generated(path: str, source: str | None = None) -> Iterator[Mutant]:
    """Every generated mutant of the module at ``path`` (relative to the tree), in order."""
    source = (ROOT / path).read_text(encoding="utf-8") if source is None else source
    tree = ast.parse(source)
    order = {id(n): i for i, n in enumerate(ast.walk(tree))}
    points = _Points(_skipped(tree), order)
    points.visit(tree)
    counts: dict[tuple[str, str, str], int] = {}
    for function, where, at, kind, variant in points.points:
        if not _in_scope(path, function):
            continue
        work = ast.parse(source)
        nodes: list[Any] = list(ast.walk(work))
        statement, node = nodes[where], nodes[at]
        before = _header(statement)
        description = _mutate(work, statement, node, kind, variant, _parents(work))
        after = "pass" if kind == "statement" else _header(statement)
        if after == before:
            continue
        ast.fix_missing_locations(work)
        key = _key(kind, before, after)
        seen = counts.get((function, kind, key), 0) + 1
        counts[(function, kind, key)] = seen
        yield Mutant(id=f"{path}:{function}:{kind}:{key}" + (f".{seen}" if seen > 1 else ""),
                     path=path, function=function, kind=kind, description=description,
                     line=statement.lineno, before=before, after=after, source=ast.unparse(work),
                     node_line=getattr(node, "lineno", statement.lineno))


def planted(path: str, function: str, find: str, replace: str, name: str) -> Mutant:
    """A hand-written mutant: ``find`` (once in the module) replaced by ``replace``."""
    source = (ROOT / path).read_text(encoding="utf-8")
    if source.count(find) != 1:
        raise ValueError(f"planted mutant {name}: its text occurs {source.count(find)} times in {path}")
    line = source[:source.index(find)].count("\n") + 1
    return Mutant(id=f"planted:{name}", path=path, function=function, kind="planted",
                  description=f"{find.strip()} -> {replace.strip()}", line=line, before=find,
                  after=replace, source=source.replace(find, replace))


def select(paths: tuple[str, ...] = (), limit: int | None = None,
           kinds: tuple[str, ...] = (), keep: Callable[[Mutant], bool] | None = None) -> list[Mutant]:
    """The generated mutants of the given modules (default every model and handler module),
    of the given kinds, that ``keep`` accepts (run.of_version: those of a spec version); with
    a limit, a deterministic spread sample (by the hash of the ids)."""
    known = modules()
    names = []
    for p in paths or tuple(known):
        match = [m for m in known if m == p or m.endswith("/" + p) or m.endswith("/" + p + ".py")]
        if len(match) != 1:
            raise ValueError(f"no single model or handler module {p!r} (e.g. "
                             "proofs/instructions/control.py or reference_vm/instructions/stack)")
        names.append(match[0])
    found = [m for name in names for m in generated(name)
             if (not kinds or m.kind in kinds) and (keep is None or keep(m))]
    if limit is not None and limit < len(found):
        found = sorted(found, key=lambda m: hashlib.sha256(m.id.encode()).hexdigest())[:limit]
        found.sort(key=lambda m: (m.path, m.line, m.id))
    return found


def reasons(path: Path) -> dict[str, str]:
    """Mutant id -> its written reason, from ``[[mutant]]`` entries (id, reason)."""
    from spec.files import read_bounded   # FileRefused is a ValueError
    blob = read_bounded(path, MAX_REASONS, "reasons file")
    try:
        data = tomllib.loads(blob.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ValueError(f"{path.name}: {err}") from None
    entries = data.get("mutant", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path.name}: 'mutant' must be a list of [[mutant]] entries")
    out: dict[str, str] = {}
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str)
                and isinstance(entry.get("reason"), str) and entry["reason"].strip()):
            raise ValueError(f"{path.name}: every [[mutant]] entry needs an id and a reason")
        if entry["id"] in out:
            raise ValueError(f"{path.name}: mutant {entry['id']} is listed twice")
        out[entry["id"]] = entry["reason"].strip()
    return out


def equivalent() -> dict[str, str]:
    return reasons(HERE / "equivalent.toml")


def unreachable() -> dict[str, str]:
    return reasons(HERE / "unreachable.toml")
