"""Shared helpers for the test suite, its isolation and its hypothesis profile.

Every test runs in its own temporary directory (``isolated_cwd``): whatever a command writes
by default (``build/...``, ``rtwo-vm.db``) lands there, its evidence data directory
(``$RTWO_VM_DATA``: proofs and conformance reports) is its own, and nothing a previous run left
in the checkout or the user's data directory is read.

hypothesis uses the profile ``rtwo`` (or ``rtwo-ci`` when ``CI`` is set, as in ``.ci/run``):
derandomized in CI, with its example database outside the checkout (under the system's
temporary directory, or none in CI). ``HYPOTHESIS_PROFILE`` selects a profile by name.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis.database import DirectoryBasedExampleDatabase

from reference_vm import (
    Context, Contract, Limits, Message, Policy, WorldState, assemble, execute,
)

_DATABASE = Path(tempfile.gettempdir()) / "rtwo-vm-hypothesis"
settings.register_profile("rtwo", database=DirectoryBasedExampleDatabase(str(_DATABASE)),
                          print_blob=True)
settings.register_profile("rtwo-ci", derandomize=True, database=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("rtwo-ci" if os.environ.get("CI") else "rtwo"))


def pytest_collection_modifyitems(items):
    """The modules that hold a ``@pytest.mark.slow`` test (half a minute or more) first.

    pytest-xdist (pyproject.toml: ``-n 2 --dist loadscope --no-loadscope-reorder``) hands each
    module (each class of a TestCase) to one worker as a whole, in this order: a module's
    module-scoped fixtures (a site build, a corpus run) are made once, tests that share a
    resource across modules live in one module (tests/test_ray.py), and the modules with the
    longest tests start first, so that both workers end together instead of one running a
    long test alone at the end."""
    slow = {item.nodeid.split("::", 1)[0] for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.nodeid.split("::", 1)[0] not in slow)   # stable


@pytest.fixture(autouse=True)
def isolated_cwd(tmp_path, tmp_path_factory, monkeypatch):
    """Run every test in its own temporary directory, never in the checkout, with its own
    sink key (rtwo_vm/runtime/sinks/approval.py: ``events sink-add`` creates it) outside it,
    never the user's, and its own empty proofs verdict cache and key (proofs/cache.py:
    ``rtwo-vm prove`` uses one by default), never the user's, and its own data directory
    (rtwo_vm/arguments/evidence.py: where reports are written and readiness reads them), never
    the user's."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RTWO_VM_DATA", str(tmp_path_factory.mktemp("data")))
    monkeypatch.setenv("RTWO_VM_SINK_KEY_FILE",
                       str(tmp_path_factory.mktemp("sink-key") / "sink.key"))
    keys = tmp_path_factory.mktemp("proofs-cache")
    monkeypatch.setenv("RTWO_VM_PROOFS_CACHE", str(keys / "cache"))
    monkeypatch.setenv("RTWO_VM_PROOFS_CACHE_KEY", str(keys / "key" / "proofs-cache.key"))
    return tmp_path


ENTRY = 0x100
CALLER = 0xCA11E7


# The instruction tests of version 1.0's instructions (tests/test_ops_*.py) run under 1.0 unless
# they name another version: their expectations come from 1.0's data (tests/opspec.py).
BASE_VERSION = "1.0"


def run_asm(source: str, *, call_data: bytes = b"", limits: Limits | None = None,
            policy: Policy | None = None, context: Context | None = None,
            storage: dict[int, int] | None = None, others: dict[int, str | bytes] | None = None,
            tracer=None, word_bits: int | None = None, version: str = BASE_VERSION):
    """Assemble ``source`` as a container of ``version``, deploy it at ENTRY (with ``storage``)
    next to ``others`` (address -> assembly or container bytes), call it from CALLER under spec
    version ``version`` and return the result."""
    contracts = {ENTRY: Contract(assemble(source, version), storage or {})}
    for address, code in (others or {}).items():
        contracts[address] = Contract(code if isinstance(code, bytes) else assemble(code, version))
    return execute(WorldState(contracts), Message(ENTRY, CALLER, call_data), context, policy,
                   limits, version=version, tracer=tracer, word_bits=word_bits)


def returning_top(body: str) -> str:
    """Assembly that runs ``body`` and returns the top of the stack as one little-endian word."""
    return f"""
    {body}
    push 0
    swap1
    mstore
    push 0
    push 8
    return
    """


def word_out(result) -> int:
    assert result.status == "success", (result.status, result.error)
    return int.from_bytes(result.output, "little")


@pytest.fixture
def run():
    return run_asm


def need_bitwuzla():
    """The bitwuzla module (the test extra installs it): the test is skipped without it,
    except in CI (``CI`` set, as ``.ci/run`` does), where a missing one is a failure."""
    if os.environ.get("CI"):
        import bitwuzla
        return bitwuzla
    return pytest.importorskip("bitwuzla")


def pytest_terminal_summary(terminalreporter):
    """What CI (and every run, -q too) says of the proofs' verdict cache, at the end."""
    terminalreporter.write_line("verdict cache: none used or carried between runs (every test gets "
                                "its own empty one: tests/conftest.py)")
