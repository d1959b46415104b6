"""The fair unit of each mutant, its verdict, and the score.

The fair unit of a mutant is the proofs unit of the opcodes its function defines: the
opcodes whose model (``models(w)``) or handler (``handlers(word)``) is that function or is
defined inside it (``models.returning.model`` -> RETURN and REVERT), or every opcode of the
module's instruction type when the function is the body of ``models`` or ``handlers``
(which builds the whole table). For a module-level helper, the opcodes (of any module of the
same root) whose model or handler calls it, directly or through a helper of its own module
(``copy_into_memory`` -> CALLDATACOPY, DATACOPY, RETURNDATACOPY). The unit is what
``rtwo-vm prove --opcode M ...`` runs for those opcodes: their theorems and laws at every
width, and the agreement checks with the interpreter.

Verdicts: ``killed`` when a row of the unit fails (counterexample, disagreement, vacuous
premise, error: ``how`` names the first such row), when a row is left unknown (the suite
does not pass: ``undecided``), when the unit crashes (``crash``: the mutant does not even
import) or runs past the wall-clock safety net (``timeout``); else ``survived``. Mutants
listed in equivalent.toml or unreachable.toml are not run and are counted neither way.
Score: killed / (killed + survived). Before the mutants, the unmutated unit is run once
per distinct unit (``baseline``): a unit that does not pass unmutated gives no verdicts.
"""

from __future__ import annotations

import functools
import importlib
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import Callable, Sequence

from proofs.strength import isolate
from proofs.strength.mutants import Mutant, equivalent, unreachable

FAILING = ("counterexample", "disagrees", "error", "vacuous")
UNDECIDED = ("unknown", "timeout")
TARGET = 0.95


def _qualname(fn) -> str:
    return fn.__qualname__.replace("<locals>.", "")


@functools.cache
def _table(path: str, version: str) -> dict:
    """Mnemonic -> model or handler of the module at ``path`` under spec ``version`` (only
    the version's instructions); a module of the frame or accounting machinery has none."""
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    if path.startswith("proofs/instructions/"):
        from proofs.words import width
        w = width(64, version)
        return {m: f for m, f in module.models(w).items() if m in w.spec.by_mnemonic}
    if path.startswith("reference_vm/instructions/"):
        from reference_vm.rules import rules
        rule = rules(version, 64)
        return {m: f for m, f in module.handlers(rule).items() if m in rule.spec.by_mnemonic}
    return {}


def _uses(code, names: set[str]) -> bool:
    return bool(names & set(code.co_names)) or any(
        _uses(c, names) for c in code.co_consts if hasattr(c, "co_names"))


def _helpers(path: str, name: str) -> set[str]:
    """``name`` and the module-level functions of ``path`` that call it (to a fixpoint)."""
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    names = {name}
    functions = {k: v for k, v in vars(module).items() if callable(v) and hasattr(v, "__code__")
                 and v.__module__ == module.__name__ and k not in ("models", "handlers")}
    while True:
        more = {k for k, v in functions.items() if k not in names and _uses(v.__code__, names)}
        if not more:
            return names
        names |= more


def _every_opcode(version: str) -> tuple[str, ...]:
    from proofs.words import width
    return tuple(sorted(width(None, version).spec.by_mnemonic))


def _present(opcodes: tuple[str, ...], version: str) -> tuple[str, ...]:
    known = set(_every_opcode(version))
    return tuple(m for m in opcodes if m in known)


# The units of the frame machinery's functions (mutants.FRAME_FUNCTIONS): what runs through
# them in the proofs' replays, kept to the opcodes of the run's version. Nested calls and a
# frame's end: CALL and (from 1.1) STATICCALL (their callee frames, agreement_frames); the
# random stream: RANDOM; the segment paths: every instruction (each branch input is replayed
# through them). The models' read-only rule (accounting.unless_read_only, from 1.1): the
# writes it guards.
FRAME_UNITS: dict[str, tuple[str, ...] | None] = {
    "Execution.call": ("CALL", "STATICCALL"), "Execution.run_frame": ("CALL", "STATICCALL"),
    "Execution.next_random": ("RANDOM",), "Execution.run_segment": None, "Execution.step": None,
    "unless_read_only": ("SSTORE", "TSTORE", "LOG0", "LOG1", "LOG2", "LOG3", "LOG4")}


