"""The suite's report: a text table (theorem | opcode | width | status | seconds), a
summary of what was proved at which widths, and the JSON document."""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from proofs.runner import AGREES, COUNTEREXAMPLE, DISAGREES, FAILING, PROVED, UNKNOWN


def table(rows: list[dict]) -> str:
    header = ("theorem", "opcode", "width", "status", "seconds")
    body = [(r["theorem"], str(r["opcode"]), str(r["width"]),
             r["status"] + (f" ({r['second_solver']}: {r['second_status']})"
                            if "second_status" in r else ""), f"{r['seconds']:.2f}")
            for r in rows]
    widths = [max(len(h), *(len(b[k]) for b in body)) if body else len(h)
              for k, h in enumerate(header)]
    line = lambda cells: " | ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] + [line(b) for b in body])


def summary(rows: list[dict], elapsed: float) -> dict:
    theorems = [r for r in rows if not r["theorem"].startswith("agreement")]
    agreement = [r for r in rows if r["theorem"].startswith("agreement")]
    by_width = defaultdict(Counter)
    for r in theorems:
        by_width[str(r["width"])][r["status"]] += 1
    return {
        "seconds": round(elapsed, 1),
        "theorems": dict(Counter(r["status"] for r in theorems)),
        "theorems_by_width": {w: dict(c) for w, c in sorted(by_width.items())},
        "claims": sum(r.get("claims", 0) for r in theorems),
        "second_solver": dict(Counter(r.get("second_status", "not run") for r in theorems)),
        "agreement": dict(Counter(r["status"] for r in agreement)),
        "agreement_cases": sum(r.get("cases", 0) for r in agreement),
        "failures": sum(r["status"] in FAILING for r in rows),
        "unknown": sum(r["status"] == UNKNOWN for r in rows),
    }


def failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] in FAILING]


def describe_failure(r: dict) -> str:
    head = f"{r['theorem']} {r['opcode']} w{r['width']}: {r['status']}"
    if "error" in r:
        return f"{head}: {r['error']}"
    if "counterexample" in r:
        cex = r["counterexample"]
        return f"{head}\n  inputs: {json.dumps(cex.get('inputs', cex), default=str)[:1500]}" + (
            f"\n  interpreter: {cex.get('interpreter')}\n  replay: {cex.get('differences')}"
            if "inputs" in cex else "")
    if r.get("findings"):
        return f"{head}\n  " + "\n  ".join(json.dumps(f, default=str)[:1500]
                                          for f in r["findings"])
    return head


def document(rows: list[dict], elapsed: float) -> dict:
    return {"summary": summary(rows, elapsed), "results": rows}


__all__ = ["AGREES", "COUNTEREXAMPLE", "DISAGREES", "PROVED", "UNKNOWN", "table", "summary",
           "failures", "describe_failure", "document"]
