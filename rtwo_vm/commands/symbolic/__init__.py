"""``rtwo-vm symbolic`` and ``rtwo-vm equivalence``: program-level verification over the
opcode models (proofs/symbolic/).

``symbolic CONTRACT`` explores every feasible path of one call with symbolic call data,
caller, storage (and time and seed where the policy lets them be read), replays a witness of
every path on the reference interpreter, and checks properties (``--properties FILE``; by
default: no path ends in a failure other than a revert). Exit status: 0 every property
proved, 1 a counterexample or a vacuous property, 4 only bounded, unknown or stopped
verdicts, 2 a usage error, 3 could not run (a property raised, or the models and the
reference disagree on a witness).

``symbolic CONTRACT --invariant FILE --depth K`` checks invariants after every call of every
sequence of up to K calls (``invariants.py``): exit 0 every invariant holds to depth K, 1 one
is violated (a sequence replayed on the reference) or vacuous, 4 only bounded, unknown or
stopped, 2 usage error, 3 could not run.

``equivalence A B`` proves two contracts give the same result on every input within the
bounds (``--compare`` the fields), or prints a distinguishing input and writes it as vectors;
``equivalence --spec-version V --against U A`` compares contract A under two spec versions
(its container is one of V, run under V and under U), the witness replayed under both.
Exit status: 0 equivalent, 1 different, 4 bounded, unknown or stopped, 2 usage error, 3
could not run. The bounds and their defaults: proofs/symbolic/bounds.py. The commands' bodies
are ``run.py``, their printed report ``report.py``.
"""

from __future__ import annotations

from proofs import versions
from proofs.symbolic import bounds
from rtwo_vm.arguments import cluster
from rtwo_vm.arguments import userfiles as userfile_options
from rtwo_vm.arguments.inputs import positive_float, positive_int

RUN_LIKE = (
    ("--address", dict(default="0x100", help="address of CONTRACT (default 0x100)")),
    ("--contract", dict(action="append", metavar="ADDR=FILE",
                        help="deploy another contract (its code is explored when called)")),
    ("--state", dict(help="JSON pre-state file with more contracts (their listed slots pinned)")),
    ("--caller", dict(help="fix the caller (default: symbolic)")),
    ("--calldata", dict(help="fix the call data as hex (default: symbolic, every length up to "
                             "--max-calldata)")),
    ("--storage", dict(action="append", metavar="KEY=VALUE",
                       help="pin a slot of CONTRACT (default: every slot symbolic)")),
    ("--concrete-storage", dict(action="store_true", dest="concrete_storage",
                                help="every slot not pinned is zero, as in rtwo-vm run")),
    ("--compute", dict(help="compute limit")),
    ("--memory-pages", dict(dest="memory_pages", help="memory limit in pages")),
    ("--storage-units", dict(dest="storage_units", help="storage limit in units")),
    ("--time", dict(help="fix the block time (default: symbolic when --allow-time)")),
    ("--seed", dict(help="fix the 32-byte seed as hex (default: symbolic when "
                         "--allow-randomness)")),
    ("--allow-time", dict(action="store_true", help="time_access = allowed")),
    ("--allow-randomness", dict(action="store_true", help="randomness = seeded")),
    ("--forbid-calls", dict(action="store_true", help="external_call = forbidden")),
    ("--storage-access", dict(default="read_write", choices=["none", "read_only", "read_write"],
                              help="storage_access of the policy (default: read_write)")),
    ("--forbid", dict(action="append", metavar="OP", help="forbid a mnemonic or type")),
    ("--allow", dict(action="append", metavar="OP", help="allow only these mnemonics or types")),
)


