"""What an execution is asked to do: the entry message, the context and the sandbox limits.

``check_request`` refuses malformed requests before anything runs (stage requested, and
sandbox_provisioned for limits).

May raise RequestRejected with: INVALID_REQUEST, INVALID_LIMITS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import spec
from reference_vm.errors import RequestRejected
from reference_vm.rules import Rules
from reference_vm.words import Word

# The Python API's defaults: the base version's values, which rules.rules refuses any version
# to change (reference_vm/rules.py, API_DEFAULTS).
_BASE = spec.load(spec.versions()[0].version)
_LIMITS = _BASE.limits
SEED_SIZE = _BASE.schedule["randomness"]["seed_size"]


@dataclass(frozen=True)
class Message:
    """The entry call: which contract, from whom, with what call data."""

    to: int
    caller: int = 0
    call_data: bytes = b""


@dataclass(frozen=True)
class Context:
    """Values the execution may read only through gated instructions."""

    block_time: int = 0
    random_seed: bytes = bytes(SEED_SIZE)


@dataclass(frozen=True)
class Limits:
    """Sandbox limits: compute units, memory pages alive at once, storage units."""

    compute: int = field(default_factory=lambda: _LIMITS["default"]["compute"])
    memory_pages: int = field(default_factory=lambda: _LIMITS["default"]["memory_pages"])
    storage_units: int = field(default_factory=lambda: _LIMITS["default"]["storage_units"])

    DIMENSIONS = ("compute", "memory_pages", "storage_units")


def _is_word(value: object, word: Word) -> bool:
    return type(value) is int and 0 <= value <= word.mask


def check_request(message: Message, context: Context, rules: Rules) -> None:
    word = rules.word
    if not isinstance(message, Message) or not isinstance(context, Context):
        raise RequestRejected("INVALID_REQUEST", "message and context must be Message and Context")
    for name, value in (("to", message.to), ("caller", message.caller),
                        ("block_time", context.block_time)):
        if not _is_word(value, word):
            raise RequestRejected("INVALID_REQUEST", f"{name} must be a {word.bits}-bit word")
    if not isinstance(message.call_data, bytes):
        raise RequestRejected("INVALID_REQUEST", "call data must be bytes")
    if len(message.call_data) > rules.call_data_size:
        raise RequestRejected("INVALID_REQUEST", f"call data exceeds {rules.call_data_size} bytes")
    if not isinstance(context.random_seed, bytes) or len(context.random_seed) != rules.seed_size:
        raise RequestRejected("INVALID_REQUEST", f"random seed must be {rules.seed_size} bytes")


def check_state(state: object, word: Word) -> None:
    """Every address, storage key and value a word; every code a byte string. The state is
    immutable, so this is found once per state (WorldState.problem) rather than by visiting
    every slot on every execution; a StateView checks each entry as it is read."""
    from reference_vm.state import WorldState

    if not isinstance(state, WorldState):
        raise RequestRejected("INVALID_REQUEST", "state must be a WorldState")
    problem = state.problem(word.mask)
    if problem is not None:
        raise RequestRejected("INVALID_REQUEST", problem)


def check_limits(limits: Limits, table: spec.Spec) -> None:
    if not isinstance(limits, Limits):
        raise RequestRejected("INVALID_LIMITS", "limits must be a Limits")
    minimum, maximum = table.limits["minimum"], table.limits["maximum"]
    for name in Limits.DIMENSIONS:
        value = getattr(limits, name)
        low, high = minimum[name], maximum[name]
        if type(value) is not int or not low <= value <= high:
            raise RequestRejected("INVALID_LIMITS", f"{name} must be an integer in [{low}, {high}]")
