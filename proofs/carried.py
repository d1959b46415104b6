"""The verdict cache carried to a cluster's workers (``prove --ray``, proofs/distributed.py).

The driver reads its verified entries (cache.VerdictCache.entries) and puts them once in the
cluster's object store; each worker answers from them (``CarriedCache``) and hands back what
it solved or checked that may be stored (``take_new``), which the driver seals and stores with
its own key (``store_carried``). A worker never opens the driver's folder or key.
"""

from __future__ import annotations

from typing import Callable

from proofs import solvers
from proofs.cache import HEX, STATS, STORED_OF, VerdictCache, entry_key, kept_row, row_key


class CarriedCache:
    """A verdict cache carried to the workers of a cluster (``prove --ray``): the driver's
    verified entries (VerdictCache.entries) as a read-only map, and the answers the worker
    solves that may be stored, handed back (``take_new``) for the driver to seal with its own
    key. A worker never opens the driver's folder or key, so the cache works across machines
    without a shared file system, and the key never leaves the driver's machine."""

    def __init__(self, entries: dict[str, list | dict]):
        self.entries = entries
        self.new: dict[str, list | dict] = {}
        self.stats = dict(STATS)

    def key(self, kind: str, config: solvers.Config, text: str) -> str:
        return entry_key(kind, config, text)

    def take_stats(self) -> dict:
        out, self.stats = self.stats, dict.fromkeys(self.stats, 0)
        return out

    def through(self, kind: str, config: solvers.Config, text: str,
                solve: Callable[[], list[solvers.Answer]],
                again: bool = False) -> list[solvers.Answer]:
        """As VerdictCache.through, from the carried entries; a stored answer is kept in
        ``new`` (counted as stored: the driver stores it)."""
        stored = STORED_OF.get(config.solver, ())
        if config.rlimit is None and config.solver != "bitwuzla" or not stored:
            self.stats["solved"] += 1
            return solve()
        key = self.key(kind, config, text)
        plain = self.entries.get(key) or self.new.get(key)
        got = (None if not isinstance(plain, list) else
               [solvers.Answer(status, used) for status, used in plain])
        if got is not None and not (again and any(a.status == solvers.SAT for a in got)):
            self.stats["hits"] += 1
            return got
        answers = solve()
        self.stats["solved"] += 1
        if f"units_{config.solver}" in self.stats:
            self.stats[f"units_{config.solver}"] += sum(a.resources or 0 for a in answers)
        if got is None and answers and all(a.status in stored for a in answers):
            self.new[key] = [[a.status, a.resources] for a in answers]
            self.stats["stored"] += 1
        return answers

    def through_row(self, parts: list, check: Callable[[], dict]) -> dict:
        """As VerdictCache.through_row, from the carried entries."""
        key = row_key(parts)
        got = self.entries.get(key) or self.new.get(key)
        if isinstance(got, dict):
            self.stats["checks_cached"] += 1
            return got
        row = check()
        self.stats["checks_run"] += 1
        kept = kept_row(row)
        if kept is not None:
            self.new[key] = kept
            self.stats["stored"] += 1
        return row

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
