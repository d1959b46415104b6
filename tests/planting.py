"""Planting a bug into the real code for a test: a function's own source with one piece of
text replaced, compiled in its module's namespace and patched in (pytest's monkeypatch undoes
it). The planted code is the shipped code but for that piece, so a test that catches it
catches a one-line bug in the real function, not in a copy written for the test."""

from __future__ import annotations

import inspect
import sys
import textwrap


def plant(monkeypatch, owner, name: str, old: str, new: str) -> None:
    """Replace ``owner.name`` (a function of a module or a class) by its source with ``old``,
    which must occur exactly once, replaced by ``new``."""
    function = getattr(owner, name)
    source = textwrap.dedent(inspect.getsource(function))
    assert source.count(old) == 1, f"{old!r} is not in {name} exactly once"
    namespace: dict = {}
    exec(compile(source.replace(old, new), f"<planted {name}>", "exec"),  # noqa: S102
         vars(sys.modules[function.__module__]), namespace)
    monkeypatch.setattr(owner, name, namespace[name])
