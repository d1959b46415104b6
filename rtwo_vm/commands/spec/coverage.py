"""``rtwo-vm spec coverage``: every clause of the spec with the checks that check it.

Prints, per version (every version unless ``--version`` names one), each clause with the
number of vectors, scenario vectors, theorems, agreement checks and self-test checks linked to
it, or why none is (spec/coverage/untestable.toml); then the clauses nothing checks or explains,
the links due for review (their clause's text changed since they were confirmed, or they were
never confirmed), confirmed links that are gone, and the problems of the markers and
declarations. Exit status 0 when none of those remain, 1 otherwise, 2 for bad input.
``--confirm`` records every current link with its clause's digest (after review).
"""

from __future__ import annotations

import json
from pathlib import Path

import spec
from rtwo_vm.arguments.inputs import CliError

SHOWN = 20      # check names shown per link by --clause


def add_options(p) -> None:
    p.add_argument("--confirm", action="store_true",
                   help="coverage: record every current link with its clause's digest (after review)")
    p.add_argument("--summary", action="store_true", help="coverage: only the counts and what is wrong")
    p.add_argument("--clause", metavar="ID", help="coverage: one clause, its text and the names of its checks")
    p.add_argument("--store", metavar="FILE",
                   help="coverage: the confirmed links (default: the checkout's spec/coverage/confirmed.toml)")
    p.add_argument("--reasons", metavar="FILE",
                   help="coverage: the unchecked clauses' reasons (default: spec/coverage/untestable.toml)")


def refuse_options(args) -> None:
    for name in ("confirm", "summary", "clause", "store", "reasons"):
        if getattr(args, name):
            raise CliError(f"--{name} is an option of spec coverage only")


def run(args) -> int:
    from rtwo_vm import clause_coverage as cc
    from spec import clauses as spec_clauses
    versions = [args.spec_version] if args.spec_version else list(spec.names())
    store_path = Path(args.store) if args.store else cc.data_path("confirmed.toml")
    try:
        store = cc.load_store(store_path) if args.store or store_path.exists() else {}
        reasons = {v: cc.load_reasons(Path(args.reasons) if args.reasons else None, v) for v in versions}
    except (OSError, ValueError) as err:
        raise CliError(str(err).splitlines()[0]) from None
    if args.clause is not None and not (spec_clauses.CLAUSE_ID.fullmatch(args.clause)
                                        and any(args.clause in spec_clauses.by_id(v) for v in versions)):
        raise CliError(f"--clause {args.clause[:60]!r}: no clause of spec {', '.join(versions)} has that id")
    reports = [cc.coverage(v, store=store, reasons=reasons[v]) for v in versions]
    if args.confirm:
        return _confirm(args, reports, store, store_path)
    if args.clause is not None:
        return _one(reports, args.clause, args.json)
    if args.json:
        print(json.dumps([r.to_json() for r in reports], indent=2, ensure_ascii=False))
        return 0 if all(r.ok for r in reports) else 1
    for report in reports:
        _print(report, args.summary)
    return 0 if all(r.ok for r in reports) else 1


def _confirm(args, reports, store, store_path: Path) -> int:
    from conformance.constants import project_root
    from rtwo_vm import clause_coverage as cc
    from spec.files import FileRefused, atomic_write
    wrong = [p for r in reports for p in r.problems]
    if wrong:
        for p in wrong:
            print(p)
        print("not confirmed: fix the problems first")
        return 1
    if not args.store:
        # the checkout's own file, and only from within that checkout (never an installed copy)
        owner, here = project_root(store_path.parent), project_root()
        if owner is None or here is None or owner.resolve() != here.resolve():
            raise CliError(f"--confirm writes {store_path}, which is in no checkout of the project you are "
                           "in: run it in that checkout, or name a file with --store")
    updated = cc.confirmed_store(reports, store)
    try:
        atomic_write(store_path, cc.render_store(updated))
    except (OSError, FileRefused) as err:
        raise CliError(str(err).splitlines()[0]) from None
    for r in reports:
        print(f"spec {r.version}: {len(r.review)} links confirmed, {len(r.obsolete)} dropped; "
              f"{sum(len(v[1]) for v in updated[r.version].values())} links of "
              f"{len(updated[r.version])} clauses recorded in {store_path}")
    return 0


