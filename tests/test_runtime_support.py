"""Shared helpers for the runtime tests (no tests here): programs, clocks, runtimes."""

from __future__ import annotations

import hashlib
import itertools
from datetime import datetime, timedelta, timezone
from pathlib import Path

import spec
from reference_vm import assemble
from rtwo_vm.runtime import Runtime, counting_ids

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# The version a runtime deploys a contract under when none is given: the newest. Tests whose
# behaviour is the same in every version assemble and compare under it.
VERSION = spec.latest()


def shown_url(url: str) -> str:
    """How chapter 10.8 shows a URL whose path may hold a secret, computed here by hand:
    scheme, host and port, ``/...`` for the path, ``?...`` for a query, ``***@`` for user
    information, and ``#`` with 8 hex digits of the SHA-256 of the whole URL."""
    scheme, rest = url.split("://", 1)
    netloc, _, tail = rest.partition("/")
    host = netloc.rpartition("@")[2]
    query = "?..." if "?" in tail else ""
    user = "***@" if "@" in netloc else ""
    return f"{scheme}://{user}{host}/...{query}#{hashlib.sha256(url.encode()).hexdigest()[:8]}"


def native_runs_versions() -> bool:
    """Whether native_vm's engine takes a spec version (it is versioned on its own branch):
    the registry registers native VMs only then."""
    from rtwo_vm.runtime import engines
    return engines.engine("native_engine")[0] is not None


# The VMs the first call registers: one per version (1.0, 1.1) and mode whose engine runs it
# (reference_interpreter, compiled_engine, and native_engine once it takes a version).
DEFAULT_VMS = 2 * (3 if native_runs_versions() else 2)


def example(name: str) -> bytes:
    return assemble((EXAMPLES / f"{name}.rasm").read_text(), VERSION)


class StepClock:
    """A deterministic clock: each reading is one millisecond after the previous."""

    def __init__(self, start: datetime = datetime(2025, 1, 1, tzinfo=timezone.utc)):
        self._ticks = itertools.count()
        self._start = start

    def __call__(self) -> datetime:
        return self._start + timedelta(milliseconds=next(self._ticks))


def runtime(path=":memory:", **kwargs) -> Runtime:
    kwargs.setdefault("clock", StepClock())
    kwargs.setdefault("ids", counting_ids())
    return Runtime(str(path), **kwargs)


# Small programs, one per outcome the tests need.
PROGRAMS = {
    "stop": "stop",
    "trap": "trap",
    "underflow": "add\nstop",
    "time": "time\npop\nstop",
    "random": "random\npop\nstop",
    "reader": "push 0\nsload\npop\nstop",
    # Calls itself with all the compute it has: the chain ends at the call depth limit.
    "recursive": "self\ncomputeleft\npush 0\npush 0\ncall\npop\nstop",
    # Calls the counter at 0x101, then traps: the callee succeeded but its effects are undone.
    "call_then_trap": "push 0x101\npush 100000\npush 0\npush 0\ncall\npop\ntrap",
    # Calls 0x103 (whatever is there) and stops.
    "call_0x103": "push 0x103\npush 100000\npush 0\npush 0\ncall\npop\nstop",
    # Emits one event with topic 7 and no data, then stores 1 at slot 3.
    "logger": "push 0\npush 0\npush 7\nlog1\npush 3\npush 1\nsstore\nstop",
    # From 1.1: calls 0x101 read-only (STATICCALL) and stops; a write there is READ_ONLY_WRITE.
    "staticcall_0x101": "push 0x101\npush 100000\npush 0\npush 0\nstaticcall\npop\nstop",
    "writer": "push 3\npush 1\nsstore\nstop",
    # From 1.1: writes transient slots 1, 2, ... until TRANSIENT_STORAGE_FULL.
    "transient_filler": "push 0\nloop:\ndup1\ndup1\npush 1\nadd\ntstore\npush 1\nadd\njump loop",
}


def program(name: str) -> bytes:
    return assemble(PROGRAMS[name], VERSION)


def dump(path) -> list[str]:
    """Every row of a database file, for before/after comparisons."""
    import sqlite3
    conn = sqlite3.connect(str(path))
    try:
        return list(conn.iterdump())
    finally:
        conn.close()
