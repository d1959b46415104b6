"""``rtwo-vm conformance ...`` (run, selftest, replay, init, adapter): the runner that validates VM
implementations against the vectors (spec chapter 11). ``run.py`` drives a run (selection,
sessions, reports), ``files.py`` its output folders, logs and replay bundles.

Every command takes ``--spec-version``: the corpus of one version. Without it, run and
selftest work on every version the adapter announces."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys

from rtwo_vm.arguments import corpus as corpus_args
from rtwo_vm.arguments.evidence import add_data_option
from rtwo_vm.commands.conformance.files import fresh_count, repeat_count, seed_value
from rtwo_vm.arguments.inputs import CliError, nonnegative_int, positive_float, positive_int
from rtwo_vm.progress import add_option as add_progress_option

EXIT_OK, EXIT_NOT_CONFORMING, EXIT_USAGE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3
KINDS = ("result", "resource", "resource_bound", "stage", "internal", "nondeterministic", "trace", "disagreement",
         "crash", "timeout", "garbage", "oversized", "wrong_id", "extra_output", "protocol", "unavailable",
         "adapter_error", "unsupported")    # conformance.run.outcomes.KINDS, listed here to keep --help import-free
WRONG = "wrong"     # --kind wrong: every wrong answer (conformance.run.outcomes.WRONG_ANSWERS), no unsupported input


def register(sub) -> None:
    p = sub.add_parser("conformance", help="validate VM implementations against the vectors")
    cs = p.add_subparsers(dest="conformance_command", required=True, parser_class=type(p))
    r = cs.add_parser("run", help="run the corpus through one or more adapters (default: the reference's)",
                      description="One suite per spec version the adapters announce, each with its own "
                                  "reports in OUT/VERSION. Exit status: 0 conforms, 1 does not conform, "
                                  "2 usage error, 3 could not run (an adapter did not start or refused the "
                                  "handshake, or implements none of the versions asked for).")
    corpus_args.add_options(r, "every version the adapter announces")
    r.add_argument("--impl", action="append", metavar="CMD", help="adapter command line (repeatable)")
    r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="select vectors: id glob or key=glob terms joined by commas (repeatable: union)")
    r.add_argument("--workers", type=positive_int, default=2, help="adapter processes per implementation (default 2)")
    r.add_argument("--window", type=positive_int, default=32, help="requests in flight per process (default 32)")
    r.add_argument("--timeout", type=positive_float, default=10.0, help="seconds per vector before a hang (default 10)")
    r.add_argument("--max-failures", type=positive_int, default=3, metavar="K",
                   help="after K consecutive crashes, hangs or protocol failures the remaining vectors are unavailable (default 3)")
    r.add_argument("--repeat", type=repeat_count, default=1,
                   help="determinism passes in fresh, perturbed processes (default 1; 0 disables)")
    r.add_argument("--seed", type=seed_value, default=None,
                   help="seed of the run: fresh sample, request ids, shuffled orders (default: a new one, printed)")
    r.add_argument("--fresh", type=fresh_count, default=100, metavar="N",
                   help="vectors of the fresh sample generated for this run (default 100; 0 disables it)")
    r.add_argument("--blind", action=argparse.BooleanOptionalAction, default=True,
                   help="blind every corpus request for the run, judged against the reference's result "
                        "for what was sent (default; --no-blind sends the published inputs, for "
                        "debugging only: a lookup could pass)")
    r.add_argument("--known-failures", action="append", default=[], metavar="FILE",
                   help="extra known-failure list (conformance/known_failures/*.toml always apply)")
    r.add_argument("--max-traces", type=nonnegative_int, default=50, help="failing vectors whose traces are diffed")
    r.add_argument("--out", default=None,
                   help="directory of one folder per spec version, each with report.json, junit.xml, "
                        "report.html and bundles/ (default conformance/ in the data directory)")
    add_data_option(r, "the reports go to (as <data>/conformance/, when no --out)")
    r.add_argument("--max-bundles", type=nonnegative_int, default=50, metavar="N",
                   help="replay bundles written at most, most telling failures first (default 50)")
    r.add_argument("--max-line", type=positive_int, default=None, metavar="BYTES",
                   help="longest response line accepted to a request without an expected result, and "
                        "the least a traced one may take (default: the largest result the "
                        "default limits allow); a vector's answer may take twice its expected "
                        "result plus 8 KiB")
    r.add_argument("--keep-logs", nargs="?", const="", default=None, metavar="DIR",
                   help="keep the end of the stderr of every adapter process in DIR (default when given "
                        "without DIR: <out>/logs); off by default")
    add_progress_option(r, "progress bar (off with --quiet or --json unless given)")
    r.add_argument("--quiet", action="store_true", help="print only the final line")
    r.add_argument("--json", action="store_true", help="print a JSON summary on stdout instead of the text")
    r.add_argument("--by-opcode", action="store_true", help="print the pass/fail table of every opcode")
    r.add_argument("--show", type=nonnegative_int, default=15, metavar="N", help="failures printed (default 15)")
    r.add_argument("--kind", action="append", choices=(WRONG, *KINDS), metavar="KIND",
                   help="print only failures of this kind (repeatable); with --last-failed, run only "
                        "the previous failures of this kind: wrong (every wrong answer: result ... "
                        "disagreement, not unsupported), " + ", ".join(KINDS))
    r.add_argument("-x", "--exitfirst", action="store_true", help="stop at the first failure that is not listed")
    r.add_argument("--last-failed", action="store_true",
                   help="run only the vectors that failed in the previous report in --out (with its seed)")
    r.set_defaults(func=_cmd_run)
    s = cs.add_parser("selftest", help="check an adapter against the protocol (run this first)")
    corpus_args.add_options(s, "every version the adapter announces")
    s.add_argument("--impl", metavar="CMD", help="adapter command line (default: the reference's)")
    s.add_argument("--timeout", type=positive_float, default=10.0, help="seconds per request (default 10)")
    s.add_argument("--strength", action="store_true",
                   help="run the selftest on every adapter mutant (the reference adapter with one "
                        "rule of 11.5 broken) and print how many the check of their rule catches")
    s.add_argument("--mutant", action="append", metavar="NAME",
                   help="with --strength: only this mutant (repeatable)")
    s.set_defaults(func=_cmd_selftest)
    s = cs.add_parser("replay", help="run one failing vector again from its replay bundle (or by id)")
    corpus_args.add_options(s, "a bundle's own version; for a vector id, the newest")
    s.add_argument("target", help="a replay bundle file, or a vector id")
    s.add_argument("--impl", metavar="CMD",
                   help="adapter command line, run from the current directory (needed for a bundle, "
                        "whose recorded command is never run; default for a vector id: the reference's)")
    s.add_argument("--repeat", type=repeat_count, default=None,
                   help="extra determinism passes in perturbed environments (default: 1 for a vector id, "
                        "0 for a bundle, which replays the passes it recorded)")
    s.add_argument("--seed", type=seed_value, default=1, help="seed of the extra passes' orders")
    s.add_argument("--keep-logs", default=None, metavar="DIR", help="keep the adapter's stderr in DIR")
    s.add_argument("--timeout", type=positive_float, default=10.0, help="seconds per request (default 10)")
    s.set_defaults(func=_cmd_replay)
    from rtwo_vm.commands.conformance import init
    init.register(cs)
    s = cs.add_parser("adapter", help="serve the reference interpreter on stdin/stdout (protocol 1)")
    s.set_defaults(func=_cmd_adapter)


def _cmd_run(args) -> int:
    from conformance.run.process import kill_all
    from rtwo_vm.commands.conformance import run as conformance_run
    with _terminated_as_interrupt():
        try:
            return conformance_run.run(args)
        finally:
            kill_all()


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the runner is, so that every adapter is killed on the way out."""


