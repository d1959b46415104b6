"""The pool of interesting inputs: seeded from the committed corpus, grown by requests that
reached a new grid cell or branch arc. The coordinator and every worker apply the same
additions in the same order, so their copies stay identical; once full, the n-th addition
replaces slot n mod capacity (the corpus seeds included), which is deterministic too.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from conformance.fuzz.program import FuzzInput

CAPACITY = 2048
ENTRY_BYTES = 8 << 10         # a pool entry's JSON at most (a larger request still counts its coverage)
SEED_LIMIT = 400              # corpus vectors taken as seeds
SEED_MAX_BYTES = 4096         # ... each at most this large as JSON


class Pool:
    def __init__(self, entries: Iterable[FuzzInput] = (), added: int = 0, capacity: int = CAPACITY):
        self.entries: list[FuzzInput] = list(entries)
        self.added = added
        self.capacity = capacity

    def add(self, inp: FuzzInput) -> None:
        if len(self.entries) < self.capacity:
            self.entries.append(inp)
        else:
            self.entries[self.added % self.capacity] = inp
        self.added += 1

    def view(self, size: int) -> Sequence[FuzzInput]:
        """The entries a task generates from: the pool as of its epoch start, which has
        ``size`` entries (a worker's copy changes only between epochs, so this is all of it;
        the size guards against a copy that ran ahead)."""
        return self.entries[:size]

    def __len__(self) -> int:
        return len(self.entries)

    def to_json(self) -> list[Any]:
        return [e.to_json() for e in self.entries]

    @classmethod
    def from_json(cls, items: Iterable[Mapping[str, Any]], added: int = 0) -> "Pool":
        return cls([FuzzInput.from_json(j) for j in items], added)


def corpus_seeds(vectors: Sequence[Mapping[str, Any]], version: str) -> list[FuzzInput]:
    """Up to SEED_LIMIT small vectors of spec ``version``'s corpus, evenly spread over the id
    order, as requests of that version."""
    import json
    small = [v for v in vectors if len(json.dumps(v["input"])) <= SEED_MAX_BYTES]
    step = max(1, len(small) // SEED_LIMIT)
    seeds = [FuzzInput.from_vector_input(v["input"], version) for v in small[::step][:SEED_LIMIT]]
    return [s for s in seeds if fits(s.to_json())]


def fits(entry: Mapping[str, Any]) -> bool:
    """Whether a request (as JSON) is small enough to be a pool entry."""
    import json
    return len(json.dumps(entry)) <= ENTRY_BYTES
