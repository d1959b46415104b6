"""The ``rtwo-vm vectors strength`` command body (its options are declared in rtwo_vm/vectors_cli.py;
the mutation testing itself is conformance/strength/, which does not import the CLI)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from rtwo_vm.inputs import CliError


def run(args, corpus_dir: Path, out: TextIO) -> int:
    from conformance import corpus
    from conformance.selection import SelectionError, select
    from conformance.safety_net import RETRY_FACTOR
    from conformance.strength import backend, mutants as mut, report as rep, run as runner, worker
    from rtwo_vm.progress import Progress

    if args.record and (args.module or args.limit is not None or args.filter or args.curated_only
                        or args.no_curated or args.reasons or args.operator):
        raise CliError("--record needs a whole run: no --module, --limit, --operator, --filter, --curated-only,"
                       " --no-curated or --reasons")
    unknown = [k for k in args.operator if k not in mut.KINDS]
    if unknown:
        raise CliError(f"--operator {unknown[0]!r}: the kinds are {', '.join(mut.KINDS)}")
    if args.backend not in backend.BACKENDS:
        raise CliError(f"--backend must be one of {', '.join(backend.BACKENDS)}")
    try:
        manifest, vectors = corpus.read_manifest(corpus_dir), corpus.load(corpus_dir)
        vectors = select(vectors, args.filter) if args.filter else vectors
    except (FileNotFoundError, json.JSONDecodeError, KeyError) as err:
        raise CliError(f"cannot read the corpus: {err}") from None
    except SelectionError as err:
        raise CliError(str(err)) from None
    if not vectors:
        raise CliError("the filters select no vector")
    try:
        generated = [] if args.curated_only else mut.select(tuple(args.module), args.limit, tuple(args.operator))
        curated = [] if args.no_curated else mut.curated()
        folder = Path(args.reasons) if args.reasons else None
        reasons = mut.equivalent(folder / "equivalent.toml" if folder else None)
        unreachable = mut.unreachable(folder / "unreachable.toml" if folder else None)
    except (ValueError, OSError) as err:
        raise CliError(f"cannot read the mutant reasons: {err}") from None
    both = sorted(set(reasons) & set(unreachable))
    if both:
        raise CliError(f"mutant {both[0]} is listed as equivalent and as unreachable; it is one or the other")
    if not args.curated_only:
        gone = mut.stale({**reasons, **unreachable}, tuple(args.module))
        if gone:
            raise CliError(f"{len(gone)} stale reasons in equivalent.toml/unreachable.toml name no mutant "
                           f"(the code changed; review them): {', '.join(gone[:3])}{' ...' if len(gone) > 3 else ''}")
    everything = generated + curated
    verdicts = {m.id: {"mutant": m.id, "status": "equivalent", "how": "", "killers": [], "detail": reasons[m.id],
                       "seconds": 0.0, "shortest": None} for m in generated if m.id in reasons}
    todo = [m for m in everything if m.id not in verdicts]
    exhaustive = frozenset(m.id for m in (todo if args.redundant else curated))
    plan = runner.Plan(todo, vectors, runner.candidates(), exhaustive, args.timeout, runner.reference_traces(vectors))
    workers = args.workers or backend.default_workers()

    def prescreen(mutants, timeout: float, progress=None) -> None:
        runner.set_plan(replace(plan, mutants=mutants, timeout=timeout))
        results = (backend.local_map(runner.prescreen, range(len(mutants)), workers) if args.backend == "local"
                   else backend.ray_map([worker.task(m, corpus_dir, args.filter, m.id in exhaustive, timeout)
                                         for m in mutants], workers))
        for verdict in results:
            verdicts[verdict["mutant"]] = verdict
            if progress is not None:
                progress.advance(failed=verdict["status"] == "survived")

    progress = Progress(len(todo), "strength", enabled=args.progress)
    try:
        with progress:
            prescreen(todo, args.timeout, progress)
        # The time limit is a safety net, not a verdict: a mutant that met it runs once more
        # with RETRY_FACTOR times the limit, and only a second timeout kills it (as a hang).
        timed_out = [m for m in todo if verdicts[m.id].get("how") == "timeout"]
        if timed_out:
            prescreen(timed_out, args.timeout * RETRY_FACTOR)
    except backend.BackendUnavailable as err:
        raise CliError(str(err)) from None
    # An unreachable mutant is run like any other: if the corpus kills it, it is killed (and its
    # reason is contradicted, which the report says); if it survives, it is unreachable.
    for m in todo:
        if m.id in unreachable and verdicts[m.id]["status"] == "survived":
            verdicts[m.id] = {**verdicts[m.id], "status": "unreachable", "detail": unreachable[m.id], "shortest": None}
    if not args.no_confirm:
        for m in todo:
            if verdicts[m.id]["status"] == "survived":
                killed = runner.confirm(m, vectors, args.timeout)
                if killed is not None:
                    verdicts[m.id] = {**killed.to_json(), "seconds": verdicts[m.id]["seconds"]}
    ordered = {m.id: m for m in everything}
    redundant = (rep.redundant_vectors([verdicts[m] for m in ordered], [v["id"] for v in vectors])
                 if args.redundant else None)
    report = rep.Report(ordered, verdicts, len(vectors), manifest["digest"], {**reasons, **unreachable}, redundant,
                        contradicted=sorted(m for m in unreachable if m in verdicts and verdicts[m]["status"] == "killed"))
    print(rep.render(report), file=out)
    if args.json:
        try:
            Path(args.json).write_text(json.dumps(report.to_json(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        except OSError as err:
            raise CliError(f"cannot write {args.json}: {err.strerror or err}") from None
    if args.record:
        rep.SCORE_FILE.write_text(json.dumps(report.summary(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return 0 if report.ok else 1

