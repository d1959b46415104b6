"""``rtwo-vm vectors coverage``: the opcode x outcome matrix of the corpus and its targets.

A vector counts for every opcode it is tagged with, under its outcome (status without a code,
or the code), under the outcomes of its call records (CALL_DEPTH_EXCEEDED only ever appears
there), and under its boundary column. Targets: every opcode, every outcome code except
INTERNAL_ERROR (never a conforming outcome, chapter 7.4), and limit-1/limit/limit+1 of every
limit of the version's (boundary_limits: the sandbox dimensions, the machine limits and the
request range). Coverage is per version: a corpus is measured against its own version's
instructions, codes and limits.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

import spec
from conformance.corpus.vector import BOUNDARY_POINTS

NEVER_CONFORMING = ("INTERNAL_ERROR",)
SANDBOX = ("compute", "memory_pages", "storage_units")
REQUEST = tuple(f"{d}.{bound}" for d in SANDBOX for bound in ("minimum", "maximum"))
MATRIX_BOUNDARIES = SANDBOX + ("stack_depth",)
AT_SHORT = {"limit-1": "-", "limit": "=", "limit+1": "+"}
# Machine limits that are sizes of the machine rather than limits a request can reach.
NOT_A_BOUNDARY = ("word_bits",)


def machine_limits(version: str) -> tuple[str, ...]:
    """The machine limits of ``version``'s limits.toml that vectors sit at (every one but the
    word width), in the file's order."""
    return tuple(k for k in spec.load(version).limits["machine"] if k not in NOT_A_BOUNDARY)


def boundary_limits(version: str) -> tuple[str, ...]:
    """The limits whose limit-1, limit and limit+1 are targets in ``version``: the sandbox
    dimensions, the machine limits and the request range's bounds."""
    return SANDBOX + machine_limits(version) + REQUEST


@dataclass
class Coverage:
    vectors: int
    version: str
    matrix: dict[str, Counter] = field(default_factory=dict)       # opcode -> column -> count
    outcomes: Counter = field(default_factory=Counter)             # outcome -> vectors anywhere
    boundaries: Counter = field(default_factory=Counter)           # "limit:at" -> vectors
    sources: Counter = field(default_factory=Counter)

    @property
    def table(self) -> spec.Spec:
        return spec.load(self.version)

    @property
    def missing_opcodes(self) -> list[str]:
        return [i.mnemonic for i in self.table.instructions
                if not sum(self.matrix.get(i.mnemonic, Counter()).values())]

    @property
    def target_codes(self) -> list[str]:
        return [c for c in self.table.errors if c not in NEVER_CONFORMING]

    @property
    def missing_codes(self) -> list[str]:
        return [c for c in self.target_codes if not self.outcomes[c]]

    @property
    def target_boundaries(self) -> list[str]:
        return [f"{limit}:{at}" for limit in boundary_limits(self.version) for at in BOUNDARY_POINTS]

    @property
    def missing_boundaries(self) -> list[str]:
        return [b for b in self.target_boundaries if not self.boundaries[b]]

    @property
    def complete(self) -> bool:
        return not (self.missing_opcodes or self.missing_codes or self.missing_boundaries)

    def to_json(self) -> dict[str, Any]:
        instructions = self.table.instructions
        return {
            "spec_version": self.version,
            "vectors": self.vectors, "sources": dict(self.sources), "complete": self.complete,
            "opcodes": {"target": len(instructions), "covered": len(instructions) - len(self.missing_opcodes),
                        "missing": self.missing_opcodes},
            "outcome_codes": {"target": len(self.target_codes), "covered": len(self.target_codes) - len(self.missing_codes),
                              "missing": self.missing_codes, "excluded": list(NEVER_CONFORMING)},
            "boundaries": {"target": len(self.target_boundaries),
                           "covered": len(self.target_boundaries) - len(self.missing_boundaries),
                           "missing": self.missing_boundaries, "counts": dict(sorted(self.boundaries.items()))},
            "outcomes": dict(sorted(self.outcomes.items())),
            "matrix": {m: dict(c) for m, c in self.matrix.items()},
        }


