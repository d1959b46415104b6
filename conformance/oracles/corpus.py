"""The second oracle over corpora: every vector (``all``), a quick cover of the corpus
(``quick``), or none (``off``), in worker processes; the verdict is the list of
disagreements, in the corpus's order, whatever the number of workers.

``quick`` is what ``rtwo-vm check`` runs within its two minutes: cheapest first (expected
compute, then id), each vector kept while it adds an instruction, an outcome, an
instruction with an outcome or a call outcome not yet covered, among the vectors that use at most QUICK_COMPUTE units (the models
take about a millisecond per step: a vector filling the stack, the return stack or the
transient slots takes seconds). What only heavier vectors cover is counted and left to
``vectors fill``, which runs ``all``.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from conformance.oracles.compare import Disagreement, check_scenario, check_vector

MODES = ("all", "quick", "off")
QUICK_COMPUTE = 2000
SINGLE, SCENARIO = "single", "scenario"


@dataclass
class Checked:
    """What the second oracle found; ``seconds`` is reported, never part of the verdict."""

    mode: str
    counts: dict = field(default_factory=dict)          # version -> (checked, in the corpus)
    left: dict = field(default_factory=dict)            # version -> classes only heavier vectors cover
    disagreements: list = field(default_factory=list)   # Disagreement
    seconds: float = 0.0

    @property
    def checked(self) -> int:
        return sum(c for c, _ in self.counts.values())

    def summary(self) -> str:
        if self.mode == "off":
            return ("second oracle: off (the expected results were not run by the proofs' models; "
                    "--second-oracle all checks every one)")
        per = ", ".join(f"spec {v}: {c} of {n}" + (f", {self.left[v]} classes left to the full run"
                                                     if self.left.get(v) else "")
                        for v, (c, n) in self.counts.items())
        verdict = ("all agree" if not self.disagreements
                   else f"{len(self.disagreements)} DISAGREE")
        return (f"second oracle ({self.mode}): {self.checked} vectors run by the proofs' models "
                f"in {self.seconds:.1f} s ({per}): {verdict}")


def _classes(vector: Mapping[str, Any]) -> set:
    """What a vector covers: its instructions, outcomes, each instruction with each outcome,
    and its call outcomes."""
    tags = vector["tags"]
    outcomes = tags["outcomes"] if "outcomes" in tags else [tags["outcome"]]
    opcodes = tags["opcodes"] or ["-"]
    found: set[tuple] = {("opcode", m) for m in opcodes} | {("outcome", o) for o in outcomes}
    found |= {("pair", m, o) for m in opcodes for o in outcomes}
    return found | {("call", c) for c in tags.get("call_outcomes", ())}


def _compute(vector: Mapping[str, Any]) -> int:
    expected = vector["expected"]
    results = [s["result"] for s in expected["steps"]] if "steps" in expected else [expected["result"]]
    return sum(r["usage"]["compute"] for r in results)


def quick(vectors: Sequence[Mapping[str, Any]]) -> tuple[list[Mapping[str, Any]], int]:
    """(the vectors kept, cheapest first while each covers a class no kept vector covers,
    among those within QUICK_COMPUTE; the number of classes only heavier vectors cover)."""
    seen: set = set()
    kept = []
    for vector in sorted(vectors, key=lambda v: (_compute(v), v["id"])):
        new = _classes(vector) - seen
        if new and _compute(vector) <= QUICK_COMPUTE:
            seen |= new
            kept.append(vector)
    every = set().union(*(_classes(v) for v in vectors)) if vectors else set()
    return sorted(kept, key=lambda v: v["id"]), len(every - seen)


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
        if mode == "quick":
            (single_kept, left), (scenarios_kept, left_too) = quick(single), quick(scenarios)
            out.left[version] = left + left_too
        else:
            single_kept, scenarios_kept = list(single), list(scenarios)
        chosen = [(SINGLE, v) for v in single_kept] + [(SCENARIO, v) for v in scenarios_kept]
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
