"""``rtwo-vm vectors ...`` (fill, check, coverage, list, show, promote) and ``rtwo-vm conformance ...``
(run, selftest, replay, adapter): the conformance corpus and the runner (spec chapter 11)."""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import sys
from pathlib import Path

from rtwo_vm import corpus_args
from rtwo_vm.conformance_files import fresh_count, repeat_count, seed_value
from rtwo_vm.inputs import CliError, nonnegative_int, positive_float, positive_int
from rtwo_vm.progress import add_option as add_progress_option

EXIT_OK, EXIT_NOT_CONFORMING, EXIT_USAGE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3
KINDS = ("result", "resource", "resource_bound", "stage", "internal", "nondeterministic", "trace", "disagreement",
         "crash", "timeout", "garbage", "oversized", "wrong_id", "extra_output", "protocol", "unavailable",
         "adapter_error", "unsupported")    # conformance.run.outcomes.KINDS, listed here to keep --help import-free
WRONG = "wrong"     # --kind wrong: every wrong answer (conformance.run.outcomes.WRONG_ANSWERS), no unsupported input


def register(sub) -> None:
    p = sub.add_parser("vectors", help="fill, check and inspect the conformance vector corpus")
    vs = p.add_subparsers(dest="vectors_command", required=True, parser_class=type(p))
    f = vs.add_parser("fill", help="fill the corpus from its sources with the reference interpreter")
    corpus_args.add_options(f)
    f.add_argument("--check", action="store_true", help="fill in memory and fail if the stored corpus differs")
    f.add_argument("--refresh-smt", action="store_true", help="ask proofs.branches (z3) again for branch inputs")
    f.add_argument("--refresh-symbolic", action="store_true",
                   help="explore every example again for the symbolic source's witnesses (z3)")
    f.add_argument("--source", action="append", choices=["definition", "smt", "random", "fuzz", "symbolic"],
                   help="fill only these sources (default: all)")
    from rtwo_vm import vectors_cli  # fill, promote (issue 20), release and strength (issue 12)
    vectors_cli.add_in_checkout(f)
    f.set_defaults(func=vectors_cli.cmd_fill)
    c = vs.add_parser("check", help="validate the stored corpus: schema (jsonschema), manifest, digest")
    corpus_args.add_options(c)
    c.set_defaults(func=_cmd_check)
    c = vs.add_parser("coverage", help="opcode x outcome matrix and coverage targets of the corpus")
    corpus_args.add_options(c)
    c.add_argument("--json", action="store_true", help="print the coverage as JSON")
    c.add_argument("--no-matrix", action="store_true", help="only the summary")
    c.add_argument("--source", action="append", choices=["definition", "smt", "random", "fuzz"], help="only these sources")
    c.set_defaults(func=_cmd_coverage)
    c = vs.add_parser("list", help="list vector ids (with --filter as in conformance run)")
    corpus_args.add_options(c)
    c.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="only vectors matching EXPR, as in conformance run (repeatable)")
    c.set_defaults(func=_cmd_list)
    c = vs.add_parser("show", help="print one vector as indented JSON")
    corpus_args.add_options(c)
    c.add_argument("id")
    c.set_defaults(func=_cmd_show)
    c = vs.add_parser("promote", help="move fuzz findings into the committed corpus (the fuzz source) and refill")
    c.add_argument("findings", help="a findings directory (DIR/findings of rtwo-vm fuzz)")
    c.add_argument("ids", nargs="*", help="finding ids to promote (default: all)")
    corpus_args.add_options(c)
    c.add_argument("--promoted", default=None, metavar="FILE",
                   help="the fuzz source file (default conformance/fuzz/promoted.jsonl)")
    vectors_cli.add_in_checkout(c)
    c.set_defaults(func=vectors_cli.cmd_promote)
    vectors_cli.register(vs)

    p = sub.add_parser("conformance", help="validate VM implementations against the vectors")
    cs = p.add_subparsers(dest="conformance_command", required=True, parser_class=type(p))
    r = cs.add_parser("run", help="run the corpus through one or more adapters (default: the reference's)",
                      description="Exit status: 0 conforms, 1 does not conform, 2 usage error, "
                                  "3 could not run (an adapter did not start or refused the handshake).")
    corpus_args.add_options(r)
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
    r.add_argument("--out", default="build/conformance",
                   help="directory for report.json, junit.xml, report.html and bundles/ (default build/conformance)")
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
    corpus_args.add_options(s)
    s.add_argument("--impl", metavar="CMD", help="adapter command line (default: the reference's)")
    s.add_argument("--timeout", type=positive_float, default=10.0, help="seconds per request (default 10)")
    s.set_defaults(func=_cmd_selftest)
    s = cs.add_parser("replay", help="run one failing vector again from its replay bundle (or by id)")
    corpus_args.add_options(s)
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
    s = cs.add_parser("adapter", help="serve the reference interpreter on stdin/stdout (protocol 1)")
    s.set_defaults(func=_cmd_adapter)


