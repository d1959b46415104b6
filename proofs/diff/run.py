"""``prove --diff OLD NEW``: the models of two spec versions, instruction by instruction,
held to what the diffs between them declare (proofs/diff/declared.py).

For an instruction of both versions, the disjunction of its component differences
(compare.differences) is solved under the deterministic budget of proofs/budgets.toml's
``z3`` configuration and an unsat answer is re-checked by ``cvc5`` (a disagreement is a
failure). Unsat: the models are proved equal. Otherwise each component is decided on its
own (the characterisation), and a distinguishing pre-state is searched in the tiers of
realistic values branches.py uses, then replayed on the reference interpreter under both
versions: the witness.

Rows (``Row.status``):

- unchanged: proved equal, and no item declares a change;
- changed as declared: an item declares it, and a witness shows a difference;
- undeclared change: the models differ and no item declares it (a failure);
- declared but unchanged: an item declares a change and the models are proved equal (a failure);
- unknown: left undecided within the budget (not proved);
- added / removed: an instruction of one version only (its theorems are that version's suite).

Items that name no instruction (a container rule, the protocol) are listed apart: their
effect is not a per-instruction model difference. A verdict depends on the models, the
declarations and the budgets alone; the seconds are reported beside it, never part of it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import z3

from proofs import smtlib, solvers
from proofs.diff import compare
from proofs.diff.declared import Declarations, declared
from proofs.words import width

UNCHANGED, AS_DECLARED = "unchanged", "changed as declared"
UNDECLARED, NOT_CHANGED = "undeclared change", "declared but unchanged"
UNKNOWN, ADDED, REMOVED = "unknown", "added", "removed"
FAILURES = (UNDECLARED, NOT_CHANGED)
ITEM_PROVED, ITEM_FAILED, ITEM_OPEN = "proved as declared", "FAILED", "not proved"
PROVER, RECHECKER = "z3", "cvc5"


class VacuousPremises(RuntimeError):
    """No pre-state satisfies both versions' premises: nothing would be proved."""


@dataclass
class Row:
    mnemonic: str
    status: str
    items: tuple[str, ...] = ()                       # the items declaring it
    components: dict[str, str] = field(default_factory=dict)   # name -> equal|differs|unknown
    witness: dict[str, Any] | None = None             # replay inputs (proofs/replay.py)
    shows: list[str] = field(default_factory=list)    # components the witness makes differ
    replay: dict[str, Any] | None = None              # interpreter results under each version
    note: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        out = {"mnemonic": self.mnemonic, "status": self.status, "items": list(self.items),
               "components": self.components, "witness": self.witness, "shows": self.shows,
               "replay": self.replay, "note": self.note}
        return {k: v for k, v in out.items() if v not in (None, "", [], {})} | {
            "status": self.status}


@dataclass
class Report:
    old: str
    new: str
    rows: list[Row]
    other_items: list[dict[str, str]]              # items naming no instruction
    declarations: Declarations

    @property
    def failures(self) -> list[Row]:
        return [r for r in self.rows if r.status in FAILURES]

    @property
    def undecided(self) -> list[Row]:
        return [r for r in self.rows if r.status == UNKNOWN]

    def rows_of(self, item) -> list[Row]:
        """The rows of the instructions an item adds, removes or changes."""
        names = (*item.added, *item.removed, *item.changed)
        return [r for r in self.rows if r.mnemonic in names]

    def item_status(self, item) -> str:
        """proved as declared, FAILED, not proved, or what the item is when it changes no
        instruction of both versions."""
        rows = self.rows_of(item)
        if any(r.status in FAILURES for r in rows):
            return ITEM_FAILED
        if any(r.status == UNKNOWN for r in rows):
            return ITEM_OPEN
        if not rows:
            return "no instruction (checked by the version's vectors)"
        if all(r.status == ADDED for r in rows):
            return f"adds {len(rows)} (their theorems: prove --spec-version {self.new})"
        return ITEM_PROVED

    def to_json(self) -> dict[str, Any]:
        counts: dict[str, int] = {}
        for r in self.rows:
            counts[r.status] = counts.get(r.status, 0) + 1
        return {"old": self.old, "new": self.new, "width": compare.BITS,
                "prover": PROVER, "rechecker": RECHECKER, "counts": counts,
                "rows": [r.to_json() for r in self.rows], "other_items": self.other_items,
                "items": [{"id": i.id, "kind": i.kind, "title": i.title,
                           "added": list(i.added), "removed": list(i.removed),
                           "changed": list(i.changed)} for i in self.declarations.items]}


