"""World state: deployed contracts and their storage, and the journal that undoes writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from collections.abc import Mapping


class StateView(Mapping):
    """A mapping read on demand (from a database, say) instead of held in memory.

    A Contract given one as its storage, or a WorldState given one as its contracts, keeps it
    as it is instead of copying it, so an execution reads only the entries it touches. A view
    checks each entry as it returns it (slots holding 0 are absent, as in any state); an entry
    that turns out malformed is a failure of the host, not of the request, and ends the
    execution as INTERNAL_ERROR (chapter 8.3).
    """


@dataclass(frozen=True)
class Contract:
    """A deployed contract: its container bytes and its storage (absent slots read as 0)."""

    code: bytes
    storage: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.storage, StateView):
            return
        # Slots holding 0 are absent by definition; keep one representation of each state.
        clean = {k: v for k, v in dict(self.storage).items() if v != 0}
        object.__setattr__(self, "storage", MappingProxyType(clean))


@dataclass(frozen=True)
class WorldState:
    """Every contract, by address. Executions never modify a WorldState; they report changes.

    A state is immutable, so whether it is well formed (chapter 7.3.2: every address, key and
    value a word, every code a byte string) is found once per word width, by ``problem``,
    not again by every execution against it."""

    contracts: Mapping[int, Contract] = field(default_factory=dict)
    _problems: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.contracts, StateView):
            object.__setattr__(self, "contracts", MappingProxyType(dict(self.contracts)))

    def storage_of(self, address: int) -> Mapping[int, int]:
        contract = self.contracts.get(address)
        return contract.storage if contract is not None else {}

    def problem(self, mask: int) -> str | None:
        """What makes the state malformed for words of ``mask``, or None. A view is not
        visited here: it checks each entry as it is read."""
        if mask not in self._problems:
            self._problems[mask] = _problem(self.contracts, mask)
        return self._problems[mask]

    def with_changes(self, changes: "tuple[StateChange, ...]") -> "WorldState":
        """The state after applying an execution's state changes."""
        contracts = dict(self.contracts)
        for change in changes:
            c = contracts[change.address]
            storage = dict(c.storage)
            storage[change.key] = change.after
            contracts[change.address] = Contract(c.code, storage)
        return WorldState(contracts)


def _is_word(value: object, mask: int) -> bool:
    return type(value) is int and 0 <= value <= mask


def _problem(contracts: Mapping, mask: int) -> str | None:
    if isinstance(contracts, StateView):
        return None
    for address, contract in contracts.items():
        if not _is_word(address, mask) or not isinstance(contract, Contract):
            return f"bad contract entry {address!r}"
        if not isinstance(contract.code, bytes):
            return f"code of {address:#x} must be bytes"
        if isinstance(contract.storage, StateView):
            continue
        for key, value in contract.storage.items():
            if not (_is_word(key, mask) and _is_word(value, mask)):
                return f"storage of {address:#x} must map words to words"
    return None


@dataclass(frozen=True, slots=True, order=True)
class StateChange:
    """One storage slot whose value differs after the execution. Sorted by (address, key)."""

    address: int
    key: int
    before: int
    after: int


class Journal:
    """Storage as seen during an execution: the pre-state plus an undo log of writes; and the
    execution's transient storage (spec 2.3.3, from 1.1), undone by the same log.

    ``transient_alive`` is the number of transient slots holding a non-zero value now."""

    __slots__ = ("_pre", "_written", "_log", "_transient", "transient_alive")

    def __init__(self, pre: WorldState):
        self._pre = pre
        self._written: dict[tuple[int, int], int] = {}
        # (slot, previous value or None) for storage; (None, slot, previous) for transient.
        self._log: list[tuple] = []
        self._transient: dict[tuple[int, int], int] = {}
        self.transient_alive = 0

    def load(self, address: int, key: int) -> int:
        value = self._written.get((address, key))
        if value is None:
            return self._pre.storage_of(address).get(key, 0)
        return value

    def store(self, address: int, key: int, value: int) -> None:
        slot = (address, key)
        self._log.append((slot, self._written.get(slot)))
        self._written[slot] = value

    def transient_load(self, address: int, key: int) -> int:
        return self._transient.get((address, key), 0)

    def transient_store(self, address: int, key: int, value: int) -> None:
        slot = (address, key)
        previous = self._transient.get(slot, 0)
        self._log.append((None, slot, previous))
        self._set_transient(slot, previous, value)

    def _set_transient(self, slot: tuple[int, int], previous: int, value: int) -> None:
        if value:
            self._transient[slot] = value
        else:
            self._transient.pop(slot, None)
        self.transient_alive += (value != 0) - (previous != 0)

    def mark(self) -> int:
        return len(self._log)

    def revert_to(self, mark: int) -> None:
        """Undo every write made since ``mark``, newest first (storage and transient)."""
        while len(self._log) > mark:
            entry = self._log.pop()
            if entry[0] is None:
                _, slot, previous = entry
                self._set_transient(slot, self._transient.get(slot, 0), previous)
                continue
            slot, previous = entry
            if previous is None:
                del self._written[slot]
            else:
                self._written[slot] = previous

    def changes(self) -> tuple[StateChange, ...]:
        out = []
        for (address, key), after in self._written.items():
            before = self._pre.storage_of(address).get(key, 0)
            if before != after:
                out.append(StateChange(address, key, before, after))
        return tuple(sorted(out))