@functools.cache
def _entries(path: str) -> tuple[tuple[str, int, int, frozenset[str]], ...]:
    """(mnemonic, first line, last line, names used) of every table entry (``"MULHU": ...``
    in a dict literal) of the module at ``path``."""
    import ast

    from proofs.strength.mutants import ROOT
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
    return tuple((k.value, v.lineno, v.end_lineno or v.lineno,
                  frozenset(n.id for n in ast.walk(v) if isinstance(n, ast.Name)))
                 for node in ast.walk(tree) if isinstance(node, ast.Dict)
                 for k, v in zip(node.keys, node.values)
                 if isinstance(k, ast.Constant) and isinstance(k.value, str) and k.value.isupper())


def _entry(mutant: Mutant) -> str | None:
    """The mnemonic of the table entry (``"MULHU": ...`` in the dict ``models`` or
    ``handlers`` returns) the mutated node lies in, or None."""
    if mutant.function not in ("models", "handlers") or not mutant.node_line:
        return None
    return next((m for m, first, last, _ in _entries(mutant.path)
                 if first <= mutant.node_line <= last), None)


def _unit(mutant: Mutant, version: str) -> tuple[str, ...]:
    """The opcodes of the mutant's unit under ``version``; () when nothing of the version
    runs the mutated code (it may in another version)."""
    from proofs.strength.mutants import FRAME_FUNCTIONS, modules
    if mutant.path in FRAME_FUNCTIONS:
        top = ".".join(mutant.function.split(".")[:2])
        chosen = FRAME_UNITS[top]
        return _every_opcode(version) if chosen is None else _present(chosen, version)
    table = _table(mutant.path, version)
    f = mutant.function
    if f in ("models", "handlers"):   # the table's own body builds every entry
        entry = _entry(mutant)
        return _present((entry,), version) if entry else tuple(sorted(table))
    mine = [m for m, fn in table.items()
            if _qualname(fn) == f or _qualname(fn).startswith(f + ".") or f.startswith(_qualname(fn) + ".")]
    if mine:
        return tuple(sorted(mine))
    if f.split(".", 1)[0] in ("models", "handlers"):   # an entry of another version only
        return ()
    # A module-level helper: every opcode (of any module of the same root) whose model or
    # handler calls it, directly or through another helper of its module.
    names = _helpers(mutant.path, f.split(".", 1)[0])
    root = mutant.path.rsplit("/", 1)[0]
    users = {m for path in modules() if path.startswith(root + "/")
             for m, fn in _table(path, version).items() if _uses(fn.__code__, names)}
    # Or named where the table is built (``"MULHS": binary(..., sign_cases)``).
    users |= {m for m, _, _, used in _entries(mutant.path) if used & names}
    return _present(tuple(sorted(users)), version)


def unit(mutant: Mutant, version: str) -> tuple[str, ...]:
    """The opcodes of the mutant's fair unit under spec ``version`` (sorted); () when the
    mutated code belongs to instructions of another version only (the mutant is then not of
    this version: not run, not counted). A helper no instruction of any modelled version
    calls falls back to its module's whole table."""
    found = _unit(mutant, version)
    if found:
        return found
    from proofs.versions import MODELLED
    if any(_unit(mutant, other) for other in MODELLED if other != version):
        return ()
    return tuple(sorted(_table(mutant.path, version)))


def of_version(mutants: Sequence[Mutant], version: str) -> list[Mutant]:
    """The mutants whose mutated code runs under spec ``version`` (a non-empty unit)."""
    return [m for m in mutants if unit(m, version)]


@dataclass
class Verdict:
    mutant: Mutant
    status: str                     # killed, survived, equivalent, unreachable
    how: str = ""
    detail: str = ""
    opcodes: tuple[str, ...] = ()

    def to_json(self) -> dict:
        return {"mutant": self.mutant.id, "description": self.mutant.description,
                "line": self.mutant.line, "status": self.status, "how": self.how,
                "detail": self.detail, "unit": list(self.opcodes)}


def judge(result: dict) -> tuple[str, str, str]:
    """(status, how, detail) of a unit's result."""
    if "timeout" in result:
        return "killed", "timeout", f"still running after {result['timeout']:g} s (wall-clock safety net)"
    if "error" in result:
        return "killed", "crash", result["error"]
    rows = result["rows"]
    for statuses, how in ((FAILING, "failing"), (UNDECIDED, "undecided")):
        bad = [r for r in rows if r["status"] in statuses]
        if bad:
            r = bad[0]
            return "killed", how, f"{r['theorem']} {r['opcode']} {r['width']}: {r['status']}"
    return "survived", "", f"{len(rows)} rows proved or agreeing"


