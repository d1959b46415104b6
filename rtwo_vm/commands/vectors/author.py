"""The ``rtwo-vm vectors`` subcommands that author and ship the corpus: ``fill`` and ``promote``
(which write the corpus of a project checkout), ``release`` (a reproducible tarball of the
corpus) and ``strength`` (mutation testing of the corpus against the reference, strength.py).
Registered by the ``vectors`` command (rtwo_vm/commands/vectors/__init__.py); the corpus
options are rtwo_vm/arguments/corpus.py.

Which checkout: ``fill`` and ``promote`` write the corpus (and ``promote`` the fuzz source,
conformance/fuzz/promoted.jsonl) of one checkout — the one ``--project DIR`` names, else the one
holding the working directory — and fill it with that checkout's own definitions. When the
running ``conformance`` package is another copy (``pip install .`` rather than ``-e``, or
another checkout's editable install), the command runs again in a child process with the
checkout's packages first on the path; if even there the packages imported are not the
checkout's, it is refused in one line. Outside any checkout they write only into folders and
files the user names (``--dir``, and ``--promoted`` for promote), never into the installed
package.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from rtwo_vm.arguments import corpus as corpus_args
from rtwo_vm.arguments.inputs import CliError, nonnegative_int, positive_float, positive_int
from rtwo_vm.progress import add_option as add_progress_option

EDITABLE = "pip install -e ."


def register(vs) -> None:
    r = vs.add_parser("release", help="build a reproducible tarball of each version's corpus, schemas and "
                                      "protocol chapter")
    corpus_args.add_options(r, "every version, each under its own release")
    r.add_argument("-o", "--out", default="build/release", metavar="DIR",
                   help="directory for the tarball (default build/release)")
    r.add_argument("--version", dest="release_version", default=None, metavar="VERSION",
                   help="release a corpus that is not the committed one under this new release of its "
                        "spec version, later than the checkout's (default: the version's spec release, "
                        "which names the committed corpus only); with one corpus only (--spec-version)")
    r.set_defaults(func=_cmd_release)
    s = vs.add_parser("strength", help="mutation testing: how many mutants of the reference the corpus kills")
    corpus_args.add_options(s, "the newest")
    s.add_argument("--module", action="append", default=[], metavar="NAME",
                   help="mutate only these reference_vm modules (e.g. instructions/arithmetic, accounting)")
    s.add_argument("--limit", type=nonnegative_int, default=None, metavar="N", help="at most N generated mutants (a sample)")
    s.add_argument("--operator", action="append", default=[], metavar="KIND",
                   help="only generated mutants of these kinds (binop, compare, boolop, not, constant, statement, "
                        "order, zerofill, stale, signed)")
    s.add_argument("--curated-only", action="store_true", help="only the curated realistic bugs")
    s.add_argument("--no-curated", action="store_true", help="only generated mutants")
    s.add_argument("--mutant", action="append", default=[], metavar="ID",
                   help="only these mutants (ids as the report prints them, e.g. "
                        "curated:sub_operands_swapped), of those the other options select")
    s.add_argument("--filter", action="append", default=[], metavar="EXPR", help="run only these vectors")
    s.add_argument("--workers", type=positive_int, default=None, help="parallel processes (default: the local cores)")
    s.add_argument("--backend", default="local", help="parallel map: local (processes) or ray "
                   "(a private local cluster; --ray ADDRESS joins another)")
    from rtwo_vm.arguments import cluster
    cluster.add_ray(s, "mutants")
    cluster.add_resume(s)
    s.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per mutant before it counts as killed (hang)")
    s.add_argument("--no-confirm", action="store_true", help="skip confirming survivors through the adapter protocol")
    s.add_argument("--redundant", action="store_true", help="also say which vectors kill nothing others do not")
    s.add_argument("--reasons", metavar="DIR",
                   help="folder of equivalent.toml and unreachable.toml (default: conformance/strength)")
    s.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    s.add_argument("--record", action="store_true",
                   help="record the score in conformance/strength/score.json (quoted by the docs; whole runs only)")
    add_progress_option(s, "progress bars (mutants, retries, confirmations)")
    s.set_defaults(func=_cmd_strength)


def add_in_checkout(parser) -> None:
    """The hidden flag of the child process that runs a command with the checkout's packages."""
    parser.add_argument("--in-checkout", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--code-differs", action="store_true", help=argparse.SUPPRESS)


# -- the checkout a writing command works on ------------------------------------------------

def _absolute(path: str) -> str:
    return os.path.abspath(path)


def _delegate(args, project: Path, argv: list[str]) -> int:
    """Run ``rtwo-vm ARGV`` with the checkout's own packages (a child process whose path starts
    with the checkout); refused when this process already is that child."""
    if args.in_checkout:
        raise CliError(f"the packages imported are not those of the checkout {project} even with it first "
                       f"on the path; install it with {EDITABLE} (in {project}) and run the command again")
    from conformance.constants import same_code
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(project), *filter(None, [os.environ.get("PYTHONPATH")])])}
    # The child notes the hand-off once it runs the checkout's code (so that a refusal stays
    # one line), and only when the installed code really differs from the checkout's: a plain
    # pip install . of this very checkout (the README's own command) needs no note.
    differs = [] if same_code(project) else ["--code-differs"]
    sys.stdout.flush()
    sys.stderr.flush()
    return subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *argv, "--project", str(project), "--in-checkout",
                           *differs], env=env, cwd=project).returncode


