"""``rtwo-vm spec``: check every version, list the versions, show an instruction, compare two,
and list which checks check each clause (``coverage``, in ``coverage.py``).

Each action takes the version it reads from ``--spec-version`` (the newest by default; for
coverage, every version) or from its arguments (``diff OLD NEW``); nothing here reads a
process-wide version.
"""

from __future__ import annotations

from typing import Any

import json

import spec
from rtwo_vm.arguments.inputs import CliError, instruction_name, spec_version
from rtwo_vm.commands.spec import coverage


def register(sub) -> None:
    p = sub.add_parser("spec", help="check, list, show or compare the specification's versions")
    p.add_argument("action", choices=["check", "show", "opcodes", "versions", "diff", "coverage"],
                   help="check every version's data against its schemas and diffs (and its clause "
                        "identifiers), list the "
                        "opcodes, show one, list the versions, print every difference "
                        "between two versions (diff OLD NEW), or list every clause with the checks "
                        "that check it (coverage)")
    p.add_argument("name", nargs="*", help="show: a mnemonic or an opcode; diff: OLD NEW")
    # No default here: opcodes and show read the newest version, coverage every version.
    p.add_argument("--spec-version", "--version", dest="spec_version", type=spec_version, default=None,
                   metavar="VERSION",
                   help=f"the version opcodes, show and coverage read (default: the newest, {spec.latest()}; "
                        f"coverage: every version; versions: {', '.join(spec.names())})")
    p.add_argument("--json", action="store_true", help="versions, diff, coverage: JSON on stdout")
    p.add_argument("--prose", choices=["full", "sections", "none"], default="full",
                   help="diff: the prose as unified diffs (full, default), as section names only, "
                        "or left out")
    coverage.add_options(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.action != "coverage":
        coverage.refuse_options(args)
    if args.action == "coverage":
        if args.name:
            raise CliError("spec coverage takes no name (--clause ID shows one clause)")
        return coverage.run(args)
    if args.action == "check":
        return _check()
    if args.action == "versions":
        return _versions(args.json)
    if args.action == "diff":
        if len(args.name) != 2:
            raise CliError("spec diff needs two versions: OLD NEW (e.g. spec diff 1.0 1.1)")
        return _diff(args.name[0], args.name[1], args.json, args.prose)
    if len(args.name) > 1:
        raise CliError(f"spec {args.action} takes at most one name")
    table = spec.load(args.spec_version or spec.latest())
    if args.action == "opcodes":
        if args.name:
            raise CliError("spec opcodes takes no name")
        for ins in table.instructions:
            print(f"0x{ins.opcode:02x} {ins.mnemonic:<15} {ins.type:<12} {ins.signature}")
        return 0
    ins = instruction_name(args.name[0] if args.name else None, "spec show", table.version)
    doc = {f: getattr(ins, f) for f in ins.__dataclass_fields__}
    doc["spec_version"] = table.version
    print(json.dumps(doc, indent=2, sort_keys=True))
    return 0


def _check() -> int:
    from spec.clauses import problems as clause_problems
    from spec.diff import compare
    from spec.loader import validate_against_schemas
    try:
        problems = validate_against_schemas()
    except ImportError:
        raise CliError("spec check needs the jsonschema package (pip install jsonschema)") from None
    rows = spec.versions()
    for row in rows:
        try:
            spec.load(row.version)
        except ValueError as err:
            problems.append(f"{row.version}: {err}")
            continue
        if row.base is not None:
            problems += [f"{row.base} -> {row.version}: {p}" for p in compare(row.base, row.version).problems]
        problems += [f"{row.version}: {p}" for p in clause_problems(row.version)]   # every block marked (1.3)
    for p in problems:
        print(p)
    for row in rows:
        table = spec.load(row.version)
        print(f"spec {table.version} (release {table.release}): {len(table.instructions)} instructions, "
              f"{len(table.errors)} outcome codes")
    print("OK" if not problems else f"{len(problems)} problems")
    return 0 if not problems else 1


def _versions(as_json: bool) -> int:
    rows: list[dict[str, Any]] = []
    for row in spec.versions():
        table = spec.load(row.version)
        rows.append({"version": row.version, "release": row.release, "base": row.base,
                     "instructions": len(table.instructions), "outcome_codes": len(table.errors),
                     "runs_containers": [f"{a}.{b}" for a, b in table.container_versions]})
    if as_json:
        print(json.dumps(rows, indent=2))
        return 0
    print(f"{'version':<8} {'release':<8} {'base':<6} {'instructions':>12} {'codes':>6}  runs containers")
    for r in rows:
        print(f"{r['version']:<8} {r['release']:<8} {r['base'] or '-':<6} {r['instructions']:>12} "
              f"{r['outcome_codes']:>6}  {', '.join(r['runs_containers'])}")
    return 0


def _diff(old: str, new: str, as_json: bool, prose: str) -> int:
    from spec.diff import compare
    try:
        result = compare(spec.version(old).version, spec.version(new).version)
    except spec.VersionError as err:
        raise CliError(str(err)) from None
    if as_json:
        doc = {"old": result.old, "new": result.new, "problems": result.problems,
               "items": [{k: item[k] for k in ("id", "kind", "title", "sections")} for item in result.items],
               "data": [{"where": d.where, "change": d.change, "before": d.before, "after": d.after,
                         "items": list(d.items)} for d in result.data],
               "prose": [{"section": d.where.split(" ", 1)[1], "change": d.change, "items": list(d.items),
                          "diff": list(d.lines) if prose == "full" else []}
                         for d in result.prose if prose != "none"]}
        print(json.dumps(doc, indent=2, default=str))
        return 0 if not result.problems else 1
    print(f"spec {result.old} -> {result.new}: {len(result.items)} items, {len(result.data)} data "
          f"differences, {len(result.prose)} prose sections")
    print("\nItems:")
    for item in result.items:
        print(f"  {item['id']:<8} {item['kind']:<12} {item['title']}  (sections {', '.join(item['sections'])})")
    print("\nData:")
    for d in result.data:
        print(f"  {d.change:<8} {d.where}: {_value(d.before)} -> {_value(d.after)}  [{', '.join(d.items)}]")
    if prose != "none":
        print("\nProse:")
        for d in result.prose:
            print(f"  {d.change:<8} {d.where}  [{', '.join(d.items)}]")
            if prose == "full":
                for line in d.lines[2:]:
                    print(f"      {line}")
    for p in result.problems:
        print(f"problem: {p}")
    return 0 if not result.problems else 1


def _value(value) -> str:
    if value is None:
        return "-"
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 100 else text[:97] + "..."
