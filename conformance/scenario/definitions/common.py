"""Building blocks of the scenario definitions: call data words, and the small contracts
several scenarios deploy."""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import BASE, CALLER, ENTRY, OTHER, THIRD, returning

__all__ = ["BASE", "CALLER", "ENTRY", "OTHER", "THIRD", "TABLE", "WORD", "data", "word", "COUNTER",
           "KV", "SET", "GET", "SET_REVERT", "SET_TRAP", "SET_SPIN", "SET_TWO", "FORWARDER", "forwarder"]

TABLE = spec.load(BASE)
WORD = TABLE.limits["machine"]["word_bits"] // 8


def word(value: int) -> bytes:
    """One call data or output word (little-endian, chapter 2)."""
    return value.to_bytes(WORD, "little")


def data(*words: int) -> bytes:
    return b"".join(map(word, words))


# counter: storage slot 0 counts the calls; each call adds 1 and returns the new count.
COUNTER = """
    push 0
    sload
    push 1
    add
    push 0
    dup2
    sstore
""" + returning(1)

# kv: call data word 0 is the operation, word 1 a key, word 2 a value.
SET, GET, SET_REVERT, SET_TRAP, SET_SPIN, SET_TWO = 1, 2, 3, 4, 5, 6
_BRANCHES = "".join(f"    dup1\n    push {op}\n    eq\n    jumpi {label}\n" for op, label in (
    (SET, "set"), (GET, "get"), (SET_REVERT, "set_revert"), (SET_TRAP, "set_trap"),
    (SET_SPIN, "set_spin"), (SET_TWO, "set_two")))
_STORE = "    push 8\n    calldataload\n    push 16\n    calldataload\n    sstore\n"
KV = ("    push 0\n    calldataload\n" + _BRANCHES + "    stop\n"
      "set:\n" + _STORE + "    stop\n"
      "get:\n    push 8\n    calldataload\n    sload\n" + returning(1)
      + "set_revert:\n" + _STORE + "    push 0\n    push 0\n    revert\n"
      "set_trap:\n" + _STORE + "    trap\n"
      "set_spin:\n" + _STORE + "spin:\n    jump spin\n"
      "set_two:\n" + _STORE + "    push 8\n    calldataload\n    push 1\n    add\n    push 16\n"
      "    calldataload\n    sstore\n    stop\n")



def forwarder(call: str = "call", keep_ok: str = "    pop\n") -> str:
    """Calls the contract at OTHER with its own call data (``call``: CALL or, from 1.1,
    STATICCALL), does ``keep_ok`` with the call's ok, and returns what the callee returned."""
    return (f"    push 0\n    push 0\n    calldatasize\n    calldatacopy\n    push {OTHER}\n    push 1000000\n"
            f"    push 0\n    calldatasize\n    {call}\n" + keep_ok
            + "    push 0\n    push 0\n    returndatasize\n    returndatacopy\n    push 0\n    returndatasize\n"
              "    return\n")


FORWARDER = forwarder()
