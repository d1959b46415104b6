"""Mutants of reference_vm: generated from the syntax tree of each module, and curated bugs.

A generated mutant changes one node: a binary operator (``+`` to ``-``, ``<<`` to ``>>``, ...),
a comparison (``<`` to ``<=``, ``==`` to ``!=``, ...), a boolean operator or ``not``, an
integer or boolean constant, or a statement (removed, replaced by ``pass``); or it plants one of
the bug classes of operators.py (a result list reordered, a copy's zero fill dropped, stale
return data, size fields read as signed). Docstrings,
annotations, strings and the messages of raised errors are never mutated.

A mutant's id is ``module:function:kind:key``, where key is a short hash of the mutated line
as it was and as the mutant has it (the first line of the enclosing statement, before and
after), followed by ``.n`` only for the n-th (n >= 2) mutant of the same function and kind
with identical lines. The id therefore names the mutated source text, not its position: an
edit elsewhere in the module, even in the same function, leaves it alone, and a reason in
equivalent.toml (which refers to mutants by id) cannot land on a different mutant. An entry
there that names no mutant is stale (``stale_equivalents``) and ``strength`` refuses to run.
"""

from __future__ import annotations

import ast
import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import reference_vm
from conformance.strength import operators

PACKAGE = Path(reference_vm.__file__).resolve().parent
HERE = Path(__file__).resolve().parent
# The modules mutated by default: handlers, accounting, validation, execution, state, result.
DEFAULT_MODULES = (
    *(f"instructions/{p.name}" for p in sorted((PACKAGE / "instructions").glob("*.py")) if p.name != "__init__.py"),
    "accounting.py", "container.py", "decode.py", "validate.py", "policy.py", "request.py",
    "execute.py", "program.py", "state.py", "result.py", "words.py",
)

# Every kind of generated mutant (curated bugs are kind "curated").
KINDS = ("binop", "compare", "boolop", "not", "constant", "statement", *operators.KINDS)
BINOPS = {ast.Add: (ast.Sub,), ast.Sub: (ast.Add,), ast.Mult: (ast.Add,), ast.FloorDiv: (ast.Mult,),
          ast.Mod: (ast.FloorDiv,), ast.BitAnd: (ast.BitOr,), ast.BitOr: (ast.BitAnd,),
          ast.BitXor: (ast.BitOr,), ast.LShift: (ast.RShift,), ast.RShift: (ast.LShift,),
          ast.Pow: (ast.Mult,)}
CMPOPS = {ast.Lt: (ast.LtE,), ast.LtE: (ast.Lt,), ast.Gt: (ast.GtE,), ast.GtE: (ast.Gt,),
          ast.Eq: (ast.NotEq,), ast.NotEq: (ast.Eq,), ast.Is: (ast.IsNot,), ast.IsNot: (ast.Is,),
          ast.In: (ast.NotIn,), ast.NotIn: (ast.In,)}
SYMBOL = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "//", ast.Mod: "%", ast.BitAnd: "&",
          ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>", ast.Pow: "**",
          ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
          ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in", ast.And: "and", ast.Or: "or"}


@dataclass(frozen=True)
class Mutant:
    id: str              # module:function:kind:key (see above), or curated:<name>
    module: str          # path under reference_vm/, e.g. "instructions/arithmetic.py"
    kind: str            # binop, compare, boolop, not, constant, statement, curated
    description: str
    line: int
    before: str          # the changed statement, as it was
    after: str           # and as the mutant has it
    source: str          # the whole mutated module

    @property
    def module_name(self) -> str:
        return "reference_vm." + self.module.removesuffix(".py").replace("/", ".")

    def diff(self) -> str:
        return (f"--- reference_vm/{self.module}:{self.line}\n"
                + "".join(f"- {x}\n" for x in self.before.splitlines())
                + "".join(f"+ {x}\n" for x in self.after.splitlines()))

    def to_json(self) -> dict:
        return {"id": self.id, "module": self.module, "kind": self.kind, "description": self.description,
                "line": self.line, "before": self.before, "after": self.after, "source": self.source}

    @classmethod
    def from_json(cls, doc: dict) -> "Mutant":
        return cls(**{k: doc[k] for k in cls.__dataclass_fields__})


def _skipped(tree: ast.AST) -> set[int]:
    """ids of nodes never mutated: docstrings, annotations, raise statements' messages,
    __slots__ and module-level __all__."""
    out: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            out.update(id(n) for n in ast.walk(body[0]))
        for ann in (getattr(node, "annotation", None), getattr(node, "returns", None)):
            if ann is not None:
                out.update(id(n) for n in ast.walk(ann))
        if isinstance(node, ast.Raise) and node.exc is not None:
            out.update(id(n) for n in ast.walk(node.exc) if isinstance(n, (ast.Constant, ast.JoinedStr)))
            if isinstance(node.exc, ast.Call):
                for arg in node.exc.args[1:]:
                    out.update(id(n) for n in ast.walk(arg))
        if isinstance(node, ast.JoinedStr):
            out.update(id(n) for n in ast.walk(node))
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ("__slots__", "__all__")
                                                for t in node.targets):
            out.update(id(n) for n in ast.walk(node))
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(id(n) for n in ast.walk(node))
    return out