def _checkout(args):
    """(project, here): the checkout the command works on (None outside any) and whether the
    running ``conformance`` package is that checkout's."""
    from conformance.constants import runs_from
    project = corpus_args.project(args)
    here = project is not None and runs_from(project)
    if here and args.in_checkout and args.code_differs:   # the child of _delegate, on the checkout's code
        print(f"note: the installed rtwo-vm is not the checkout {project}; ran the checkout's own code "
              f"({EDITABLE} makes this direct)", file=sys.stderr)
    return project, here


# Problems of failed author expectations listed by fill (one line each); the rest are counted.
MAX_EXPECTATION_LINES = 50


def _one_line(err: Exception) -> str:
    """The error text of a failed fill: its first line (capped), or for failed author
    expectations one line per problem."""
    from conformance.corpus.expect import ExpectationFailed
    from conformance.corpus.fill import UnexplainedDifference
    if isinstance(err, ExpectationFailed):
        # one line per problem: each names the definition, the version and what differs
        shown = [line[:300] for line in err.lines[:MAX_EXPECTATION_LINES]]
        more = len(err.lines) - len(shown)
        definitions = len({line.split(" (")[0] for line in err.lines})
        return (f"author expectations fail ({len(err.lines)} problems in {definitions} "
                f"definition{'s' if definitions != 1 else ''}); a definition whose expectations fail does not "
                "fill:\n"
                + "\n".join(shown) + (f"\n(and {more} more)" if more else ""))
    lines = str(err).splitlines()
    # an unexplained difference names the vector, the fields and what its request touches
    cap = 1500 if isinstance(err, UnexplainedDifference) else 300
    text = lines[0][:cap] if lines else type(err).__name__
    return text + (f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else "")


