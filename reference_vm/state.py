"""World state: deployed contracts and their storage, and the journal that undoes writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping


@dataclass(frozen=True)
class Contract:
    """A deployed contract: its container bytes and its storage (absent slots read as 0)."""

    code: bytes
    storage: Mapping[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Slots holding 0 are absent by definition; keep one representation of each state.
        clean = {k: v for k, v in dict(self.storage).items() if v != 0}
        object.__setattr__(self, "storage", MappingProxyType(clean))


@dataclass(frozen=True)
class WorldState:
    """Every contract, by address. Executions never modify a WorldState; they report changes."""

    contracts: Mapping[int, Contract] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "contracts", MappingProxyType(dict(self.contracts)))

    def storage_of(self, address: int) -> Mapping[int, int]:
        contract = self.contracts.get(address)
        return contract.storage if contract is not None else {}

    def with_changes(self, changes: "tuple[StateChange, ...]") -> "WorldState":
        """The state after applying an execution's state changes."""
        contracts = dict(self.contracts)
        for change in changes:
            c = contracts[change.address]
            storage = dict(c.storage)
            storage[change.key] = change.after
            contracts[change.address] = Contract(c.code, storage)
        return WorldState(contracts)


@dataclass(frozen=True, slots=True, order=True)
class StateChange:
    """One storage slot whose value differs after the execution. Sorted by (address, key)."""

    address: int
    key: int
    before: int
    after: int


class Journal:
    """Storage as seen during an execution: the pre-state plus an undo log of writes."""

    __slots__ = ("_pre", "_written", "_log")

    def __init__(self, pre: WorldState):
        self._pre = pre
        self._written: dict[tuple[int, int], int] = {}
        self._log: list[tuple[tuple[int, int], int | None]] = []

    def load(self, address: int, key: int) -> int:
        value = self._written.get((address, key))
        if value is None:
            return self._pre.storage_of(address).get(key, 0)
        return value

    def store(self, address: int, key: int, value: int) -> None:
        slot = (address, key)
        self._log.append((slot, self._written.get(slot)))
        self._written[slot] = value

    def mark(self) -> int:
        return len(self._log)

    def revert_to(self, mark: int) -> None:
        """Undo every write made since ``mark``, newest first."""
        while len(self._log) > mark:
            slot, previous = self._log.pop()
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