class _Points(ast.NodeVisitor):
    """Every mutation point of a module: (function, statement, node, kind, replacement label)."""

    def __init__(self, skipped: set[int]):
        self.skipped = skipped
        self.function = "<module>"
        self.statement: ast.stmt | None = None
        self.frames: list[str] = []      # the enclosing function's Frame arguments
        self.points: list[tuple[str, ast.stmt, ast.AST, str, object]] = []

    def _scoped(self, node):
        outer, frames = self.function, self.frames
        self.function = node.name if outer == "<module>" else f"{outer}.{node.name}"
        if isinstance(node, ast.FunctionDef):
            self.frames = operators.frame_arguments(node)
        self.generic_visit(node)
        self.function, self.frames = outer, frames

    visit_FunctionDef = visit_ClassDef = _scoped

    def visit(self, node):
        if isinstance(node, ast.stmt) and not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            outer, self.statement = self.statement, node
            self._point(node)
            super().visit(node)
            self.statement = outer
            return
        if self.statement is not None and id(node) not in self.skipped:
            self._point(node)
        super().visit(node)

    def _point(self, node):
        add = lambda kind, new: self.points.append((self.function, self.statement, node, kind, new))  # noqa: E731
        if id(node) in self.skipped or self.function == "<module>":
            return
        if isinstance(node, ast.BinOp) and type(node.op) in BINOPS:
            for new in BINOPS[type(node.op)]:
                add("binop", new)
        elif isinstance(node, ast.AugAssign) and type(node.op) in BINOPS:
            for new in BINOPS[type(node.op)]:
                add("binop", new)
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in CMPOPS:
            for new in CMPOPS[type(node.ops[0])]:
                add("compare", new)
        elif isinstance(node, ast.BoolOp):
            add("boolop", ast.Or if isinstance(node.op, ast.And) else ast.And)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add("not", None)
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            add("constant", not node.value)
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            add("constant", node.value + 1 if node.value != 1 else 0)
        if isinstance(node, (ast.Expr, ast.Assign, ast.AugAssign, ast.Return, ast.Raise, ast.If)) \
                and not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            add("statement", None)
        for kind, variant in operators.points(node, self.statement, self.frames):
            add(kind, variant)


def _apply(node: Any, kind: str, new) -> str:
    """Mutate node in place; return a short description."""
    if kind == "binop":
        old, node.op = type(node.op), new()
        return f"{SYMBOL[old]} -> {SYMBOL[new]}"
    if kind == "compare":
        old, node.ops = type(node.ops[0]), [new()]
        return f"{SYMBOL[old]} -> {SYMBOL[new]}"
    if kind == "boolop":
        old, node.op = type(node.op), new()
        return f"{SYMBOL[old]} -> {SYMBOL[new]}"
    if kind == "constant":
        old, node.value = node.value, new
        return f"{old!r} -> {new!r}"
    raise AssertionError(kind)


class _Replace(ast.NodeTransformer):
    def __init__(self, target: ast.AST, replacement: ast.AST | None):
        self.target, self.replacement = target, replacement

    def visit(self, node):
        if node is self.target:
            return self.replacement
        return super().visit(node)