@contextlib.contextmanager
def _terminated_as_interrupt():
    def handler(signum, frame):
        raise _Terminated()
    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:            # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _cmd_selftest_strength(args) -> int:
    from conformance.run.process import kill_all
    from conformance.run.selftest_strength import CAUGHT, report, run_strength
    from conformance.run.selftest_mutants import MUTANTS
    if args.impl:
        raise CliError("--strength runs the reference adapter's mutants: no --impl")
    for name in args.mutant or ():
        if name not in MUTANTS:
            raise CliError(f"--mutant: no mutant {name[:40]!r} (mutants: {', '.join(MUTANTS)})")
    version, folder = list(corpus_args.corpora(args))[-1]     # the newest asked for
    _, vectors = corpus_args.load_corpus(folder, version)
    with _terminated_as_interrupt():
        try:
            verdicts = run_strength({v["id"]: v for v in vectors}, version, timeout=min(args.timeout, 5.0),
                                    names=tuple(args.mutant) if args.mutant else None)
        finally:
            kill_all()
    print("\n".join(report(verdicts, version)))
    return EXIT_OK if all(v.verdict == CAUGHT for v in verdicts) else EXIT_NOT_CONFORMING


def _cmd_selftest(args) -> int:
    import shlex
    if args.strength:
        return _cmd_selftest_strength(args)
    if args.mutant:
        raise CliError("--mutant needs --strength")

    from conformance.run.process import Settings, kill_all
    from conformance.run.selftest import run_selftest
    from conformance.run.suite import reference_command
    from conformance.run.versions import discover
    from rtwo_vm.commands.conformance.run import check_commands
    corpora = dict(corpus_args.corpora(args))
    command = args.impl or reference_command()
    check_commands([command])
    status = EXIT_OK
    with _terminated_as_interrupt():
        try:
            found = discover(command, shlex.split(command), Settings(next(iter(corpora)), timeout=args.timeout,
                                                                     handshake_timeout=args.timeout), list(corpora))
            # An adapter that could not say which versions it implements is checked on the newest
            # asked for: its handshake check says what went wrong.
            versions = [v for v in corpora if found.checks(v)] or ([] if not found.start_error else list(corpora)[-1:])
            for version, why in found.not_checked.items():
                print(f"spec {version}: not checked: {why}")
            for version in versions:
                _, vectors = corpus_args.load_corpus(corpora[version], version)
                from rtwo_vm.commands.conformance.run import load_scenarios
                checks = run_selftest(command, {v["id"]: v for v in vectors}, version, timeout=args.timeout,
                                      scenarios=load_scenarios(argparse.Namespace(filter=[]), corpora[version], version))
                status = max(status, _print_checks(command, version, checks))
        finally:
            kill_all()
    return status if versions else EXIT_COULD_NOT_RUN


