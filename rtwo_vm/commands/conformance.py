"""``rtwo-vm vectors ...`` (fill, check, coverage, list, show) and ``rtwo-vm conformance ...``
(run, selftest, replay, adapter): the conformance corpus and the runner (spec chapter 11)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rtwo_vm.inputs import CliError


def register(sub) -> None:
    p = sub.add_parser("vectors", help="fill, check and inspect the conformance vector corpus")
    vs = p.add_subparsers(dest="vectors_command", required=True, parser_class=type(p))
    f = vs.add_parser("fill", help="fill the corpus from its sources with the reference interpreter")
    _dir(f)
    f.add_argument("--check", action="store_true", help="fill in memory and fail if the stored corpus differs")
    f.add_argument("--refresh-smt", action="store_true", help="ask proofs.branches (z3) again for branch inputs")
    f.add_argument("--source", action="append", choices=["definition", "smt", "random"],
                   help="fill only these sources (default: all)")
    f.set_defaults(func=_cmd_fill)
    c = vs.add_parser("check", help="validate the stored corpus: schema (jsonschema), manifest, digest")
    _dir(c)
    c.set_defaults(func=_cmd_check)
    c = vs.add_parser("coverage", help="opcode x outcome matrix and coverage targets of the corpus")
    _dir(c)
    c.add_argument("--json", action="store_true", help="print the coverage as JSON")
    c.add_argument("--no-matrix", action="store_true", help="only the summary")
    c.add_argument("--source", action="append", choices=["definition", "smt", "random"], help="only these sources")
    c.set_defaults(func=_cmd_coverage)
    c = vs.add_parser("list", help="list vector ids (with --filter as in conformance run)")
    _dir(c)
    c.add_argument("--filter", action="append", default=[], metavar="EXPR")
    c.set_defaults(func=_cmd_list)
    c = vs.add_parser("show", help="print one vector as indented JSON")
    _dir(c)
    c.add_argument("id")
    c.set_defaults(func=_cmd_show)
    from rtwo_vm import vectors_cli  # issue 12: vectors release and vectors strength
    vectors_cli.register(vs, _dir)

    p = sub.add_parser("conformance", help="validate VM implementations against the vectors")
    cs = p.add_subparsers(dest="conformance_command", required=True, parser_class=type(p))
    r = cs.add_parser("run", help="run the corpus through one or more adapters (default: the reference's)")
    _dir(r)
    r.add_argument("--impl", action="append", metavar="CMD", help="adapter command line (repeatable)")
    r.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="select vectors: id glob or key=glob terms joined by commas (repeatable: union)")
    r.add_argument("--workers", type=int, default=2, help="adapter processes per implementation (default 2)")
    r.add_argument("--window", type=int, default=32, help="requests in flight per process (default 32)")
    r.add_argument("--timeout", type=float, default=10.0, help="seconds per vector before a hang (default 10)")
    r.add_argument("--repeat", type=int, default=1,
                   help="determinism passes in fresh, perturbed processes (default 1; 0 disables)")
    r.add_argument("--seed", type=int, default=1, help="seed of the shuffled orders")
    r.add_argument("--known-failures", action="append", default=[], metavar="FILE",
                   help="extra known-failure list (conformance/known_failures/*.toml always apply)")
    r.add_argument("--max-traces", type=int, default=50, help="failing vectors whose traces are diffed")
    r.add_argument("--out", default="build/conformance",
                   help="directory for report.json, junit.xml and bundles/ (default build/conformance)")
    r.add_argument("--keep-logs", nargs="?", const="", default=None, metavar="DIR",
                   help="keep the stderr of every adapter process in DIR (default when given "
                        "without DIR: <out>/logs); off by default")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: when stderr is a terminal)")
    r.add_argument("--quiet", action="store_true", help="print only the final line")
    r.add_argument("--by-opcode", action="store_true", help="print the pass/fail table of every opcode")
    r.set_defaults(func=_cmd_run)
    s = cs.add_parser("selftest", help="check an adapter against the protocol (run this first)")
    _dir(s)
    s.add_argument("--impl", metavar="CMD", help="adapter command line (default: the reference's)")
    s.add_argument("--timeout", type=float, default=10.0)
    s.set_defaults(func=_cmd_selftest)
    s = cs.add_parser("replay", help="run one failing vector again from its replay bundle (or by id)")
    _dir(s)
    s.add_argument("target", help="a replay bundle file, or a vector id")
    s.add_argument("--impl", metavar="CMD",
                   help="adapter command line, run from the current directory (default: the bundle's "
                        "command, run from the directory it was run from)")
    s.add_argument("--repeat", type=int, default=None,
                   help="extra determinism passes in perturbed environments (default: 1 for a vector id, "
                        "0 for a bundle, which replays the passes it recorded)")
    s.add_argument("--seed", type=int, default=1, help="seed of the extra passes' orders")
    s.add_argument("--keep-logs", default=None, metavar="DIR", help="keep the adapter's stderr in DIR")
    s.add_argument("--timeout", type=float, default=10.0)
    s.set_defaults(func=_cmd_replay)
    s = cs.add_parser("adapter", help="serve the reference interpreter on stdin/stdout (protocol 1)")
    s.set_defaults(func=_cmd_adapter)


def _dir(parser) -> None:
    parser.add_argument("--dir", default=None, metavar="DIR", help="corpus directory (default conformance/vectors)")


def _corpus_dir(args) -> Path:
    from conformance.constants import VECTORS_DIR
    return Path(args.dir) if args.dir else VECTORS_DIR


def _load(args):
    from conformance import corpus
    try:
        return corpus.read_manifest(_corpus_dir(args)), corpus.load(_corpus_dir(args))
    except (FileNotFoundError, json.JSONDecodeError, KeyError) as err:
        raise CliError(f"cannot read the corpus: {err}") from None


def _cmd_fill(args) -> int:
    from conformance import corpus
    from conformance.fill import fill
    from conformance.vector import SOURCES
    try:
        filled = fill(args.source or SOURCES, refresh_smt=args.refresh_smt)
    except ValueError as err:
        raise CliError(str(err)) from None
    for note in filled.notes:
        print(f"note: {note}", file=sys.stderr)
    directory = _corpus_dir(args)
    if args.check:
        diff = corpus.differences(corpus.render(filled.vectors, filled.manifest_extra), directory)
        for line in diff:
            print(line)
        print(f"filled {len(filled.vectors)} vectors in {filled.seconds:.2f} s ({filled.rate:,.0f} vectors/s); "
              + ("stored corpus is identical" if not diff else f"stored corpus differs in {len(diff)} files"))
        return 0 if not diff else 1
    manifest = corpus.write(filled.vectors, directory, filled.manifest_extra)
    print(f"filled {manifest['vector_count']} vectors in {filled.seconds:.2f} s ({filled.rate:,.0f} vectors/s) "
          f"into {directory}: " + ", ".join(f"{n} {s}" for s, n in manifest["sources"].items()))
    print(f"digest {manifest['digest']}")
    return 0


def _cmd_check(args) -> int:
    from conformance import corpus
    from conformance.schema import corpus_problems
    manifest, vectors = _load(args)
    problems = corpus.problems(_corpus_dir(args), vectors)
    problems += [p for p in corpus_problems(vectors, authoritative=True) if p not in problems]
    for p in problems[:50]:
        print(p)
    print(f"{len(vectors)} vectors, digest {manifest['digest'][:16]}: "
          + ("valid" if not problems else f"{len(problems)} problems"))
    return 0 if not problems else 1


def _cmd_coverage(args) -> int:
    from conformance import coverage
    _, vectors = _load(args)
    if args.source:
        vectors = [v for v in vectors if v["tags"]["source"] in args.source]
    cov = coverage.measure(vectors)
    print(json.dumps(cov.to_json(), indent=2, sort_keys=True) if args.json else coverage.render(cov, not args.no_matrix))
    return 0 if cov.complete else 1


def _select(args, vectors):
    from conformance.selection import SelectionError, select
    try:
        return select(vectors, args.filter)
    except SelectionError as err:
        raise CliError(str(err)) from None


def _cmd_list(args) -> int:
    _, vectors = _load(args)
    for v in _select(args, vectors):
        print(f"{v['id']}  {v['tags']['outcome']}")
    return 0


def _cmd_show(args) -> int:
    _, vectors = _load(args)
    found = [v for v in vectors if v["id"] == args.id]
    if not found:
        raise CliError(f"no vector {args.id!r}")
    print(json.dumps(found[0], indent=2, sort_keys=True))
    return 0


def _cmd_run(args) -> int:
    from conformance.constants import KNOWN_FAILURES_DIR
    from conformance import report as rep
    from conformance.runner import Settings
    from conformance.selection import SelectionError, load_known_failures
    from conformance.suite import Options, reference_command, run_suite
    from rtwo_vm.progress import Progress

    if args.workers < 1 or args.window < 1 or args.timeout <= 0 or args.repeat < 0:
        raise CliError("--workers and --window must be at least 1, --timeout positive, --repeat not negative")
    manifest, vectors = _load(args)
    vectors = _select(args, vectors)
    if not vectors:
        raise CliError("the filters select no vector")
    try:
        known = load_known_failures(sorted(KNOWN_FAILURES_DIR.glob("*.toml")) + [Path(p) for p in args.known_failures])
    except SelectionError as err:
        raise CliError(str(err)) from None
    commands = args.impl or [reference_command()]
    _check_commands(commands)
    out = Path(args.out)
    logs = None if args.keep_logs is None else Path(args.keep_logs or out / "logs")
    if logs is not None:
        _clear_logs(logs)
    options = Options(repeat=args.repeat, seed=args.seed, max_traces=args.max_traces,
                      settings=Settings(timeout=args.timeout, window=args.window, workers=args.workers,
                                        log_dir=logs))
    progress = Progress(len(vectors) * len(commands) * (1 + args.repeat), "conformance",
                        enabled=False if args.quiet else args.progress)
    with progress:
        result = run_suite(commands, vectors, known, options,
                           lambda command, reply: progress.advance(failed=reply.failure is not None))
    try:
        bundles = rep.write_bundles(result, out / "bundles")
        (out / "report.json").write_text(json.dumps(rep.to_json(result, manifest, bundles, args.filter),
                                                    indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
        (out / "junit.xml").write_text(rep.junit_xml(result), encoding="utf-8")
    except OSError as err:
        raise CliError(f"cannot write the report to {out}: {err.strerror or err}") from None
    text = rep.summary(result, manifest, bundles, by_opcode=args.by_opcode)
    print(text.splitlines()[-1] if args.quiet else text)
    if not args.quiet:
        print(f"report: {out / 'report.json'}, {out / 'junit.xml'}"
              + (f", {rep.plural(len(bundles), 'replay bundle')} in {out / 'bundles'}" if bundles else "")
              + (f"; adapter stderr logs in {logs}" if logs is not None else ""))
    return 0 if result.ok else 1


def _clear_logs(directory: Path) -> None:
    """Remove the adapter logs of an earlier run (only files the runner names), so that the
    directory holds this run's only."""
    from conformance.runner import LOG_SUFFIX
    try:
        directory.mkdir(parents=True, exist_ok=True)
        for stale in directory.glob(f"*{LOG_SUFFIX}"):
            stale.unlink()
    except OSError as err:
        raise CliError(f"--keep-logs {directory}: {err.strerror or err}") from None


