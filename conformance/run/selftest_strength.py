"""The selftest's strength (``rtwo-vm conformance selftest --strength``): the selftest run on
every adapter mutant of conformance.run.selftest_mutants, each a real adapter process with one
rule of 11.5 broken. A mutant is *caught* when the check of its rule fails; *caught elsewhere*
when only other checks fail (the rule's own check is too weak); *missed* when the selftest
passes it. The score counts the caught ones; it is kept at 100% (a test holds it there).
"""

from __future__ import annotations

import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Mapping

from conformance.run.selftest import run_selftest
from conformance.run.selftest_mutants import MUTANTS

CAUGHT, ELSEWHERE, MISSED = "caught", "caught elsewhere", "missed"


@dataclass(frozen=True)
class Verdict:
    mutant: str
    rule: str
    verdict: str
    failing: tuple[str, ...]        # the names of the checks that failed
    details: tuple[str, ...] = ()   # what each of them says


def mutant_command(name: str) -> str:
    return shlex.join([sys.executable, "-m", "conformance.run.selftest_mutants", name])


def judge(name: str, vectors: Mapping[str, Mapping[str, Any]], version: str, timeout: float) -> Verdict:
    mutant = MUTANTS[name]
    checks = run_selftest(mutant_command(name), vectors, version, timeout=timeout)
    failing = tuple(c.name for c in checks if not c.ok)
    verdict = (CAUGHT if any(f.startswith(mutant.check) for f in failing)
               else ELSEWHERE if failing else MISSED)
    return Verdict(name, mutant.rule, verdict, failing, tuple(c.detail for c in checks if not c.ok))


def run_strength(vectors: Mapping[str, Mapping[str, Any]], version: str, timeout: float = 5.0,
                 jobs: int = 2, names: tuple[str, ...] | None = None) -> list[Verdict]:
    """A verdict per mutant (in MUTANTS order), ``jobs`` selftests at a time."""
    chosen = list(names or MUTANTS)
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(lambda n: judge(n, vectors, version, timeout), chosen))


def report(verdicts: list[Verdict], version: str) -> list[str]:
    lines = [f"{v.verdict:<17} {v.mutant:<26} {v.rule}" for v in verdicts]
    for v in verdicts:
        if v.verdict != CAUGHT:
            lines.append(f"  {v.mutant}: failing checks: {'; '.join(v.failing) or 'none'}")
    caught = sum(v.verdict == CAUGHT for v in verdicts)
    lines.append(f"selftest strength (spec {version}): {caught}/{len(verdicts)} adapter mutants caught "
                 f"by the check of their rule ({100 * caught // max(1, len(verdicts))}%)")
    return lines