@dataclass
class Result:
    verdicts: list[Verdict] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(v.status == status for v in self.verdicts)

    @property
    def score(self) -> float | None:
        counted = self.count("killed") + self.count("survived")
        return self.count("killed") / counted if counted else None


class BaselineFailed(RuntimeError):
    pass


def run(mutants: Sequence[Mutant], version: str, timeout: float = 600.0, baseline: bool = True,
        progress: Callable[[int, int, Verdict], None] | None = None, jobs: int = 1,
        ray: str | None = None, state=None) -> Result:
    """Every mutant's verdict under spec ``version``, in the order given. ``jobs`` units run at
    a time (each in a process of its own; a verdict depends on its mutant and unit alone, not
    on what runs beside it). Each distinct unit first runs unmutated (``baseline``). With
    ``ray`` (local or a cluster's address) every unit is a task of the shared fan-out
    (fanout/tasks.py: a unit whose worker or node dies runs again), ``jobs`` CPUs for a local
    cluster. With ``state`` (fanout.resume.State of this run: ``resume_digest``) every unit's
    result is kept as it finishes and a unit kept before is not run again; a result of the
    wall-clock safety net is never kept (it runs again on resume)."""
    listed = {**{k: ("equivalent", v) for k, v in equivalent().items()},
              **{k: ("unreachable", v) for k, v in unreachable().items()}}
    units = [unit(m, version) for m in mutants]
    needed = sorted({u for m, u in zip(mutants, units) if m.id not in listed}) if baseline else []
    run_now = [i for i in range(len(mutants)) if mutants[i].id not in listed]
    ids = [*(_baseline_id(u) for u in needed), *(mutants[i].id for i in run_now)]
    done = state.load(set(ids)) if state is not None else {}

    def finished(items: list[tuple], task_ids: list[str], each=None) -> dict[int, dict]:
        """The unit result of every item (mutant or None, opcodes), kept ones taken from
        ``done``, the others run (locally or on Ray) and kept as they finish; ``each(k,
        result)`` as each one is known."""
        out = {k: done[t] for k, t in enumerate(task_ids) if t in done}
        for k in sorted(out):
            if each:
                each(k, out[k])
        todo = [k for k in range(len(items)) if k not in out]
        args = [(*items[k], timeout, version) for k in todo]
        for j, result in _finish_order(args, jobs, ray):
            out[todo[j]] = result
            if state is not None and "timeout" not in result:
                state.record(task_ids[todo[j]], result)
            if each:
                each(todo[j], result)
        return out

    base = finished([(None, u) for u in needed], [_baseline_id(u) for u in needed])
    for k, opcodes in enumerate(needed):
        status, how, detail = judge(base[k])
        if status != "survived":
            raise BaselineFailed(f"the unmutated unit {' '.join(opcodes)} does not pass: "
                                 f"{how}: {detail}")
    verdicts: dict[int, Verdict] = {}

    def known(index: int, v: Verdict) -> None:
        verdicts[index] = v
        if progress:
            progress(len(verdicts), len(mutants), v)
    for index, mutant in enumerate(mutants):
        if mutant.id in listed:
            status, reason = listed[mutant.id]
            known(index, Verdict(mutant, status, "reason", reason, units[index]))
    finished([(mutants[i], units[i]) for i in run_now], [mutants[i].id for i in run_now],
             lambda k, result: known(run_now[k], Verdict(mutants[run_now[k]], *judge(result),
                                                         units[run_now[k]])))
    out = Result()
    out.verdicts = [verdicts[index] for index in range(len(mutants))]
    return out


def _baseline_id(opcodes: tuple[str, ...]) -> str:
    return "baseline:" + " ".join(opcodes)


def _finish_order(items: list[tuple], jobs: int, ray: str | None):
    """(k, isolate.run_unit(*items[k])) in the order the units finish: ``jobs`` at a time in
    threads (each unit is a process of its own), or as tasks of the shared fan-out on Ray."""
    if ray is not None:
        import sys

        from fanout.tasks import ray_map
        yield from ray_map(_mutant_result, items, ray, jobs,
                           progress=lambda p: print(p.line("units"), file=sys.stderr, flush=True))
        return
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(_mutant_result, item): k for k, item in enumerate(items)}
        for future in as_completed(futures):
            yield futures[future], future.result()


