"""The ``rtwo-vm vectors strength`` command body (its options are declared in author.py beside
it; the mutation testing itself is conformance/strength/, which does not import the CLI).

Every argument is checked before any work (:func:`check_arguments`): the option combinations,
the filters' syntax, the module names, the reasons files (read bounded and parsed) and the
output paths; only then are the corpus read and the mutants generated."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from rtwo_vm.arguments.inputs import CliError


@dataclass(frozen=True)
class Checked:
    """What check_arguments read: the equivalent and unreachable mutants with their reasons."""

    reasons: dict[str, str]
    unreachable: dict[str, str]


def check_arguments(args) -> Checked:
    """Refuse a bad argument in one line before anything is generated or run."""
    from conformance.corpus.selection import SelectionError, compile_filter
    from conformance.strength import backend, mutants as mut
    from spec.files import FileRefused, output_file, read_bounded, refuse_link

    if args.curated_only and args.no_curated:
        raise CliError("--curated-only and --no-curated exclude each other")
    if args.record and (args.module or args.limit is not None or args.filter or args.curated_only
                        or args.no_curated or args.reasons or args.operator or args.mutant):
        raise CliError("--record needs a whole run: no --module, --limit, --operator, --filter, --curated-only,"
                       " --no-curated, --mutant or --reasons")
    unknown_kinds = [k for k in args.operator if k not in mut.KINDS]
    if unknown_kinds:
        raise CliError(f"--operator {unknown_kinds[0]!r}: the kinds are {', '.join(mut.KINDS)}")
    if args.record:
        _check_record(args)
    if args.backend not in backend.BACKENDS:
        raise CliError(f"--backend must be one of {', '.join(backend.BACKENDS)}")
    from rtwo_vm.arguments import cluster
    if args.backend == "ray" and args.ray is None:
        args.ray = "local"           # --backend ray: a private local cluster
    if cluster.ray_address(args) is not None:
        args.backend = "ray"         # --ray ADDRESS: the ray backend on that cluster
    try:
        for expression in args.filter:
            compile_filter(expression)
    except SelectionError as err:
        raise CliError(str(err)) from None
    names = [m if m.endswith(".py") else m + ".py" for m in args.module]
    unknown = [m for m in names if Path(m).is_absolute() or ".." in Path(m).parts or not (mut.PACKAGE / m).is_file()]
    if unknown:
        raise CliError(f"--module: no module reference_vm/{unknown[0]}")
    folder = Path(args.reasons) if args.reasons else None
    if folder is not None and not folder.is_dir():
        raise CliError(f"cannot read the mutant reasons: --reasons {folder}: not a folder")
    try:
        files = {"equivalent": None, "unreachable": None} if folder is None else {
            name: folder / f"{name}.toml" for name in ("equivalent", "unreachable")}
        for path in filter(None, files.values()):
            read_bounded(path, mut.MAX_REASONS, "mutant reasons file")   # a FIFO or a device: refused here
        reasons, unreachable = mut.equivalent(files["equivalent"]), mut.unreachable(files["unreachable"])
    except (ValueError, OSError) as err:
        raise CliError(f"cannot read the mutant reasons: {err}") from None
    both = sorted(set(reasons) & set(unreachable))
    if both:
        raise CliError(f"mutant {both[0]} is listed as equivalent and as unreachable; it is one or the other")
    if args.json:
        try:
            target = refuse_link(args.json, "report")
        except FileRefused as err:
            raise CliError(str(err)) from None
        if target.is_dir() or not target.parent.is_dir():
            raise CliError(f"cannot write {args.json}: " + ("a folder" if target.is_dir() else "no such folder"))
        try:   # a FIFO or a device: the report is renamed into place, never over one
            output_file(target, "report")
        except FileRefused as err:
            raise CliError(str(err)) from None
    return Checked(reasons, unreachable)


def _check_record(args) -> None:
    """--record writes conformance/strength/score.json of the checkout being measured: only
    when the running package is that checkout's (never into an installed copy)."""
    from conformance.constants import runs_from
    from rtwo_vm.arguments.corpus import project as checkout
    project = checkout(args)
    if project is None or not runs_from(project):
        raise CliError("--record writes conformance/strength/score.json of a checkout: run it inside the "
                       "checkout, installed with pip install -e . (the installed package is read only)")


