"""``rtwo-vm prove --strength``: planted mutants of the models and handlers are killed by
their opcode's proofs unit, run in a copy of the tree; a listed equivalent mutant is not run
and is reported with its reason; the checkout is never written."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

import spec

from proofs.strength import isolate, mutants, run
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]


def _digest(*paths: str) -> str:
    return hashlib.sha256(b"".join((ROOT / p).read_bytes() for p in paths)).hexdigest()


def _generated(path: str, kind: str, before: str, after: str, function: str = "") -> mutants.Mutant:
    (found,) = [m for m in mutants.generated(path) if m.kind == kind and before in m.before
                and after in m.after and m.function.endswith(function)]
    return found


def test_ids_name_the_text_and_units_follow_the_function():
    ms = list(mutants.generated("proofs/instructions/control.py"))
    assert len({m.id for m in ms}) == len(ms)
    swap = _generated("proofs/instructions/control.py", "index", "(length, offset)", "(offset, length)")
    assert run.unit(swap, V) == ("RETURN", "REVERT")        # models.returning.model makes both
    drop = _generated("reference_vm/instructions/control.py", "statement", "touch(rules, frame", "pass", "RETURN")
    assert drop.function == "handlers.RETURN" and run.unit(drop, V) == ("RETURN",)
    shared = next(m for m in ms if m.function == "models")
    control = sorted(i.mnemonic for i in spec.load(V).instructions if i.type == "control")
    assert list(run.unit(shared, V)) == control              # every control opcode (spec 6.1)
    helper = _generated("reference_vm/instructions/memory.py", "statement", "charge(frame", "pass",
                        "copy_into_memory")
    assert run.unit(helper, V) == ("CALLDATACOPY", "DATACOPY", "RETURNDATACOPY")   # its callers
    order = _generated("reference_vm/instructions/memory.py", "byteorder", "'little'", "'big'", "MLOAD")
    assert order.function == "handlers.MLOAD"


def test_planted_and_generated_mutants_are_killed_in_a_copy():
    watched = ("proofs/instructions/control.py", "reference_vm/instructions/control.py")
    before = _digest(*watched)
    offset_plus_one = mutants.planted(
        "proofs/instructions/control.py", "models.returning.model",
        "off, ln = w.widen(offset), w.widen(length)", "off, ln = w.widen(offset) + 1, w.widen(length)",
        "return_offset_plus_one")
    callsub_boundary = _generated("reference_vm/instructions/control.py", "compare", ">=", ">")
    dropped_touch = _generated("reference_vm/instructions/control.py", "statement", "touch(rules, frame", "pass", "RETURN")
    planted = [offset_plus_one, callsub_boundary, dropped_touch]
    assert run.unit(offset_plus_one, V) == ("RETURN", "REVERT") and run.unit(callsub_boundary, V) == ("CALLSUB",)
    result = run.run(planted, V, timeout=900, baseline=False)
    assert [v.status for v in result.verdicts] == ["killed"] * 3, run.lines(result)
    assert all(v.how == "failing" for v in result.verdicts), run.lines(result)
    assert result.score == 1.0
    assert _digest(*watched) == before                   # the checkout is never written


def test_the_unmutated_unit_passes_in_the_copy():
    assert run.judge(isolate.run_unit(None, ("NOP",), 900, V))[0] == "survived"


def test_a_listed_equivalent_mutant_is_not_run_and_keeps_its_reason():
    listed = mutants.equivalent()
    assert listed, "equivalent.toml lists no mutant"
    wanted = next(iter(listed))
    (mutant,) = [m for m in mutants.generated(wanted.split(":", 1)[0]) if m.id == wanted]
    result = run.run([mutant], V, timeout=1, baseline=True)   # 1 s: running it would time out
    (verdict,) = result.verdicts
    assert verdict.status == "equivalent" and verdict.detail == listed[wanted]
    assert result.score is None


def test_a_crashing_or_slow_unit_is_killed_by_its_own_verdicts():
    broken = mutants.planted("proofs/instructions/control.py", "models.NOP",
                             "def NOP(s, imm):\n        return [running(s)]",
                             "def NOP(s, imm):\n        return [running(s, undefined_name)]", "nop_crash")
    (verdict,) = run.run([broken], V, timeout=900, baseline=False).verdicts
    assert verdict.status == "killed" and verdict.how in ("failing", "crash")
    assert run.judge({"timeout": 5.0})[:2] == ("killed", "timeout")


@pytest.mark.parametrize("argv, message", [
    (["--limit", "3"], "need --strength"),
    (["--strength", "--strength-module", "nope"], "no single model or handler module"),
    (["--strength", "--limit", "0"], "--limit must be"),
    (["--strength", "--opcode", "ADD"], "no --opcode"),
])
def test_bad_strength_arguments_are_refused_in_one_line(argv, message):
    proc = subprocess.run([str(Path(sys.executable).parent / "rtwo-vm"), "prove", *argv], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 2 and message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("text, message", [
    ('[[mutant]]\nid = "a:b:constant:00000000"\n', "needs an id and a reason"),
    ('[[mutant]]\nid = "x"\nreason = "r"\n[[mutant]]\nid = "x"\nreason = "r"\n', "listed twice"),
    ("[[mutant\n", "reasons.toml"),
])
def test_a_malformed_reasons_file_is_refused(tmp_path, text, message):
    path = tmp_path / "reasons.toml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        mutants.reasons(path)


def test_a_reasons_file_is_read_bounded(tmp_path):
    path = tmp_path / "reasons.toml"
    path.write_text("#" * (mutants.MAX_REASONS + 1))
    with pytest.raises(ValueError):
        mutants.reasons(path)


def test_on_ray_a_mutant_and_a_listed_one_get_the_local_verdicts():
    """prove --strength --ray (fanout/tasks.py on a private local cluster): the NOP crash
    mutant is killed by its unit run on a Ray worker, as locally (test above), and a listed
    equivalent mutant is not run and keeps its reason."""
    pytest.importorskip("ray")
    broken = mutants.planted("proofs/instructions/control.py", "models.NOP",
                             "def NOP(s, imm):\n        return [running(s)]",
                             "def NOP(s, imm):\n        return [running(s, undefined_name)]", "nop_crash")
    listed = mutants.equivalent()
    wanted = next(iter(listed))
    (equivalent,) = [m for m in mutants.generated(wanted.split(":", 1)[0]) if m.id == wanted]
    first, second = run.run([broken, equivalent], V, timeout=900, baseline=False, ray="local",
                            jobs=1).verdicts
    assert first.status == "killed" and first.how in ("failing", "crash")
    assert second.status == "equivalent" and second.detail == listed[wanted]
