"""The counts and the triage order of a run's outcomes, shared by every report: counts per
status (and of the failures answered UNSUPPORTED_INPUT), by category and by tagged opcode, and
the failing vectors ranked with real wrong answers first."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Mapping

from conformance.corpus.store import group_of
from conformance.run.outcomes import KINDS, STATUSES, UNSUPPORTED, WRONG_ANSWERS, Outcome
from conformance.run.suite import ImplementationRun


def plural(n: int, word: str, words: str | None = None) -> str:
    return f"{n} {word if n == 1 else (words or word + 's')}"


def ranked(run: ImplementationRun, statuses: tuple[str, ...] = ("fail",)) -> list[Outcome]:
    """Failing outcomes in triage order: real wrong answers first, then the adapter's
    misbehaviour, then unsupported inputs; within each, by category, opcode and id."""
    def key(o: Outcome):
        kind = o.kind
        tier = 0 if kind in WRONG_ANSWERS else 2 if kind in (UNSUPPORTED, "unavailable") else 1
        return (tier, o.fresh, KINDS.index(kind) if kind in KINDS else len(KINDS), group_of(o.vector_id), o.vector_id)
    return sorted((o for o in run.outcomes.values() if o.status in statuses), key=key)


def count_tables(run: ImplementationRun, vectors: Mapping[str, Mapping[str, Any]]):
    """Counts by category and by tagged opcode: each status, and "unsupported" (failing
    vectors answered UNSUPPORTED_INPUT, also counted in "fail")."""
    by_group: dict[str, Counter] = defaultdict(Counter)
    by_opcode: dict[str, Counter] = defaultdict(Counter)
    for o in run.outcomes.values():
        unsupported = o.status == "fail" and o.categories == [UNSUPPORTED]
        by_group[group_of(o.vector_id)][o.status] += 1
        by_group[group_of(o.vector_id)]["unsupported"] += unsupported
        for m in vectors[o.vector_id]["tags"]["opcodes"]:
            by_opcode[m][o.status] += 1
            by_opcode[m]["unsupported"] += unsupported
    return by_group, by_opcode


def status_counts(run: ImplementationRun, fresh: bool) -> dict[str, int]:
    out = {s: run.count(s, fresh) for s in STATUSES}
    out["unsupported"] = sum(1 for o in run.outcomes.values()
                             if o.fresh == fresh and o.status == "fail" and o.categories == [UNSUPPORTED])
    return out


def failure_summary(o: Outcome) -> dict[str, Any]:
    """The few fields of a failure kept for every failing vector in report.json (never cut):
    what --last-failed --kind selects by."""
    return {"id": o.vector_id, "status": o.status, "kind": o.kind, "categories": o.categories}