def cmd_fill(args) -> int:
    if args.jobs is not None and not 1 <= args.jobs <= 256:
        raise CliError("--jobs must be in 1..256")
    project, here = _checkout(args)
    if project is None:
        if not (args.check or args.dir):
            raise CliError("vectors fill writes the corpus of a project checkout: run it inside one "
                           "or give --project DIR (the installed package is read only); to author "
                           f"vectors, install the checkout with {EDITABLE}")
    elif not here:
        argv = ["vectors", "fill"] + (["--check"] if args.check else []) + (["--refresh-smt"] if args.refresh_smt else [])
        argv += ["--refresh-symbolic"] if args.refresh_symbolic else []
        argv += [f"--source={s}" for s in args.source or ()] + (["--dir", _absolute(args.dir)] if args.dir else [])
        argv += ["--spec-version", args.spec_version] if args.spec_version else []
        argv += ["--second-oracle", args.second_oracle] + (["--jobs", str(args.jobs)] if args.jobs else [])
        return _delegate(args, project, argv)
    from conformance.corpus import store
    from conformance.corpus.fill import fill
    from conformance.corpus.vector import SOURCES, VERSIONS
    from conformance.scenario import store as scenario_store
    from spec.files import FileRefused
    folders = _fill_folders(args, VERSIONS)
    try:
        filled = fill(args.source or SOURCES, versions=list(folders), refresh_smt=args.refresh_smt,
                      refresh_symbolic=args.refresh_symbolic)
        for note in filled.notes + [n for c in filled.corpora.values() for n in c.notes]:
            print(f"note: {note}", file=sys.stderr)
        for line in _explained_lines(filled):
            print(line)
        scenarios = scenario_store.fill_all(list(filled.corpora))
        if not _second_oracle_agrees(args, filled, scenarios):
            return 1
        if args.check:
            differing = 0
            for version, corpus in filled.corpora.items():
                diff = store.differences(store.render(corpus.vectors, version, corpus.manifest_extra),
                                         folders[version])
                diff += scenario_store.differences(scenarios[version], scenario_store.folder(folders[version]),
                                                   version)
                for line in diff:
                    print(f"spec {version}: {line}")
                differing += len(diff)
            print(f"filled {filled.count} vectors in {filled.seconds:.2f} s ({filled.rate:,.0f} vectors/s); "
                  + ("stored corpus is identical" if not differing else f"stored corpus differs in {differing} files")
                  + f" ({_versions_line(filled)})")
            return 0 if not differing else 1
        manifests = {v: store.write(c.vectors, folders[v], v, c.manifest_extra) for v, c in filled.corpora.items()}
        scenario_manifests = {v: scenario_store.write(scenarios[v], scenario_store.folder(folders[v]), v)
                              for v in filled.corpora}
    except (FileRefused, ValueError) as err:
        raise CliError(_one_line(err)) from None
    except OSError as err:
        raise CliError(f"cannot write the corpus: {err.strerror or err}") from None
    print(f"filled {filled.count} vectors in {filled.seconds:.2f} s ({filled.rate:,.0f} vectors/s)")
    for version, manifest in manifests.items():
        print(f"spec {version}: {manifest['vector_count']} vectors into {folders[version]}: "
              + ", ".join(f"{n} {s}" for s, n in manifest["sources"].items()))
        print(f"spec {version}: digest {manifest['digest']}")
        scenario = scenario_manifests[version]
        print(f"spec {version}: {scenario['vector_count']} scenario vectors ({scenario['step_count']} steps) "
              f"into {scenario_store.folder(folders[version])}, digest {scenario['digest'][:12]}")
    return 0


def _second_oracle_agrees(args, filled, scenarios) -> bool:
    """Every expected result (of the mode's vectors) computed again by the proofs' models
    (conformance/oracles): False, nothing written, when one disagrees."""
    from conformance.oracles import corpus as oracles
    checked = oracles.check({v: (c.vectors, scenarios[v]) for v, c in filled.corpora.items()},
                            args.second_oracle, args.jobs)
    for found in checked.disagreements:
        for line in found.lines():
            print(line)
    print(checked.summary(), file=sys.stderr if args.second_oracle == "off" else sys.stdout)
    if checked.disagreements:
        print("vectors fill: the expected results above are not confirmed by the second oracle; "
              "nothing was written", file=sys.stderr)
    return not checked.disagreements


def _explained_lines(filled) -> list[str]:
    """Per version, how many vectors differ from the previous version's vector of the same
    definition, and the diff items explaining them (chapter 11.2.6)."""
    from collections import Counter
    by_version: dict[str, Counter] = {}
    for key, items in filled.explained.items():
        version = key.split(":", 1)[0]
        by_version.setdefault(version, Counter()).update(items)
    out = []
    for version, items in sorted(by_version.items(), key=lambda kv: list(filled.corpora).index(kv[0])):
        count = sum(1 for key in filled.explained if key.startswith(version + ":"))
        out.append(f"spec {version}: {count} vectors differ from the previous version's, each explained by a diff "
                   "item (" + ", ".join(f"{item}: {n}" for item, n in sorted(items.items())) + ")")
    return out


