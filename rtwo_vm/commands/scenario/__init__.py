"""``rtwo-vm scenario run|export``: sequences of calls on one state (spec chapter 11.9).

``scenario run FILE`` runs each scenario of a TOML file (the ``[[scenario]]`` format of
rtwo_vm/examples.py; a bundled example by its name) or of a file of scenario vectors (.jsonl)
on the reference interpreter, another engine (``--engine``) or the runtime (``--runtime``,
``--db``), prints every step and the final state, and fills the scenario vector with the
reference (``--json`` prints it, ``--out`` writes it). ``scenario export`` writes the calls
recorded in a runtime database as a scenario vector (from_runtime.py).

Exit status: 0 when every run agrees with the reference (and a vector file's expected
results); 1 when a step or the final state differs; 2 for a bad argument or input file (one
line on stderr, nothing written).
"""

from __future__ import annotations

import json
import sys

from rtwo_vm.arguments.engines import add_engine, check_engine, engine_of
from rtwo_vm.arguments.inputs import CliError, add_spec_version
from rtwo_vm.arguments.runtime import DB_ENV, guard


def register(sub) -> None:
    p = sub.add_parser("scenario", help="run a sequence of calls on one state; export runtime calls "
                                        "as a scenario vector",
                       description="Sequences of top-level calls on one state (spec chapter 11.9). "
                                   "'scenario run FILE' runs the scenarios of a TOML file, a bundled "
                                   "example or a file of scenario vectors and prints every step; "
                                   "'scenario export' writes calls a runtime database recorded as a "
                                   "scenario vector.",
                       epilog="Exit status: 0 when every run agrees with the reference (and a vector "
                              "file's expected results), 1 when a step or the final state differs "
                              "(or an export would not reproduce the records), 2 for a bad argument "
                              "or input file: one line on stderr, nothing written.")
    ss = p.add_subparsers(dest="scenario_command", required=True, parser_class=type(p))
    r = ss.add_parser("run", help="run the scenarios of a TOML file or a scenario vector file",
                      description="Run each scenario of FILE step by step, each call on the state "
                                  "the calls before it left, and print every step (outcome, "
                                  "output, state changes, events, usage, fee) and the final state. "
                                  "A scenario holds at most 64 calls; its contract files are relative "
                                  "paths inside the TOML file's folder.")
    r.add_argument("file", metavar="FILE",
                   help="a scenario TOML file ([[scenario]] tables, as rtwo-vm examples reads), the "
                        "name of a bundled example (ledger), or a .jsonl file of scenario vectors")
    r.add_argument("--scenario", action="append", metavar="NAME",
                   help="only this scenario (a TOML scenario's name, a vector's id); repeatable")
    add_engine(r)
    r.add_argument("--runtime", action="store_true",
                   help="run through the runtime: the contracts deployed into a new database, each "
                        "step a call through the ten lifecycle stages (--engine picks the VM's mode)")
    r.add_argument("--db", metavar="PATH",
                   help="with --runtime: the new database to run in, kept for scenario export "
                        "(default: one in memory)")
    r.add_argument("--json", action="store_true",
                   help="print the scenario vectors (filled by the reference) as a JSON list")
    r.add_argument("--out", metavar="FILE.jsonl", help="write the scenario vectors, one per line")
    add_spec_version(r, "the version of scenarios that name none (and of their .rasm contracts)")
    r.set_defaults(func=_cmd_run)
    e = ss.add_parser("export", help="write calls recorded in a runtime database as a scenario vector",
                      description="Export entry calls recorded in a runtime database, in the order "
                                  "they ran and from the state the first of them found, as a scenario "
                                  "vector (source runtime). The vector is re-run on the reference step "
                                  "by step: it is written only when every step gives the recorded "
                                  "result and the state carried matches the database's.")
    e.add_argument("--db", required=True, help=f"the runtime database (SQLite; as --db of call; "
                                               f"${DB_ENV} is not read here)")
    e.add_argument("--contract", action="append", metavar="ADDR",
                   help="export the entry calls of this contract (repeatable)")
    e.add_argument("--context", action="append", metavar="ID",
                   help="export this entry context (repeatable); with --contract, both")
    e.add_argument("--id", dest="vector_id", metavar="ID",
                   help="the vector's id (default scenario/runtime/<first context id>)")
    e.add_argument("--out", metavar="FILE.jsonl", help="write the vector (one line)")
    e.add_argument("--json", action="store_true", help="print the vector as JSON")
    e.set_defaults(func=_cmd_export)


@guard
def _cmd_export(args) -> int:
    from rtwo_vm.commands.scenario import from_runtime
    return from_runtime.command(args)


@guard
def _cmd_run(args) -> int:
    from rtwo_vm.commands.scenario import drive, show, source
    from conformance.scenario.fill import fill_input
    if args.db is not None and not args.runtime:
        raise CliError("--db is for --runtime (the database the scenario runs in)")
    check_engine(args.engine)
    out = show.output_path(args.out) if args.out else None
    scenarios = source.read(args.file, args.spec_version, args.scenario)
    if args.runtime and args.db is not None and len(scenarios) > 1:
        raise CliError(f"{args.file} holds {len(scenarios)} scenarios and --db names one database: "
                       "choose one with --scenario")
    engine = engine_of(args.engine)
    vectors, disagreements = [], 0
    for scenario in scenarios:
        given = scenario.vector
        source_tag = "runtime" if args.runtime else (given["tags"]["source"] if given else "definition")
        vector = fill_input(scenario.input, id=scenario.id, description=scenario.description,
                            source=source_tag,
                            categories=given["tags"]["categories"] if given else (),
                            opcodes=given["tags"]["opcodes"] if given else ())
        expected = vector["expected"]
        if args.runtime:
            run = drive.on_runtime(scenario.input, args.db, args.engine)
        elif args.engine == "reference":
            run = drive.Run([s["result"] for s in expected["steps"]],
                            [s["error_stage"] for s in expected["steps"]], expected["post_state"])
        else:
            run = drive.on_engine(scenario.input, engine)
        found = drive.differences([s["result"] for s in expected["steps"]], expected["post_state"], run)
        if given is not None:
            found += [f"the vector's expected results: {p}" for p in drive.differences(
                [s["result"] for s in given["expected"]["steps"]], given["expected"]["post_state"], run)]
        disagreements += bool(found)
        vectors.append(vector)
        if not args.json:
            where = "the runtime" if args.runtime else f"the {args.engine} engine"
            show.scenario(scenario, run, where)
            show.verdict(found, where, given is not None, args.engine == "reference" and not args.runtime)
    if out is not None:
        show.write(out, vectors)
    if args.json:
        print(json.dumps(vectors, indent=2, sort_keys=True))
    if disagreements:
        print(f"rtwo-vm: {disagreements} of {len(vectors)} scenarios disagree", file=sys.stderr)
    return 1 if disagreements else 0
