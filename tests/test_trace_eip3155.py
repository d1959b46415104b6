"""``rtwo-vm run --trace-format eip3155``: the step lines and the summary line have the shape
EIP-3155 defines (its field names and JSON types, written out here from the EIP), with compute
in the place of gas as reference_vm/trace.py documents; values are computed by hand."""

from __future__ import annotations

import io
import json
import subprocess
import sys

from conftest import run_asm
from reference_vm.trace import Eip3155Tracer, JsonLinesTracer

# EIP-3155, "Required Fields" of a step and of the summary: name -> JSON type.
STEP_FIELDS = {"pc": int, "op": int, "gas": str, "gasCost": str, "memSize": int,
               "stack": list, "depth": int, "refund": int}
OPTIONAL_STEP = {"opName": str, "error": str, "returnData": str, "memory": str, "storage": dict}
SUMMARY_FIELDS = {"output": str, "gasUsed": str, "pass": bool}
OPTIONAL_SUMMARY = {"error": str, "stateRoot": str, "time": int, "fork": str}
# Hand-written (spec chapter 6): opcodes and base costs of the instructions used below.
PUSH1, ADD, STOP = 0x10, 0x40, 0x00
COST = {"PUSH1": 1, "ADD": 1, "STOP": 0}
PROGRAM = "push1 3\npush1 4\nadd\nstop\n"


def is_hex(text: str) -> bool:
    return text.startswith("0x") and len(text) > 2 and all(c in "0123456789abcdef" for c in text[2:])


def check_shape(lines):
    *steps, summary = lines
    for step in steps:
        assert set(STEP_FIELDS) <= set(step) <= set(STEP_FIELDS) | set(OPTIONAL_STEP), step
        for name, kind in {**STEP_FIELDS, **OPTIONAL_STEP}.items():
            if name in step:
                assert isinstance(step[name], kind) and not isinstance(step[name], bool), (name, step)
        assert is_hex(step["gas"]) and is_hex(step["gasCost"])
        assert all(is_hex(item) for item in step["stack"])
    assert set(SUMMARY_FIELDS) <= set(summary) <= set(SUMMARY_FIELDS) | set(OPTIONAL_SUMMARY), summary
    for name, kind in {**SUMMARY_FIELDS, **OPTIONAL_SUMMARY}.items():
        if name in summary:
            assert isinstance(summary[name], kind), (name, summary)
    assert is_hex(summary["gasUsed"])


def cli_trace(tmp_path, *options):
    source = tmp_path / "p.rasm"
    source.write_text(PROGRAM)
    trace = tmp_path / "trace.jsonl"
    proc = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "run", str(source), "--trace", str(trace),
                           "--trace-format", "eip3155", *options],
                          capture_output=True, text=True, timeout=60)
    return proc, [json.loads(line) for line in trace.read_text().splitlines()]


def test_success_trace_is_hand_computed(tmp_path):
    proc, lines = cli_trace(tmp_path, "--compute", "100")
    assert proc.returncode == 0, proc.stderr
    check_shape(lines)
    step = {"memSize": 0, "depth": 1, "refund": 0}
    assert lines == [
        {**step, "pc": 0, "op": PUSH1, "opName": "PUSH1", "gas": hex(100), "gasCost": "0x1", "stack": []},
        {**step, "pc": 2, "op": PUSH1, "opName": "PUSH1", "gas": hex(99), "gasCost": "0x1", "stack": ["0x3"]},
        {**step, "pc": 4, "op": ADD, "opName": "ADD", "gas": hex(98), "gasCost": "0x1", "stack": ["0x3", "0x4"]},
        {**step, "pc": 5, "op": STOP, "opName": "STOP", "gas": hex(97), "gasCost": "0x0", "stack": ["0x7"]},
        {"output": "", "gasUsed": hex(COST["PUSH1"] * 2 + COST["ADD"]), "pass": True},
    ]


def test_exhausted_trace_ends_with_the_failing_step_and_its_code(tmp_path):
    proc, lines = cli_trace(tmp_path, "--compute", "2")
    assert proc.returncode == 1
    check_shape(lines)
    assert [line.get("opName") for line in lines[:-1]] == ["PUSH1", "PUSH1", "ADD"]
    assert lines[2]["gas"] == "0x0"
    assert lines[-1] == {"output": "", "gasUsed": "0x2", "pass": False, "error": "COMPUTE_LIMIT_EXCEEDED"}


def test_unknown_trace_format_is_refused(tmp_path):
    source = tmp_path / "p.rasm"
    source.write_text(PROGRAM)
    proc = subprocess.run([sys.executable, "-m", "rtwo_vm.cli", "run", str(source), "--trace-format", "geth"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1


def test_both_formats_describe_the_same_steps_including_nested_frames():
    callee = "push1 8\npush1 0\nmstore\npush1 0\npush1 8\nreturn\n"
    caller = ("push2 0x101\npush2 1000\npush1 0\npush1 0\ncall\npop\n"
              "push1 0\npush1 8\nreturn\n")
    native, eip = io.StringIO(), io.StringIO()
    run_asm(caller, others={0x101: callee}, tracer=JsonLinesTracer(native))
    result = run_asm(caller, others={0x101: callee}, tracer=Eip3155Tracer(eip))
    a = [json.loads(line) for line in native.getvalue().splitlines()]
    b = [json.loads(line) for line in eip.getvalue().splitlines()]
    check_shape(b)
    assert len(a) == len(b) and {step["depth"] for step in b[:-1]} == {1, 2}
    for x, y in zip(a[:-1], b[:-1]):
        assert (x["pc"], x["op"], x["opName"], x["stack"], x["memSize"], x["depth"]) == \
               (y["pc"], y["op"], y["opName"], y["stack"], y["memSize"], y["depth"])
        assert int(y["gasCost"], 16) == x["cost"]
    assert b[-1]["gasUsed"] == hex(result.usage.compute) and b[-1]["pass"] is (result.status == "success")
    assert b[-1]["output"] == result.output.hex()
