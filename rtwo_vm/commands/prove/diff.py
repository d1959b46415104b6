"""``rtwo-vm prove --diff OLD NEW``: what a version changes is proved, and what it keeps is
proved unchanged (proofs/diff/).

Prints one row per instruction (unchanged rows are counted, not listed, unless ``--all``),
then one line per item of the diff with its proof status, and writes:

- the JSON report (``--report``, default ``proofs-diff-OLD-NEW.json`` in the data directory,
  rtwo_vm/arguments/evidence.py; ``-`` for stdout);
- the witness vectors (``--vectors DIR``, default ``proofs-diff-vectors`` there): for every
  changed instruction whose witness is a single frame (depth 1, not read-only, no transient
  slot), a program that puts the machine in the witness's state and runs the instruction
  (conformance/corpus/smt_source.py), filled by the reference under both versions, kept only
  when the two results differ: ``DIR/OLD.jsonl`` and ``DIR/NEW.jsonl``, the same ids.

Exit 0 when every row is unchanged, added, removed or changed as declared; 1 on an undeclared
change, a declared change that the models do not make, or a row left undecided; 2 on bad input.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

from proofs import versions
from rtwo_vm.arguments.inputs import CliError
from spec import files

def _versions(pair: list[str]) -> tuple[str, str]:
    old, new = pair
    for v in (old, new):
        try:
            versions.check(v)
        except versions.UnmodelledVersion as err:
            raise CliError(f"--diff: {err}") from None
    import spec
    from proofs.diff.declared import declared
    try:
        declared(old, new)
    except spec.VersionError as err:
        raise CliError(f"--diff: {err}") from None
    return old, new


def single_frame(witness: dict[str, Any]) -> bool:
    """Whether a program can rebuild the witness: depth 1, not read-only, no transient slot."""
    return (witness.get("depth", 1) == 1 and not witness.get("read_only", False)
            and not witness.get("transient"))


def witness_vectors(report) -> tuple[dict[str, list[dict]], dict[str, str]]:
    """version -> vectors, and mnemonic -> the id of its witness vector (or why there is none)."""
    from conformance.corpus.smt_source import build_case
    from conformance.corpus.vector import fill_case
    out: dict[str, list[dict]] = {report.old: [], report.new: []}
    ids: dict[str, str] = {}
    for row in report.rows:
        if row.witness is None:
            continue
        if not single_frame(row.witness):
            ids[row.mnemonic] = ("none: the witness needs a frame only " + report.new + " has "
                                 "(read-only or with transient slots); its replay is the witness")
            continue
        x = dict(row.witness, branch=f"{report.old} to {report.new}: {', '.join(row.shows)}")
        case = build_case(row.mnemonic, x, 0)
        if case is None:
            ids[row.mnemonic] = "none: no program rebuilds the witness's state"
            continue
        vid = f"diff/{report.old}-{report.new}/{row.mnemonic}"
        case = dataclasses.replace(case, id=vid, description=(
            f"{row.mnemonic} where {report.old} and {report.new} differ "
            f"({', '.join(row.shows)}): the witness of rtwo-vm prove --diff {report.old} "
            f"{report.new}."))
        filled = {v: fill_case(case, v) for v in (report.old, report.new)}
        if filled[report.old]["expected"] == filled[report.new]["expected"]:
            ids[row.mnemonic] = "none: the rebuilt program gives the same result in both versions"
            continue
        for v, vector in filled.items():
            out[v].append(vector)
        ids[row.mnemonic] = vid
    return out, ids


def _write(target: str, text: str, what: str) -> None:
    try:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        files.atomic_write(files.output_file(target, what), text)
    except files.FileRefused as err:
        raise CliError(str(err)) from None
    except OSError as err:
        raise CliError(f"cannot write {target}: {err.strerror or err}") from None


def _table(report, ids: dict[str, str], show_all: bool) -> list[str]:
    from proofs.diff import run
    lines = [f"{'instruction':<12} {'status':<24} {'items':<12} differs in / note"]
    for r in report.rows:
        if r.status == run.UNCHANGED and not show_all:
            continue
        what = ", ".join(k for k, v in r.components.items() if v == "differs") or r.note
        lines.append(f"{r.mnemonic:<12} {r.status:<24} {','.join(i.split('/')[-1] for i in r.items):<12} "
                     f"{what}")
        if r.replay is not None:
            a, b = (r.replay["results"][v] for v in (report.old, report.new))
            shown = r.replay["differ"] or ["nothing (the model's callee is abstract)"]
            lines.append(f"{'':<12}   witness replayed: {report.old} {a['status']}, "
                         f"{report.new} {b['status']}; the interpreter shows {', '.join(shown)}")
        if r.mnemonic in ids:
            lines.append(f"{'':<12}   witness vector: {ids[r.mnemonic]}")
    return lines


def command(args) -> int:
    from proofs import solvers
    from proofs.diff import run
    if args.strength or args.theorems_file or args.names or args.width is not None:
        raise CliError("--diff compares the models of two versions at 64 bits: no --strength, "
                       "--theorems, --theorem or --width")
    old, new = _versions(args.diff)
    try:
        solvers.load(args.budgets)
    except solvers.BudgetError as err:
        raise CliError(f"--budgets: {err}") from None
    import spec
    known = set(spec.load(old).by_mnemonic) | set(spec.load(new).by_mnemonic)
    chosen = tuple(m.upper() for m in args.opcode) if args.opcode else None
    for m in chosen or ():
        if m not in known:
            raise CliError(f"--opcode: no instruction {m!r} in {old} or {new}")
    try:
        report = run.run(old, new, chosen, args.budgets)
    except run.VacuousPremises as err:
        print(f"prove --diff {old} {new}: FAIL: {err}", file=sys.stderr)
        return 1
    vectors, ids = witness_vectors(report)
    doc = report.to_json()
    for row in doc["rows"]:
        if row["mnemonic"] in ids:
            row["witness_vector"] = ids[row["mnemonic"]]
    doc["item_status"] = {i.id: report.item_status(i) for i in report.declarations.items}
    from rtwo_vm.arguments.evidence import data_dir
    target = args.report or str(data_dir(args) / f"proofs-diff-{old}-{new}.json")
    folder = args.diff_vectors or str(data_dir(args) / "proofs-diff-vectors")
    quiet = args.quiet or target == "-"
    if not quiet:
        print("\n".join(_table(report, ids, args.table_all)))
        print()
        for item in report.declarations.items:
            print(f"{item.id:<8} {doc['item_status'][item.id]:<24} {item.title}")
    from conformance.corpus.vector import vector_line
    for version, found in vectors.items():
        _write(str(Path(folder) / f"{version}.jsonl"),
               "".join(vector_line(v) + "\n" for v in found), "witness vectors")
    text = json.dumps(doc, indent=1, sort_keys=True)
    if target == "-":
        print(text)
    else:
        _write(target, text, "diff report")
    counts = doc["counts"]
    failed = report.failures or report.undecided
    line = (f"prove --diff {old} {new}: {'FAIL' if failed else 'PASS'}: "
            + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
            + f"; {sum(len(v) for v in vectors.values()) // 2} witness vectors in {folder}"
            + ("" if target == "-" else f"; report in {target}"))
    print(line, file=sys.stderr if quiet else sys.stdout)
    for r in report.failures + report.undecided:
        print(f"{r.mnemonic}: {r.status}: {r.note}", file=sys.stderr)
    return 1 if failed else 0
