"""What ``rtwo-vm prove --export-smt2 DIR`` writes: every query the suite asks, one standard
SMT-LIB 2.6 file each (smtlib.standard), named by its row and its class:

- ``THEOREM__OPCODE__wBITS__NNN.smt2``: claim NNN's negation with every premise (status
  unsat: no counterexample exists); a width-free row is ``w0``, a row of no opcode ``all``;
- ``THEOREM__OPCODE__wBITS__premises.smt2``: the premises alone (status sat: premises that
  cannot hold would prove anything; claims.py checks them, a row without premises has none);
- ``THEOREM__OPCODE__wBITS__NNN__antecedent.smt2``: for a claim ``Implies(A, B)``, the
  premises and ``A`` (status sat; vacuity.py);
- ``agreement_branches__OPCODE__wBITS__NNN__LABEL.smt2``: the searches of the branch
  agreement (branches.py), in the order asked, each named by the branch or case it looks
  for: the premise, the case's condition and one tier of bounds (status unknown: a search,
  whose answer nothing expects).

Each file holds one query whole: the suite itself solves a row's claims as one incremental
script per configuration (smtlib.script), with the premises sliced to the claims' symbols
and a 1.1 claim cut at 1.0's components (claims.py) — the same questions, put otherwise.
"""

from __future__ import annotations

import os
import re

from proofs import smtlib, verdicts, vacuity

SUFFIX = ".smt2"
CLASSES = ("claim", "premises", "antecedent", "branch")


_SIGNS = (("<=", "le"), (">=", "ge"), ("!=", "ne"), ("==", "eq"), ("<", "lt"), (">", "gt"),
          ("=", "eq"))


def row_name(theorem: str, opcode: str, bits: int) -> str:
    return f"{theorem}__{opcode}__w{bits}".replace("-", "all")


def claim_names(theorem: str, opcode: str, bits: int, count: int) -> list[str]:
    row = row_name(theorem, opcode, bits)
    return [f"{row}__{k:03d}{SUFFIX}" for k in range(count)]


def class_of(name: str) -> str:
    """The class of an exported file, by its name (one of CLASSES)."""
    stem = name.removesuffix(SUFFIX)
    if stem.startswith("agreement_branches__"):
        return "branch"
    if stem.endswith("__premises"):
        return "premises"
    return "antecedent" if stem.endswith("__antecedent") else "claim"


def write(name: str, text: str, folder: str | None = None) -> None:
    folder = folder or verdicts.current.export_dir
    if folder is None:
        raise ValueError("exports.write: no export folder")
    with open(os.path.join(folder, name), "w") as f:
        f.write(text)


def theorem_files(items: list, bits: int) -> list[tuple[str, str]]:
    """(name, text) of every query of a task's rows ``items`` [(theorem, query), ...]: each
    row's claims, premises and antecedents."""
    out = []
    for th, q in items:
        names = claim_names(th.name, th.opcode, bits, len(q.claims))
        row = row_name(th.name, th.opcode, bits)
        out += [(name, smtlib.export(q.assumptions, claim))
                for name, claim in zip(names, q.claims)]
        if q.assumptions:
            out.append((f"{row}__premises{SUFFIX}", smtlib.query(list(q.assumptions), "sat")))
        for name, claim in zip(names, q.claims):
            a = vacuity.antecedent(claim)
            if a is not None:
                out.append((name.removesuffix(SUFFIX) + f"__antecedent{SUFFIX}",
                            smtlib.satisfiable(list(q.assumptions), a)))
    return out


def branch_files(mnemonic: str, bits: int, version: str) -> list[tuple[str, str]]:
    """(name, text) of every search the branch agreement of ``mnemonic`` asks (solved again
    here, with branches.RECORD set: the searches asked depend on z3's earlier answers)."""
    from proofs import branches
    branches.RECORD = []
    try:
        branches._branch_inputs.__wrapped__(mnemonic, bits, version)
        asked = branches.RECORD
    finally:
        branches.RECORD = None
    out: list[tuple[str, str]] = []
    label = "search"
    for entry in asked:
        if isinstance(entry, str):
            label = entry
            continue
        words = label.lower()
        for sign, word in _SIGNS:
            words = words.replace(sign, f" {word} ")
        slug = re.sub(r"[^a-z0-9]+", "_", words).strip("_")[:60] or "search"
        name = f"agreement_branches__{mnemonic}__w{bits}__{len(out):03d}__{slug}{SUFFIX}"
        out.append((name, smtlib.query(list(entry), "unknown")))
    return out
