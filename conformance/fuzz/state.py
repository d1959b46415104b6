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

from conformance.fuzz.pool import CAPACITY, ENTRY_BYTES as POOL_ENTRY_BYTES
from spec.files import FileRefused, atomic_write, output_dir, read_json

STATE = "state.json"
STATE_VERSION = 1

# What a campaign's state can legitimately hold; the campaign enforces each bound when it
# records something (conformance.fuzz.campaign), so its own state always passes, and a resume
# refuses a state beyond any of them before parsing more than MAX_STATE_BYTES.
FINDINGS_KEPT = 32              # buckets whose shrunk finding (vector, input) is kept
FINDING_BYTES = 256 << 10       # ... each at most this large as JSON (else the bucket keeps none)
SAFETY_NET_KEEP = 64            # safety-net entries kept with their vectors (all are counted)
MAX_BUCKETS = 1024              # divergence classes bucketed (later ones are counted only)
MAX_CELLS = 32768               # grid cells and reference branch arcs recorded, each
MAX_NAME = 160                  # characters of a cell, an arc, an outcome or a class
MAX_COMMAND = 4096              # characters of an implementation's command line
MAX_IMPLS = 16                  # implementations of one campaign
GROWTH_KEEP = 1024              # points of the coverage-growth curve (thinned, first and last kept)
INTERNAL_KEEP = 64              # internal errors recorded (each skipped on --resume)
INTERNAL_BYTES = 64 << 10       # ... each at most this large as JSON (the input is dropped first)
HELLO_BYTES = 16 << 10          # an implementation's hello as recorded
MAX_COUNT = 1 << 53             # indices, counts and seconds (exact in a JSON number)
STATE_DEPTH = 32                # nesting of the JSON (a vector's result is the deepest part)
MAX_STATE_BYTES = (POOL_ENTRY_BYTES * CAPACITY + FINDING_BYTES * (FINDINGS_KEPT + SAFETY_NET_KEEP)
                   + INTERNAL_BYTES * INTERNAL_KEEP + 2 * MAX_CELLS * (MAX_NAME + 4)
                   + MAX_BUCKETS * (2 * MAX_COMMAND + 4 * MAX_NAME) + MAX_IMPLS * (MAX_COMMAND + HELLO_BYTES)
                   + (1 << 20))


class StateError(Exception):
    """DIR/state.json is missing or unreadable (for --resume)."""


class _Damaged(Exception):
    pass


def _int(value: Any, where: str, low: int = 0, high: int = MAX_COUNT) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _Damaged(f"{where} is not an integer between {low} and {high}")
    return value


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 <= value <= MAX_COUNT:
        raise _Damaged(f"{where} is not a finite number between 0 and {MAX_COUNT}")
    return value


def _str(value: Any, where: str, longest: int = MAX_NAME) -> str:
    if not isinstance(value, str) or len(value) > longest:
        raise _Damaged(f"{where} is not a string of at most {longest} characters")
    return value


def _text(value: Any, where: str) -> str:
    return _str(value, where, FINDING_BYTES)


def _list(value: Any, where: str, item: Callable[[Any, str], Any] | None = None, longest: int = MAX_COUNT) -> list:
    if not isinstance(value, list) or len(value) > longest:
        raise _Damaged(f"{where} is not a list of at most {longest} items")
    if item is not None:
        for i, v in enumerate(value):
            item(v, f"{where}[{i}]")
    return value


def _dict(value: Any, where: str, keys: Callable[[str], bool] | None = None, longest: int = MAX_COUNT) -> dict:
    if not isinstance(value, dict) or len(value) > longest:
        raise _Damaged(f"{where} is not an object of at most {longest} members")
    if keys is not None:
        for k in value:
            if not keys(k):
                raise _Damaged(f"{where}: unexpected member {k[:40]!r}")
    return value


def _sized(value: Any, where: str, limit: int) -> None:
    if len(json.dumps(value)) > limit:
        raise _Damaged(f"{where} is larger than the {limit} bytes it may hold")


@functools.cache
def _input_problems() -> Callable[[Any], list[str]]:
    import spec
    from conformance.corpus.fastschema import compile_schema
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