def _decide(premises: list, term, budgets: solvers.Budgets, recheck: bool = True) -> str:
    """sat, unsat (re-checked when ``recheck``), unknown, timeout or disagreement."""
    text = smtlib.export(premises, z3.Not(term))
    answer = solvers.check(budgets.configs[PROVER], text, budgets.wall_seconds).status
    if answer == "unsat" and recheck and solvers.available(RECHECKER):
        second = solvers.check(budgets.configs[RECHECKER], text, budgets.wall_seconds).status
        if second == "sat":
            return "disagreement"
    return answer


def _witness(p: compare.Pair, diffs: dict, new: str):
    """A realistic distinguishing pre-state (branches.solve's tiers), or None."""
    from proofs.branches import inputs_from_model, solve
    ins = width(compare.BITS, new).spec.by_mnemonic[p.mnemonic]
    term = z3.And(p.premises[0], z3.Or(*diffs.values()))
    for preferred in _single_frame(p.new):
        model = solve(z3.And(term, *preferred), p.new, ins)
        if model is not None:
            return model, inputs_from_model(model, p.new, p.mnemonic, p.imm)
    return None, None


def _single_frame(s) -> list[list]:
    """Preferences for a witness, first to last: a state a program of the old version can
    rebuild (the entry frame, not read-only, no transient slot), then not read-only, then
    any state."""
    one = s.w.cval(1)
    first = [s.env.depth == one]
    if s.env.read_only is not None:
        first.append(z3.Not(s.env.read_only))
    second = list(first)
    if s.transient is not None and s.transient_alive is not None:
        first += [s.transient_alive == s.w.cval(0), s.transient[s.stack[0]] == 0,
                  s.transient[s.stack[1]] == 0]
    return [first, second[1:], []]


def replay(inputs: dict, old: str, new: str) -> dict[str, Any]:
    """The witness run on the reference interpreter under each version: what each shows, and
    the fields that differ."""
    from proofs.replay import run_interpreter
    base = {k: v for k, v in inputs.items() if k not in ("transient", "transient_alive",
                                                         "read_only", "version")}
    seen: dict[str, dict[str, Any]] = {}
    for version, x in ((old, base), (new, inputs)):
        table = width(compare.BITS, version).spec.by_mnemonic
        x = {k: v for k, v in x.items() if k != "version"} | {"version": version}
        if "TSTORE" not in table:
            x = {k: v for k, v in x.items() if k not in ("transient", "transient_alive")}
        if "STATICCALL" not in table:
            x.pop("read_only", None)
        o = run_interpreter(x)
        seen[version] = {"status": o.status, "pc": o.pc, "stack": o.stack,
                         "meters": o.meters, "storage": {str(k): v for k, v in o.storage.items()},
                         "events": len(o.events),
                         "output": None if o.output is None else o.output.hex(),
                         "return_data": o.return_data.hex(), "random_counter": o.random_counter,
                         "transient": (None if o.transient is None else
                                       {str(k): v for k, v in o.transient.items()})}
    a, b = seen[old], seen[new]
    differ = [k for k in a if k != "transient" and a[k] != b[k]]
    after: dict[str, int] | None = b["transient"]
    if after is not None and inputs.get("transient", {}) != {
            int(k): v for k, v in after.items() if v}:
        differ.append("transient")
    return {"results": seen, "differ": differ}


