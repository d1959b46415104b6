"""``rtwo-vm upgrade-check ADDRESS [--to VERSION]``: before a deployed contract is moved to a
newer spec version, prove it gives the same result under both versions' rules, or show an
input on which it does not (rtwo_vm/runtime/upgrade.py; the same answer as
``POST /api/v1/contracts/{address}/upgrade-check``). It only reads the database.

Exit status: 0 proved equal, 1 differs (the input and both versions' results are printed), 4
unknown (a bound, an undecided query or a safety net, named), 2 bad input (one line).
"""

from __future__ import annotations

import json

from rtwo_vm.arguments.inputs import parse_count, parse_word, positive_float, positive_int
from rtwo_vm.arguments.runtime import add_options, guard, open_runtime, print_json

EXIT = {"proved-equal": 0, "differs": 1, "unknown": 4}


@guard
def _cmd_upgrade_check(args) -> int:
    from reference_vm import Limits
    from rtwo_vm.runtime.upgrade import Budget
    address = parse_word(args.address, "address")
    limits = Limits(**{name: parse_count(getattr(args, name), f"--{name.replace('_', '-')}")
                       for name in Limits.DIMENSIONS if getattr(args, name) is not None})
    names = None if args.compare is None else [n.strip() for n in args.compare.split(",")
                                                if n.strip()]
    budget = Budget(max_calldata=args.max_calldata, loop_bound=args.loop_bound,
                    max_paths=args.max_paths, max_steps=args.max_steps, max_work=args.max_work,
                    deadline=args.deadline)
    with open_runtime(args) as rt:
        result = rt.upgrade_check(address, args.to, compare=names, limits=limits, budget=budget)
    doc = result.to_json()
    if args.json:
        print_json(doc)
    else:
        print(_text(doc))
    return EXIT[doc["answer"]]


def _text(doc: dict) -> str:
    lines = [f"upgrade check of {doc['address']} from {doc['fromVersion']} to "
             f"{doc['toVersion']}: {doc['answer']} ({doc['verdict']})",
             f"  compared: {', '.join(doc['compared'])}",
             f"  paths: {doc['paths'][0]} under {doc['fromVersion']}, {doc['paths'][1]} under "
             f"{doc['toVersion']}; {doc['queries']} solver queries; contracts given: "
             f"{', '.join(doc['contracts'])}"
             + (f" ({doc['contractsLeftOut']} more left out)" if doc["contractsLeftOut"] else "")]
    lines += [f"  {r}" for r in doc["reasons"][:5]]
    if doc["witness"]:
        w = doc["witness"]
        lines.append(f"  input: caller {w['caller']}, call data {w['call_data']}, storage "
                     f"{json.dumps(w['storage'], sort_keys=True)}")
        for version, res in sorted((doc["results"] or {}).items()):
            shown = {f: res.get(f) for f in ("status", "error", "output", *doc["differing"])}
            lines.append(f"  under {version}: {json.dumps(shown, sort_keys=True)}")
        lines.append(f"  they differ in: {', '.join(doc['differing'])}")
    return "\n".join(lines)


def register(sub) -> None:
    from proofs.symbolic import bounds
    p = sub.add_parser(
        "upgrade-check",
        help="prove a deployed contract behaves the same under a newer spec version",
        description="Prove the contract at ADDRESS gives the same result under --to VERSION as "
                    "under the version it is deployed under, on every input within the bounds "
                    "(any caller, call data, storage), or show an input on which it does not, "
                    "replayed on the reference under both. Reads the database only. Exit "
                    "status: 0 proved equal, 1 differs, 4 unknown, 2 bad input.")
    p.add_argument("address")
    p.add_argument("--to", default=None, metavar="VERSION",
                   help="the version to check against (default: the newest spec version)")
    p.add_argument("--compare", default=None, metavar="FIELDS",
                   help="fields compared, comma-separated, of: status, error, error_pc, "
                        "output, storage, events, calls, usage, fee (default: all)")
    p.add_argument("--compute", help="compute limit of the calls checked")
    p.add_argument("--memory-pages", dest="memory_pages", help="memory limit in pages")
    p.add_argument("--storage-units", dest="storage_units", help="storage limit in units")
    for flag, dest, default, kind in (
            ("--max-calldata", "max_calldata", bounds.DEFAULT_MAX_CALLDATA, int),
            ("--loop-bound", "loop_bound", bounds.DEFAULT_LOOP_BOUND, positive_int),
            ("--max-paths", "max_paths", bounds.DEFAULT_MAX_PATHS, positive_int),
            ("--max-steps", "max_steps", bounds.DEFAULT_MAX_STEPS, positive_int),
            ("--max-work", "max_work", bounds.DEFAULT_MAX_WORK, positive_int)):
        p.add_argument(flag, dest=dest, type=kind, default=default,
                       help=f"as rtwo-vm equivalence's (default and most: {default})")
    p.add_argument("--deadline", type=positive_float, default=bounds.DEFAULT_DEADLINE,
                   metavar="SECONDS",
                   help="wall-clock safety net: a check it stops is unknown, never an answer "
                        f"(default and most: {bounds.DEFAULT_DEADLINE:g})")
    add_options(p)
    p.set_defaults(func=_cmd_upgrade_check)