def measure(vectors: Iterable[Mapping[str, Any]], version: str) -> Coverage:
    """The coverage of a corpus of spec version ``version``."""
    cov = Coverage(0, spec.version(version).version)
    matrix: dict[str, Counter] = defaultdict(Counter)
    for v in vectors:
        cov.vectors += 1
        tags = v["tags"]
        cov.sources[tags["source"]] += 1
        outcomes = {tags["outcome"], *tags["call_outcomes"]}
        cov.outcomes.update(outcomes)
        boundary = tags["boundary"]
        column = None if boundary is None else f"{boundary['limit']}:{boundary['at']}"
        if column:
            cov.boundaries[column] += 1
        for m in tags["opcodes"]:
            matrix[m].update(outcomes)
            if column:
                matrix[m][column] += 1
    cov.matrix = dict(matrix)
    return cov


def _abbreviation(code: str) -> str:
    return "".join(word[0] for word in code.split("_"))


def columns(cov: Coverage) -> list[tuple[str, str]]:
    """(column key, short header) for the matrix: outcomes seen for some opcode, then boundaries."""
    seen = set().union(*cov.matrix.values()) if cov.matrix else set()
    keys = ["success", "reverted"] + [c for c in cov.table.errors if c in seen]
    out: list[tuple[str, str]] = []
    used: Counter[str] = Counter()
    for k in keys:
        short = {"success": "ok", "reverted": "rev"}.get(k) or _abbreviation(k)
        used[short] += 1
        out.append((k, short if used[short] == 1 else f"{short}{used[short]}"))
    for limit in MATRIX_BOUNDARIES:
        short = "".join(w[0] for w in limit.split("_"))
        out += [(f"{limit}:{at}", f"{short}{AT_SHORT[at]}") for at in BOUNDARY_POINTS]
    return out


def render(cov: Coverage, matrix: bool = True) -> str:
    j = cov.to_json()
    lines = [f"coverage of {cov.vectors} vectors of spec {cov.version} ("
             + ", ".join(f"{n} {s}" for s, n in sorted(cov.sources.items())) + ")",
             f"opcodes {j['opcodes']['covered']}/{j['opcodes']['target']}, "
             f"outcome codes {j['outcome_codes']['covered']}/{j['outcome_codes']['target']} "
             f"({', '.join(NEVER_CONFORMING)} excluded: never a conforming outcome), "
             f"boundaries {j['boundaries']['covered']}/{j['boundaries']['target']} "
             f"(limit-1, limit, limit+1 of {len(boundary_limits(cov.version))} limits)"]
    if matrix:
        cols = columns(cov)
        width = max(3, max(len(h) for _, h in cols)) + 1
        lines += ["", f"{'opcode':<15}" + "".join(f"{h:>{width}}" for _, h in cols)]
        for ins in cov.table.instructions:
            row = cov.matrix.get(ins.mnemonic, Counter())
            lines.append(f"{ins.mnemonic:<15}" + "".join(f"{(row[k] if row[k] else '.'):>{width}}" for k, _ in cols))
        lines += ["", "legend: " + ", ".join(f"{h}={k}" for k, h in cols if ":" not in k),
                  "boundary columns: <limit initials><- limit-1 | = limit | + limit+1> "
                  "(c compute, mp memory_pages, su storage_units, sd stack_depth)"]
    lines += ["", "vectors per outcome anywhere: " + ", ".join(f"{k} {n}" for k, n in sorted(cov.outcomes.items())),
              "boundary vectors: " + ", ".join(f"{k} {n}" for k, n in sorted(cov.boundaries.items()))]
    missing = cov.missing_opcodes + cov.missing_codes + cov.missing_boundaries
    lines.append("targets met" if not missing else "MISSING: " + ", ".join(missing))
    return "\n".join(lines)
