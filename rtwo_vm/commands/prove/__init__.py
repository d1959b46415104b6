"""``rtwo-vm prove``: the SMT semantics suite (proofs/).

Proves the theorems of every opcode (or a part), checks the z3 model against the reference
interpreter, re-checks every proof claim with a second solver configuration, and prints a
table theorem | opcode | width | status | seconds. Every solver call is bounded by the
deterministic budgets of ``proofs/budgets.toml`` (``--budgets`` for another file).

Exit 0 when every row is proved or agrees — exactly when readiness will pass the report;
1 on any counterexample, disagreement, vacuous premise or error, and also on unknown or
timed-out rows (named on stderr with the command that reruns them); 2 on bad input. A
partial run (``--opcode``, ``--theorem``, ``--width``, ``--theorems``, ...) writes its own
report (default ``proofs-partial-report.json`` in the data directory) and never replaces the
full one. The reports go to the data directory (``--data-dir``, ``$RTWO_VM_DATA``, else the
user's: rtwo_vm/arguments/evidence.py), where readiness reads them, whatever the working
directory.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path

from proofs import versions
from rtwo_vm import progress
from rtwo_vm.arguments import cluster, userfiles as userfile_options
from rtwo_vm.arguments.evidence import add_data_option, evidence
from spec import files
from rtwo_vm.arguments.inputs import CliError


def spec_version(args) -> str:
    """The command's spec version (``--spec-version``), refused in one line without models."""
    try:
        args.spec_version = versions.resolve(args.spec_version)   # what the inputs read
    except versions.UnmodelledVersion as err:
        raise CliError(f"--spec-version: {err}") from None
    return args.spec_version


def register(subparsers) -> None:
    p = subparsers.add_parser("prove", help="prove opcode theorems and check the interpreter "
                                            "against the SMT model")
    versions.add_option(p)
    p.add_argument("--opcode", action="append", metavar="M",
                   help="only this mnemonic (repeatable); default every opcode")
    p.add_argument("--theorem", action="append", metavar="NAME", dest="names",
                   help="only the theorem (or agreement_* check) NAME (repeatable)")
    p.add_argument("--width", type=int, metavar="W", help="only theorems at W bits (8, 16, 32 "
                   "or 64); width-independent theorems always run")
    p.add_argument("--theorems", metavar="FILE", dest="theorems_file",
                   help="prove the theorems declared in this Python file (proofs.registry "
                        "API) instead of the built-in ones")
    userfile_options.add_options(p, "--theorems",
                                 "default 300 s to load it, 1800 s for each proof task")
    p.add_argument("--export-smt2", dest="export_smt2", metavar="DIR",
                   help="write every query (claims, premises, antecedents, branch searches) "
                        "as standard SMT-LIB 2.6 into DIR, one file each (proofs/exports.py)")
    p.add_argument("--solver", default="cvc5", choices=["z3", "cvc5", "bitwuzla"],
                   help="re-checking: cvc5 (default: the budget profiles' re-checkers, "
                        "Bitwuzla first where a profile names it), bitwuzla (Bitwuzla alone, "
                        "wall clock only), z3 (no re-check)")
    p.add_argument("--budgets", metavar="FILE",
                   help="solver budgets file (default proofs/budgets.toml)")
    p.add_argument("--jobs", type=int, default=2,
                   help="worker processes (default 2; with --strength: mutants' units at a time)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help="wall-clock safety net per query (default: budgets file); hitting it "
                        "is reported as timeout")
    p.add_argument("--samples", type=int, default=8,
                   help="hypothesis examples per opcode at 64 bits (default 8)")
    p.add_argument("--no-agreement", dest="agreement", action="store_false",
                   help="skip the interpreter agreement checks")
    p.add_argument("--crosshair", dest="crosshair", action="store_true",
                   help="add the CrossHair supplement (informative, never a verdict)")
    p.add_argument("--no-crosshair", dest="crosshair", action="store_false",
                   help="no CrossHair supplement (the default)")
    p.add_argument("--report", metavar="FILE",
                   help="JSON report path (default proofs-report.json in the data directory "
                        "for a full run, which readiness reads; proofs-partial-report.json there "
                        "for a partial one; - for stdout)")
    add_data_option(p, "the report is written to (when no --report)")
    p.add_argument("--cache", metavar="DIR", dest="cache_dir",
                   help="verdict cache folder: a query whose exact text, solver and budget "
                        "were solved before is not solved again (default $RTWO_VM_PROOFS_CACHE, "
                        "else ~/.cache/rtwo-vm/proofs; entries are sealed with a local key, "
                        "others are refused; proofs/cache.py)")
    p.add_argument("--no-cache", dest="cache", action="store_false",
                   help="no verdict cache: every query is solved")
    p.add_argument("--cache-key", metavar="FILE", help="the cache's secret key file, outside "
                   "the cache folder (default $RTWO_VM_PROOFS_CACHE_KEY, else "
                   "~/.config/rtwo-vm/proofs-cache.key; created 0600 on first use)")
    cluster.add_ray(p, "theorem tasks (with --strength: the mutants' units)")
    cluster.add_resume(p)
    p.add_argument("--quiet", action="store_true", help="no progress bar and no table")
    progress.add_option(p, "progress bar")
    p.add_argument("--no-table", dest="table", action="store_false",
                   help="progress bar and summary only (the rows stay in the report)")
    p.add_argument("--strength", action="store_true",
                   help="mutation score of the suite: mutants of the models and handlers, each "
                        "run on its opcodes' unit in a copy of the tree (proofs/strength/)")
    p.add_argument("--strength-module", action="append", metavar="PATH", dest="strength_modules",
                   help="with --strength: only mutants of this module (repeatable), e.g. "
                        "proofs/instructions/control.py")
    p.add_argument("--limit", type=int, metavar="N", help="with --strength: a sample of N mutants "
                   "(--timeout is then each mutant's wall-clock safety net, default 1800 s)")
    p.add_argument("--record", action="store_true",
                   help="with --strength: write the score to proofs/strength/score.json")
    p.add_argument("--diff", nargs=2, metavar=("OLD", "NEW"),
                   help="prove every instruction of both versions unchanged unless the diff "
                        "declares it, and each declared change with a witness (proofs/diff/)")
    p.add_argument("--vectors", dest="diff_vectors", metavar="DIR",
                   help="with --diff: where the witness vectors go (default "
                        "proofs-diff-vectors in the data directory: OLD.jsonl and NEW.jsonl)")
    p.add_argument("--all", dest="table_all", action="store_true",
                   help="with --diff: list the unchanged instructions too")
    p.set_defaults(func=_cmd_prove)