def sequence_problem(value: Any) -> str | None:
    """Why a stored sequence (a finding's input in sequence mode) is not one the campaign wrote."""
    from conformance.fuzz.sequence import SequenceInput
    from conformance.scenario.schema import input_problems
    if not isinstance(value, dict):
        return "not an object"
    try:
        seq = SequenceInput.from_json(value)
        scenario = seq.scenario_input()
        canonical = json.loads(json.dumps(seq.to_json()))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as err:
        return f"{type(err).__name__}: {str(err)[:120]}"
    if canonical != value:
        return "not in the form the campaign writes"
    problems = input_problems(scenario)
    return f"its scenario input is invalid ({problems[0][:120]})" if problems else None


def _request(value: Any, where: str, limit: int = POOL_ENTRY_BYTES, sequence: bool = False) -> None:
    problem = sequence_problem(value) if sequence else request_problem(value)
    if problem is not None:
        raise _Damaged(f"{where}: {problem}")
    _sized(value, where, limit)


def _vector(value: Any, where: str, sequence: bool = False) -> None:
    from conformance.corpus.schema import vector_problems
    from conformance.scenario.schema import vector_problems as scenario_problems
    check = scenario_problems if sequence else vector_problems
    problems = check(value) if isinstance(value, dict) else ["not an object"]
    if problems:
        raise _Damaged(f"{where}: not a valid vector ({problems[0][:120]})")


def _impl(value: Any, where: str, impls: int) -> int:
    return _int(value, where, 0, impls - 1)


def _finding(f: Any, where: str, impls: int, sequence: bool = False) -> None:
    members = {"index", "impl", "class", "vector_id", "vector", "input", "original_size", "size", "tests",
               "shrink_seconds", "program", "diff", "trace", "exposed_as", "minimal"}
    _dict(f, where, (members | {"steps", "original_steps"} if sequence else members).__contains__)
    _sized(f, where, FINDING_BYTES)
    for k in ("index", "original_size", "size", "tests") + (("steps", "original_steps") if sequence else ()):
        _int(f.get(k), f"{where}.{k}")
    _impl(f.get("impl"), f"{where}.impl", impls)
    for k in ("class", "vector_id"):
        _str(f.get(k), f"{where}.{k}")
    _text(f.get("trace"), f"{where}.trace")
    _number(f.get("shrink_seconds"), f"{where}.shrink_seconds")
    for k in ("program", "diff"):
        _list(f.get(k), f"{where}.{k}", _text)
    if "exposed_as" in f:
        _str(f["exposed_as"], f"{where}.exposed_as")
    if "minimal" in f and not isinstance(f["minimal"], bool):
        raise _Damaged(f"{where}.minimal is not true or false")
    _request(f.get("input"), f"{where}.input", FINDING_BYTES, sequence)
    _vector(f.get("vector"), f"{where}.vector", sequence)


def _bucket(key: str, b: Any, impls: int, sequence: bool = False) -> bool:
    """Checks a bucket; whether it holds a finding."""
    where = f"bucket {key[:80]!r}"
    _dict(b, where, {"impl", "name", "command", "class", "count", "first_index", "first_seconds",
                     "finding"}.__contains__)
    impl = _impl(b.get("impl"), f"{where}.impl", impls)
    kind = _str(b.get("class"), f"{where}.class")
    if key != f"{impl}|{kind}":
        raise _Damaged(f"{where}: its key, implementation and class disagree")
    _str(b.get("name"), f"{where}.name", MAX_COMMAND)
    _str(b.get("command"), f"{where}.command", MAX_COMMAND)
    for k in ("count", "first_index"):
        _int(b.get(k), f"{where}.{k}")
    _number(b.get("first_seconds"), f"{where}.first_seconds")
    if b.get("finding") is not None:
        _finding(b["finding"], f"{where}.finding", impls, sequence)
        return True
    return False


