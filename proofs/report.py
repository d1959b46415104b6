"""The suite's report: a text table (theorem | opcode | width | status | seconds), a
summary of what was proved at which widths, the JSON document, and its assessment.

A document records its scope (complete, or which part was run), the budgets it ran under and
a fingerprint of the spec data and the code it is about. ``assess(doc)`` is what readiness
and the docs rely on: a report counts only when it is complete, current (same fingerprint)
and covers every registered theorem and agreement check, each proved or agreeing.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from proofs.runner import (
    AGREES, COUNTEREXAMPLE, DISAGREES, FAILING, INFORMATIVE, PROVED, TIMEOUT, UNDECIDED,
    UNKNOWN, VERDICT_OK, Options, expected_rows,
)

FORMAT = 3


def table(rows: list[dict]) -> str:
    """``rtwo-vm prove --table``: one row per verdict, columns padded to their widest cell.

    Hand-drawn rather than a rich.table.Table (rich 15.0): measured under load, interleaved,
    7 rounds, 3,000 rows take 17 ms [9 .. 25] here against 3,045 ms [2,477 .. 4,645] through
    rich (ASCII box, no colour, a console wide enough not to wrap), and the coverage matrix
    of ``vectors coverage`` (conformance/corpus/coverage.py: ``render``) 9 ms [2 .. 14]
    against 714 ms [695 .. 763]; rich's borders and padding would also change every byte of
    the commands' output that tests and scripts read."""
    header = ("theorem", "opcode", "width", "status", "seconds")
    body = [(r["theorem"], str(r["opcode"]), str(r["width"]),
             r["status"] + (f" ({_recheck(r)})" if "second_status" in r else ""),
             f"{r['seconds']:.2f}") for r in rows]
    widths = [max(len(h), *(len(b[k]) for b in body)) if body else len(h)
              for k, h in enumerate(header)]
    line = lambda cells: " | ".join(c.ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    return "\n".join([line(header), "-+-".join("-" * w for w in widths)] + [line(b) for b in body])


def _recheck(r: dict) -> str:
    by = r.get("rechecked_by") or {}
    who = "+".join(sorted({label.split(" ")[0] for label in by})) or r.get("second_solver", "")
    return f"{who}: {r['second_status']}"


def summary(rows: list[dict], elapsed: float) -> dict:
    theorems = [r for r in rows if not r["theorem"].startswith("agreement")]
    agreement = [r for r in rows if r["theorem"].startswith("agreement")]
    by_width: defaultdict[str, Counter[str]] = defaultdict(Counter)
    for r in theorems:
        by_width[str(r["width"])][r["status"]] += 1
    provers: Counter[str] = Counter()
    recheckers: Counter[str] = Counter()
    for r in theorems:
        provers.update(r.get("proved_by", {}))
        recheckers.update(r.get("rechecked_by", {}))
    cache: Counter[str] = Counter()
    for r in rows:
        cache.update(r.get("cache", {}))
    return {
        **({"cache": dict(sorted(cache.items()))} if any("cache" in r for r in rows) else {}),
        "seconds": round(elapsed, 1),
        "theorems": dict(Counter(r["status"] for r in theorems)),
        "theorems_by_width": {w: dict(c) for w, c in sorted(by_width.items())},
        "claims": sum(r.get("claims", 0) for r in theorems),
        "claims_proved_by": dict(sorted(provers.items())),
        "claims_rechecked_by": dict(sorted(recheckers.items())),
        "second_solver": dict(Counter(r.get("second_status", "not run") for r in theorems)),
        "premises": dict(Counter(r.get("premises", "not checked") for r in theorems)),
        "agreement": dict(Counter(r["status"] for r in agreement)),
        "agreement_cases": sum(r.get("cases", 0) for r in agreement
                               if r["status"] != INFORMATIVE),
        "failures": sum(r["status"] in FAILING for r in rows),
        "unknown": sum(r["status"] == UNKNOWN for r in rows),
        "timeout": sum(r["status"] == TIMEOUT for r in rows),
    }


def cache_line(rows: list[dict], folder: str | None) -> str:
    """What the verdict cache (proofs/cache.py) gave: answers taken from it, solved, and
    entries refused (not sealed by the local key: solved again)."""
    if folder is None:
        return "verdict cache: not used (--no-cache): every query solved"
    got = summary(rows, 0.0).get("cache", {})
    hits, solved = got.get("hits", 0), got.get("solved", 0)
    cached, run = got.get("checks_cached", 0), got.get("checks_run", 0)
    return (f"verdict cache {folder}: {hits} of {hits + solved} solver answers from the "
            f"cache, {solved} solved, {got.get('refused', 0)} entries refused; {cached} of "
            f"{cached + run} agreement checks from the cache")


def failures(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] in FAILING]


def undecided(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r["status"] in UNDECIDED]