CONFIRMED = "confirmed:"      # a --resume state's id of a survivor's confirmation run


def _state(args, todo, corpus: str, version: str, exhaustive):
    """``--resume DIR``: the run's state (fanout/resume.py), keyed by everything its verdicts
    depend on: the mutants (whole sources), the corpus digest and filters, the version, the
    safety net, which mutants run exhaustively, and the code (spec, reference_vm,
    conformance)."""
    import hashlib

    import conformance
    import reference_vm
    import spec
    from fanout.resume import code_digest
    from rtwo_vm.arguments import cluster
    digest = hashlib.sha256(json.dumps(
        ["vectors strength", version, corpus, list(args.filter), args.timeout, sorted(exhaustive),
         code_digest(spec, reference_vm, conformance), [m.to_json() for m in todo]],
        sort_keys=True).encode()).hexdigest()
    return cluster.resume_state(args.resume, None, None)(digest)


def run(args, corpus_dir: Path, version: str, out: TextIO, checked: Checked | None = None) -> int:
    from conformance.corpus import store
    from conformance.corpus.selection import SelectionError, select
    from conformance.run.safety_net import RETRY_FACTOR
    from conformance.strength import backend, mutants as mut, report as rep, run as runner, worker
    from rtwo_vm.progress import Progress, wanted
    from spec.files import FileRefused, atomic_write

    checked = checked or check_arguments(args)
    reasons, unreachable = checked.reasons, checked.unreachable
    try:
        manifest = store.checked_manifest(corpus_dir)
        vectors: Sequence[Mapping[str, Any]] = store.load(corpus_dir)
        vectors = select(vectors, args.filter) if args.filter else vectors
    except SelectionError as err:
        raise CliError(str(err)) from None
    except (FileNotFoundError, ValueError, KeyError) as err:
        raise CliError(f"cannot read the corpus: {str(err).splitlines()[0][:200] if str(err) else err}") from None
    if not vectors:
        raise CliError("the filters select no vector")
    try:
        generated = [] if args.curated_only else mut.select(tuple(args.module), args.limit, tuple(args.operator))
        curated = [] if args.no_curated else mut.curated(version)
    except (ValueError, OSError) as err:
        raise CliError(f"cannot generate the mutants: {err}") from None
    if not args.curated_only:
        gone = mut.stale({**reasons, **unreachable}, tuple(args.module))
        if gone:
            raise CliError(f"{len(gone)} stale reasons in equivalent.toml/unreachable.toml name no mutant "
                           f"(the code changed; review them): {', '.join(gone[:3])}{' ...' if len(gone) > 3 else ''}")
    everything = generated + curated
    if args.mutant:
        unknown = sorted(set(args.mutant) - {m.id for m in everything})
        if unknown:
            raise CliError(f"--mutant {unknown[0][:80]!r}: no such mutant among those selected "
                           "(see the report's ids)")
        everything = [m for m in everything if m.id in set(args.mutant)]
    verdicts: dict[str, dict[str, Any]] = {m.id: {"mutant": m.id, "status": "equivalent", "how": "", "killers": [], "detail": reasons[m.id],
                       "seconds": 0.0, "shortest": None} for m in generated if m.id in reasons}
    todo = [m for m in everything if m.id not in verdicts]
    exhaustive = frozenset(m.id for m in (todo if args.redundant else curated))
    plan = runner.Plan(todo, vectors, version, runner.candidates(version), exhaustive, args.timeout,
                       runner.reference_traces(vectors, version))
    workers = args.workers or backend.default_workers()
    state = _state(args, todo, manifest["digest"], version, exhaustive) if args.resume else None
    kept = state.load({m.id for m in todo} | {CONFIRMED + m.id for m in todo}) if state else {}
    if state is not None:
        before = sum(m.id in kept for m in todo)
        print(f"resume: {before} of {len(todo)} mutants done before, run again {len(todo) - before}"
              f"; {sum(CONFIRMED + m.id in kept for m in todo)} survivors' confirmations kept"
              + (f"; {state.refused} state lines refused (not sealed by this machine's key, or cut "
                 "short): their tasks run again" if state.refused else ""), file=sys.stderr, flush=True)

    def prescreen(mutants, timeout: float, progress=None) -> None:
        for m in mutants:
            if m.id in kept:
                verdicts[m.id] = kept[m.id]
                if progress is not None:
                    progress.advance(failed=kept[m.id]["status"] == "survived")
        mutants = [m for m in mutants if m.id not in kept]
        if not mutants:
            return
        runner.set_plan(replace(plan, mutants=mutants, timeout=timeout))
        results = (backend.local_map(runner.prescreen, range(len(mutants)), workers) if args.backend == "local"
                   else backend.ray_map([worker.task(m, corpus_dir, version, args.filter, m.id in exhaustive, timeout)
                                         for m in mutants], workers, args.ray or "local"))
        for verdict in results:
            verdicts[verdict["mutant"]] = verdict
            if state is not None and verdict.get("how") != "timeout":    # the safety net: run again
                state.record(verdict["mutant"], verdict)
            if progress is not None:
                progress.advance(failed=verdict["status"] == "survived")

    show = wanted(args.progress)      # on a terminal unless --no-progress
    try:
        with Progress(len(todo), "strength", enabled=show, failed_label="survived") as progress:
            prescreen(todo, args.timeout, progress)
        # The time limit is a safety net, not a verdict: a mutant that met it runs once more
        # with RETRY_FACTOR times the limit, and only a second timeout kills it (as a hang).
        timed_out = [m for m in todo if verdicts[m.id].get("how") == "timeout"]
        if timed_out:
            with Progress(len(timed_out), "strength: timed out, again", enabled=show,
                          failed_label="survived") as again:
                prescreen(timed_out, args.timeout * RETRY_FACTOR, again)
    except backend.BackendUnavailable as err:
        raise CliError(str(err)) from None
    # An unreachable mutant is run like any other: if the corpus kills it, it is killed (and its
    # reason is contradicted, which the report says); if it survives, it is unreachable.
    for m in todo:
        if m.id in unreachable and verdicts[m.id]["status"] == "survived":
            verdicts[m.id] = {**verdicts[m.id], "status": "unreachable", "detail": unreachable[m.id], "shortest": None}
    survivors = [] if args.no_confirm else [m for m in todo if verdicts[m.id]["status"] == "survived"]
    if survivors:
        with Progress(len(survivors), "strength: confirming survivors", enabled=show,
                      failed_label="survived") as confirming:
            for m in survivors:
                if CONFIRMED + m.id in kept:
                    killed = (None if kept[CONFIRMED + m.id] is None
                              else runner.Verdict(**kept[CONFIRMED + m.id]))
                else:
                    killed = runner.confirm(m, vectors, args.timeout, version)
                    if state is not None:
                        state.record(CONFIRMED + m.id, None if killed is None else killed.to_json())
                if killed is not None:
                    verdicts[m.id] = {**killed.to_json(), "seconds": verdicts[m.id]["seconds"]}
                confirming.advance(failed=killed is None)
    ordered = {m.id: m for m in everything}
    redundant = (rep.redundant_vectors([verdicts[m] for m in ordered], [v["id"] for v in vectors])
                 if args.redundant else None)
    report = rep.Report(ordered, verdicts, len(vectors), manifest["digest"], {**reasons, **unreachable}, redundant,
                        contradicted=sorted(m for m in unreachable if m in verdicts and verdicts[m]["status"] == "killed"),
                        spec_version=version)
    print(rep.render(report), file=out)
    try:
        if args.json:
            atomic_write(args.json, json.dumps(report.to_json(), indent=1, sort_keys=True) + "\n")
        if args.record:
            atomic_write(rep.SCORE_FILE, json.dumps(report.summary(), indent=1, sort_keys=True) + "\n")
    except (FileRefused, OSError) as err:
        raise CliError(f"cannot write the report: {getattr(err, 'strerror', None) or err}") from None
    return 0 if report.ok else 1

