"""DIR/state.json of a campaign, read back for ``--resume``: hostile until checked.

Everything a resumed campaign uses is checked before the campaign starts, and a state that
fails any check is refused whole with a one-line reason (the CLI exits 2): a pool entry is
never skipped, because the pool decides every later request, so a resumed campaign with one
entry less would silently stop being the campaign it continues (a request is a function of
the seed, its index and the pool). The file is bounded in size, its JSON in depth (the parser's recursion limit); every pool
entry and every finding's input must be a request in the canonical form the campaign writes,
whose vector input is schema-valid; every stored vector must be schema-valid.
"""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Callable, Mapping

STATE = "state.json"
STATE_VERSION = 1
MAX_STATE_BYTES = 256 << 20


class StateError(Exception):
    """DIR/state.json is missing or unreadable (for --resume)."""


class _Damaged(Exception):
    pass


def _int(value: Any, where: str, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise _Damaged(f"{where} is not an integer >= {low}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise _Damaged(f"{where} is not a finite number >= 0")
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise _Damaged(f"{where} is not a string")
    return value


def _list(value: Any, where: str, item: Callable[[Any, str], Any] | None = None) -> list:
    if not isinstance(value, list):
        raise _Damaged(f"{where} is not a list")
    if item is not None:
        for i, v in enumerate(value):
            item(v, f"{where}[{i}]")
    return value


def _dict(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise _Damaged(f"{where} is not an object")
    return value


@functools.cache
def _input_problems() -> Callable[[Any], list[str]]:
    import spec
    from conformance.fastschema import compile_schema
    schema = spec.schema("vector")
    return compile_schema({"$ref": "#/$defs/input", "$defs": schema["$defs"]})


def request_problem(value: Any) -> str | None:
    """Why a stored request (pool entry, finding input) is not one the campaign wrote; None if it is."""
    from conformance.fuzz.program import FuzzInput
    if not isinstance(value, dict):
        return "not an object"
    try:
        inp = FuzzInput.from_json(value)
        vi = inp.vector_input()
        canonical = json.loads(json.dumps(inp.to_json()))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
        return f"{type(err).__name__}: {str(err)[:120]}"
    if canonical != value:
        return "not in the form the campaign writes"
    problems = _input_problems()(vi)
    return f"its vector input is invalid ({problems[0][:120]})" if problems else None


def _request(value: Any, where: str) -> None:
    problem = request_problem(value)
    if problem is not None:
        raise _Damaged(f"{where}: {problem}")


def _vector(value: Any, where: str) -> None:
    from conformance.schema import vector_problems
    problems = vector_problems(value) if isinstance(value, dict) else ["not an object"]
    if problems:
        raise _Damaged(f"{where}: not a valid vector ({problems[0][:120]})")


def _finding(f: Any, where: str, impls: int) -> None:
    _dict(f, where)
    for k in ("index", "original_size", "size", "tests"):
        _int(f.get(k), f"{where}.{k}")
    if _int(f.get("impl"), f"{where}.impl") >= impls:
        raise _Damaged(f"{where}.impl names no implementation")
    for k in ("class", "vector_id", "trace"):
        _str(f.get(k), f"{where}.{k}")
    _number(f.get("shrink_seconds"), f"{where}.shrink_seconds")
    for k in ("program", "diff"):
        _list(f.get(k), f"{where}.{k}", _str)
    if "exposed_as" in f:
        _str(f["exposed_as"], f"{where}.exposed_as")
    _request(f.get("input"), f"{where}.input")
    _vector(f.get("vector"), f"{where}.vector")


def _bucket(key: str, b: Any, impls: int) -> None:
    where = f"bucket {key[:80]!r}"
    _dict(b, where)
    impl = _int(b.get("impl"), f"{where}.impl")
    kind = _str(b.get("class"), f"{where}.class")
    if impl >= impls or key != f"{impl}|{kind}":
        raise _Damaged(f"{where}: its key, implementation and class disagree")
    for k in ("name", "command"):
        _str(b.get(k), f"{where}.{k}")
    for k in ("count", "first_index"):
        _int(b.get(k), f"{where}.{k}")
    _number(b.get("first_seconds"), f"{where}.first_seconds")
    if b.get("finding") is not None:
        _finding(b["finding"], f"{where}.finding", impls)


def _safety(e: Any, where: str, impls: int) -> None:
    _dict(e, where)
    for k in ("index", "size"):
        _int(e.get(k), f"{where}.{k}")
    if _int(e.get("impl"), f"{where}.impl") >= impls:
        raise _Damaged(f"{where}.impl names no implementation")
    for k in ("run", "detail", "vector_id"):
        _str(e.get(k), f"{where}.{k}")
    _list(e.get("seconds"), f"{where}.seconds", _number)
    _vector(e.get("vector"), f"{where}.vector")


def check_state(state: Any) -> None:
    """Raise _Damaged naming the first thing wrong with a parsed state."""
    _dict(state, "the state")
    if state.get("version") != STATE_VERSION:
        raise _Damaged(f"not a campaign state of version {STATE_VERSION}")
    _int(state.get("seed"), "seed", low=-(1 << 63))
    impls = _list(state.get("impls"), "impls", _str)
    if not impls or not all(c.strip() for c in impls):
        raise _Damaged("impls is empty or holds an empty command")
    for k in ("next_index", "pool_added", "corpus_cells", "executions", "divergent", "sessions"):
        _int(state.get(k), k)
    _number(state.get("seconds"), "seconds")
    for i, entry in enumerate(_list(state.get("pool"), "pool")):
        _request(entry, f"pool entry {i}")
    _list(state.get("cells"), "cells", _str)
    _list(state.get("arcs"), "arcs", _str)
    for key, b in _dict(state.get("buckets"), "buckets").items():
        _bucket(key, b, len(impls))
    for k, v in _dict(state.get("outcomes"), "outcomes").items():
        _int(v, f"outcomes.{k[:40]}")
    for k, v in _dict(state.get("workers"), "workers").items():
        if not k.isdigit():
            raise _Damaged(f"workers: {k[:40]!r} is not a worker number")
        _dict(v, f"workers.{k}")
        _int(v.get("requests"), f"workers.{k}.requests")
        _number(v.get("busy_seconds"), f"workers.{k}.busy_seconds")
    for i, g in enumerate(_list(state.get("growth"), "growth")):
        for k, v in _dict(g, f"growth[{i}]").items():
            _number(v, f"growth[{i}].{k[:40]}")
    if "hellos" in state:
        _list(state["hellos"], "hellos", lambda v, w: v is None or _dict(v, w))
    # Written since the safety net exists; a state from before has none.
    state.setdefault("safety_net", [])
    state.setdefault("safety_net_count", len(state["safety_net"]))
    _list(state["safety_net"], "safety_net", lambda e, w: _safety(e, w, len(impls)))
    if _int(state["safety_net_count"], "safety_net_count") < len(state["safety_net"]):
        raise _Damaged("safety_net_count is below the entries kept")


def load_state(out: Path) -> dict[str, Any]:
    """The checked state of the campaign in ``out``; StateError with a one-line reason if it is
    missing, too large, not JSON, nested too deeply, or damaged anywhere."""
    import os
    import stat
    path = out / STATE
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):      # a FIFO or a device would block or never end
            raise StateError(f"cannot resume from {path}: not a regular file")
        with open(path, "rb") as f:
            raw = f.read(MAX_STATE_BYTES + 1)
    except OSError as err:
        raise StateError(f"cannot resume from {path}: {err.strerror or err}") from None
    if len(raw) > MAX_STATE_BYTES:
        raise StateError(f"cannot resume from {path}: larger than {MAX_STATE_BYTES >> 20} MiB")
    try:
        state = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise StateError(f"cannot resume from {path}: not a campaign state (nested too deeply)") from None
    except ValueError as err:
        raise StateError(f"cannot resume from {path}: not a campaign state ({str(err)[:120]})") from None
    try:
        check_state(state)
    except _Damaged as err:
        raise StateError(f"cannot resume from {path}: damaged state: {err}") from None
    return state


def save_state(out: Path, state: Mapping[str, Any]) -> None:
    """Write the state whole or not at all (a temporary file renamed over the old one)."""
    import os
    tmp = out / (STATE + ".tmp")
    tmp.write_text(json.dumps(state, sort_keys=True), encoding="utf-8")
    os.replace(tmp, out / STATE)