def _versions_line(filled) -> str:
    return ", ".join(f"spec {v}: {len(c.vectors)}" for v, c in filled.corpora.items())


def _fill_folders(args, versions) -> dict:
    """Version -> the folder its corpus is written to (or compared with): <root>/<version> of
    every version (or of --spec-version's); a --dir holding one corpus (a manifest.json) is that
    corpus's version alone."""
    from conformance.constants import MANIFEST_NAME, corpus_dir
    base = corpus_args.root(args)
    if args.dir and ((base / MANIFEST_NAME).exists() or (base / MANIFEST_NAME).is_symlink()):
        version, folder = corpus_args.corpora(args)[0]
        return {version: folder}
    chosen = [args.spec_version] if args.spec_version else list(versions)
    return {v: corpus_dir(v, base) for v in chosen}


def cmd_promote(args) -> int:
    if bool(args.dir) != bool(args.promoted):
        raise CliError("--dir and --promoted go together: promoting into one corpus and another fuzz source "
                       "would leave the next fill of either without the finding; give both, or neither "
                       "(the checkout's own)")
    project, here = _checkout(args)
    if project is None and not args.dir:
        raise CliError("vectors promote writes the corpus and conformance/fuzz/promoted.jsonl of a project "
                       "checkout: run it inside one or give --project DIR (the installed package is read "
                       "only), or name both --dir and --promoted")
    if project is not None and not here:
        argv = ["vectors", "promote", _absolute(args.findings), *args.ids]
        argv += ["--dir", _absolute(args.dir), "--promoted", _absolute(args.promoted)] if args.dir else []
        return _delegate(args, project, argv)
    from conformance.corpus import fuzz_source
    from conformance.fuzz.promote import PromoteError, promote
    promoted = Path(args.promoted) if args.promoted else fuzz_source.PROMOTED
    directory = corpus_args.root(args)
    try:
        manifests = promote(Path(args.findings), args.ids, promoted=promoted, corpus_dir=directory)
    except (PromoteError, ValueError) as err:
        raise CliError(_one_line(err)) from None
    except OSError as err:
        raise CliError(f"cannot promote: {err.strerror or err}") from None
    print(f"promoted into {promoted}; corpora in {directory}:")
    for version, manifest in manifests.items():
        print(f"spec {version}: {manifest['vector_count']} vectors ("
              + ", ".join(f"{n} {s}" for s, n in manifest["sources"].items()) + f"), digest {manifest['digest']}")
    return 0


# -- release and strength -------------------------------------------------------------------

def _corpus(args) -> tuple[str, Path]:
    """(version, folder) of the one corpus a command works on (--spec-version, else the newest),
    refused with a one-line error when its manifest or vectors are malformed, as in every other
    vectors command."""
    version, folder = corpus_args.corpora(args, "latest")[-1]
    corpus_args.load_corpus(folder, version)
    return version, folder


def _cmd_release(args) -> int:
    from conformance.corpus.release import ReleaseError, build
    corpora = corpus_args.corpora(args, "all")
    if args.release_version and len(corpora) > 1:
        raise CliError("--version names the release of one corpus: give --spec-version too")
    for version, folder in corpora:
        corpus_args.load_corpus(folder, version)
        try:
            path, digest = build(Path(args.out), folder, args.release_version)
        except ReleaseError as err:
            raise CliError(str(err)) from None
        except OSError as err:
            raise CliError(f"cannot write the release to {args.out}: {err.strerror or err}") from None
        print(f"{path}  sha256 {digest}")
    return 0


def _cmd_strength(args) -> int:
    from rtwo_vm.commands.vectors.strength import check_arguments, run
    checked = check_arguments(args)        # every argument, before any work
    version, folder = _corpus(args)
    return run(args, folder, version, sys.stdout, checked)
