"""The strength report: killed, survived, equivalent and unreachable mutants per module, the
curated bugs with the number of vectors that kill each, every survivor with its diff and the
shortest vector that would kill it, and (when measured) the vectors that kill nothing others
do not.

What the score counts: killed / (killed + survived) over the generated mutants. Not counted:
*equivalent* mutants (equivalent.toml: no caller of the reference can observe them, each with
a reason) and *unreachable* ones (unreachable.toml: a real change of behaviour, but only
through the reference's Python API or tools, never through a protocol request, so no vector
can kill it; each with a reason). An unreachable mutant is still run against the corpus; one
the corpus kills is counted killed and its reason reported as contradicted (the run fails).
The report also gives the score that counts every unreachable mutant as a survivor."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from conformance.strength.mutants import Mutant

from pathlib import Path

SCORE_FILE = Path(__file__).resolve().parent / "score.json"   # the recorded run the docs quote
SCORE_TARGET = 0.99       # killed / (killed + survived) over the generated mutants
CURATED_KILLS = 2         # vectors that must kill each curated bug


@dataclass
class Report:
    mutants: Mapping[str, Mutant]
    verdicts: Mapping[str, Mapping[str, Any]]     # mutant id -> Verdict.to_json()
    vector_count: int
    corpus_digest: str
    equivalent_reasons: Mapping[str, str] = field(default_factory=dict)
    redundant: list[str] | None = None            # vectors that are no mutant's only killer
    contradicted: list[str] = field(default_factory=list)   # unreachable.toml entries the corpus kills
    spec_version: str | None = None               # the version of the corpus measured

    def generated(self) -> list[str]:
        return [i for i, m in self.mutants.items() if m.kind != "curated"]

    def curated(self) -> list[str]:
        return [i for i, m in self.mutants.items() if m.kind == "curated"]

    def by_module(self) -> dict[str, Counter]:
        out: dict[str, Counter] = defaultdict(Counter)
        for mid in self.generated():
            out[self.mutants[mid].module][self.verdicts[mid]["status"]] += 1
        return dict(sorted(out.items()))

    def totals(self) -> Counter:
        return Counter(self.verdicts[m]["status"] for m in self.generated())

    @property
    def score(self) -> float | None:
        t = self.totals()
        judged = t["killed"] + t["survived"]
        return t["killed"] / judged if judged else None

    def curated_weak(self) -> list[str]:
        return [m for m in self.curated() if len(self.verdicts[m]["killers"]) < CURATED_KILLS]

    @property
    def score_with_unreachable(self) -> float | None:
        """The score if every unreachable mutant counted as a survivor."""
        t = self.totals()
        judged = t["killed"] + t["survived"] + t["unreachable"]
        return t["killed"] / judged if judged else None

    @property
    def ok(self) -> bool:
        return ((self.score is None or self.score >= SCORE_TARGET) and not self.curated_weak()
                and not self.contradicted)

    def corpus(self) -> dict[str, Any]:
        out: dict[str, Any] = {"vectors": self.vector_count, "digest": self.corpus_digest}
        if self.spec_version is not None:
            out["spec_version"] = self.spec_version
        return out

    def summary(self) -> dict[str, Any]:
        """The small record the docs quote (--record): score, totals, per module, curated."""
        return {"corpus": self.corpus(),
                "score": self.score, "score_with_unreachable": self.score_with_unreachable, "target": SCORE_TARGET,
                "counts": "killed / (killed + survived) of the generated mutants; equivalent and unreachable"
                          " (through the protocol) are not counted",
                "totals": dict(sorted(self.totals().items())),
                "modules": {m: dict(sorted(c.items())) for m, c in self.by_module().items()},
                "curated_total": len(self.curated()), "curated_ok": len(self.curated()) - len(self.curated_weak()),
                "survivors": sorted(m for m in self.generated() if self.verdicts[m]["status"] == "survived")}

    def to_json(self) -> dict[str, Any]:
        return {
            "corpus": self.corpus(),
            "score": self.score, "score_with_unreachable": self.score_with_unreachable, "target": SCORE_TARGET,
            "curated_kills_required": CURATED_KILLS, "contradicted": self.contradicted,
            "totals": dict(self.totals()),
            "modules": {m: dict(c) for m, c in self.by_module().items()},
            "how_killed": dict(Counter(v["how"] for v in self.verdicts.values() if v["status"] == "killed")),
            "mutants": [{**{k: v for k, v in self.mutants[m].to_json().items() if k != "source"},
                         **self.verdicts[m], "reason": self.equivalent_reasons.get(m)} for m in self.mutants],
            "redundant_vectors": self.redundant,
        }


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def render(report: Report, show_survivors: int = 50) -> str:
    lines = [f"corpus: {report.vector_count} vectors" + (f" of spec {report.spec_version}" if report.spec_version else "")
             + f", digest {report.corpus_digest[:12]}", ""]
    head = f"{'module':<28} {'mutants':>7} {'killed':>7} {'survived':>8} {'equiv.':>6} {'unreach.':>8} {'score':>7}"
    lines += [head, "-" * len(head)]
    for module, c in report.by_module().items():
        judged = c["killed"] + c["survived"]
        lines.append(f"{module:<28} {sum(c.values()):>7} {c['killed']:>7} {c['survived']:>8} "
                     f"{c['equivalent']:>6} {c['unreachable']:>8} {_pct(c['killed'] / judged if judged else None):>7}")
    t = report.totals()
    lines.append(f"{'all generated':<28} {sum(t.values()):>7} {t['killed']:>7} {t['survived']:>8} "
                 f"{t['equivalent']:>6} {t['unreachable']:>8} {_pct(report.score):>7}")
    how = Counter(report.verdicts[m]["how"] for m in report.generated() if report.verdicts[m]["status"] == "killed")
    if how:
        lines.append("killed by: " + ", ".join(f"{n} {k}" for k, n in sorted(how.items())))
    if report.curated():
        lines += ["", f"curated bugs (each must be killed by at least {CURATED_KILLS} vectors):"]
        for mid in report.curated():
            v, m = report.verdicts[mid], report.mutants[mid]
            mark = "ok  " if len(v["killers"]) >= CURATED_KILLS else "WEAK"
            lines.append(f"  {mark} {mid.removeprefix('curated:'):<36} {len(v['killers']):>4} vectors  {m.description}")
    survivors = [m for m in report.mutants if report.verdicts[m]["status"] == "survived"]
    if survivors:
        lines += ["", f"survivors ({len(survivors)}):"]
        for mid in survivors[:show_survivors]:
            m, v = report.mutants[mid], report.verdicts[mid]
            lines.append(f"  {mid}: {m.description}")
            lines += [f"    {x}" for x in m.diff().splitlines()]
            s = v.get("shortest")
            lines.append(f"    killed by candidate {s['id']} ({s['size']} bytes): {s['difference']}" if s
                         else "    no candidate vector kills it")
        if len(survivors) > show_survivors:
            lines.append(f"  ... and {len(survivors) - show_survivors} more (--json has them all)")
    if report.redundant is not None:
        lines += ["", f"{len(report.redundant)} of {report.vector_count} vectors are no mutant's only killer"
                  " (each kills nothing that other vectors do not)"]
    for mid in report.contradicted:
        verdict = report.verdicts[mid]
        by = (f"vector {verdict['killers'][0]} kills it" if verdict.get("killers")
              else f"the corpus kills it ({verdict.get('how') or 'killed'}: {verdict.get('detail', '')})")
        lines.append(f"CONTRADICTED: {mid} is listed as unreachable through the protocol, but {by}: "
                     "correct unreachable.toml")
    target = "meets" if report.ok else "does not meet"
    lines += ["", f"strength {_pct(report.score)} of the counted generated mutants killed "
              f"({t['killed']}/{t['killed'] + t['survived']}; not counted: {t['equivalent']} equivalent, "
              f"{t['unreachable']} unreachable through the protocol; counting those as survivors "
              f"{_pct(report.score_with_unreachable)}); "
              f"{len(report.curated()) - len(report.curated_weak())}/{len(report.curated())} curated bugs killed "
              f"at least {CURATED_KILLS} times: {target} the targets ({_pct(SCORE_TARGET)}, {CURATED_KILLS})"]
    return "\n".join(lines)


def redundant_vectors(verdicts: Sequence[Mapping[str, Any]], vector_ids: Sequence[str]) -> list[str]:
    """Vectors that are the only killer of no mutant (needs every killer of every mutant)."""
    sole = {v["killers"][0] for v in verdicts if v["status"] == "killed" and len(v["killers"]) == 1}
    return [vid for vid in vector_ids if vid not in sole]
