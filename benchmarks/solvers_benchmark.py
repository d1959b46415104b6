"""Which solver proves and which re-checks: z3, cvc5 and Bitwuzla on every query class.

    python benchmarks/solvers_benchmark.py               # every row (more than an hour: run it quiet)
    python benchmarks/solvers_benchmark.py --opcode ADD --opcode CALL --no-branches  # a sample
    python benchmarks/solvers_benchmark.py --no-files    # only the rows, as the suite solves them

The queries are those ``rtwo-vm prove --export-smt2`` writes (proofs/exports.py), built here
without proving: each claim alone (class ``claim``, by budget profile), the premises
(``premises``), the antecedents (``antecedent``) and the branch searches (``branch``). Each
is solved in this process by z3 (budgets.toml's ``z3``), cvc5 (``cvc5``, claim by claim) and
Bitwuzla, each within ``--seconds`` of wall clock (Bitwuzla's limit, z3's and cvc5's safety
net: the division identities hold them all there), one at a time, with the CPU seconds
measured around the call. Per class: the queries, how many each solver decided, the
disagreements (a sat against an unsat: must be 0), and the CPU of each over the queries all
three decided, with the ratios Bitwuzla / z3 and Bitwuzla / cvc5.

Then each row's claims as the suite solves them (claims.py's chain of configurations, a
script configuration solving the claims as one incremental script): by the profile's prove
chain, by its re-check chain without Bitwuzla, by Bitwuzla alone as an incremental script
(``--seconds`` per check), and by the re-check chain behind Bitwuzla's first attempt
(budgets.toml's ``bitwuzla-first``, ``--first`` to try another limit): the claims each
decided and their CPU seconds, per profile, and the ratios. The roles chosen from these
figures are in proofs/budgets.toml and docs/guides/proving.md ("Which solver proves, which
re-checks").

CPU seconds of one process are steadier than wall seconds on a shared machine, but not free
of load (caches, frequency): measure on a quiet machine. Whether Bitwuzla decides a query
within its limit depends on the limit and on the load.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import defaultdict

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

SOLVERS = ("z3", "cvc5", "bitwuzla")


def queries(version: str, opcodes: set | None, branches: bool) -> tuple[list, list]:
    """(class, name, text) of every query of the rows of ``opcodes`` (None: every row), and
    (profile, name, query) of every row."""
    from proofs import exports, registry, solvers
    budgets = solvers.load()
    files, rows = [], []
    for th in registry.builtin(version):
        if opcodes is not None and th.opcode not in opcodes:
            continue
        profile = budgets.profile(th.name, th.profile, th.opcode).name
        for bits in th.widths:
            q = th.build(bits)
            for name, text in exports.theorem_files([(th, q)], bits):
                kind = exports.class_of(name)
                files.append((f"claim ({profile})" if kind == "claim" else kind, name, text))
            rows.append((profile, exports.row_name(th.name, th.opcode, bits), q))
    if branches:
        from proofs.words import width
        for ins in width(64, version).spec.instructions:
            if opcodes is None or ins.mnemonic in opcodes:
                files += [("branch", n, t) for n, t in exports.branch_files(ins.mnemonic, 64,
                                                                             version)]
    return files, rows


def solve(solver: str, text: str, seconds: float) -> tuple[str, float]:
    """The answer of ``solver`` on one query ``text`` and the CPU seconds it took."""
    from proofs import solvers
    configs = solvers.load().configs
    config = (configs["z3"] if solver == "z3" else
              dataclasses.replace(configs["cvc5"], script=False) if solver == "cvc5" else
              solvers.Config("bitwuzla", "bitwuzla", None, (), False, None, seconds))
    start = time.process_time()
    got = solvers.check(config, text, seconds, cached=False, model=False).status
    return got, time.process_time() - start


def chain(query, names: list, seconds: float) -> tuple[int, float]:
    """How many of ``query``'s claims the configurations ``names`` decide, each taking what
    the ones before it left (claims.py's provers: a script configuration solves the claims
    as one incremental script), and the CPU seconds they took."""
    from proofs import claims, solvers
    configs = solvers.load().configs
    chosen = [configs[n] if n in configs and n != "bitwuzla-first" else
              solvers.Config(n, "bitwuzla", None, (), True, None, seconds) for n in names]
    start = time.process_time()
    d = claims._decide(query, claims._Texts(query), chosen, [], seconds, False)
    return len(d.prover_of), time.process_time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--opcode", action="append", help="only this opcode's rows "
                        "(repeatable; default every row, the width-free ones too)")
    parser.add_argument("--spec-version", default="1.0")
    parser.add_argument("--seconds", type=float, default=60.0,
                        help="Bitwuzla's wall-clock limit per check, and the safety net of "
                             "z3's and cvc5's (default 60)")
    parser.add_argument("--first", type=float, default=None, help="the limit per check of "
                        "Bitwuzla's first attempt in the re-check (default budgets.toml's "
                        "bitwuzla-first)")
    parser.add_argument("--no-branches", dest="branches", action="store_false",
                        help="leave out the branch searches (they take z3 to find)")
    parser.add_argument("--no-files", dest="files", action="store_false",
                        help="only the rows (each query alone is the long part)")
    parser.add_argument("--verbose", action="store_true",
                        help="every query's answers and CPU seconds on stderr")
    args = parser.parse_args()
    from proofs import solvers
    for name in SOLVERS:
        if not solvers.available(name):
            print(f"{name} is not installed (pip install 'rtwo-vm[bitwuzla]')")
            return 2
    budgets = solvers.load()
    first = budgets.configs.get("bitwuzla-first")
    first_seconds = args.first or (first.seconds if first else None) or 10.0
    start = time.perf_counter()
    files, rows = queries(args.spec_version, set(args.opcode) if args.opcode else None,
                          args.branches)
    print(f"{len(files)} queries and {len(rows)} rows built in "
          f"{time.perf_counter() - start:.1f} s (spec {args.spec_version}; Bitwuzla at most "
          f"{args.seconds:g} s per check, {first_seconds:g} s as the re-check's first attempt)",
          flush=True)
    disagreements = files_table(files, args) if args.files else 0
    rows_table(rows, budgets, args, first_seconds)
    print(f"\n{time.perf_counter() - start:.1f} s wall; disagreements: {disagreements}")
    return 1 if disagreements else 0


def files_table(files: list, args) -> int:
    """Each query alone by each solver: decided, disagreements, CPU where all 3 decided."""
    from proofs import solvers
    table: dict = defaultdict(lambda: {"n": 0, "decided": defaultdict(int), "all": 0,
                                       "cpu": defaultdict(float)})
    disagreements = 0
    for done, (kind, name, text) in enumerate(files):
        if done % 100 == 0:
            print(f"... {done} of {len(files)} queries", file=sys.stderr, flush=True)
        got = {s: solve(s, text, args.seconds) for s in SOLVERS}
        if args.verbose:
            print(f"{kind} {name}: " + ", ".join(f"{s} {a} {t:.2f} s"
                                                 for s, (a, t) in got.items()), file=sys.stderr)
        row = table[kind]
        row["n"] += 1
        decided = {s: a for s, (a, _) in got.items() if a in solvers.DECIDED}
        for s in decided:
            row["decided"][s] += 1
        if len(set(decided.values())) > 1:
            disagreements += 1
            print(f"DISAGREE {name}: {decided}")
        if len(decided) == len(SOLVERS):
            row["all"] += 1
            for s in SOLVERS:
                row["cpu"][s] += got[s][1]
    print(f"\nEach query alone (claim: by budget profile). CPU s over the queries all three "
          f"decided.\n{'class':<26} {'queries':>7} {'z3':>5} {'cvc5':>5} {'bzla':>5} "
          f"{'all 3':>5} | {'z3 s':>7} {'cvc5 s':>7} {'bzla s':>7} | bzla/z3 bzla/cvc5")
    for kind in sorted(table):
        r = table[kind]
        d, c = r["decided"], r["cpu"]
        print(f"{kind:<26} {r['n']:>7} {d['z3']:>5} {d['cvc5']:>5} {d['bitwuzla']:>5} "
              f"{r['all']:>5} | {c['z3']:>7.2f} {c['cvc5']:>7.2f} {c['bitwuzla']:>7.2f} | "
              f"{_ratio(c['bitwuzla'], c['z3']):>7} {_ratio(c['bitwuzla'], c['cvc5']):>9}")
    return disagreements


def rows_table(rows: list, budgets, args, first_seconds: float) -> None:
    """Each row's claims as the suite solves them, by its profile's prove chain and
    re-check chain (budgets.toml, without Bitwuzla), by Bitwuzla alone as an incremental
    script, and by the re-check chain behind Bitwuzla's first attempt."""
    table: dict = defaultdict(lambda: defaultdict(float))
    for done, (profile, name, q) in enumerate(rows):
        if done % 50 == 0:
            print(f"... {done} of {len(rows)} rows", file=sys.stderr, flush=True)
        p = budgets.profiles[profile]
        recheck = [c for c in p.recheck if budgets.configs[c].solver != "bitwuzla"]
        chains = {"prove": list(p.prove), "recheck": recheck, "bitwuzla": ["bitwuzla-script"],
                  "bitwuzla+recheck": ["bitwuzla-first", *recheck]}
        t = table[profile]
        t["rows"] += 1
        t["claims"] += len(q.claims)
        said = []
        for role, names in chains.items():
            seconds = first_seconds if role == "bitwuzla+recheck" else args.seconds
            decided, cpu = chain(q, names, seconds)
            t[f"{role} decided"] += decided
            t[f"{role} s"] += cpu
            said.append(f"{role} {decided}/{len(q.claims)} {cpu:.2f} s")
        if args.verbose:
            print(f"row ({profile}) {name}: " + ", ".join(said), file=sys.stderr)
    print(f"\nEach row's claims as the suite solves them: the profile's prove chain, its "
          f"re-check chain, Bitwuzla alone (one incremental script), and the re-check chain "
          f"behind Bitwuzla's first attempt ({first_seconds:g} s per check). Claims decided; "
          f"CPU s.\n{'profile':<17} {'rows':>4} {'claims':>6} | {'prove':>11} {'recheck':>11} "
          f"{'bitwuzla':>11} {'bzla+rechk':>11} | bzla/prove bzla/rechk (bzla+rechk)/rechk")
    for profile in sorted(table):
        t = table[profile]
        cell = lambda role, t=t: f"{int(t[role + ' decided'])}/{t[role + ' s']:.2f}"  # noqa: E731
        print(f"{profile:<17} {int(t['rows']):>4} {int(t['claims']):>6} | {cell('prove'):>11} "
              f"{cell('recheck'):>11} {cell('bitwuzla'):>11} {cell('bitwuzla+recheck'):>11} | "
              f"{_ratio(t['bitwuzla s'], t['prove s']):>10} "
              f"{_ratio(t['bitwuzla s'], t['recheck s']):>10} "
              f"{_ratio(t['bitwuzla+recheck s'], t['recheck s']):>19}")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


if __name__ == "__main__":
    sys.exit(main())
