"""The second oracle over corpora: every vector (``all``), a cover of the corpus (``cover``),
or none (``off``), in worker processes; the verdict is the list of disagreements, in the
corpus's order, whatever the number of workers.

``cover`` takes vectors cheapest first (expected compute, then id) while each adds something
not yet covered: an instruction, an outcome, an instruction with an outcome, a call outcome,
a boundary, a section, a source. It is what ``rtwo-vm check`` runs (under its two minutes);
``vectors fill`` runs ``all``.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from conformance.oracles.compare import Disagreement, check_scenario, check_vector

MODES = ("all", "cover", "off")
SINGLE, SCENARIO = "single", "scenario"


@dataclass
class Checked:
    """What the second oracle found; ``seconds`` is reported, never part of the verdict."""

    mode: str
    counts: dict = field(default_factory=dict)          # version -> (checked, in the corpus)
    disagreements: list = field(default_factory=list)   # Disagreement
    seconds: float = 0.0

    @property
    def checked(self) -> int:
        return sum(c for c, _ in self.counts.values())

    def summary(self) -> str:
        if self.mode == "off":
            return ("second oracle: off (the expected results were not run by the proofs' models; "
                    "--second-oracle all checks every one)")
        per = ", ".join(f"spec {v}: {c} of {n}" for v, (c, n) in self.counts.items())
        verdict = ("all agree" if not self.disagreements
                   else f"{len(self.disagreements)} DISAGREE")
        return (f"second oracle ({self.mode}): {self.checked} vectors run by the proofs' models "
                f"in {self.seconds:.1f} s ({per}): {verdict}")


def _classes(vector: Mapping[str, Any]) -> set:
    tags = vector["tags"]
    outcomes = tags["outcomes"] if "outcomes" in tags else [tags["outcome"]]
    opcodes = tags["opcodes"] or ["-"]
    found: set[tuple] = {("opcode", m) for m in opcodes} | {("outcome", o) for o in outcomes}
    found |= {("pair", m, o) for m in opcodes for o in outcomes}
    found |= {("call", c) for c in tags.get("call_outcomes", ())}
    found |= {("section", s) for s in tags["sections"]} | {("source", tags["source"])}
    if tags.get("boundary"):
        found.add(("boundary", tags["boundary"]["limit"], tags["boundary"]["at"]))
    return found


def _compute(vector: Mapping[str, Any]) -> int:
    expected = vector["expected"]
    results = [s["result"] for s in expected["steps"]] if "steps" in expected else [expected["result"]]
    return sum(r["usage"]["compute"] for r in results)


def cover(vectors: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Cheapest first, each vector kept when it covers a class no kept vector covers."""
    seen: set = set()
    kept = []
    for vector in sorted(vectors, key=lambda v: (_compute(v), v["id"])):
        new = _classes(vector) - seen
        if new:
            seen |= new
            kept.append(vector)
    return sorted(kept, key=lambda v: v["id"])


def _one(task: tuple[str, str, Mapping[str, Any]]) -> Disagreement | None:
    kind, version, vector = task
    return (check_scenario if kind == SCENARIO else check_vector)(vector, version)


def check(corpora: Mapping[str, tuple[Sequence[Mapping], Sequence[Mapping]]], mode: str,
          jobs: int | None = None) -> Checked:
    """The second oracle on ``corpora`` (version -> (single-call vectors, scenario vectors))."""
    if mode not in MODES:
        raise ValueError(f"second oracle mode must be one of {', '.join(MODES)}")
    out = Checked(mode)
    if mode == "off":
        return out
    tasks: list = []
    for version, (single, scenarios) in corpora.items():
        chosen = [(SINGLE, v) for v in (cover(single) if mode == "cover" else single)]
        chosen += [(SCENARIO, v) for v in (cover(scenarios) if mode == "cover" else scenarios)]
        out.counts[version] = (len(chosen), len(single) + len(scenarios))
        tasks += [(kind, version, v) for kind, v in chosen]
    started = time.monotonic()
    out.disagreements = [d for d in _map(tasks, jobs) if d is not None]
    out.seconds = time.monotonic() - started
    return out


def _map(tasks: list, jobs: int | None) -> Iterable[Disagreement | None]:
    """``_one`` over the tasks in order; heavy ones (long loops) spread by chunks of one."""
    workers = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    if workers == 1:
        return [_one(t) for t in tasks]
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        return pool.map(_one, tasks, chunksize=1)