def _cmd_check(args) -> int:
    from conformance.corpus import store
    from conformance.corpus.schema import corpus_problems
    manifest, vectors = corpus_args.load(args)
    problems = store.problems(corpus_args.directory(args), vectors)
    problems += [p for p in corpus_problems(vectors, authoritative=True) if p not in problems]
    for p in problems[:50]:
        print(p)
    print(f"{len(vectors)} vectors, digest {manifest['digest'][:16]}: "
          + ("valid" if not problems else f"{len(problems)} problems"))
    return 0 if not problems else 1


def _cmd_coverage(args) -> int:
    from conformance.corpus import coverage
    _, vectors = corpus_args.load(args)
    if args.source:
        vectors = [v for v in vectors if v["tags"]["source"] in args.source]
    try:
        cov = coverage.measure(vectors)
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise CliError(f"cannot measure the corpus: a malformed vector ({type(err).__name__}: "
                       f"{str(err)[:80]})") from None
    print(json.dumps(cov.to_json(), indent=2, sort_keys=True) if args.json else coverage.render(cov, not args.no_matrix))
    return 0 if cov.complete else 1


def _select(args, vectors):
    from conformance.corpus.selection import SelectionError, select
    try:
        return select(vectors, args.filter)
    except SelectionError as err:
        raise CliError(str(err)) from None


def _cmd_list(args) -> int:
    _, vectors = corpus_args.load(args)
    for v in _select(args, vectors):
        print(f"{v['id']}  {v['tags']['outcome']}")
    return 0


def _cmd_show(args) -> int:
    _, vectors = corpus_args.load(args)
    found = [v for v in vectors if v["id"] == args.id]
    if not found:
        raise CliError(f"no vector {args.id!r}")
    print(json.dumps(found[0], indent=2, sort_keys=True))
    return 0


def _cmd_run(args) -> int:
    from conformance.run.process import kill_all
    with _terminated_as_interrupt():
        try:
            return _run(args)
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


def _run(args) -> int:
    from conformance.corpus import fresh
    from conformance.report.counts import plural
    from conformance.report.document import summary_json
    from conformance.report.text import summary
    from conformance.constants import KNOWN_FAILURES_DIR
    from conformance.run.process import DEFAULT_MAX_LINE, Settings
    from conformance.corpus.selection import SelectionError, load_known_failures
    from conformance.run.blind import line as blind_line
    from conformance.run.suite import Options, reference_command, run_suite
    from rtwo_vm import conformance_files as files
    from rtwo_vm.progress import Progress, wanted

    from conformance.adapter import tune_gc
    manifest, vectors = corpus_args.load(args)
    tune_gc()                  # the corpus stays loaded: keep the collector off it
    vectors = _select(args, vectors)
    out = Path(args.out)
    seed, count = args.seed, args.fresh
    selected, wanted_fresh = vectors, None
    if args.last_failed:
        previous = files.previous_failures(out)
        failed = _of_kinds(previous, _kinds(args), out)
        vectors = [v for v in selected if v["id"] in failed]
        wanted_fresh = {i for i in failed if fresh.is_fresh(i)}
        if wanted_fresh:
            # The same sample as the previous run: its seed and size, from the same selection
            # (run --last-failed with the filters of the run it repeats).
            seed = previous.seed if seed is None else seed
            count = previous.fresh
        if not vectors and not wanted_fresh:
            raise CliError("--last-failed: none of the previous failures"
                           + (f" of kind {', '.join(args.kind)}" if args.kind else "") + " is in the selection")
    files.check_outputs(out)     # a link where the reports go: refused before the run
    seed = fresh.new_seed() if seed is None else seed
    sample = fresh.sample(seed, count, selected, bool(args.filter)) if count else []
    if wanted_fresh is not None:
        sample = [v for v in sample if v["id"] in wanted_fresh]
    try:
        known = load_known_failures(sorted(KNOWN_FAILURES_DIR.glob("*.toml")) + [Path(p) for p in args.known_failures])
    except SelectionError as err:
        raise CliError(str(err)) from None
    commands = args.impl or [reference_command()]
    _check_commands(commands)
    logs = None if args.keep_logs is None else Path(args.keep_logs or out / "logs")
    if logs is not None:
        files.clear_logs(logs)
    settings = Settings(timeout=args.timeout, window=args.window, workers=args.workers, log_dir=logs,
                        handshake_timeout=2 * args.timeout,
                        max_line=args.max_line or DEFAULT_MAX_LINE, max_failures=args.max_failures)
    options = Options(repeat=args.repeat, seed=seed, max_traces=args.max_traces, settings=settings,
                      exitfirst=args.exitfirst, blind=args.blind)
    run_info = {"seed": seed, "fresh": len(sample), "fresh_requested": count}
    if not args.quiet and not args.json:
        print(f"seed {seed}; fresh sample of {plural(len(sample), 'vector')} (reproduce with --seed {seed})",
              flush=True)
    everything = list(vectors) + sample
    progress = Progress(len(everything) * len(commands) * (1 + args.repeat), "conformance",
                        enabled=wanted(args.progress, quiet=args.quiet or args.json))
    with progress:
        result = run_suite(commands, everything, known, options,
                           lambda command, reply: progress.advance(failed=reply.failure is not None))
    run_info["blinding"] = result.blinding
    code = (EXIT_COULD_NOT_RUN if any(r.start_error for r in result.runs)
            else EXIT_OK if result.ok else EXIT_NOT_CONFORMING)
    properties = {"corpus.digest": manifest.get("digest"), "spec.version": manifest.get("spec_version"),
                  "fresh": len(sample), "blinding": blind_line(result.blinding)}
    bundles = files.write_reports(out, result, manifest, args.filter, run_info, properties,
                                  max_bundles=args.max_bundles)
    failing = sum(1 for r in result.runs for o in r.outcomes.values() if o.failed and "unavailable" not in o.categories)
    paths = {"json": str(out / "report.json"), "junit": str(out / "junit.xml"), "html": str(out / "report.html"),
             "bundles": str(out / "bundles"), "bundles_written": len(bundles),
             "bundles_left_out": max(0, failing - len(bundles))}
    if args.json:
        print(json.dumps(summary_json(result, manifest, code, paths, run_info), indent=1, sort_keys=True))
        return code
    text = summary(result, manifest, bundles, shown=args.show, by_opcode=args.by_opcode,
                       kinds=_kinds(args))
    if not args.quiet:
        print(blind_line(result.blinding))
    print(text.splitlines()[-1] if args.quiet else text)
    if not args.quiet:
        cut = (f" (… and {paths['bundles_left_out']} more failures without a bundle: --max-bundles)"
               if paths["bundles_left_out"] else "")
        print(f"report: {out / 'report.json'}, {out / 'junit.xml'}, {out / 'report.html'}"
              + (f", {plural(len(bundles), 'replay bundle')} in {out / 'bundles'}{cut}" if bundles else "")
              + (f"; adapter stderr logs in {logs}" if logs is not None else ""))
    return code


