"""Mutant ids name the mutated source text, so a recorded reason cannot land on another mutant
after an unrelated edit; a reason naming no mutant is stale and ``strength`` refuses to run;
an unreachable mutant the corpus kills is reported as contradicted; what the score counts."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from conformance.strength import mutants, report

CLI = [sys.executable, "-m", "rtwo_vm.cli", "vectors", "strength"]


def key(kind: str, before: str, after: str) -> str:
    return hashlib.sha256(f"{kind}\0{before}\0{after}".encode()).hexdigest()[:8]


def test_an_id_is_a_hash_of_the_line_before_and_after():
    ids = {m.id for m in mutants.generated("m.py", "def f(a):\n    return a + 1\n")}
    assert f"m.py:f:binop:{key('binop', 'return a + 1', 'return a - 1')}" in ids
    assert f"m.py:f:constant:{key('constant', 'return a + 1', 'return a + 0')}" in ids
    assert f"m.py:f:statement:{key('statement', 'return a + 1', 'pass')}" in ids


def test_identical_lines_get_an_occurrence_counter_only():
    source = "def f(a):\n    if a:\n        return None\n    return None\n"
    removed = sorted(m.id for m in mutants.generated("m.py", source) if m.description == "remove `return None`")
    k = key("statement", "return None", "pass")
    assert removed == [f"m.py:f:statement:{k}", f"m.py:f:statement:{k}.2"]


def test_ids_survive_unrelated_edits_of_the_module_and_of_the_same_function():
    original = (mutants.PACKAGE / "state.py").read_text(encoding="utf-8")
    before = {m.id for m in mutants.generated("state.py", original)}
    # A new function at the top and a new first statement in _problem, which holds many mutants.
    anchor = "def _problem(contracts: Mapping, mask: int) -> str | None:\n"
    assert original.count(anchor) == 1
    edited = original.replace(anchor, anchor + "    unused = 1 + 2\n").replace(
        "class StateView(Mapping):", "def helper(x):\n    return x * 2\n\n\nclass StateView(Mapping):")
    after = {m.id for m in mutants.generated("state.py", edited)}
    assert before <= after and len(after - before) >= 4   # the new code's own mutants are new ids


def test_the_recorded_reasons_name_existing_mutants():
    listed = {**mutants.equivalent(), **mutants.unreachable()}
    assert len(listed) > 50 and not set(mutants.equivalent()) & set(mutants.unreachable())
    assert mutants.stale(listed) == []


def test_a_stale_reason_makes_strength_fail_with_one_line(tmp_path):
    stale = "instructions/hash.py:handlers.SHA256:constant:00000000"
    (tmp_path / "equivalent.toml").write_text(f'[[mutant]]\nid = "{stale}"\nreason = "was true once"\n')
    (tmp_path / "unreachable.toml").write_text("")
    proc = subprocess.run([*CLI, "--reasons", str(tmp_path), "--module", "instructions/hash", "--no-curated",
                           "--filter", "hash/*"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert "1 stale reasons" in proc.stderr and stale in proc.stderr
    # Listed in both files: refused too.
    real = next(m.id for m in mutants.generated("instructions/hash.py"))
    for name in ("equivalent.toml", "unreachable.toml"):
        (tmp_path / name).write_text(f'[[mutant]]\nid = "{real}"\nreason = "r"\n')
    proc = subprocess.run([*CLI, "--reasons", str(tmp_path), "--module", "instructions/hash", "--no-curated",
                           "--filter", "hash/*"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "one or the other" in proc.stderr and proc.stderr.count("\n") == 1


def _mutant(mid: str) -> mutants.Mutant:
    return mutants.Mutant(mid, "m.py", "statement", "remove x", 1, "x", "pass", "")


def test_the_score_counts_neither_equivalent_nor_unreachable_and_a_contradiction_fails():
    statuses = {"a": "killed", "b": "killed", "c": "killed", "d": "survived", "e": "unreachable",
                "f": "unreachable", "g": "equivalent"}
    verdicts = {m: {"status": s, "killers": ["v1"] if s == "killed" else [], "how": "vector" if s == "killed" else ""}
                for m, s in statuses.items()}
    r = report.Report({m: _mutant(m) for m in statuses}, verdicts, 10, "0" * 64)
    assert r.score == 3 / 4 and r.score_with_unreachable == 3 / 6
    assert r.summary()["totals"] == {"equivalent": 1, "killed": 3, "survived": 1, "unreachable": 2}
    text = report.render(r)
    assert "(3/4; not counted: 1 equivalent, 2 unreachable through the protocol; counting those as survivors 50.0%)" in text
    r = report.Report({m: _mutant(m) for m in statuses}, {**verdicts, "d": verdicts["a"]}, 10, "0" * 64,
                      contradicted=["c"])
    assert r.score == 1.0 and not r.ok
    assert "CONTRADICTED: c is listed as unreachable through the protocol, but vector v1 kills it" in report.render(r)


def test_hostile_reasons_files_are_refused_in_one_line(tmp_path):
    import os
    cases = {
        "fifo": None,                                            # would block a plain read
        "oversized": "#" * (mutants.MAX_REASONS + 1),
        "not a list": 'mutant = "x"\n',
        "entry not a table": "mutant = [1, 2]\n",
        "id not a string": "[[mutant]]\nid = 5\nreason = \"r\"\n",
        "reason not a string": "[[mutant]]\nid = \"a\"\nreason = [1]\n",
        "not utf-8": b"\xff\xfe[[mutant]]",
        "not toml": "[[mutant\n",
    }
    for name, content in cases.items():
        folder = tmp_path / name.replace(" ", "_")
        folder.mkdir()
        target = folder / "equivalent.toml"
        if content is None:
            os.mkfifo(target)
        elif isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
        (folder / "unreachable.toml").write_text("")
        proc = subprocess.run([*CLI, "--reasons", str(folder), "--module", "instructions/hash", "--no-curated",
                               "--filter", "hash/*"], capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, (name, proc.stderr)
        assert "cannot read the mutant reasons" in proc.stderr, (name, proc.stderr)
