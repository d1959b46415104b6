"""The verdict cache carried to a cluster's workers (``prove --ray``, proofs/distributed.py).

The driver reads its verified entries (cache.VerdictCache.entries) and puts them once in the
cluster's object store; each worker answers from them (``CarriedCache``) and hands back what
it solved or checked that may be stored (``take_new``), which the driver seals and stores with
its own key (``store_carried``). A worker never opens the driver's folder or key.
"""

from __future__ import annotations

import contextlib

from proofs import solvers
from proofs.cache import HEX, STATS, VerdictCache, kept_row


class CarriedCache(VerdictCache):
    """A verdict cache carried to the workers of a cluster (``prove --ray``): the driver's
    verified entries (VerdictCache.entries) as a read-only map, and the answers and rows the
    worker solves that may be stored, handed back (``take_new``) for the driver to seal with
    its own key. A worker never opens the driver's folder or key, so the cache works across
    machines without a shared file system, and the key never leaves the driver's machine.
    What is taken, solved and kept is VerdictCache's own ``through`` and ``through_row``:
    only where an entry is read and written differs."""

    def __init__(self, entries: dict[str, list | dict]):      # no folder, no key
        self.carried = entries
        self.new: dict[str, list | dict] = {}
        self.stats = dict(STATS)

    def _locked(self, key: str):
        return contextlib.nullcontext()      # one process: nothing to wait for

    def lookup(self, key: str) -> list[solvers.Answer] | None:
        plain = self.new.get(key, self.carried.get(key))
        return ([solvers.Answer(status, used) for status, used in plain]
                if isinstance(plain, list) else None)

    def lookup_row(self, key: str) -> dict | None:
        row = self.new.get(key, self.carried.get(key))
        return dict(row) if isinstance(row, dict) else None

    def store(self, key: str, answers: list[solvers.Answer]) -> None:
        self.new[key] = [[a.status, a.resources] for a in answers]
        self.stats["stored"] += 1            # stored by the driver

    def store_row(self, key: str, row: dict) -> None:
        kept = kept_row(row)
        if kept is not None:
            self.new[key] = kept
            self.stats["stored"] += 1

    def take_new(self) -> dict[str, list | dict]:
        out, self.new = self.new, {}
        return out


def store_carried(into: VerdictCache, entries: dict[str, list | dict]) -> None:
    """Seal and store in the driver's cache, with its key, what a worker handed back
    (CarriedCache.take_new): answers, and agreement rows."""
    for key, plain in entries.items():
        if not HEX.match(key):
            continue
        if isinstance(plain, dict):
            into.store_row(key, plain)
        elif isinstance(plain, list) and plain:
            into.store(key, [solvers.Answer(status, used) for status, used in plain])