def _print_checks(command: str, version: str, checks) -> int:
    for c in checks:
        print(f"{'PASS' if c.ok else 'FAIL'}  {c.name}" + (f"\n      {c.detail[:2000]}" if c.detail else ""))
        for line in c.note[:2000].splitlines():
            print(f"      {line}")
    failed = sum(not c.ok for c in checks)
    # What the VM answered UNSUPPORTED_INPUT is coverage, not a failure (the first line of each note).
    coverage = "".join(f"; {c.note.splitlines()[0]}" for c in checks if c.note)
    print(f"selftest of {command} (spec {version}): {len(checks) - failed}/{len(checks)} checks passed{coverage}")
    if checks and not checks[0].ok:
        return EXIT_COULD_NOT_RUN
    return EXIT_OK if not failed else EXIT_NOT_CONFORMING


def _cmd_replay(args) -> int:
    from rtwo_vm.commands.conformance.files import replay
    from rtwo_vm.commands.conformance.run import check_commands
    return replay(args, lambda version: _corpus_of(args, version), check_commands, _terminated_as_interrupt)


def _corpus_of(args, version: str | None) -> list:
    """The vectors of ``version``'s corpus (None: of --spec-version, else the newest)."""
    if version is None:
        return corpus_args.load(args)[1]
    chosen = dict(corpus_args.corpora(args, "all"))
    if version not in chosen:
        raise CliError(f"no corpus of spec {version} (the bundle's version) in {corpus_args.root(args)}")
    return corpus_args.load_corpus(chosen[version], version)[1]


def _cmd_adapter(args) -> int:
    from conformance.adapter import Adapter
    return Adapter().serve(sys.stdin.buffer, sys.stdout.buffer)
