"""The SMT-LIB scripts of every proof task, as digests: what a run solves, printed without
solving it (``python -m proofs.digests``).

A verdict must be a function of the code alone, so the text of every query must not depend
on the process: not on the tasks built before it (smtlib.fresh_solver), and not on
PYTHONHASHSEED (no set or dict order of hashed keys may reach a term). Tests print these
digests in processes with different hash seeds and compare them line by line; one of them
also reads every script with a strict SMT-LIB 2.6 reader (``--strict``).
"""

from __future__ import annotations

import hashlib
import sys

from proofs import smtlib, vacuity


def task_scripts(task: tuple, registered: list, version: str | None = None) -> list[str]:
    """A theorem task's texts: the scripts its claims are first solved by (claims.py: the
    claims' parts about the oldest version's components, then those about the components
    ``version`` added, each with the premises sliced to its claims: slices.py), and the
    script of its claims' antecedents (vacuity.py, every premise) when it has implications.
    (A claim a sliced script does not prove is solved again with every premise: not
    listed, it depends on the answers.)"""
    from proofs import slices, versions
    kind, key, bits = task
    queries = [registered[i].build(bits) for i in (key if kind == "group" else (key,))]
    claims = [c for q in queries for c in q.claims]
    assumptions = queries[0].assumptions
    memo: dict = {}
    added = slices.added(version or versions.newest())
    parts: list[list] = [[], []]
    for claim in claims:
        for side, part in zip(parts, slices.split(claim, added, memo)):
            if part is not None:
                side.append(part)
    out = [smtlib.script(slices.sliced(assumptions, side), side) for side in parts if side]
    antecedents, seen = [], set()
    for claim in claims:
        a = vacuity.antecedent(claim)
        if a is not None and a.get_id() not in seen:
            seen.add(a.get_id())
            antecedents.append(a)
    if antecedents:
        out.append(smtlib.without_premises(smtlib.checks_script(assumptions, antecedents)))
    return out


def lines(options=None, version: str | None = None, read=None) -> list[str]:
    """One line per theorem task: its rows' names, width and the sha256 of each script
    (the theorems of spec ``version``, the newest with models by default). ``read(text)``,
    when given, is called on every script (a strict reader: ``main``'s ``--strict``)."""
    from proofs import runner, versions
    options = options or runner.Options(version=version or versions.newest(), agreement=False)
    registered = runner.theorems(options)
    out = []
    for task in runner.plan(options, registered):
        if task[0] not in ("theorem", "group"):
            continue
        keys = task[1] if task[0] == "group" else (task[1],)
        names = ",".join(f"{registered[i].name}/{registered[i].opcode}" for i in keys)
        scripts = task_scripts(task, registered, options.version)
        for text in scripts if read else ():
            try:
                read(text)
            except Exception as err:
                raise SystemExit(f"{names} w{task[2]}: not standard SMT-LIB: {err}") from None
        digests = [hashlib.sha256(t.encode()).hexdigest()[:16] for t in scripts]
        out.append(f"{names} w{task[2]} {' '.join(digests)}")
    return out


def strict(text: str) -> None:
    """Read ``text`` with Bitwuzla's parser, which refuses what SMT-LIB 2.6 does not allow
    (a one-argument ``or``, ...): the strict reader of ``--strict`` (smtlib.standard)."""
    import bitwuzla
    bitwuzla.Parser(bitwuzla.TermManager(), bitwuzla.Options()).parse(text, True, False)


def main(argv: list[str] | None = None) -> None:
    """``--strict``: every script is read by the strict reader too (needs bitwuzla)."""
    argv = sys.argv[1:] if argv is None else argv
    sys.stdout.write("\n".join(lines(read=strict if "--strict" in argv else None)) + "\n")


if __name__ == "__main__":
    main()
