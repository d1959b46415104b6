"""The ``rtwo-vm vectors`` subcommands of issue 12: ``release`` (a reproducible tarball of the
corpus) and ``strength`` (mutation testing of the corpus against the reference). Registered
from rtwo_vm/commands/conformance.py, which owns the ``vectors`` command."""

from __future__ import annotations

import sys
from pathlib import Path

from rtwo_vm.inputs import CliError, nonnegative_int, positive_float, positive_int


def register(vs, add_dir) -> None:
    r = vs.add_parser("release", help="build a reproducible tarball of the corpus, schemas and protocol chapter")
    add_dir(r)
    r.add_argument("-o", "--out", default="build/release", metavar="DIR",
                   help="directory for the tarball (default build/release)")
    r.set_defaults(func=_cmd_release)
    s = vs.add_parser("strength", help="mutation testing: how many mutants of the reference the corpus kills")
    add_dir(s)
    s.add_argument("--module", action="append", default=[], metavar="NAME",
                   help="mutate only these reference_vm modules (e.g. instructions/arithmetic, accounting)")
    s.add_argument("--limit", type=nonnegative_int, default=None, metavar="N", help="at most N generated mutants (a sample)")
    s.add_argument("--operator", action="append", default=[], metavar="KIND",
                   help="only generated mutants of these kinds (binop, compare, boolop, not, constant, statement, "
                        "order, zerofill, stale, signed)")
    s.add_argument("--curated-only", action="store_true", help="only the curated realistic bugs")
    s.add_argument("--no-curated", action="store_true", help="only generated mutants")
    s.add_argument("--filter", action="append", default=[], metavar="EXPR", help="run only these vectors")
    s.add_argument("--workers", type=positive_int, default=None, help="parallel processes (default: the local cores)")
    s.add_argument("--backend", default="local", help="parallel map: local (processes) or ray")
    s.add_argument("--timeout", type=positive_float, default=120.0, help="seconds per mutant before it counts as killed (hang)")
    s.add_argument("--no-confirm", action="store_true", help="skip confirming survivors through the adapter protocol")
    s.add_argument("--redundant", action="store_true", help="also say which vectors kill nothing others do not")
    s.add_argument("--reasons", metavar="DIR",
                   help="folder of equivalent.toml and unreachable.toml (default: conformance/strength)")
    s.add_argument("--json", metavar="FILE", help="write the full report as JSON")
    s.add_argument("--record", action="store_true",
                   help="record the score in conformance/strength/score.json (quoted by the docs; whole runs only)")
    s.add_argument("--progress", action="store_true", default=None, help="progress bar on stderr")
    s.set_defaults(func=_cmd_strength)


def _corpus(args) -> Path:
    """The corpus directory (--dir, else the project's), refused with a one-line error when
    its manifest or vectors are malformed, as in every other vectors command."""
    from rtwo_vm.commands.conformance import _corpus_dir, _load
    _load(args)
    return _corpus_dir(args)


def _cmd_release(args) -> int:
    from conformance.release import ReleaseError, build
    try:
        path, digest = build(Path(args.out), _corpus(args))
    except ReleaseError as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"cannot write the release to {args.out}: {err.strerror or err}") from None
    print(f"{path}  sha256 {digest}")
    return 0


def _cmd_strength(args) -> int:
    from rtwo_vm.strength_cli import run
    if args.curated_only and args.no_curated:
        raise CliError("--curated-only and --no-curated exclude each other")
    return run(args, _corpus(args), sys.stdout)
