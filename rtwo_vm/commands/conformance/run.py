"""``rtwo-vm conformance run``: one suite per spec version an implementation announces.

The versions checked are those with a corpus (or the one ``--spec-version`` names) that the
adapters announce: each adapter is asked first (conformance.run.versions, chapter 11.5.3), then
every version runs as a suite of its own, with its corpus, its fresh sample, its known-failure
lists and sessions whose hello names it. Each version's reports go to ``<out>/<version>/``;
what was not checked, and why, is printed (and in ``--json``'s summary). Exit status: 3 when an
adapter could not start or no version could be checked, else 1 when some version does not
conform, else 0.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

from rtwo_vm.arguments import corpus as corpus_args
from rtwo_vm.arguments.inputs import CliError

EXIT_OK, EXIT_NOT_CONFORMING, EXIT_USAGE, EXIT_COULD_NOT_RUN = 0, 1, 2, 3
WRONG = "wrong"


def select(args, vectors, scenarios=()):
    """The vectors --filter selects; none when it selects scenarios only (an error when it
    selects neither)."""
    from conformance.corpus.selection import SelectionError, select as chosen
    try:
        return chosen(vectors, args.filter)
    except SelectionError as err:
        if scenarios:
            return []
        raise CliError(str(err)) from None


def load_scenarios(args, folder: Path, version: str):
    """The scenario vectors of the corpus in ``folder`` that --filter selects (11.9.5)."""
    from conformance.corpus.selection import SelectionError
    from conformance.run.scenarios import select as chosen
    from conformance.scenario import store
    from spec.files import FileRefused
    try:
        return chosen(store.load(store.folder(folder), version), args.filter)
    except (FileRefused, SelectionError) as err:
        raise CliError(str(err)) from None


def kinds(args) -> tuple[str, ...] | None:
    """The failure kinds of --kind, ``wrong`` spelled out; None: every kind."""
    if not args.kind:
        return None
    from conformance.run.outcomes import WRONG_ANSWERS
    return tuple(dict.fromkeys(k for kind in args.kind for k in (WRONG_ANSWERS if kind == WRONG else (kind,))))


def _of_kinds(previous, wanted: tuple[str, ...] | None, report: Path) -> frozenset[str]:
    """The previous failures to run again: all of them, or (--kind) those of these kinds."""
    if wanted is None:
        return previous.failed
    if previous.kinds is None:
        raise CliError(f"--last-failed --kind: the previous report {report} has no failure "
                       "kinds (written by an older rtwo-vm): run once without --kind")
    return frozenset(i for i in previous.failed if previous.kinds.get(i, frozenset()) & set(wanted))


def check_commands(commands) -> None:
    for command in commands:
        try:
            if not shlex.split(command):
                raise ValueError("empty command")
        except ValueError as err:
            raise CliError(f"--impl {command!r}: {err}") from None


def _selection(args, version: str, folder: Path, out: Path):
    """(manifest, vectors to run, the selection the fresh sample varies, fresh ids wanted or
    None, the previous seed and sample size or None, scenarios to run, the scenarios the fresh
    sample varies) of one version; None when --last-failed finds nothing of this version to run
    again."""
    from conformance.corpus import fresh
    from rtwo_vm.commands.conformance import files
    manifest, vectors = corpus_args.load_corpus(folder, version)
    scenarios = load_scenarios(args, folder, version)
    selected = select(args, vectors, scenarios)
    if not args.last_failed:
        return manifest, selected, selected, None, None, scenarios, scenarios
    report = out / version / "report.json"
    if not report.exists() and not report.is_symlink():
        return None
    previous = files.previous_failures(out / version)
    if not previous.failed:
        return None
    failed = _of_kinds(previous, kinds(args), report)
    again = [v for v in selected if v["id"] in failed]
    scenarios_again = [v for v in scenarios if v["id"] in failed]
    wanted_fresh = {i for i in failed if fresh.is_fresh(i)}
    if not again and not wanted_fresh and not scenarios_again:
        return None
    # The same sample as the previous run: its seed and size, from the same selection (run
    # --last-failed with the filters of the run it repeats).
    return (manifest, again, selected, wanted_fresh, (previous.seed, previous.fresh) if wanted_fresh else None,
            scenarios_again, scenarios)


def run(args) -> int:
    from conformance.adapter import tune_gc
    from conformance.constants import KNOWN_FAILURES_DIR
    from conformance.corpus import fresh, fresh_scenario
    from conformance.corpus.selection import SelectionError, load_known_failures
    from conformance.report.counts import plural
    from conformance.run.process import DEFAULT_MAX_LINE, Settings
    from conformance.run.suite import reference_command
    from conformance.run.versions import discover
    from rtwo_vm.commands.conformance import files

    corpora = corpus_args.corpora(args, "all")
    from rtwo_vm.arguments.evidence import evidence
    out = Path(args.out) if args.out else evidence(args).conformance
    commands = args.impl or [reference_command()]
    check_commands(commands)
    files.check_outputs(out)     # a link where the reports go: refused before the run
    plans = []
    for version, folder in corpora:
        found = _selection(args, version, folder, out)
        if found is not None:
            plans.append((version, *found))
    for version, _ in corpora:   # (after --last-failed read its reports: refused as they are)
        files.check_outputs(out / version)
    if args.last_failed and not plans:
        reports = [out / v / "report.json" for v, _ in corpora]
        if not any(r.exists() or r.is_symlink() for r in reports):
            raise CliError(f"--last-failed: no previous report in {out} ({', '.join(map(str, reports))})")
        raise CliError("--last-failed: none of the previous failures" + (
            f" of kind {', '.join(args.kind)}" if args.kind else "") + f" is in the selection (reports in {out}/<version>)")
    logs = None if args.keep_logs is None else Path(args.keep_logs or out / "logs")
    if logs is not None:
        files.clear_logs(logs)
    settings = Settings(plans[0][0], timeout=args.timeout, window=args.window, workers=args.workers, log_dir=logs,
                        handshake_timeout=2 * args.timeout,
                        max_line=args.max_line or DEFAULT_MAX_LINE, max_failures=args.max_failures)
    tune_gc()                  # the corpora stay loaded: keep the collector off them
    wanted = [p[0] for p in plans]
    found = {c: discover(c, shlex.split(c), settings, wanted) for c in commands}
    seed = args.seed
    previous_seed = next((p[5][0] for p in plans if p[5] is not None), None)
    seed = previous_seed if seed is None and previous_seed is not None else seed
    seed = fresh.new_seed() if seed is None else seed
    loud = not args.quiet and not args.json
    if loud:
        print(f"seed {seed} (reproduce with --seed {seed})", flush=True)
    not_checked = [{"spec_version": v, "implementation": _label(found[c]), "command": c, "why": why}
                   for c in commands for v, why in found[c].not_checked.items() if v in wanted]
    summaries: dict[str, Any] = {}
    code = EXIT_OK
    for version, manifest, vectors, selected, wanted_fresh, previous, scenarios, scenario_base in plans:
        impls = [c for c in commands if found[c].start_error or found[c].checks(version)]
        if not impls:
            continue
        count = previous[1] if previous is not None else args.fresh
        sample = fresh.sample(seed, count, selected, bool(args.filter), version) if count and selected else []
        fresh_scenarios = fresh_scenario.sample(seed, fresh_scenario.count_for(count, len(scenario_base)),
                                                scenario_base)
        if wanted_fresh is not None:
            sample = [v for v in sample if v["id"] in wanted_fresh]
            fresh_scenarios = [v for v in fresh_scenarios if v["id"] in wanted_fresh]
        try:
            known = load_known_failures(sorted(KNOWN_FAILURES_DIR.glob("*.toml"))
                                        + [Path(p) for p in args.known_failures], version)
        except SelectionError as err:
            raise CliError(str(err)) from None
        result, lines, summary = _one_version(args, version, manifest, vectors, sample, known, impls,
                                              settings, seed, count, out, logs, not_checked,
                                              list(scenarios) + fresh_scenarios)
        summaries[version] = summary
        code = max(code, summary["exit_code"])       # 3 could not run > 1 does not conform > 0
        if not args.json:
            print("\n".join(lines if not args.quiet else lines[-1:]), flush=True)
    if not summaries:
        code = EXIT_COULD_NOT_RUN
    if args.json:
        print(json.dumps({"ok": code == EXIT_OK, "exit_code": code, "seed": seed, "versions": summaries,
                          "not_checked": not_checked}, indent=1, sort_keys=True))
        return code
    for entry in not_checked:
        print(f"spec {entry['spec_version']}: not checked for {entry['implementation']}: {entry['why']}")
    if not summaries:
        print(f"nothing checked: no adapter implements {', '.join(wanted)}"
              + "".join(f"; {c}: {found[c].start_error}" for c in commands if found[c].start_error))
    elif loud and len(summaries) > 1:
        print("checked: " + ", ".join(f"spec {v} {'conforms' if s['exit_code'] == EXIT_OK else 'does not conform'}"
                                      for v, s in summaries.items())
              + f" ({plural(len(summaries), 'version')})")
    return code


def _label(discovery) -> str:
    impl = ((discovery.hello or {}).get("implementation") or {})
    return str(impl.get("name") or discovery.command)[:200]


def _one_version(args, version, manifest, vectors, sample, known, commands, settings, seed, count, out, logs,
                 not_checked=(), scenarios=()):
    """Run one version's suite and write its reports into <out>/<version>/ (which name the
    versions the run did not check, and why); (result, the text lines to print, the --json
    summary)."""
    from dataclasses import replace

    from conformance.report.counts import plural
    from conformance.report.document import summary_json
    from conformance.report.text import summary
    from conformance.run.blind import line as blind_line
    from conformance.run.suite import Options, run_suite
    from rtwo_vm.commands.conformance import files
    from rtwo_vm.progress import Progress, wanted

    folder = out / version
    options = Options(repeat=args.repeat, seed=seed, max_traces=args.max_traces,
                      settings=replace(settings, spec_version=version), exitfirst=args.exitfirst, blind=args.blind)
    fresh_scenarios = sum(1 for s in scenarios if s["id"].startswith("fresh/"))
    run_info = {"seed": seed, "fresh": len(sample), "fresh_requested": count, "not_checked": list(not_checked),
                "scenarios": len(scenarios) - fresh_scenarios, "fresh_scenarios": fresh_scenarios}
    everything = list(vectors) + sample
    lines = [f"spec {version}: {plural(len(vectors), 'vector')} of its corpus and a fresh sample of "
             f"{plural(len(sample), 'vector')}; {plural(len(scenarios) - fresh_scenarios, 'scenario vector')} "
             f"and {plural(fresh_scenarios, 'fresh scenario')}"] if not args.quiet else []
    progress = Progress((len(everything) + len(scenarios)) * len(commands) * (1 + args.repeat), f"conformance {version}",
                        enabled=wanted(args.progress, quiet=args.quiet or args.json))
    if lines and not args.json:
        print(lines.pop(), flush=True)
    with progress:
        result = run_suite(commands, everything, known, options,
                           lambda command, reply: progress.advance(failed=reply.failure is not None),
                           scenarios=scenarios)
    run_info["blinding"] = result.blinding
    code = (EXIT_COULD_NOT_RUN if any(r.start_error for r in result.runs)
            else EXIT_OK if result.ok else EXIT_NOT_CONFORMING)
    properties = {"corpus.digest": manifest.get("digest"), "spec.version": version,
                  "fresh": len(sample), "blinding": blind_line(result.blinding)}
    bundles = files.write_reports(folder, result, manifest, args.filter, run_info, properties,
                                  max_bundles=args.max_bundles)
    failing = sum(1 for r in result.runs for o in r.outcomes.values() if o.failed and "unavailable" not in o.categories)
    paths = {"json": str(folder / "report.json"), "junit": str(folder / "junit.xml"),
             "html": str(folder / "report.html"), "bundles": str(folder / "bundles"),
             "bundles_written": len(bundles), "bundles_left_out": max(0, failing - len(bundles))}
    text = summary(result, manifest, bundles, shown=args.show, by_opcode=args.by_opcode, kinds=kinds(args))
    if args.quiet:
        return result, [text.splitlines()[-1]], summary_json(result, manifest, code, paths, run_info)
    cut = (f" (… and {paths['bundles_left_out']} more failures without a bundle: --max-bundles)"
           if paths["bundles_left_out"] else "")
    lines = [blind_line(result.blinding), text,
             f"report: {folder / 'report.json'}, {folder / 'junit.xml'}, {folder / 'report.html'}"
             + (f", {plural(len(bundles), 'replay bundle')} in {folder / 'bundles'}{cut}" if bundles else "")
             + (f"; adapter stderr logs in {logs}" if logs is not None else "")]
    return result, lines, summary_json(result, manifest, code, paths, run_info)
