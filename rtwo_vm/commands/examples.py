"""``rtwo-vm examples [DIR]``: run the example scenarios (rtwo_vm/examples.py; the bundled ones
by default) and print every call's result."""

from __future__ import annotations

import json
from pathlib import Path

from rtwo_vm.arguments.inputs import add_spec_version


def register(sub) -> None:
    p = sub.add_parser("examples", help="run the example scenarios and print their results")
    p.add_argument("directory", nargs="?", default=None,
                   help="directory of scenario files (*.toml; default: the bundled examples)")
    p.add_argument("--json", action="store_true", help="print full results as JSON")
    add_spec_version(p, "the version of scenarios that name none")
    p.set_defaults(func=_cmd_examples)


def _cmd_examples(args) -> int:
    from rtwo_vm.examples import bundled_directory, run_directory
    runs = run_directory(Path(args.directory) if args.directory else bundled_directory(),
                         args.spec_version)
    if args.json:
        print(json.dumps([{"scenario": r.scenario, "call": r.index, "result": r.result.to_json()}
                       for r in runs], indent=2, sort_keys=True))
        return 0
    head = f"{'scenario':<24} {'#':>2} {'status':<10} {'error':<24} {'compute':>9} {'pages':>5} {'st.units':>8} {'fee':>9}  output"
    print(head)
    print("-" * len(head))
    for r in runs:
        res = r.result
        out = res.output.hex()
        out = out if len(out) <= 32 else out[:29] + "..."
        print(f"{r.scenario:<24} {r.index:>2} {res.status:<10} {res.error or '-':<24} "
              f"{res.usage.compute:>9} {res.usage.memory_pages:>5} {res.usage.storage_units:>8} "
              f"{res.fee:>9}  0x{out}")
    print(f"{len(runs)} calls in {len({r.scenario for r in runs})} scenarios")
    return 0