def _cmd_strength(args) -> int:
    from proofs.strength import run
    if args.opcode or args.names or args.theorems_file or args.width is not None:
        raise CliError("--strength picks each mutant's unit itself: no --opcode, --theorem, "
                       "--theorems or --width")
    if args.limit is not None and not 1 <= args.limit <= 100_000:
        raise CliError("--limit must be 1..100000")
    if not 1 <= args.jobs <= 64:
        raise CliError("--jobs must be 1..64")
    if args.timeout is not None and not (math.isfinite(args.timeout) and 0 < args.timeout < 1e6):
        raise CliError("--timeout must be a finite number of seconds above 0")
    address = cluster.ray_address(args)
    resume = cluster.resume_state(args.resume, args.cache_key, "units") if args.resume else None
    from fanout.resume import StateError
    try:
        return run.command(tuple(args.strength_modules or ()), args.limit, args.timeout or 1800.0,
                           args.record, spec_version(args), jobs=args.jobs, ray=address,
                           resume=resume)
    except StateError as err:
        raise CliError(str(err)) from None
    except (ValueError, run.BaselineFailed) as err:
        raise CliError(f"--strength: {err}") from None


def _options(args):
    import spec
    from proofs import registry, smtlib, solvers
    from proofs.runner import Options

    version = spec_version(args)
    known = spec.load(version).by_mnemonic
    args.opcode = [m.upper() for m in args.opcode] if args.opcode else None  # case-insensitive
    for m in args.opcode or ():
        if m not in known:
            raise CliError(f"--opcode: no instruction {m!r} in spec version {version}")
    if args.export_smt2 and Path(args.export_smt2).exists() and not Path(args.export_smt2).is_dir():
        raise CliError(f"--export-smt2 {args.export_smt2}: exists and is not a directory")
    if args.export_smt2:
        try:   # the folder itself is never a link (the files in it are written by proofs.claims)
            files.refuse_link(args.export_smt2, "--export-smt2 folder")
        except files.FileRefused as err:
            raise CliError(str(err)) from None
    if args.width is not None and args.width not in (8, 16, 32, 64):
        raise CliError("--width must be 8, 16, 32 or 64")
    if args.solver not in ("z3", "cvc5") and not smtlib.available(args.solver):
        raise CliError(f"--solver {args.solver}: the Python package is not installed "
                       f"(pip install 'rtwo-vm[{args.solver}]')")
    if args.jobs < 1 or args.jobs > 64 or args.samples < 0 or args.samples > 100_000:
        raise CliError("--jobs must be 1..64 and --samples 0..100000")
    if args.timeout is not None and not (math.isfinite(args.timeout) and 0 < args.timeout < 1e6):
        raise CliError("--timeout must be a finite number of seconds above 0")
    try:
        solvers.load(args.budgets)
    except solvers.BudgetError as err:
        raise CliError(f"--budgets: {err}") from None
    options = Options(version=version, opcodes=tuple(args.opcode) if args.opcode else None,
                      names=tuple(args.names) if args.names else None, width=args.width,
                      solver=args.solver, export_dir=args.export_smt2, jobs=args.jobs,
                      wall_seconds=args.timeout, budgets=args.budgets,
                      theorems_file=args.theorems_file, samples=args.samples,
                      agreement=args.agreement, crosshair=args.crosshair,
                      file_seconds=args.file_seconds,
                      file_memory=userfile_options.file_limits(args)[1])
    if args.cache:
        from proofs import cache
        try:    # the folder and key are made (or refused) before any task runs
            opened = cache.open_cache(args.cache_dir, args.cache_key)
        except cache.CacheError as err:
            raise CliError(f"--cache: {err}") from None
        options.cache_dir, options.cache_key = str(opened.folder), str(opened.key_file)
    if args.names and not args.theorems_file:
        known_names = {th.name for th in registry.builtin(version)} | {
            f"agreement_{k}" for k in ("branches", "hypothesis", "exhaustive", "policy",
                                       "validate", "lifecycle", "crosshair")}
        for name in args.names:
            if name not in known_names:
                raise CliError(f"--theorem: no registered theorem {name!r}")
    if args.theorems_file:
        try:
            declared = registry.load_file(args.theorems_file, *userfile_options.file_limits(args))
        except registry.TheoremFileError as err:
            raise CliError(str(err)) from None
        for th in declared:
            if th.opcode != "-" and th.opcode not in known:
                raise CliError(f"--theorems: {th.name}: no instruction {th.opcode!r}")
            try:
                solvers.load(args.budgets).profile(th.name, th.profile, th.opcode)
            except ValueError as err:
                raise CliError(f"--theorems: {err}") from None
    return options