def diff_row(mnemonic: str, old: str, new: str, decl: Declarations,
             budgets: solvers.Budgets, model_old=None, model_new=None) -> Row:
    """The row of one instruction of both versions."""
    start = time.monotonic()
    items = decl.changed_by(mnemonic)
    p = compare.pair(mnemonic, old, new, model_old, model_new)
    diffs = compare.differences(p)
    whole = _decide(p.premises, z3.Or(*diffs.values()), budgets)
    row = Row(mnemonic, UNKNOWN, items)
    if whole == "unsat":
        row.status = NOT_CHANGED if items else UNCHANGED
        if items:
            row.note = (f"{', '.join(items)} declare{'s' if len(items) == 1 else ''} a change, "
                        f"and the models are proved equal")
    elif whole == "disagreement":
        row.note = f"{PROVER} proved the models equal, {RECHECKER} found a difference"
    elif whole == "sat":
        for name, term in diffs.items():
            answer = _decide(p.premises, term, budgets, recheck=False)
            row.components[name] = {"sat": "differs", "unsat": "equal"}.get(answer, "unknown")
        model, inputs = _witness(p, diffs, new)
        if inputs is not None:
            row.witness = inputs
            row.shows = compare.witness_shows(model, p, diffs)
            row.replay = replay(inputs, old, new)
        row.status = AS_DECLARED if items else UNDECLARED
        if not items:
            row.note = ("no item of the diff declares it: name it in an item's `affects`, or "
                        "fix the model that changed")
    else:
        row.note = f"undecided within the budget ({whole}): not proved"
    row.seconds = time.monotonic() - start
    return row


def run(old: str, new: str, mnemonics: tuple[str, ...] | None = None,
        budgets_file: str | None = None, model_overrides: dict | None = None,
        declarations: Declarations | None = None, progress=None) -> Report:
    """Every instruction of both versions (or ``mnemonics``), in the new table's order.
    ``model_overrides``: {(version, mnemonic): model} (planted bugs in tests)."""
    decl = declarations or declared(old, new)
    budgets = solvers.load(budgets_file)
    overrides = model_overrides or {}
    old_table = width(compare.BITS, old).spec.by_mnemonic
    new_table = width(compare.BITS, new).spec.by_mnemonic
    common = [m for m in new_table if m in old_table]
    if common and _decide(compare.pair(common[0], old, new).premises, z3.BoolVal(True),
                          budgets, recheck=False) != "sat":
        raise VacuousPremises(f"the premises of {old} and {new} (machine.well_formed of both) "
                              "are not satisfiable: every comparison would hold vacuously")
    rows = []
    added, removed = decl.added(), decl.removed()
    for mnemonic in [*new_table, *(m for m in old_table if m not in new_table)]:
        if mnemonics is not None and mnemonic not in mnemonics:
            continue
        if mnemonic not in old_table:
            rows.append(Row(mnemonic, ADDED, (added.get(mnemonic, ""),)))
        elif mnemonic not in new_table:
            rows.append(Row(mnemonic, REMOVED, (removed.get(mnemonic, ""),)))
        else:
            rows.append(diff_row(mnemonic, old, new, decl, budgets,
                                 overrides.get((old, mnemonic)), overrides.get((new, mnemonic))))
        if progress is not None:
            progress(rows[-1])
    for row in rows:   # an instruction of one version only that no item adds or removes
        if row.status in (ADDED, REMOVED) and row.items == ("",):
            row.note = f"{row.mnemonic} is {row.status} without an item adding or removing it"
            row.items, row.status = (), UNDECLARED
    listed = {m for i in decl.items for m in (*i.added, *i.removed, *i.changed)}
    if mnemonics is None:
        for m in sorted(listed - set(old_table) - set(new_table)):
            rows.append(Row(m, NOT_CHANGED, decl.changed_by(m), note="names no instruction"))
    other = [{"id": i.id, "kind": i.kind, "title": i.title, "affects": ", ".join(i.other)}
             for i in decl.items if not (i.added or i.removed or i.changed)]
    return Report(old, new, rows, other, decl)
