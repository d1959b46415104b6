"""The verdict cache of ``rtwo-vm prove`` (proofs/cache.py): a text solved once is not solved
again (in one run, and in the next), ``--no-cache`` uses none, and a cache folder handed over
by someone else (entries sealed with another key, or edited) cannot make a false theorem
"proved": such entries are refused, solved again and counted.

Solver calls are counted, not timed: the solvers' own entry points (solvers._check and
solvers._check_script, below the cache) append a line to a file per call, in every worker
process the run forks."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from proofs import cache, solvers
from proofs.runner import COUNTEREXAMPLE, PROVED
from rtwo_vm.cli import main

LAW = ("from proofs.registry import word_law, words\n"
       "@word_law({name!r}, 'SUB', widths=(8,))\n"
       "def {name}(bits, op):\n"
       "    a, b = words(bits, 'a b')\n"
       "    return [op('SUB', op('ADD', a, b), {minus}) == {result}]\n")
# (a + b) - b == a holds at every width; (a + b) - a == a does not (a = 0, b = 1: 1 != 0).
TRUE = {"minus": "b", "result": "a"}
FALSE = {"minus": "a", "result": "a"}


def law(name: str, form: dict) -> str:
    return LAW.format(name=name, **form)


@pytest.fixture
def calls(monkeypatch, tmp_path):
    """The number of solver calls made since the last read (every process of a run)."""
    log = tmp_path / "calls.log"
    log.write_text("")
    for name in ("_check", "_check_script"):
        real = getattr(solvers, name)

        def counting(*args, _real=real):
            with open(log, "a") as f:
                f.write("call\n")
            return _real(*args)
        monkeypatch.setattr(solvers, name, counting)

    def read() -> int:
        n = len(log.read_text().splitlines())
        log.write_text("")
        return n
    return read


def prove(theorems: str, folder: Path | None, key: Path) -> dict:
    """The report of ``prove --theorems`` with the cache in ``folder`` (None: --no-cache)."""
    where = ["--no-cache"] if folder is None else ["--cache", str(folder)]
    main(["prove", "--theorems", theorems, *where, "--cache-key", str(key),
          "--report", "r.json", "--quiet"])
    return json.loads(Path("r.json").read_text())


def statuses(doc: dict) -> dict:
    return {r["theorem"]: r["status"] for r in doc["results"]}


def test_a_text_is_solved_once_in_a_run_and_not_again_in_the_next(tmp_path, calls):
    Path("one.py").write_text(law("first", TRUE))
    prove("one.py", None, tmp_path / "k")
    alone = calls()
    assert alone > 0
    # Two theorems whose queries are the same text: the second is answered from the cache.
    Path("two.py").write_text(law("first", TRUE) + law("again", TRUE))
    doc = prove("two.py", tmp_path / "c", tmp_path / "k")
    assert calls() == alone
    assert statuses(doc) == {"first": PROVED, "again": PROVED}
    assert doc["summary"]["cache"]["hits"] == alone and doc["summary"]["cache"]["solved"] == alone
    # The next run solves nothing, with the same verdicts, provers and work units.
    again = prove("two.py", tmp_path / "c", tmp_path / "k")
    assert calls() == 0
    assert again["summary"]["cache"] == {"hits": 2 * alone, "refused": 0, "solved": 0,
                                         "stored": 0, "units_cvc5": 0, "units_z3": 0,
                                         "checks_cached": 0, "checks_run": 0}
    strip = lambda d: [{k: v for k, v in r.items() if k not in ("seconds", "cache")}  # noqa: E731
                       for r in d["results"]]
    assert strip(again) == strip(doc)
    assert again["scope"]["cache"] == str(tmp_path / "c")


def test_no_cache_solves_every_query_and_writes_no_cache(tmp_path, calls):
    Path("one.py").write_text(law("first", TRUE))
    prove("one.py", None, tmp_path / "k")
    alone = calls()
    Path("two.py").write_text(law("first", TRUE) + law("again", TRUE))
    doc = prove("two.py", None, tmp_path / "k")
    assert calls() == 2 * alone
    assert "cache" not in doc["summary"] and doc["scope"]["cache"] is None
    assert not (tmp_path / "k").exists()
    assert not Path(os.environ[cache.DIR_ENV]).exists()


def forge(folder: Path, key: Path) -> int:
    """Every entry of ``folder`` rewritten to say its claims are unsat (the premises' check
    of a script left as it was), sealed with ``key``: what someone would hand over."""
    secret = cache.load_key(key)
    forged = cache.VerdictCache.__new__(cache.VerdictCache)
    forged.secret = secret
    count = 0
    for path in folder.rglob("*.json"):
        doc = json.loads(path.read_text())
        answers = doc["answers"]
        doc["answers"] = [a if k == 0 and len(answers) > 1 else [solvers.UNSAT, a[1]]
                          for k, a in enumerate(answers)]
        doc["mac"] = forged._mac(doc["key"], doc["answers"])
        path.write_text(json.dumps(doc))
        count += 1
    return count


def test_a_cache_handed_over_cannot_prove_a_false_theorem(tmp_path, calls):
    Path("false.py").write_text(law("sub_returns_first", FALSE))
    theirs, mine = tmp_path / "their.key", tmp_path / "my.key"
    folder = tmp_path / "handed-over"
    assert statuses(prove("false.py", folder, theirs)) == {"sub_returns_first": COUNTEREXAMPLE}
    entries = forge(folder, theirs)
    assert entries > 0
    calls()
    # Control: under the key that sealed them, the forged entries are believed (this is
    # what the key protects).
    assert statuses(prove("false.py", folder, theirs)) == {"sub_returns_first": PROVED}
    assert calls() == 0
    # Under this machine's own key: every entry refused, solved again, the claim refuted.
    doc = prove("false.py", folder, mine)
    assert statuses(doc) == {"sub_returns_first": COUNTEREXAMPLE}
    assert doc["summary"]["cache"]["refused"] == entries
    assert doc["summary"]["cache"]["hits"] == 0 and calls() > 0
    cex = doc["results"][0]["counterexample"]
    assert cex["inputs"]["mnemonic"] == "SUB"        # replayed as without a cache


def test_an_edited_entry_is_refused_solved_again_and_replaced(tmp_path, calls):
    Path("false.py").write_text(law("sub_returns_first", FALSE))
    folder, key = tmp_path / "c", tmp_path / "k"
    prove("false.py", folder, key)
    solved = calls()
    path = sorted(folder.rglob("*.json"))[0]
    doc = json.loads(path.read_text())
    doc["answers"] = [[solvers.UNSAT, a[1]] for a in doc["answers"]]   # the MAC kept
    path.write_text(json.dumps(doc))
    again = prove("false.py", folder, key)
    assert statuses(again) == {"sub_returns_first": COUNTEREXAMPLE}
    # One call for the refused entry, one for the counterexample's model (a z3 model is
    # never cached: the counterexample is replayed from a fresh solve, as without a cache).
    assert again["summary"]["cache"]["refused"] == 1 and calls() == 2
    # Solved again and sealed anew: the next run refuses nothing and solves only the model.
    third = prove("false.py", folder, key)
    assert third["summary"]["cache"]["refused"] == 0 and calls() == 1
    assert third["summary"]["cache"]["hits"] == solved - 1


def test_only_answers_that_are_a_function_of_the_text_are_stored(tmp_path):
    store = cache.VerdictCache(tmp_path / "c", tmp_path / "k")
    z3 = solvers.load().configs["z3"]
    got = store.through("check", z3, "(timed)", lambda: [solvers.Answer(solvers.TIMEOUT)])
    assert got[0].status == solvers.TIMEOUT
    assert store.lookup(store.key("check", z3, "(timed)")) is None
    store.through("check", z3, "(spent)", lambda: [solvers.Answer(solvers.UNKNOWN, 7)])
    assert store.lookup(store.key("check", z3, "(spent)")) == [solvers.Answer(solvers.UNKNOWN, 7)]
    # Another solver configuration (here another rlimit) is another key.
    other = solvers.Config("z3", "z3", 5, ())
    assert store.key("check", z3, "(spent)") != store.key("check", other, "(spent)")


def test_a_key_inside_the_cache_folder_or_readable_by_others_is_refused(tmp_path, capsys):
    Path("one.py").write_text(law("first", TRUE))
    assert main(["prove", "--theorems", "one.py", "--cache", str(tmp_path / "c"),
                 "--cache-key", str(tmp_path / "c" / "key"), "--quiet"]) == 2
    assert "inside the cache folder" in capsys.readouterr().err
    loose = tmp_path / "loose.key"
    loose.write_text("ab" * 32 + "\n")
    loose.chmod(0o644)
    assert main(["prove", "--theorems", "one.py", "--cache", str(tmp_path / "c"),
                 "--cache-key", str(loose), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "readable or writable by others" in err and err.count("\n") == 1


# Proved once across versions: 1.1's state adds components (transient storage, the slots
# alive, read-only frames) and premises about them; a 1.1 claim is cut into its part about
# 1.0's components, which reads as the 1.0 claim, and its part about the added ones.

def _run(version: str, tmp_path, model=None, names=None):
    from proofs.runner import Options, run_suite
    rows = run_suite(Options(version=version, opcodes=("ADD",), names=names, agreement=False,
                             model_overrides={"ADD": model} if model else {},
                             cache_dir=str(tmp_path / "c"), cache_key=str(tmp_path / "k")))
    return {r["theorem"]: r["status"] for r in rows}, rows


def test_the_1_1_claims_of_add_are_answered_from_the_1_0_cache(tmp_path, calls):
    first, _ = _run("1.0", tmp_path)
    assert set(first.values()) == {PROVED}
    calls()
    second, rows = _run("1.1", tmp_path)
    assert set(second.values()) == {PROVED} and second.keys() == first.keys()
    hits = sum(r.get("cache", {}).get("hits", 0) for r in rows)
    solved = sum(r.get("cache", {}).get("solved", 0) for r in rows)
    assert hits > solved > 0 and calls() == solved


def test_the_old_part_of_a_1_1_claim_is_the_1_0_claim(tmp_path):
    from proofs import slices, smtlib
    from proofs.theorems import meters
    from proofs.words import width
    old = meters("ADD", width(64, "1.0")).claims
    new = meters("ADD", width(64, "1.1")).claims
    added = slices.added("1.1")
    assert added == {"transient", "transient_alive", "callee_transient",
                     "callee_transient_alive", "read_only"} and slices.added("1.0") == set()
    text = lambda c: smtlib.fresh_solver([c]).to_smt2()  # noqa: E731
    for a, b in zip(old, new, strict=True):
        part, rest = slices.split(b, added, {})
        assert text(part) == text(a) and text(a) != text(b)
        assert "transient_alive" in text(rest)


def _add_overfilling_transient_slots(s, imm):
    """1.1's ADD that also sets the transient slots alive past machine.transient_slots (a
    planted bug in an added component only)."""
    import dataclasses
    from proofs.instructions import models
    return [dataclasses.replace(b, state=b.state.replace(
        transient_alive=b.state.w.cval(TRANSIENT_SLOTS + 1)))
        for b in models(64, "1.1")["ADD"](s, imm)]


TRANSIENT_SLOTS = __import__("spec").load("1.1").limits["machine"]["transient_slots"]


@pytest.mark.slow
def test_a_bug_in_an_added_component_is_caught_with_the_old_parts_cached(tmp_path):
    _run("1.0", tmp_path)
    _run("1.1", tmp_path)
    got, rows = _run("1.1", tmp_path, model=_add_overfilling_transient_slots)
    assert got["meters"] == COUNTEREXAMPLE
    assert sum(r.get("cache", {}).get("hits", 0) for r in rows) > 0   # the 1.0 parts


def test_a_hostile_cache_folder_is_refused_entry_by_entry_and_never_written_through(tmp_path):
    store = cache.VerdictCache(tmp_path / "c", tmp_path / "k")
    z3 = solvers.load().configs["z3"]
    unsat = lambda: [solvers.Answer(solvers.UNSAT, 3)]  # noqa: E731
    # An entry that is a FIFO, one that is a folder: refused (never waited on), solved.
    fifo, folder = store.key("check", z3, "(fifo)"), store.key("check", z3, "(folder)")
    for key in (fifo, folder):
        store._path(key).parent.mkdir(exist_ok=True)
    os.mkfifo(store._path(fifo))
    store._path(folder).mkdir()
    assert store.through("check", z3, "(fifo)", unsat)[0].status == solvers.UNSAT
    assert store.through("check", z3, "(folder)", unsat)[0].status == solvers.UNSAT
    assert store.take_stats()["refused"] == 2
    # A key's folder that is a link out of the cache, and a lock that is a link: the answer
    # stands, nothing is written through either.
    outside = tmp_path / "outside"
    outside.mkdir()
    text = next(t for t in (f"(linked {n})" for n in range(1000))   # a folder of its own
                if not store._path(store.key("check", z3, t)).parent.exists())
    key = store.key("check", z3, text)
    store._path(key).parent.symlink_to(outside)
    (store.root / "locks" / f"{key[:2]}.lock").symlink_to(outside / "lock")
    assert store.through("check", z3, text, unsat)[0].status == solvers.UNSAT
    assert list(outside.iterdir()) == []


# An antecedent checked against the premises about 1.0's components only must not pass when
# the premises about an added component (here the read-only flag) rule it out: the witness
# (every added component zero or false) does not follow, so every premise is used.
VACUOUS_UNDER_READ_ONLY = (
    "import z3\n"
    "from proofs.registry import Query, theorem\n"
    "@theorem('entry_frame_when_read_only', widths=(0,))\n"
    "def build(bits, model=None):\n"
    "    depth, read_only = z3.BitVec('depth', 64), z3.Bool('read_only')\n"
    "    return Query([z3.Implies(depth == 1, depth == 1)],\n"
    "                 [read_only, z3.Implies(read_only, z3.UGT(depth, 1))])\n")


def test_an_antecedent_ruled_out_by_an_added_component_is_vacuous(tmp_path):
    Path("ro.py").write_text(VACUOUS_UNDER_READ_ONLY)
    for version in ("1.0", "1.1"):
        main(["prove", "--theorems", "ro.py", "--spec-version", version, "--cache",
              str(tmp_path / "c"), "--cache-key", str(tmp_path / "k"), "--report", "r.json",
              "--quiet"])
        (row,) = json.loads(Path("r.json").read_text())["results"]
        assert row["status"] == "vacuous" and row["vacuous_claims"] == [0], (version, row)


def _add_is_sub(s, imm):
    """ADD's model replaced by SUB's: one instruction's model changed (issue 38)."""
    from proofs.instructions import models
    return models(64, "1.0")["SUB"](s, imm)