def _kinds(args) -> tuple[str, ...] | None:
    """The failure kinds of --kind, ``wrong`` spelled out; None: every kind."""
    if not args.kind:
        return None
    from conformance.run.outcomes import WRONG_ANSWERS
    return tuple(dict.fromkeys(k for kind in args.kind for k in (WRONG_ANSWERS if kind == WRONG else (kind,))))


def _of_kinds(previous, kinds: tuple[str, ...] | None, out: Path) -> frozenset[str]:
    """The previous failures to run again: all of them, or (--kind) those of these kinds."""
    if kinds is None:
        return previous.failed
    if previous.kinds is None:
        raise CliError(f"--last-failed --kind: the previous report {out / 'report.json'} has no failure "
                       "kinds (written by an older rtwo-vm): run once without --kind")
    return frozenset(i for i in previous.failed if previous.kinds.get(i, frozenset()) & set(kinds))


def _check_commands(commands) -> None:
    import shlex
    for command in commands:
        try:
            if not shlex.split(command):
                raise ValueError("empty command")
        except ValueError as err:
            raise CliError(f"--impl {command!r}: {err}") from None


def _cmd_selftest(args) -> int:
    from conformance.run.selftest import run_selftest
    from conformance.run.suite import reference_command
    _, vectors = corpus_args.load(args)
    command = args.impl or reference_command()
    _check_commands([command])
    from conformance.run.process import kill_all
    with _terminated_as_interrupt():
        try:
            checks = run_selftest(command, {v["id"]: v for v in vectors}, timeout=args.timeout)
        finally:
            kill_all()
    for c in checks:
        print(f"{'PASS' if c.ok else 'FAIL'}  {c.name}" + (f"\n      {c.detail[:2000]}" if c.detail else ""))
        for line in c.note[:2000].splitlines():
            print(f"      {line}")
    failed = sum(not c.ok for c in checks)
    # What the VM answered UNSUPPORTED_INPUT is coverage, not a failure (the first line of each note).
    coverage = "".join(f"; {c.note.splitlines()[0]}" for c in checks if c.note)
    print(f"selftest of {command}: {len(checks) - failed}/{len(checks)} checks passed{coverage}")
    if checks and not checks[0].ok:
        return EXIT_COULD_NOT_RUN
    return EXIT_OK if not failed else EXIT_NOT_CONFORMING


def _cmd_replay(args) -> int:
    from rtwo_vm.conformance_files import replay
    return replay(args, lambda: corpus_args.load(args)[1], _check_commands, _terminated_as_interrupt)


def _cmd_adapter(args) -> int:
    from conformance.adapter import Adapter
    return Adapter().serve(sys.stdin.buffer, sys.stdout.buffer)
