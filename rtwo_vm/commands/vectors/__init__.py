"""``rtwo-vm vectors ...``: the conformance corpora (spec chapter 11). Reading them is here
(check, coverage, list, show); authoring and shipping them is ``author.py`` (fill, promote,
release; they write a checkout's corpus) and ``strength.py`` (mutation testing of the corpus
against the reference).

Every command takes ``--spec-version``: the corpus of one version. Without it, fill, check and
coverage work on every version, list and show on the newest."""

from __future__ import annotations

import json
import sys

from rtwo_vm.arguments import corpus as corpus_args
from rtwo_vm.commands.vectors import author
from rtwo_vm.arguments.inputs import CliError


def register(sub) -> None:
    p = sub.add_parser("vectors", help="fill, check and inspect the conformance vector corpus")
    vs = p.add_subparsers(dest="vectors_command", required=True, parser_class=type(p))
    f = vs.add_parser("fill", help="fill each version's corpus from its sources with the reference interpreter")
    corpus_args.add_options(f, "every version; --dir names the folder of the version folders")
    f.add_argument("--check", action="store_true", help="fill in memory and fail if the stored corpus differs")
    f.add_argument("--refresh-smt", action="store_true", help="ask proofs.branches (z3) again for branch inputs")
    f.add_argument("--refresh-symbolic", action="store_true",
                   help="explore every example again for the symbolic source's witnesses (z3)")
    f.add_argument("--source", action="append", choices=["definition", "smt", "random", "fuzz", "symbolic"],
                   help="fill only these sources (default: all)")
    f.add_argument("--second-oracle", choices=["all", "quick", "off"], default="all",
                   help="also run the vectors by the proofs' SMT models and fail on any disagreement: "
                        "every vector (all, the default), the cheapest vectors covering every instruction, "
                        "outcome, instruction with an outcome and call outcome (quick, as rtwo-vm check "
                        "does), or none (off)")
    f.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes of the second oracle (default: one per core)")
    author.add_in_checkout(f)
    f.set_defaults(func=author.cmd_fill)
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
    corpus_args.add_options(c, "the newest")
    c.add_argument("--filter", action="append", default=[], metavar="EXPR",
                   help="only vectors matching EXPR, as in conformance run (repeatable)")
    c.set_defaults(func=_cmd_list)
    c = vs.add_parser("show", help="print one vector as indented JSON")
    corpus_args.add_options(c, "the newest version holding the id")
    c.add_argument("id")
    c.set_defaults(func=_cmd_show)
    c = vs.add_parser("promote", help="move fuzz findings into the committed corpus (the fuzz source) and refill")
    c.add_argument("findings", help="a findings directory (DIR/findings of rtwo-vm fuzz)")
    c.add_argument("ids", nargs="*", help="finding ids to promote (default: all)")
    corpus_args.add_options(c)
    c.add_argument("--promoted", default=None, metavar="FILE",
                   help="the fuzz source file (default conformance/fuzz/promoted.jsonl)")
    author.add_in_checkout(c)
    c.set_defaults(func=author.cmd_promote)
    author.register(vs)


def _cmd_check(args) -> int:
    from conformance.corpus import store
    from conformance.corpus.schema import corpus_problems
    status = 0
    for version, folder in corpus_args.corpora(args):
        manifest, vectors = corpus_args.load_corpus(folder, version)
        problems = store.problems(folder, vectors)
        problems += [p for p in corpus_problems(vectors, version, authoritative=True) if p not in problems]
        for p in problems[:50]:
            print(p)
        print(f"spec {version}: {len(vectors)} vectors, digest {manifest['digest'][:16]}: "
              + ("valid" if not problems else f"{len(problems)} problems"))
        status = status or (1 if problems else 0)
        status = _check_scenarios(folder, version) or status
    return status


def _check_scenarios(folder, version: str) -> int:
    """The scenario folder of a corpus (chapter 11.9.5): every vector checked by the schema
    itself and by the carried state; 1 when one is not valid."""
    from conformance.scenario import store as scenarios
    from conformance.scenario.schema import authoritative_problems
    from spec.files import FileRefused
    try:
        vectors = scenarios.load(scenarios.folder(folder), version)
    except FileRefused as err:
        print(f"spec {version}: scenarios: {str(err).splitlines()[0][:300]}")
        return 1
    problems = [f"{v['id']}: {p}" for v in vectors for p in authoritative_problems(v)]
    for p in problems[:50]:
        print(p)
    print(f"spec {version}: {len(vectors)} scenario vectors, "
          f"{sum(len(v['input']['steps']) for v in vectors)} steps: "
          + ("valid" if not problems else f"{len(problems)} problems"))
    return 1 if problems else 0


def _cmd_coverage(args) -> int:
    from conformance.corpus import coverage
    found = {}
    for version, folder in corpus_args.corpora(args):
        _, vectors = corpus_args.load_corpus(folder, version)
        if args.source:
            vectors = [v for v in vectors if v["tags"]["source"] in args.source]
        try:
            found[version] = coverage.measure(vectors, version)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise CliError(f"cannot measure the corpus of spec {version}: a malformed vector "
                           f"({type(err).__name__}: {str(err)[:80]})") from None
    if args.json:
        print(json.dumps({v: c.to_json() for v, c in found.items()}, indent=2, sort_keys=True))
    else:
        print("\n\n".join(coverage.render(c, not args.no_matrix) for c in found.values()))
    return 0 if all(c.complete for c in found.values()) else 1


def _cmd_list(args) -> int:
    from rtwo_vm.commands.conformance.run import select
    _, vectors = corpus_args.load(args)
    for v in select(args, vectors):
        print(f"{v['id']}  {v['tags']['outcome']}")
    return 0


def _cmd_show(args) -> int:
    corpora = corpus_args.corpora(args)
    for version, folder in reversed(corpora):      # the newest version holding the id
        _, vectors = corpus_args.load_corpus(folder, version)
        found = [v for v in vectors if v["id"] == args.id]
        if found:
            others = [v for v, _ in corpora if v != version]
            if others and args.spec_version is None:
                print(f"note: spec {version}'s vector; --spec-version shows another version's "
                      f"({', '.join(others)})", file=sys.stderr)
            print(json.dumps(found[0], indent=2, sort_keys=True))
            return 0
    raise CliError(f"no vector {args.id!r}" + (f" in the corpus of spec {args.spec_version}"
                                               if args.spec_version else ""))