def test_after_one_model_changes_only_its_rows_are_solved_again(tmp_path, calls):
    from proofs.runner import Options, run_suite

    def run(model=None) -> dict:
        rows = run_suite(Options(version="1.0", opcodes=("ADD", "SUB"), width=64, agreement=False,
                                 model_overrides={"ADD": model} if model else {},
                                 cache_dir=str(tmp_path / "c"), cache_key=str(tmp_path / "k")))
        per: dict = {}
        for r in rows:
            got = per.setdefault(r["opcode"], {"hits": 0, "solved": 0, "statuses": set()})
            got["statuses"].add(r["status"])
            for k in ("hits", "solved"):
                got[k] += r.get("cache", {}).get(k, 0)
        return per
    first = run()
    assert first["ADD"]["statuses"] == first["SUB"]["statuses"] == {PROVED}
    assert first["SUB"]["solved"] > 0 and first["ADD"]["solved"] > 0
    calls()
    second = run(_add_is_sub)
    # SUB's texts did not change: every answer of its rows from the cache, none solved.
    answers = first["SUB"]["hits"] + first["SUB"]["solved"]   # hits: texts ADD's rows share
    assert second["SUB"] == {"hits": answers, "solved": 0, "statuses": {PROVED}}
    # ADD's did: its rows are solved again (and its result theorems now fail).
    assert second["ADD"]["solved"] > 0 and COUNTEREXAMPLE in second["ADD"]["statuses"]
    # The solver was called for ADD's changed texts (and its counterexample's explanation).
    assert calls() >= second["ADD"]["solved"]