def rerun_command(r: dict) -> str:
    """The exact command that runs this row again (its theorem, opcode and width)."""
    parts = ["rtwo-vm", "prove", "--theorem", str(r["theorem"])]
    if r["opcode"] not in ("-", ""):
        parts += ["--opcode", str(r["opcode"])]
    if str(r["width"]) not in ("-", "0"):
        parts += ["--width", str(r["width"])]
    return " ".join(parts)


def describe_failure(r: dict) -> str:
    head = f"{r['theorem']} {r['opcode']} w{r['width']}: {r['status']}"
    if "error" in r:
        return f"{head}: {r['error']}"
    if r["status"] == "vacuous" and r.get("vacuous_claims"):
        claims = ", ".join(map(str, r["vacuous_claims"]))
        return (f"{head}: claims {claims} are implications whose antecedent cannot hold with "
                "the premises, so they would hold of anything")
    if r["status"] == "vacuous":
        return f"{head}: its premises are unsatisfiable, so it would hold of anything"
    if "counterexample" in r:
        cex = r["counterexample"]
        if "explained" in cex:
            from proofs.explain import render
            return "\n  ".join([head, *render(cex)])
        return f"{head}\n  inputs: {json.dumps(cex.get('inputs', cex), default=str)[:1500]}" + (
            f"\n  interpreter: {cex.get('interpreter')}\n  replay: {cex.get('differences')}"
            if "inputs" in cex else "")
    if r.get("findings"):
        return f"{head}\n  " + "\n  ".join(json.dumps(f, default=str)[:1500]
                                          for f in r["findings"])
    return head


def describe_undecided(r: dict) -> str:
    why = ("hit the wall-clock safety net" if r["status"] == TIMEOUT
           else "left undecided within its resource budget")
    if isinstance(r.get("error"), str):     # a whole task's process killed at its deadline
        why = r["error"]
    claims = r.get("undecided_claims")
    which = f" (claims {', '.join(map(str, claims))})" if claims else ""
    return (f"{r['theorem']} {r['opcode']} w{r['width']}: {r['status']}: {why}{which}; "
            f"rerun: {rerun_command(r)}")


def fingerprint() -> str:
    """sha256 over the spec data, the proof budgets and the code a verdict is about (the
    spec package, the reference interpreter and the proofs), from the installed files."""
    import proofs
    import reference_vm
    import spec
    from fanout.resume import code_digest
    return code_digest(spec, reference_vm, proofs)


def document(rows: list[dict], elapsed: float, options: Options) -> dict:
    from proofs import solvers
    scope = {"complete": not options.partial, "spec_version": options.version, "opcodes": list(options.opcodes or []) or None,
             "width": options.width, "theorems_file": options.theorems_file,
             "agreement": options.agreement, "solver": options.solver,
             "budgets": options.budgets, "cache": options.cache_dir}
    return {"format": FORMAT, "fingerprint": fingerprint(), "scope": scope,
            "budgets": solvers.load(options.budgets).to_json(),
            "summary": summary(rows, elapsed), "results": rows}


def verdict(rows: list[dict]) -> str:
    """What readiness will conclude from these rows alone: passed or failed."""
    return "passed" if all(r["status"] in VERDICT_OK or r["status"] == INFORMATIVE
                           for r in rows) else "failed"


def assess(doc) -> tuple[bool, str]:
    """(usable, message): whether ``doc`` is a complete, current proof report with every
    registered theorem and agreement check present, and if not, why not (one line)."""
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return False, "not a proof report (no results list)"
    if doc.get("format") != FORMAT:
        return False, (f"report format {doc.get('format')!r}, not {FORMAT}: written by another "
                       "version; run `rtwo-vm prove`")
    scope = doc.get("scope") or {}
    if not scope.get("complete"):
        return False, ("a partial run's report (--opcode, --width, --theorems or non-default "
                       "solver/budgets): run `rtwo-vm prove` for the full report")
    if doc.get("fingerprint") != fingerprint():
        return False, ("stale: the spec data or the code changed since this report was "
                       "written; run `rtwo-vm prove`")
    from proofs import versions
    version = scope.get("spec_version")
    if not isinstance(version, str) or version not in versions.MODELLED:
        return False, (f"a report of spec version {str(version)[:20]!r}, which has no models "
                       "here; run `rtwo-vm prove`")
    rows = [r for r in doc["results"] if isinstance(r, dict)]
    present = {(str(r.get("theorem")), str(r.get("opcode")), str(r.get("width"))) for r in rows}
    missing = sorted(expected_rows(Options(version=version)) - present)
    if missing:
        name, opcode, width = missing[0]
        return False, (f"{len(missing)} registered results missing (first: {name} {opcode} "
                       f"w{width}); run `rtwo-vm prove`")
    return True, "complete and current"


__all__ = ["AGREES", "COUNTEREXAMPLE", "DISAGREES", "PROVED", "UNKNOWN", "TIMEOUT", "table",
           "summary", "failures", "undecided", "describe_failure", "describe_undecided",
           "rerun_command", "document", "assess", "verdict", "fingerprint"]
