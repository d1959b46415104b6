"""``rtwo-vm fuzz``: a differential fuzzing campaign against one or more implementations.

Exit status: 0 nothing diverged, 1 something did (findings in DIR/findings), 2 usage error,
3 the campaign could not run (an adapter that does not start, Ray unavailable) or stopped on an
internal error in a worker (state and report saved; ``--resume`` skips the request). Safety-net
entries (requests that met the wall-clock limit twice, DIR/safety-net) do not count.

A campaign runs one spec version (``--spec-version``, the newest by default; a resumed campaign
its own): its requests are drawn from that version's instructions, every adapter session's hello
names it, and the reference judges under it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import spec
from rtwo_vm.arguments.inputs import CliError, positive_float, positive_int, spec_version

EXIT_COULD_NOT_RUN = 3


def register(sub) -> None:
    p = sub.add_parser("fuzz", help="differential fuzzing: fresh programs on the reference and on implementations")
    p.add_argument("--impl", action="append", metavar="CMD",
                   help="adapter command line (repeatable; default: the reference's own adapter)")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--seconds", type=positive_float, default=None, help="wall-clock bound (default 60 without --runs)")
    stop.add_argument("--runs", type=positive_int, default=None, help="number of requests (reproducible)")
    p.add_argument("--seed", type=int, default=1, help="campaign seed (default 1)")
    p.add_argument("--spec-version", dest="spec_version", type=spec_version, default=None, metavar="VERSION",
                   help=f"the spec version of every request and session (default: the newest, {spec.latest()}; "
                        f"a resumed campaign: its own; versions: {', '.join(spec.names())})")
    p.add_argument("--sequences", type=_steps, default=None, metavar="K",
                   help="sequence mode: every request is a scenario of 2 to K calls (K from 2 to 64) on one shared "
                        "state, sent as one scenario request (spec 11.9.4; every --impl must announce the capability "
                        "scenario) and compared step by step and on the post-state; findings are scenario vectors "
                        "in DIR/findings/scenarios, shrunk to the shortest sequence of the smallest programs "
                        "(a resumed campaign: its own mode)")
    p.add_argument("--out", default="build/fuzz", help="campaign directory (default build/fuzz)")
    p.add_argument("--workers", type=positive_int, default=1, help="worker processes or Ray actors (default 1)")
    p.add_argument("--ray", metavar="local|ADDRESS", default=None,
                   help="run the workers as Ray actors: 'local' starts a cluster on 127.0.0.1, else join ADDRESS")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="continue the campaign saved in DIR, against the same --impl options it ran with")
    p.add_argument("--timeout", type=positive_float, default=10.0,
                   help="wall-clock safety net per request (default 10): a request that meets it runs once more "
                        "with 4 times the limit, then is listed apart, never a divergence")
    p.add_argument("--stop-on-finding", action="store_true", help="stop after the epoch of the first divergence")
    p.add_argument("--json", action="store_true", help="print the final report as JSON")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="live progress on stderr (default: when stderr is a terminal)")
    p.set_defaults(func=_cmd_fuzz)


def _steps(text: str) -> int:
    value = positive_int(text)
    from conformance.fuzz.sequence import MIN_STEPS
    from conformance.scenario.carry import MAX_STEPS
    if not MIN_STEPS <= value <= MAX_STEPS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of steps from {MIN_STEPS} to {MAX_STEPS}")
    return value


def _cmd_fuzz(args) -> int:
    from conformance.fuzz.backend import BackendError
    from conformance.run.process import StartError
    from conformance.fuzz.campaign import (
        CapabilityMissing, Options, StateError, crashed_now, impls_differ, load_state, mode_text, report_json,
        report_text, run_campaign,
    )
    from conformance.fuzz.findings import check_outputs
    from conformance.fuzz.state import MAX_COMMAND, MAX_IMPLS
    from conformance.run.suite import reference_command
    from rtwo_vm.progress import Progress
    from spec.files import FileRefused, atomic_write, check_int
    import shlex

    if args.workers > 256:
        raise CliError("--workers must be between 1 and 256")
    from rtwo_vm.arguments import cluster
    cluster.ray_address(args)      # 'local' or HOST:PORT, and Ray installed: as every --ray
    try:
        check_int(args.seed, -(1 << 63), (1 << 63) - 1, "--seed")
    except FileRefused as err:
        raise CliError(str(err)) from None
    # What runs is named on the command line only, never by the state (a file is data).
    impls = args.impl or [reference_command()]
    if len(impls) > MAX_IMPLS:
        raise CliError(f"at most {MAX_IMPLS} implementations (--impl) in one campaign")
    for command in impls:
        try:
            if len(command) > MAX_COMMAND:
                raise ValueError(f"longer than {MAX_COMMAND} characters")
            if not shlex.split(command):
                raise ValueError("empty command")
        except ValueError as err:
            raise CliError(f"--impl {command[:80]!r}: {err}") from None
    out = Path(args.resume or args.out)
    existed = out.exists() or out.is_symlink()     # a refused campaign removes a folder it created
    state = None
    try:
        if not args.resume or out.is_dir() or out.is_symlink():    # a missing DIR to resume: load_state says so
            check_outputs(out)
        if args.resume:
            state = load_state(out)
            if state["impls"] != impls:
                raise StateError(impls_differ(out, state["impls"], impls, named=bool(args.impl)))
            if args.spec_version is not None and args.spec_version != state["spec_version"]:
                raise StateError(f"{out}: a campaign of spec {state['spec_version']}, not {args.spec_version} "
                                 "(a campaign is resumed under its own version)")
            if args.sequences is not None and args.sequences != state.get("sequences", 0):
                raise StateError(f"{out}: {mode_text(state.get('sequences', 0))}, not of --sequences "
                                 f"{args.sequences} (a campaign is resumed in its own mode)")
    except (StateError, FileRefused) as err:
        raise CliError(str(err)) from None
    version = state["spec_version"] if state is not None else args.spec_version or spec.latest()
    seconds = args.seconds if args.seconds is not None or args.runs is not None else 60.0
    options = Options(impls=impls, out=out, seed=args.seed, seconds=seconds, runs=args.runs,
                      workers=args.workers, ray=args.ray, timeout=args.timeout, resume=bool(args.resume),
                      stop_on_finding=args.stop_on_finding, state=state, spec_version=version,
                      sequences=state.get("sequences", 0) if state is not None else args.sequences or 0)
    del state
    progress = Progress(args.runs, "fuzz", enabled=args.progress)

    def on_epoch(state) -> None:
        progress.update(state["executions"] if args.runs is None else state["next_index"],
                        f"cells {state['coverage_cells']} arcs {state['coverage_arcs']} pool {state['pool_size']} "
                        f"buckets {len(state['buckets'])}")
    try:
        with progress:
            final = run_campaign(options, on_epoch)
    except CapabilityMissing as err:
        if not existed and out.is_dir() and not out.is_symlink() and not any(out.iterdir()):
            out.rmdir()                 # nothing of the refused campaign is left behind
        raise CliError(str(err)) from None
    except (BackendError, StartError) as err:
        print(f"rtwo-vm fuzz: could not run: {err}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    except (StateError, FileRefused) as err:
        raise CliError(str(err)) from None
    except OSError as err:
        print(f"rtwo-vm fuzz: could not run: {err}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    report = report_json(final, out)
    crashes = crashed_now(final)
    code = EXIT_COULD_NOT_RUN if crashes else 1 if report["buckets"] else 0
    report["exit"] = code
    text = report_text(report)
    try:
        atomic_write(out / "report.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
        atomic_write(out / "report.txt", text + "\n")
    except FileRefused as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"cannot write the report to {out}: {err.strerror or err}") from None
    if crashes:
        e = crashes[0]
        where = f"request {e['index']}" if e.get("last_index") is None else f"requests {e['index']}..{e['last_index']}"
        then = "--resume skips it" if e.get("last_index") is None else "--resume runs them again"
        print(f"rtwo-vm fuzz: could not run: internal error at {where} of seed {final['seed']}: {e['exception']} "
              f"(state saved, traceback in {out / 'report.txt'}; {then})", file=sys.stderr)
        return code
    print(json.dumps(report, indent=1, sort_keys=True) if args.json else text)
    if not args.json:
        print(f"report: {out / 'report.json'}, {out / 'report.txt'}; campaign state {out / 'state.json'}")
    return code