def _safety(e: Any, where: str, impls: int, sequence: bool = False) -> None:
    _dict(e, where, {"index", "impl", "run", "seconds", "detail", "vector_id", "size", "vector"}.__contains__)
    _sized(e, where, FINDING_BYTES)
    for k in ("index", "size"):
        _int(e.get(k), f"{where}.{k}")
    _impl(e.get("impl"), f"{where}.impl", impls)
    for k in ("run", "vector_id"):
        _str(e.get(k), f"{where}.{k}")
    _text(e.get("detail"), f"{where}.detail")
    _list(e.get("seconds"), f"{where}.seconds", _number, longest=2)
    _vector(e.get("vector"), f"{where}.vector", sequence)


def _internal(e: Any, where: str) -> None:
    _dict(e, where, {"index", "worker", "exception", "traceback", "input", "session", "last_index"}.__contains__)
    _sized(e, where, INTERNAL_BYTES)
    _int(e.get("index"), f"{where}.index")
    if e.get("last_index") is not None:       # a worker lost with a whole task (no request known)
        _int(e["last_index"], f"{where}.last_index", e["index"])
    if e.get("worker") is not None:
        _int(e["worker"], f"{where}.worker", 0, 1 << 16)
    _int(e.get("session"), f"{where}.session")
    _text(e.get("exception"), f"{where}.exception")
    _text(e.get("traceback"), f"{where}.traceback")
    if e.get("input") is not None:
        _request(e["input"], f"{where}.input", INTERNAL_BYTES)


def _growth(g: Any, where: str) -> None:
    for k, v in _dict(g, where, {"seconds", "executions", "cells", "arcs", "pool", "buckets"}.__contains__).items():
        _number(v, f"{where}.{k}")


def _hello(v: Any, where: str) -> None:
    """An implementation's hello as recorded: what the report reads of it is typed."""
    if v is not None:
        _dict(v, where)
        _sized(v, where, HELLO_BYTES)
        impl = _dict(v.get("implementation", {}), f"{where}.implementation")
        for k in ("name", "version"):
            if impl.get(k) is not None:
                _str(impl[k], f"{where}.implementation.{k}", MAX_COMMAND)
        _list(v.get("capabilities", []), f"{where}.capabilities", _str)


def _command(c: Any, where: str) -> None:
    if not _str(c, where, MAX_COMMAND).strip():
        raise _Damaged(f"{where} is an empty command")


# The state's members and the check of each (a member not listed is refused).
def _members(impls: int, sequence: bool = False) -> dict[str, Callable[[Any, str], Any]]:
    return {
        "sequences": lambda v, w: _int(v, w, 2, 64),
        "version": lambda v, w: None,                     # checked first
        "spec_version": _spec_version,
        "seed": lambda v, w: _int(v, w, -(1 << 63), (1 << 63) - 1),
        "impls": lambda v, w: None,                       # checked first (the others depend on it)
        "next_index": _int, "pool_added": _int, "executions": _int, "divergent": _int, "sessions": _int,
        "corpus_cells": lambda v, w: _int(v, w, 0, MAX_CELLS),
        "coverage_cells": lambda v, w: _int(v, w, 0, MAX_CELLS),
        "coverage_arcs": lambda v, w: _int(v, w, 0, MAX_CELLS),
        "pool_size": lambda v, w: _int(v, w, 0, CAPACITY),
        "seconds": _number,
        "stopped": lambda v, w: v is None or _str(v, w),
        "pool": _pool,
        "cells": lambda v, w: _list(v, w, _str, MAX_CELLS),
        "arcs": lambda v, w: _list(v, w, _str, MAX_CELLS),
        "classes": lambda v, w: _list(v, w, _str, MAX_BUCKETS),
        "buckets": lambda v, w: _buckets(v, w, impls, sequence),
        "outcomes": _outcomes,
        "workers": _workers,
        "growth": lambda v, w: _list(v, w, _growth, GROWTH_KEEP),
        "hellos": lambda v, w: _list(v, w, _hello, impls),
        "safety_net": lambda v, w: _list(v, w, lambda e, x: _safety(e, x, impls, sequence), SAFETY_NET_KEEP),
        "safety_net_count": _int,
        "internal_errors": lambda v, w: _list(v, w, _internal, INTERNAL_KEEP),
        "skip": lambda v, w: _list(v, w, _int, INTERNAL_KEEP),
    }