def resume_digest(mutants: Sequence[Mutant], version: str, timeout: float) -> str:
    """What a strength run's unit results depend on: the mutants (their whole sources), the
    spec version, the safety net, and the code and data of the unmutated tree
    (proofs.report.fingerprint: spec, reference_vm, proofs)."""
    import hashlib
    import json

    from proofs.report import fingerprint
    blob = json.dumps(["prove --strength", version, timeout, fingerprint(),
                       [m.to_json() for m in mutants]], sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _mutant_result(item: tuple) -> dict:
    """On a Ray worker: one mutant's unit result (isolate.run_unit, in a copy of the tree)."""
    return isolate.run_unit(*item)


def record(result: Result, scope: str, version: str | None = None) -> dict:
    """The small record of a run (score.json): score, counts per module, survivors, scope."""
    per: dict[str, dict[str, int]] = {}
    for v in result.verdicts:
        counts = per.setdefault(v.mutant.path, {})
        counts[v.status] = counts.get(v.status, 0) + 1
    return {"scope": scope, "score": result.score, "target": TARGET,
            **({"spec_version": version} if version else {}),
            "counts": "killed / (killed + survived); equivalent and unreachable are not counted",
            "killed": result.count("killed"), "survived": result.count("survived"),
            "equivalent": result.count("equivalent"), "unreachable": result.count("unreachable"),
            "modules": {k: dict(sorted(c.items())) for k, c in sorted(per.items())},
            "survivors": [v.to_json() for v in result.verdicts if v.status == "survived"]}


def recorded(path=None) -> dict[str, dict]:
    """Spec version -> its recorded run, from score.json (``{"versions": {...}}``)."""
    import json
    path = path or SCORE_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    return dict(doc.get("versions", {}))


def lines(result: Result) -> list[str]:
    """One line per mutant, then the score."""
    out = [f"{v.status:<11} {v.mutant.id}  {v.mutant.description}"
           + (f"  [{v.how}: {v.detail}]" if v.how else f"  [{v.detail}]") for v in result.verdicts]
    score = "n/a" if result.score is None else f"{100 * result.score:.1f}%"
    out.append(f"prove strength: {score} killed ({result.count('killed')} killed, "
               f"{result.count('survived')} survived, {result.count('equivalent')} equivalent, "
               f"{result.count('unreachable')} unreachable; target {100 * TARGET:.0f}%)")
    return out


SCORE_FILE = __import__("pathlib").Path(__file__).resolve().parent / "score.json"


def command(modules: tuple[str, ...], limit: int | None, timeout: float, record_score: bool,
            version: str, emit: Callable[[str], None] = print, jobs: int = 1,
            ray: str | None = None, resume: Callable[[str], object] | None = None) -> int:
    """``rtwo-vm prove --strength``: exit 0 when the score reaches the target (or nothing was
    counted), 1 below it; a ValueError (bad module, stale reason) is the caller's bad input.
    ``resume(digest)``: the run's fanout.resume.State (``--resume DIR``)."""
    import json

    from proofs.strength.mutants import select
    from spec.files import atomic_write

    chosen = select(modules, limit, keep=lambda m: bool(unit(m, version)))
    known = {m.id for m in select(modules)}
    stale = [i for i in (*equivalent(), *unreachable()) if i.split(":", 1)[0] in {m.path for m in chosen}
             and i not in known]
    if stale:
        raise ValueError(f"stale reason for {stale[0]} (names no mutant of its module)")
    state = resume(resume_digest(chosen, version, timeout)) if resume else None
    result = run(chosen, version, timeout, jobs=jobs, ray=ray, state=state,
                 progress=lambda done, total, v: emit(
        f"[{done}/{total}] {v.status} {v.mutant.id} ({' '.join(v.opcodes)})"))
    for line in lines(result):
        emit(line)
    if record_score:
        scope = (f"{len(chosen)} mutants" + (f" (--limit {limit})" if limit is not None else "")
                 + " of " + (", ".join(modules) if modules else "every model and handler module")
                 + f" under spec {version}")
        runs = {**recorded(), version: record(result, scope, version)}
        atomic_write(SCORE_FILE, (json.dumps({"versions": runs}, indent=1, sort_keys=True)
                                  + "\n").encode())
        emit(f"recorded in {SCORE_FILE} (spec {version})")
    return 0 if result.score is None or result.score >= TARGET else 1