def _check_commands(commands) -> None:
    import shlex
    for command in commands:
        try:
            if not shlex.split(command):
                raise ValueError("empty command")
        except ValueError as err:
            raise CliError(f"--impl {command!r}: {err}") from None


def _cmd_selftest(args) -> int:
    from conformance.selftest import run_selftest
    from conformance.suite import reference_command
    _, vectors = _load(args)
    command = args.impl or reference_command()
    _check_commands([command])
    checks = run_selftest(command, {v["id"]: v for v in vectors}, timeout=args.timeout)
    for c in checks:
        print(f"{'PASS' if c.ok else 'FAIL'}  {c.name}" + (f"\n      {c.detail}" if c.detail else ""))
    failed = sum(not c.ok for c in checks)
    print(f"selftest of {command}: {len(checks) - failed}/{len(checks)} checks passed")
    return 0 if not failed else 1


def _cmd_replay(args) -> int:
    from conformance import replay as rp
    from conformance import report as rep
    from conformance.runner import Settings
    from conformance.suite import reference_command
    if args.timeout <= 0 or (args.repeat is not None and args.repeat < 0):
        raise CliError("--timeout must be positive and --repeat not negative")
    target = Path(args.target)
    vectors = None
    if target.exists():
        try:
            plan = rp.plan_bundle(rp.read_bundle(target), args.impl, args.repeat or 0, args.seed)
        except ValueError as err:
            raise CliError(str(err)) from None
    else:
        _, vectors = _load(args)
        found = [v for v in vectors if v["id"] == args.target]
        if not found:
            raise CliError(f"{args.target}: neither a bundle file nor a vector id")
        plan = rp.plan_vector(found[0], args.impl or reference_command(),
                              1 if args.repeat is None else args.repeat, args.seed)
    _check_commands([plan.command])
    if any(p.get("preceded_by") for p in plan.passes) and vectors is None:
        try:
            _, vectors = _load(args)
        except CliError as err:
            print(f"note: {err}; preceding vectors are not replayed", file=sys.stderr)
            vectors = []
    for note in plan.notes:
        print(f"note: {note}")
    result, stderr = rp.replay(plan, {v["id"]: v for v in vectors or []}, Settings(timeout=args.timeout),
                               Path(args.keep_logs) if args.keep_logs else None)
    title = f"replay of {plan.vector['id']} in {rep.plural(len(plan.passes), 'pass', 'passes')}"
    print(rep.summary(result, {}, title=title))
    for name, text in stderr:
        if text:
            print(f"\nadapter stderr ({name}, last {rp.STDERR_LINES} lines):")
            print("\n".join(f"  {line}" for line in text.splitlines()))
    return 0 if result.ok else 1


def _cmd_adapter(args) -> int:
    from conformance.adapter import Adapter
    return Adapter().serve(sys.stdin.buffer, sys.stdout.buffer)