def _bounds(p) -> None:
    versions.add_option(p, versions.SYMBOLIC)
    p.add_argument("--max-calldata", type=int, default=bounds.DEFAULT_MAX_CALLDATA,
                   dest="max_calldata", metavar="BYTES",
                   help="longest symbolic call data explored (default "
                        f"{bounds.DEFAULT_MAX_CALLDATA}); a path that reads past it makes the "
                        "verdict bounded")
    p.add_argument("--loop-bound", type=positive_int, default=bounds.DEFAULT_LOOP_BOUND,
                   dest="loop_bound", metavar="K",
                   help="forks at one pc in one frame before the path is cut (default "
                        f"{bounds.DEFAULT_LOOP_BOUND})")
    p.add_argument("--max-paths", type=positive_int, default=bounds.DEFAULT_MAX_PATHS,
                   dest="max_paths", metavar="N",
                   help="path ends, callees' included, before the exploration stops "
                        f"(default {bounds.DEFAULT_MAX_PATHS})")
    p.add_argument("--max-steps", type=positive_int, default=bounds.DEFAULT_MAX_STEPS,
                   dest="max_steps", metavar="N",
                   help="instructions executed in all, every path and frame, before the "
                        f"exploration stops (default {bounds.DEFAULT_MAX_STEPS})")
    p.add_argument("--max-work", type=positive_int, default=bounds.DEFAULT_MAX_WORK,
                   dest="max_work", metavar="UNITS",
                   help="z3 work units of each exploration, and again of the witnesses and "
                        f"verdicts (default {bounds.DEFAULT_MAX_WORK})")
    p.add_argument("--rlimit", type=positive_int, default=None,
                   help="z3 work units per query (default: budgets file [config.symbolic])")
    p.add_argument("--budgets", metavar="FILE",
                   help="solver budgets file (default proofs/budgets.toml)")
    p.add_argument("--deadline", type=positive_float, default=bounds.DEFAULT_DEADLINE,
                   metavar="SECONDS",
                   help="wall-clock safety net of the whole run: a run it stops is 'stopped', "
                        f"never a verdict (default {bounds.DEFAULT_DEADLINE:g})")
    p.add_argument("--z3-memory", type=positive_int, default=bounds.DEFAULT_Z3_MEMORY,
                   dest="z3_memory", metavar="MB",
                   help="memory z3 may hold, a safety net: a run it stops is 'stopped' "
                        f"(default {bounds.DEFAULT_Z3_MEMORY})")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def register(sub) -> None:
    p = sub.add_parser("symbolic", help="explore every path of a call symbolically; prove "
                                        "properties (proofs/symbolic)",
                       description="Explore every path of one call of CONTRACT symbolically and "
                                   "prove --properties; or, with --invariant FILE --depth K, check "
                                   "invariants after every call of every sequence of up to K calls "
                                   "(docs/guides/symbolic.md: Invariants over call sequences).")
    p.add_argument("file", help="the contract: .rasm assembly, hex text or a binary container")
    for flag, kwargs in RUN_LIKE:
        p.add_argument(flag, **kwargs)
    p.add_argument("--properties", metavar="FILE",
                   help="Python file of properties (proofs.symbolic.properties API); default: "
                        "no path ends in invalid, fault, exhausted or violation")
    p.add_argument("--invariant", metavar="FILE",
                   help="Python file of invariants (proofs.symbolic.invariants API): check them "
                        "after every call of every sequence of up to --depth calls, any caller, "
                        "any call data, to any contract given, from the initial state")
    p.add_argument("--depth", type=depth, default=None, metavar="K",
                   help=f"with --invariant: the longest sequence of calls (1..{bounds.MAX_DEPTH}, "
                        f"default {bounds.DEFAULT_DEPTH})")
    p.add_argument("--max-states", type=positive_int, default=bounds.DEFAULT_MAX_STATES,
                   dest="max_states", metavar="N",
                   help="with --invariant: states (successful ends of a call of a sequence) "
                        f"checked before the run stops, bounded (default {bounds.DEFAULT_MAX_STATES})")
    userfile_options.add_options(p, "--properties",
                                 "default 300 s to load it, 1800 s to build its claims")
    _bounds(p)
    p.add_argument("--emit-vectors", dest="emit_vectors", metavar="DIR",
                   help="write one vector per feasible path (its witness) and a manifest to DIR")
    p.add_argument("--counterexamples", metavar="DIR", default="build/symbolic-counterexamples",
                   help="where counterexamples are written as vectors (default "
                        "build/symbolic-counterexamples)")
    p.add_argument("--no-ranges", dest="ranges", action="store_false",
                   help="print symbolic usage and fee as 'symbolic' instead of solving ranges")
    cluster.add_ray(p, "witness and claim queries of every path")
    p.add_argument("--jobs", type=jobs, default=None, metavar="N",
                   help="worker processes solving the witness and claim queries of every path "
                        "ahead (default 1: the driver solves each in turn); with --ray local: "
                        "the private cluster's CPUs (default: this machine's). The report is "
                        "the same for every N")
    p.add_argument("--resume", metavar="DIR", default=None,
                   help="keep every answered query after the exploration in DIR (sealed with the "
                        "local cache key); run again with the same DIR to take those answers "
                        "instead of solving them again (the report is the same)")
    p.set_defaults(func=_cmd_symbolic)

    p = sub.add_parser("equivalence", help="prove two contracts give the same result on every "
                                           "input (proofs/symbolic)",
                       description="Prove contracts A and B give the same result on every input, "
                                   "or find an input on which they differ; with --against "
                                   "VERSION, prove contract A gives the same result under "
                                   "--spec-version and under VERSION.")
    p.add_argument("file", help="contract A")
    p.add_argument("other", nargs="?", default=None,
                   help="contract B (deployed at the same address); not with --against")
    p.add_argument("--against", metavar="VERSION", default=None,
                   help="compare contract A with itself under this spec version: its container "
                        "is one of --spec-version (required), run under both versions' rules "
                        f"(versions: {', '.join(versions.SYMBOLIC)})")
    for flag, kwargs in RUN_LIKE:
        p.add_argument(flag, **kwargs)
    p.add_argument("--compare", default=None, metavar="FIELDS",
                   help="fields compared, comma-separated, of: status, error, error_pc, "
                        "output, storage, events, calls, usage, fee (default: all)")
    _bounds(p)
    p.add_argument("--vectors", metavar="DIR", default="build/symbolic-equivalence",
                   help="where a distinguishing input is written as two vectors, one per "
                        "contract (default build/symbolic-equivalence); with --against, one "
                        "corpus per version in DIR/VERSION/")
    p.set_defaults(func=_cmd_equivalence)


def depth(text: str) -> int:
    """--depth: a sequence length of 1..MAX_DEPTH calls."""
    import argparse
    value = positive_int(text)
    if value > bounds.MAX_DEPTH:
        raise argparse.ArgumentTypeError(f"must be at most {bounds.MAX_DEPTH}, got {text!r}")
    return value


def jobs(text: str) -> int:
    """--jobs: 1..64 worker processes."""
    import argparse
    value = positive_int(text)
    if value > 64:
        raise argparse.ArgumentTypeError(f"must be at most 64, got {text!r}")
    return value


def _cmd_symbolic(args) -> int:
    if args.invariant is not None:
        from rtwo_vm.commands.symbolic import invariants
        return invariants.check(args)
    if args.depth is not None:
        from rtwo_vm.arguments.inputs import CliError
        raise CliError("--depth needs --invariant FILE")
    from rtwo_vm.commands.symbolic import run
    return run.symbolic(args)


def _cmd_equivalence(args) -> int:
    from rtwo_vm.commands.symbolic import run
    return run.equivalence(args)
