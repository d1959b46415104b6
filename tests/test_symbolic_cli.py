"""``rtwo-vm symbolic`` and ``rtwo-vm equivalence`` as a user runs them: the README's
demonstrations with their exit codes, counterexamples and path witnesses written as
schema-valid vectors that ``rtwo-vm run FILE.jsonl`` and ``rtwo-vm conformance run --dir``
replay as they are, a model disagreement reported loudly, and hostile input refused in one
line with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

import spec
from rtwo_vm.cli import main
from conftest import BASE_VERSION as V

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def vectors(folder: str) -> list[dict]:
    return [json.loads(line) for line in (Path(folder) / "symbolic.jsonl").read_text().splitlines()]


def schema_valid(vector: dict) -> None:
    jsonschema.Draft202012Validator(spec.schema("vector")).validate(vector)


def test_the_token_demonstration_finds_the_overflow_and_writes_a_replayable_vector(capsys):
    code, out, err = run(capsys, "symbolic", str(EX / "token.rasm"), "--properties",
                         str(EX / "token_properties.py"), "--counterexamples", "cex")
    assert code == 1, err
    assert "property transfer_conserves_the_two_balances: counterexample" in out
    assert "property transfer_leaves_every_other_slot_unchanged: proved" in out
    assert "property transfer_conserves_when_balances_fit: proved" in out
    assert "witnesses: 3 agrees" in out     # refused; recipient's slot new; or not
    (vector,) = vectors("cex")
    schema_valid(vector)
    assert vector["tags"]["source"] == "symbolic"
    assert vector["id"] == "symbolic/token/transfer_conserves_the_two_balances"
    code, out, err = run(capsys, "run", "cex/symbolic.jsonl")
    assert code == 0 and json.loads(out) == vector["expected"]["result"]
    assert "the vector's expected result" in err and "NOT" not in err
    manifest = json.loads(Path("cex/manifest.json").read_text())
    jsonschema.Draft202012Validator(spec.schema("vector-manifest")).validate(manifest)


def test_counter_and_proxy_demonstrations(capsys):
    props = str(EX / "counter_properties.py")
    code, out, _ = run(capsys, "symbolic", str(EX / "counter.rasm"), "--properties", props,
                       "--compute", "500")
    assert code == 1       # the integer reading fails at the wrap; the other two hold
    assert "counter_grows_by_one_or_changes_nothing: proved" in out
    assert "counter_grows_by_one_as_an_integer: counterexample" in out
    assert "1 COMPUTE_LIMIT_EXCEEDED, 1 success" in out
    code, out, _ = run(capsys, "symbolic", str(EX / "proxy.rasm"), "--contract",
                       f"0x101={EX / 'counter.rasm'}", "--contract",
                       f"0x102={EX / 'reverter.rasm'}", "--properties",
                       str(EX / "proxy_properties.py"), "--compute", "600")
    assert code == 0, out
    assert out.count(": proved") == 2
    # without the reverter the second call finds no code: assumed, and said
    code, out, _ = run(capsys, "symbolic", str(EX / "proxy.rasm"), "--contract",
                       f"0x101={EX / 'counter.rasm'}", "--properties",
                       str(EX / "proxy_properties.py"), "--compute", "600")
    assert code == 4 and out.count(": bounded") == 2, out
    assert out.count("callee 0x102 not given (assumed to have no code)") == 3


def test_default_property_and_emitted_vectors_of_every_path(capsys):
    code, out, _ = run(capsys, "symbolic", str(EX / "token.rasm"), "--emit-vectors", "paths",
                       "--max-calldata", "16", "--json")
    doc = json.loads(out)
    assert code == 0 and [p["verdict"] for p in doc["properties"]] == ["proved"]
    emitted = vectors("paths")
    assert len(emitted) == len(doc["paths"]) == 3
    for v in emitted:
        schema_valid(v)
    assert doc["witnesses"] == {"agrees": 3}
    code, out, err = run(capsys, "conformance", "run", "--dir", "paths", "--fresh", "0",
                         "--repeat", "0")
    assert code == 0, out + err


def test_a_reachable_failure_is_the_default_propertys_counterexample(capsys):
    code, out, _ = run(capsys, "symbolic", str(EX / "counter.rasm"), "--compute", "500",
                       "--counterexamples", "cex")
    assert code == 1 and "property no_failure: counterexample" in out
    (vector,) = vectors("cex")
    assert vector["expected"]["result"]["error"] == "COMPUTE_LIMIT_EXCEEDED"


def test_bounded_exits_4_and_names_the_bound(capsys):
    code, out, _ = run(capsys, "symbolic", str(ROOT / "benchmarks" / "loop.rasm"),
                       "--max-calldata", "8", "--loop-bound", "2")
    assert code == 4 and "bounded" in out and "loop bound 2 at pc" in out


def test_equivalence_of_the_optimised_and_the_unsigned_max(capsys):
    behaviour = "status,output,storage,events"
    code, out, _ = run(capsys, "equivalence", str(EX / "max.rasm"),
                       str(EX / "max-optimised.rasm"), "--compare", behaviour)
    assert code == 0 and ": equivalent" in out
    code, out, _ = run(capsys, "equivalence", str(EX / "max.rasm"),
                       str(EX / "max-optimised.rasm"), "--vectors", "whole")
    assert code == 1 and "they differ in: usage, fee" in out
    code, out, _ = run(capsys, "equivalence", str(EX / "max.rasm"),
                       str(EX / "max-unsigned.rasm"), "--compare", behaviour, "--vectors", "d")
    assert code == 1 and "they differ in: output" in out
    a, b = vectors("d")
    for v in (a, b):
        schema_valid(v)
    assert a["input"]["message"] == b["input"]["message"]
    assert a["expected"]["result"]["output"] != b["expected"]["result"]["output"]


def test_a_model_that_disagrees_with_the_reference_is_reported_loudly(capsys, monkeypatch):
    from proofs.instructions import models
    from proofs.machine import Branch
    real = models(64, V)["ADD"]

    def add_plus_one(s, imm):
        return [Branch(b.label, b.status, b.cond,
                       b.state.replace(stack=(b.state.stack[0] + 1,) + b.state.stack[1:]))
                for b in real(s, imm)]
    monkeypatch.setitem(models(64, V), "ADD", add_plus_one)
    code, out, err = run(capsys, "symbolic", str(EX / "counter.rasm"), "--spec-version", V)
    assert code == 3 and "MODEL DISAGREEMENT" in err and "disagrees" in out


def test_a_reference_that_disagrees_with_the_models_is_reported_loudly(capsys, monkeypatch):
    from dataclasses import replace

    import proofs.symbolic.witness as witness
    real = witness.execute

    def one_more_unit(*args, **kwargs):
        result = real(*args, **kwargs)
        return replace(result, usage=replace(result.usage, compute=result.usage.compute + 1))
    monkeypatch.setattr(witness, "execute", one_more_unit)
    code, _, err = run(capsys, "symbolic", str(EX / "counter.rasm"))
    assert code == 3 and "MODEL DISAGREEMENT" in err and "usage" in err


@pytest.mark.parametrize("argv, fragment", [
    (["symbolic", "missing.rasm"], "missing.rasm"),
    (["symbolic", str(EX / "counter.rasm"), "--max-calldata", "70000"], "--max-calldata"),
    (["symbolic", str(EX / "counter.rasm"), "--compute", "-1"], "--compute"),
    (["symbolic", str(EX / "counter.rasm"), "--loop-bound", "0"], "--loop-bound"),
    (["symbolic", str(EX / "counter.rasm"), "--seed", "00"], "--seed"),
    (["symbolic", str(EX / "counter.rasm"), "--properties", "nope.py"], "nope.py"),
    (["equivalence", str(EX / "max.rasm"), str(EX / "max.rasm"), "--compare", "colour"],
     "--compare"),
    (["run", "v.jsonl"], "v.jsonl"),
])
def test_bad_arguments_are_one_line_and_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2 and err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, err
    assert fragment in err


@pytest.mark.parametrize("body, fragment", [
    ("raise RuntimeError('boom')", "RuntimeError: boom"),
    ("import os\nos._exit(0)", "ended its process"),
    ("x = 1", "declares no property"),
    ("from proofs.symbolic.properties import contract_property as p\n"
     "p('twice')(lambda c: [])\np('twice')(lambda c: [])", "two properties are named"),
])
def test_hostile_properties_files_are_refused_before_anything_runs(capsys, body, fragment):
    Path("props.py").write_text(body + "\n")
    code, out, err = run(capsys, "symbolic", str(EX / "counter.rasm"), "--properties",
                         "props.py")
    assert code == 2 and fragment in err and out == ""


def test_a_property_that_raises_while_checked_could_not_run(capsys):
    Path("props.py").write_text("from proofs.symbolic.properties import contract_property\n"
                                "@contract_property('bad')\n"
                                "def bad(c):\n"
                                "    return [1 / 0]\n")
    code, out, _ = run(capsys, "symbolic", str(EX / "counter.rasm"), "--properties",
                       "props.py")
    assert code == 3 and "property bad: error" in out and "ZeroDivisionError" in out


def test_the_same_command_gives_the_same_report_under_any_hash_seed(tmp_path):
    """Verdicts, witnesses, vectors and work units do not depend on the process (each query
    is solved by a fresh solver under a work-unit budget; nothing iterates a hashed set)."""
    import os
    import subprocess
    import sys
    outputs = []
    for seed in ("1", "2"):
        done = subprocess.run(
            [sys.executable, "-m", "rtwo_vm.cli", "symbolic", str(EX / "token.rasm"),
             "--properties", str(EX / "token_properties.py"), "--json",
             "--counterexamples", str(tmp_path / seed)],
            capture_output=True, text=True, timeout=300, cwd=tmp_path,
            env={**os.environ, "PYTHONHASHSEED": seed})
        assert done.returncode == 1, done.stderr
        doc = json.loads(done.stdout)
        doc["vectors"] = None       # the folder names differ; their contents are compared
        for prop in doc["properties"]:
            if "counterexample" in prop:     # its vector's replay line names the folder too
                prop["counterexample"]["reproduce"]["vector"] = None
        outputs.append((doc, (tmp_path / seed / "symbolic.jsonl").read_text()))
    assert outputs[0] == outputs[1]


def test_the_commands_defaults_are_the_executors():
    from proofs.symbolic.world import Setup
    from rtwo_vm.cli import build_parser
    names = ("max_calldata", "loop_bound", "max_paths", "max_steps", "max_work", "deadline",
             "z3_memory")
    setup = Setup(0x100, {0x100: b""}, version=V)
    for command in (["symbolic", "x.rasm"], ["equivalence", "x.rasm", "y.rasm"]):
        args = build_parser().parse_args(command)
        assert {n: getattr(args, n) for n in names} == {n: getattr(setup, n) for n in names}
