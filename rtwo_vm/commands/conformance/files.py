"""What ``rtwo-vm conformance`` reads from outside and writes: ``replay BUNDLE`` (a bundle is
data: it never names the command that runs, the directory it runs in or an environment
beyond the four determinism variables), ``run --last-failed`` (the previous report.json,
checked against its schema), the run's output folder, and the option types that keep
``--repeat``, ``--fresh`` and ``--seed`` within the maxima those files are read back with.

Every refusal is a CliError: one line, exit 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Callable, ContextManager

from rtwo_vm.arguments.inputs import CliError, nonnegative_int


def _at_most(text: str, name: str) -> int:
    from conformance.run import inputs
    value = nonnegative_int(text)
    high = getattr(inputs, name)
    if value > high:
        raise argparse.ArgumentTypeError(f"must be at most {high}, got {text!r}")
    return value


def repeat_count(text: str) -> int:
    """Determinism passes (--repeat): 0 to conformance.run.inputs.MAX_REPEAT."""
    return _at_most(text, "MAX_REPEAT")


def fresh_count(text: str) -> int:
    """Vectors of the fresh sample (--fresh): 0 to conformance.run.inputs.MAX_FRESH."""
    return _at_most(text, "MAX_FRESH")


def seed_value(text: str) -> int:
    """A run's seed (--seed): 0 to conformance.run.inputs.MAX_SEED."""
    return _at_most(text, "MAX_SEED")


def previous_failures(out: Path):
    """The previous report in ``out`` (one version's folder of a run's output) for --last-failed
    (conformance.run.inputs.Previous)."""
    from conformance.run.inputs import read_previous
    from spec.files import FileRefused
    try:
        return read_previous(out / "report.json")
    except FileRefused as err:
        raise CliError(f"--last-failed: {err}") from None


def check_outputs(out: Path) -> None:
    """Refuse a link or a non-folder where the run's outputs go, before the run starts."""
    from conformance.report.files import check_outputs as check
    from spec.files import FileRefused
    try:
        check(out)
    except FileRefused as err:
        raise CliError(f"--out: {err}") from None


def write_reports(out: Path, *report_args: Any, **report_kwargs: Any):
    """conformance.report.files.write_reports, its refusals as CliError."""
    from conformance.report.files import write_reports as write
    from spec.files import FileRefused
    try:
        return write(out, *report_args, **report_kwargs)
    except FileRefused as err:
        raise CliError(str(err)) from None


def clear_logs(directory: Path) -> None:
    """Remove the adapter logs of an earlier run from ``directory`` (created; never a link):
    only regular files and links with the runner's log suffix (unlinking a link removes the
    link, never what it names, and leaves no link where the runner will write a log)."""
    import stat

    from conformance.run.process import LOG_SUFFIX
    from spec.files import FileRefused, output_dir
    try:
        output_dir(directory, "log folder")
        with os.scandir(directory) as entries:
            for entry in entries:
                mode = os.lstat(entry.path).st_mode
                if entry.name.endswith(LOG_SUFFIX) and (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                    os.unlink(entry.path)
    except FileRefused as err:
        raise CliError(f"--keep-logs: {err}") from None
    except OSError as err:
        raise CliError(f"--keep-logs {directory}: {err.strerror or err}") from None


def _is_file(target: str) -> bool:
    try:
        return os.path.lexists(target)
    except (OSError, ValueError):
        return False


def replay(args, load_vectors: Callable[[str | None], list], check_commands: Callable[[list[str]], None],
           guard: Callable[[], ContextManager[None]]) -> int:
    """``rtwo-vm conformance replay TARGET``: a bundle file (replayed only with --impl, in a
    session of the bundle's spec version, with that version's corpus for the preceding vectors)
    or a vector id (of --spec-version's corpus, else the newest; with --impl or the reference
    adapter). ``load_vectors(version)`` reads a version's corpus (None: the command's)."""
    from conformance.run import replay as rp
    from conformance.report.counts import plural
    from conformance.report.text import summary
    from conformance.run.process import Settings, kill_all
    from conformance.run.suite import reference_command
    from spec.files import FileRefused
    vectors = None
    version: str | None = None
    if _is_file(args.target):
        try:
            bundle = rp.read_bundle(args.target)
        except FileRefused as err:
            raise CliError(str(err)) from None
        if not args.impl:
            raise CliError(rp.impl_required(bundle))
        check_commands([args.impl])
        plan = rp.plan_bundle(bundle, args.impl, args.repeat or 0, args.seed)
        version = plan.version
        if args.spec_version is not None and args.spec_version != version:
            raise CliError(f"{args.target}: a bundle of spec {version}, not {args.spec_version} "
                           "(a bundle is replayed under its own version)")
    else:
        vectors = load_vectors(None)
        found = [v for v in vectors if v["id"] == args.target]
        if not found:
            raise CliError(f"{args.target}: neither a bundle file nor a vector id")
        plan = rp.plan_vector(found[0], args.impl or reference_command(),
                              1 if args.repeat is None else args.repeat, args.seed)
        check_commands([plan.command])
    if any(p.get("preceded_by") for p in plan.passes) and vectors is None:
        try:
            vectors = load_vectors(version)
        except CliError as err:
            print(f"note: {err}; preceding vectors are not replayed", file=sys.stderr)
            vectors = []
    logs = None
    if args.keep_logs:
        from spec.files import output_dir
        try:
            logs = output_dir(args.keep_logs, "log folder")
        except FileRefused as err:
            raise CliError(f"--keep-logs: {err}") from None
    for note in plan.notes:
        print(f"note: {note}")
    with guard():
        try:
            result, stderr = rp.replay(plan, {v["id"]: v for v in vectors or []},
                                       Settings(plan.version, timeout=args.timeout), logs)
        finally:
            kill_all()
    title = f"replay of {plan.vector['id']} in {plural(len(plan.passes), 'pass', 'passes')} (spec {plan.version})"
    print(summary(result, {}, title=title))
    for name, text in stderr:
        if text:
            print(f"\nadapter stderr ({name}, last {rp.STDERR_LINES} lines):")
            print("\n".join(f"  {line}" for line in text.splitlines()))
    if any(r.start_error for r in result.runs):
        return 3
    return 0 if result.ok else 1