def _unparse(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 400 else text[:400] + " ..."


def _header(statement: ast.AST) -> str:
    """The first line of a statement's source (a compound statement's header, ``if x < y:``)."""
    return ast.unparse(statement).split("\n", 1)[0]


def _key(kind: str, before: str, after: str) -> str:
    return hashlib.sha256(f"{kind}\0{before}\0{after}".encode()).hexdigest()[:8]


def generated(module: str, source: str | None = None) -> Iterator[Mutant]:
    """Every generated mutant of reference_vm/<module> (or of ``source`` given as that module's
    text), in source order."""
    if source is None:
        source = (PACKAGE / module).read_text(encoding="utf-8")
    tree = ast.parse(source)
    points = _Points(_skipped(tree))
    points.visit(tree)
    counts: dict[tuple[str, str, str], int] = {}
    order = {id(n): i for i, n in enumerate(ast.walk(tree))}
    for function, statement, node, kind, new in points.points:
        where, at = order[id(statement)], order[id(node)]
        work = ast.parse(source)  # a fresh tree; ast.walk visits it in the same order
        nodes: list[Any] = list(ast.walk(work))
        statement, node = nodes[where], nodes[at]
        before, header_before = _unparse(statement), _header(statement)
        header_after = ""
        if kind == "statement":
            description = f"remove `{_unparse(statement).splitlines()[0][:60]}`"
            _Replace(node, ast.Pass()).visit(work)
            after = "pass"
        elif kind == "not":
            description = "drop `not`"
            _Replace(node, node.operand).visit(work)
            after = _unparse(statement)
        elif kind in operators.KINDS:
            replacement, description = operators.rewrite(node, kind, new)
            _Replace(node, replacement).visit(work)
            changed = replacement if node is statement else statement
            after, header_after = _unparse(changed), _header(changed)
        else:
            description = _apply(node, kind, new)
            after = _unparse(statement)
        if after == before:
            continue
        ast.fix_missing_locations(work)
        key = _key(kind, header_before, "pass" if kind == "statement" else header_after or _header(statement))
        seen = counts.get((function, kind, key), 0) + 1
        counts[(function, kind, key)] = seen
        yield Mutant(id=f"{module}:{function}:{kind}:{key}" + (f".{seen}" if seen > 1 else ""), module=module, kind=kind,
                     description=description, line=statement.lineno, before=before, after=after,
                     source=ast.unparse(work))


def curated(version: str | None = None) -> list[Mutant]:
    """The realistic bugs of curated.toml, each a textual patch of one module; with ``version``
    only those of the instructions of that spec version (a bug's ``since``, default the first)."""
    import spec
    data = tomllib.loads((HERE / "curated.toml").read_text(encoding="utf-8"))
    order = spec.names()
    out = []
    for entry in data["bug"]:
        since = entry.get("since", order[0])
        if since not in order:
            raise ValueError(f"curated bug {entry['name']}: since {since!r} is not a spec version")
        if version is not None and order.index(since) > order.index(version):
            continue
        module = entry["module"]
        source = (PACKAGE / module).read_text(encoding="utf-8")
        find, replace = entry["find"], entry["replace"]
        if source.count(find) != 1:
            raise ValueError(f"curated bug {entry['name']}: its find text occurs {source.count(find)} "
                             f"times in reference_vm/{module} (must be once)")
        line = source[:source.index(find)].count("\n") + 1
        out.append(Mutant(id=f"curated:{entry['name']}", module=module, kind="curated",
                          description=entry["description"], line=line, before=find.rstrip("\n"),
                          after=replace.rstrip("\n"), source=source.replace(find, replace)))
    return out


MAX_REASONS = 4 << 20      # bytes of one reasons file (the committed ones are below 100 KiB)


def reasons(path: Path) -> dict[str, str]:
    """Mutant id -> its written reason, from a list of ``[[mutant]]`` entries (id, reason).
    The file (``--reasons DIR`` may name any) is read only when it is a regular file, at most
    MAX_REASONS bytes; anything malformed is a ValueError naming the file."""
    from spec.files import read_bounded
    blob = read_bounded(path, MAX_REASONS, "mutant reasons file")   # FileRefused is a ValueError
    data = tomllib.loads(blob.decode("utf-8"))
    entries = data.get("mutant", [])
    if not isinstance(entries, list):
        raise ValueError(f"{path.name}: 'mutant' must be a list of [[mutant]] entries")
    out = {}
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("id"), str)
                and isinstance(entry.get("reason", ""), str)):
            raise ValueError(f"{path.name}: every [[mutant]] entry needs an id and a reason (strings)")
        if not entry.get("reason", "").strip():
            raise ValueError(f"{path.name}: mutant {entry['id']}: a reason is required")
        if entry["id"] in out:
            raise ValueError(f"{path.name}: mutant {entry['id']} is listed twice")
        out[entry["id"]] = entry["reason"].strip()
    return out


def equivalent(path: Path | None = None) -> dict[str, str]:
    """Mutant id -> the written reason it cannot change any behaviour (equivalent.toml)."""
    return reasons(path or HERE / "equivalent.toml")


def unreachable(path: Path | None = None) -> dict[str, str]:
    """Mutant id -> the written reason no protocol input reaches it (unreachable.toml)."""
    return reasons(path or HERE / "unreachable.toml")


def stale(listed: dict[str, str], modules: tuple[str, ...] = ()) -> list[str]:
    """The listed ids of the given modules (default every module) that name no generated
    mutant: a reason written for code that has changed since."""
    names = {m if m.endswith(".py") else m + ".py" for m in modules}
    wanted = [i for i in listed if not names or i.split(":", 1)[0] in names]
    ids: set[str] = set()
    for module in sorted({i.split(":", 1)[0] for i in wanted}):
        if (PACKAGE / module).is_file() and module.endswith(".py"):
            ids.update(m.id for m in generated(module))
    return [i for i in wanted if i not in ids]


def select(modules: tuple[str, ...] = (), limit: int | None = None, kinds: tuple[str, ...] = ()) -> list[Mutant]:
    """The generated mutants of the given modules (default DEFAULT_MODULES), of the given kinds
    (default every kind). With a limit, an evenly spread, deterministic sample of that many
    (chosen by the hash of their ids)."""
    names = [m if m.endswith(".py") else m + ".py" for m in modules] or list(DEFAULT_MODULES)
    unknown = [m for m in names if not (PACKAGE / m).is_file()]
    if unknown:
        raise ValueError(f"no module reference_vm/{unknown[0]}")
    found = [m for name in names for m in generated(name) if not kinds or m.kind in kinds]
    if limit is not None and limit < len(found):
        found = sorted(found, key=lambda m: hashlib.sha256(m.id.encode()).hexdigest())[:limit]
        found.sort(key=lambda m: (m.module, m.line, m.id))
    return found