def _counts(entry) -> str:
    from rtwo_vm.clause_coverage import KINDS
    if entry.links:
        parts = [f"{entry.count(k)} {k}{'s' if entry.count(k) != 1 else ''}" for k in KINDS if entry.count(k)]
        return ", ".join(parts)
    if entry.reason is not None:
        return f"{entry.reason.kind}: {entry.reason.reason[:90]}"
    return "NOTHING checks it"


def _print(report, summary: bool) -> None:
    s = report.summary()
    explained = ", ".join(f"{n} {k}" for k, n in s["explained"].items() if n)
    print(f"spec {report.version}: {s['clauses']} clauses: {s['checked']} checked, "
          f"{sum(s['explained'].values())} explained ({explained or 'none'}), {s['unexplained']} unexplained; "
          f"{s['review']} links for review, {s['obsolete']} obsolete, {s['problems']} problems")
    print("  checked by: " + ", ".join(f"{k} {n}" for k, n in s["checked_by"].items()))
    for why in report.unavailable:
        print(f"  not gathered: {why}")
    if not summary:
        for entry in report.clauses:
            print(f"  {entry.clause.id:<36} {_counts(entry)}")
    unexplained = report.of_status("unexplained")
    if unexplained:
        print(f"Unexplained (checked by nothing, not listed in spec/coverage/untestable.toml): {len(unexplained)}")
        for entry in unexplained:
            print(f"  {entry.clause.id:<36} {entry.clause.summary[:100]}")
    if report.review:
        print(f"For review (confirm with rtwo-vm spec coverage --confirm): {len(report.review)}")
        for clause_id, key, why in report.review:
            print(f"  {clause_id:<36} {key}  [{why}]")
    if report.obsolete:
        print(f"Confirmed links that are gone (dropped by --confirm): {len(report.obsolete)}")
        for clause_id, key in report.obsolete:
            print(f"  {clause_id:<36} {key}")
    for problem in report.problems:
        print(f"problem: {problem}")


def _one(reports, clause_id: str, as_json: bool) -> int:
    from spec import clauses as spec_clauses
    out = []
    for report in reports:
        entry = next((c for c in report.clauses if c.clause.id == clause_id), None)
        if entry is None:
            continue
        doc = next(c for c in report.to_json(SHOWN)["per_clause"] if c["id"] == clause_id)
        doc["version"] = report.version
        doc["text"] = spec_clauses.strip_markers(entry.clause.text)
        doc["for_review"] = [{"link": k, "why": w} for k, w in entry.review]
        out.append(doc)
    if as_json:
        print(json.dumps(out, indent=2, ensure_ascii=False))
    for doc in out if not as_json else ():
        print(f"{doc['id']} (spec {doc['version']}, section {doc['section']}, digest {doc['digest']}): {doc['status']}")
        print("  " + doc["text"].replace("\n", "\n  "))
        if doc["reason"]:
            print(f"  {doc['reason']['kind']}: {doc['reason']['reason']}"
                  + (f" ({', '.join(doc['reason']['tests'])})" if doc["reason"]["tests"] else ""))
        for link in doc["links"]:
            more = f" and {link['count'] - len(link['checks'])} more" if link["count"] > len(link["checks"]) else ""
            print(f"  {link['kind']} {link['key']}: {', '.join(link['checks'])}{more}")
        for item in doc["for_review"]:
            print(f"  for review: {item['link']} [{item['why']}]")
    return 0 if all(not d["for_review"] and d["status"] != "unexplained" for d in out) else 1