def _cmd_prove(args) -> int:
    if args.diff and (args.ray or args.resume):
        raise CliError("--ray and --resume are not for --diff")
    if args.diff:
        from rtwo_vm.commands.prove import diff as prove_diff
        return prove_diff.command(args)
    if args.diff_vectors or args.table_all:
        raise CliError("--vectors and --all need --diff")
    if args.strength:
        return _cmd_strength(args)
    if args.strength_modules or args.limit is not None or args.record:
        raise CliError("--strength-module, --limit and --record need --strength")
    from proofs import report
    from proofs.runner import run_suite
    from rtwo_vm.progress import Progress

    address = cluster.ray_address(args)
    if (address or args.resume) and args.theorems_file:
        raise CliError("--ray and --resume run the built-in theorems: not with --theorems")
    options = _options(args)
    files_of = evidence(args)
    target = args.report or str(files_of.partial_proofs_report if options.partial
                                else files_of.proofs_report)
    start = time.perf_counter()
    bar = Progress(None, "prove", enabled=progress.wanted(args.progress, quiet=args.quiet))

    def advance(done: int, total: int, row: dict) -> None:
        bar.total = total
        bar.update(done, f"{row['theorem'][:34]} {row['opcode']}")
    with bar:
        if address or args.resume:
            from fanout.ray_setup import RayUnavailable
            from fanout.resume import StateError
            from proofs import distributed
            try:
                rows = distributed.run_suite(options, advance, address, args.resume)
            except (RayUnavailable, StateError) as err:
                raise CliError(str(err)) from None
        else:
            rows = run_suite(options, advance)
    elapsed = time.perf_counter() - start
    doc = report.document(rows, elapsed, options)
    if not args.quiet and target != "-":  # with --report -, stdout is the JSON alone
        if args.table:
            print(report.table(rows))
        print(json.dumps(doc["summary"], sort_keys=True))
        print(report.cache_line(rows, options.cache_dir))
    for failure in report.failures(rows):
        print(report.describe_failure(failure), file=sys.stderr)
    for row in report.undecided(rows):
        print(report.describe_undecided(row), file=sys.stderr)
    text = json.dumps(doc, indent=1, sort_keys=True, default=str)
    if target == "-":
        print(text)
    else:
        try:   # a fresh temporary name beside it, renamed (spec.files): never through a link
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            files.atomic_write(files.output_file(target, "proofs report"), text)
        except files.FileRefused as err:
            raise CliError(str(err)) from None
        except OSError as err:
            raise CliError(f"cannot write {target}: {err.strerror or err}") from None
    verdict = report.verdict(rows)
    if target != "-":
        where = (f"partial run: report in {target}; the full report readiness reads is "
                 f"unchanged" if options.partial else f"report in {target}")
        counts = doc["summary"]
        line = (f"prove: {'PASS' if verdict == 'passed' else 'FAIL'}: {len(rows)} rows, "
                f"{counts['failures']} failing, {counts['unknown']} unknown, "
                f"{counts['timeout']} timed out; {where}")
        print(line, file=sys.stderr if args.quiet else sys.stdout)
    return 0 if verdict == "passed" else 1