def _spec_version(value: Any, where: str) -> None:
    """The campaign's spec version (a state from before 1.1 has none: 1.0)."""
    import spec
    if value not in spec.names():
        raise _Damaged(f"{where}: {str(value)[:40]!r} is not a version of spec/versions.toml")


def _outcomes(value: Any, where: str) -> None:
    for k, n in _dict(value, where, longest=1024).items():
        _str(k, f"{where} name")
        _int(n, f"{where}.{k[:40]}")


def _pool(value: Any, where: str) -> None:
    for i, entry in enumerate(_list(value, where, longest=CAPACITY)):
        _request(entry, f"pool entry {i}")


def _workers(value: Any, where: str) -> None:
    for k, x in _dict(value, where, longest=1 << 16).items():
        _worker(k, x, f"{where}.{k[:40]}")


def _buckets(value: Any, where: str, impls: int, sequence: bool = False) -> None:
    kept = sum(_bucket(key, b, impls, sequence) for key, b in _dict(value, where, longest=MAX_BUCKETS).items())
    if kept > FINDINGS_KEPT:
        raise _Damaged(f"{where}: more than {FINDINGS_KEPT} findings kept")


def _worker(key: str, value: Any, where: str) -> None:
    if not key.isdigit() or len(key) > 6:
        raise _Damaged(f"workers: {key[:40]!r} is not a worker number")
    _dict(value, where, {"requests", "busy_seconds"}.__contains__)
    _int(value.get("requests"), f"{where}.requests")
    _number(value.get("busy_seconds"), f"{where}.busy_seconds")


REQUIRED = ("version", "seed", "impls", "next_index", "pool", "pool_added", "corpus_cells", "cells", "arcs",
            "buckets", "executions", "seconds", "outcomes", "workers", "growth", "divergent", "sessions")


def _first_version() -> str:
    import spec
    return spec.names()[0]


def check_state(state: Any) -> None:
    """Raise _Damaged naming the first thing wrong with a parsed state: every member typed and
    range-checked against what a campaign can hold, no member unknown, none missing."""
    _dict(state, "the state")
    if state.get("version") != STATE_VERSION:
        raise _Damaged(f"not a campaign state of version {STATE_VERSION}")
    impls = _list(state.get("impls"), "impls", _command, MAX_IMPLS)
    if not impls:
        raise _Damaged("impls is empty")
    members = _members(len(impls), "sequences" in state)
    for key in state:
        if key not in members:
            raise _Damaged(f"unexpected member {key[:40]!r}")
    for key in REQUIRED:
        if key not in state:
            raise _Damaged(f"{key} is missing")
    # Written since the safety net and the internal errors exist; a state from before has none.
    state.setdefault("safety_net", [])
    state.setdefault("safety_net_count", len(state["safety_net"]))
    state.setdefault("internal_errors", [])
    state.setdefault("skip", [])
    state.setdefault("classes", [])
    state.setdefault("spec_version", _first_version())
    for key, check in members.items():
        if key in state:
            check(state[key], key)
    if state["safety_net_count"] < len(state["safety_net"]):
        raise _Damaged("safety_net_count is below the entries kept")


def load_state(out: Path) -> dict[str, Any]:
    """The checked state of the campaign in ``out``; StateError with a one-line reason if it is
    missing, not a regular file, larger than a campaign's state can be, not JSON, nested too
    deeply, or damaged anywhere."""
    path = out / STATE
    try:
        state = read_json(path, MAX_STATE_BYTES, STATE_DEPTH, "campaign state")
    except FileRefused as err:
        reason = str(err)
        reason = reason[len(str(path)) + 2:] if reason.startswith(f"{path}: ") else reason
        raise StateError(f"cannot resume from {path}: {reason}") from None
    try:
        check_state(state)
    except _Damaged as err:
        raise StateError(f"cannot resume from {path}: damaged state: {err}") from None
    return state


def save_state(out: Path, state: Mapping[str, Any]) -> None:
    """Write the state whole or not at all (spec.files.atomic_write: a fresh temporary name in
    the same folder, synced, renamed; never through a link)."""
    atomic_write(output_dir(out, "campaign folder") / STATE, json.dumps(state, sort_keys=True))
