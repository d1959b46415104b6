"""``rtwo-vm prove``: the SMT semantics suite (proofs/).

Proves the theorems of every opcode (or one), checks the z3 model against the reference
interpreter, re-checks every proof query with a second solver, and prints a table
theorem | opcode | width | status | seconds. Exit 0 when nothing failed; 1 on any
counterexample or disagreement (unknown results are reported, not failures); 2 on bad input.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from rtwo_vm.inputs import CliError


def register(subparsers) -> None:
    p = subparsers.add_parser("prove", help="prove opcode theorems and check the interpreter "
                                            "against the SMT model")
    p.add_argument("--opcode", action="append", metavar="M",
                   help="only this mnemonic (repeatable); default every opcode")
    p.add_argument("--width", type=int, metavar="W", help="only theorems at W bits (8, 16, 32 "
                   "or 64); width-independent theorems always run")
    p.add_argument("--export-smt2", dest="export_smt2", metavar="DIR",
                   help="write every proof query as SMT-LIB 2 into DIR")
    p.add_argument("--solver", default="cvc5", choices=["z3", "cvc5", "bitwuzla"],
                   help="second solver re-checking every z3 query (z3: none); default cvc5")
    p.add_argument("--jobs", type=int, default=2, help="worker processes (default 2)")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SECONDS",
                   help="per-query solver timeout (default 10)")
    p.add_argument("--samples", type=int, default=8,
                   help="hypothesis examples per opcode at 64 bits (default 8)")
    p.add_argument("--no-agreement", dest="agreement", action="store_false",
                   help="skip the interpreter agreement checks")
    p.add_argument("--no-crosshair", dest="crosshair", action="store_false",
                   help="skip the CrossHair supplement")
    p.add_argument("--report", default="build/proofs-report.json", metavar="FILE",
                   help="JSON report path (default build/proofs-report.json, where readiness "
                        "and the docs read it; - for stdout)")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    p.add_argument("--no-table", dest="table", action="store_false",
                   help="progress bar and summary only (the rows stay in the report)")
    p.set_defaults(func=_cmd_prove)


def _cmd_prove(args) -> int:
    import spec
    from proofs import report, smtlib
    from proofs.runner import Options, run_suite
    from rtwo_vm.progress import Progress

    known = spec.load().by_mnemonic
    args.opcode = [m.upper() for m in args.opcode] if args.opcode else None  # case-insensitive
    for m in args.opcode or ():
        if m not in known:
            raise CliError(f"--opcode: no instruction {m!r}")
    if args.export_smt2 and Path(args.export_smt2).exists() and not Path(args.export_smt2).is_dir():
        raise CliError(f"--export-smt2 {args.export_smt2}: exists and is not a directory")
    if args.width is not None and args.width not in (8, 16, 32, 64):
        raise CliError("--width must be 8, 16, 32 or 64")
    if args.solver != "z3" and not smtlib.available(args.solver):
        raise CliError(f"--solver {args.solver}: the Python package is not installed")
    if args.jobs < 1 or args.timeout <= 0 or args.samples < 0:
        raise CliError("--jobs, --timeout and --samples must be positive")
    options = Options(opcodes=tuple(args.opcode) if args.opcode else None, width=args.width,
                      solver=args.solver, export_dir=args.export_smt2, jobs=args.jobs,
                      timeout_ms=int(args.timeout * 1000), samples=args.samples,
                      agreement=args.agreement, crosshair=args.crosshair)
    start = time.perf_counter()
    bar = Progress(None, "prove", enabled=False if args.quiet else None)
    with bar:
        rows = run_suite(options, lambda done, total, row: (
            setattr(bar, "total", total), bar.update(done, f"{row['theorem'][:34]} {row['opcode']}")))
    elapsed = time.perf_counter() - start
    doc = report.document(rows, elapsed)
    if not args.quiet and args.report != "-":  # with --report -, stdout is the JSON alone
        if args.table:
            print(report.table(rows))
        print(json.dumps(doc["summary"], sort_keys=True))
    for failure in report.failures(rows):
        print(report.describe_failure(failure), file=sys.stderr)
    text = json.dumps(doc, indent=1, sort_keys=True, default=str)
    if args.report == "-":
        print(text)
    else:
        try:
            Path(args.report).parent.mkdir(parents=True, exist_ok=True)
            Path(args.report).write_text(text)
        except OSError as err:
            raise CliError(f"cannot write {args.report}: {err.strerror or err}") from None
    return 1 if doc["summary"]["failures"] else 0
