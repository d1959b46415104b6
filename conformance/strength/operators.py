"""Mutation operators for classes of bugs that no one-node change plants (mutants.py applies
them with the others; their ids have the same form, ``module:function:kind:key``).

- ``order``: a result list in another order. ``sorted(x)`` becomes ``list(x)`` (the order
  things were produced in), reversed, sorted by the hexadecimal strings of its entries' fields
  (``"0x10" < "0x9"``), or sorted with the first two fields swapped (key before address);
  ``tuple(x)`` is reversed.
- ``zerofill``: the zero fill of a copy dropped. ``t[a:b] = chunk + bytes(n)`` becomes
  ``t[a:a + len(chunk)] = chunk``: the bytes past the source's end keep what ``t`` held.
- ``stale``: an empty output replaced by the frame's earlier return data. In a function with
  a ``Frame`` argument, a ``b""`` in a ``return`` or ``raise`` becomes ``<frame>.return_data``.
- ``signed``: size arithmetic with the wrong sign. ``int.from_bytes(b, "little")`` reads ``b``
  as a signed (two's complement) integer.
"""

from __future__ import annotations

import ast
from typing import Any

KINDS = ("order", "zerofill", "stale", "signed")
ORDERS = ("unsorted", "reversed", "hex_strings", "first_fields_swapped")
# The fields of an entry as a tuple: a dataclass's fields, a tuple itself, else the entry alone.
_FIELDS = ("(__import__('dataclasses').astuple(e) if __import__('dataclasses').is_dataclass(e) "
           "else e if isinstance(e, tuple) else (e,))")
_KEYS = {"hex_strings": f"lambda e: tuple(hex(f) if isinstance(f, int) else repr(f) for f in {_FIELDS})",
         "first_fields_swapped": f"lambda e: (lambda t: (*t[1:2], *t[:1], *t[2:]))({_FIELDS})"}


def frame_arguments(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    """The names of a function's arguments annotated ``Frame``."""
    return [a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)
            if isinstance(a.annotation, ast.Name) and a.annotation.id == "Frame"]


def _name(node: ast.AST) -> str | None:
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


def _zero_filled(node: ast.AST) -> bool:
    """``t[a:b] = x + bytes(n)`` with a lower bound."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return False
    target, value = node.targets[0], node.value
    return (isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Slice)
            and target.slice.lower is not None and isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add) and _name(value.right) == "bytes")


def points(node: ast.AST, statement: ast.stmt | None, frames: list[str]) -> list[tuple[str, Any]]:
    """(kind, variant) of every class mutation at ``node`` (inside ``statement``, in a function
    whose Frame arguments are ``frames``)."""
    out: list[tuple[str, Any]] = []
    name = _name(node)
    if isinstance(node, ast.Call) and name == "sorted" and len(node.args) == 1:
        keyed = any(k.arg == "key" for k in node.keywords)
        out += [("order", v) for v in ORDERS if not (keyed and v in _KEYS)]
    elif isinstance(node, ast.Call) and name == "tuple" and len(node.args) == 1 and not node.keywords:
        out.append(("order", "reversed"))
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "from_bytes"
            and not any(k.arg == "signed" for k in node.keywords)):
        out.append(("signed", None))
    if _zero_filled(node):
        out.append(("zerofill", None))
    if (isinstance(node, ast.Constant) and node.value == b"" and frames
            and isinstance(statement, (ast.Return, ast.Raise))):
        out.append(("stale", frames[0]))
    return out


def _expr(text: str) -> ast.expr:
    return ast.parse(text, mode="eval").body


def rewrite(node: Any, kind: str, variant: Any) -> tuple[ast.AST, str]:
    """The node that replaces ``node``, and a one-line description."""
    if kind == "order" and _name(node) == "tuple":
        return _expr(f"tuple(reversed(list({ast.unparse(node.args[0])})))"), "tuple(x) -> reversed"
    if kind == "order":
        arg = ast.unparse(node.args[0])
        keywords = [k for k in node.keywords if k.arg != "reverse"]
        rest = "".join(f", {ast.unparse(k)}" for k in keywords)
        if variant == "unsorted":
            return _expr(f"list({arg})"), "sorted(x) -> unsorted (the order produced)"
        if variant == "reversed":
            flipped = not any(k.arg == "reverse" and isinstance(k.value, ast.Constant) and k.value.value
                              for k in node.keywords)
            return _expr(f"sorted({arg}{rest}, reverse={flipped})"), "sorted(x) -> reversed"
        return (_expr(f"sorted({arg}{rest}, key={_KEYS[variant]})"),
                f"sorted(x) -> sorted by {variant.replace('_', ' ')}")
    if kind == "signed":
        call = _expr(ast.unparse(node))
        assert isinstance(call, ast.Call)
        call.keywords.append(ast.keyword(arg="signed", value=ast.Constant(True)))
        return call, "from_bytes -> signed"
    if kind == "zerofill":
        target = node.targets[0]
        chunk = ast.unparse(node.value.left)
        lower = ast.unparse(target.slice.lower)
        text = f"{ast.unparse(target.value)}[{lower}:{lower} + len({chunk})] = {chunk}"
        return ast.parse(text).body[0], "drop the zero fill past the source's end"
    if kind == "stale":
        return _expr(f"{variant}.return_data"), f'b"" -> {variant}.return_data (stale return data)'
    raise AssertionError(kind)
