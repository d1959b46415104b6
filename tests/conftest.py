"""Shared helpers for the test suite."""

from __future__ import annotations

import pytest

from reference_vm import (
    Context, Contract, Limits, Message, Policy, WorldState, assemble, execute,
)

ENTRY = 0x100
CALLER = 0xCA11E7


def run_asm(source: str, *, call_data: bytes = b"", limits: Limits | None = None,
            policy: Policy | None = None, context: Context | None = None,
            storage: dict[int, int] | None = None, others: dict[int, str | bytes] | None = None,
            tracer=None, word_bits: int | None = None):
    """Assemble ``source``, deploy it at ENTRY (with ``storage``) next to ``others``
    (address -> assembly or container bytes), call it from CALLER and return the result."""
    contracts = {ENTRY: Contract(assemble(source), storage or {})}
    for address, code in (others or {}).items():
        contracts[address] = Contract(code if isinstance(code, bytes) else assemble(code))
    return execute(WorldState(contracts), Message(ENTRY, CALLER, call_data), context, policy,
                   limits, tracer=tracer, word_bits=word_bits)


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
