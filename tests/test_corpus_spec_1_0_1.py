"""The behaviour spec release 1.0.1 settles (spec/CHANGELOG.md), checked on the real reference
adapter process, the runtime's lifecycle rule and the assembler. Expected values are written
out from the changelog's resolutions."""

from __future__ import annotations

import copy
import json
import subprocess
import sys

import pytest

import spec
from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.protocol import execute_request, hello_request
from reference_vm import assemble
from reference_vm.assembler import AssemblyError

VECTORS = {v["id"]: v for v in store.load(corpus_dir("1.0"))}
BASE = VECTORS["arithmetic/ADD/one__one"]


def adapter_session(requests):
    """Send requests to a fresh reference adapter process; return its answers."""
    text = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run([sys.executable, "-m", "conformance.adapter"], input=text, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def with_sandbox(**sandbox):
    vector_input = copy.deepcopy(BASE["input"])
    vector_input["sandbox"].update(sandbox)
    return vector_input


def test_b9_execute_before_hello_is_bad_message_and_the_adapter_goes_on():
    first, hello, result = adapter_session([execute_request("x", BASE["input"]), hello_request("1.0"),
                                            execute_request("y", BASE["input"])])
    assert first == {"type": "error", "id": "x", "code": "BAD_MESSAGE", "message": first["message"]}
    assert hello["type"] == "hello"
    assert result["type"] == "result" and result["result"] == BASE["expected"]["result"]


def test_b2_an_input_without_a_result_is_bad_message():
    answers = adapter_session([hello_request("1.0"),
                               execute_request("unknown_access", with_sandbox(storage_access="everything")),
                               execute_request("too_wide", with_sandbox(isolation_level="view")),
                               execute_request("unknown_level", with_sandbox(isolation_level="sealed")),
                               execute_request("fine", with_sandbox(isolation_level="standard"))])
    assert [(a["type"], a.get("code")) for a in answers[1:]] == [
        ("error", "BAD_MESSAGE"), ("error", "BAD_MESSAGE"), ("error", "BAD_MESSAGE"), ("result", None)]


def limits_input(**limits):
    vector_input = copy.deepcopy(BASE["input"])
    vector_input["sandbox"]["limits"].update(limits)
    return vector_input


def test_b3_integral_numbers_are_integers_booleans_and_fractions_are_not():
    answers = adapter_session([hello_request("1.0"),
                               execute_request("float", limits_input(compute=float(10_000_000))),
                               execute_request("bool", limits_input(memory_pages=True)),
                               execute_request("half", limits_input(storage_units=0.5))])
    assert answers[1]["result"] == BASE["expected"]["result"]  # 1e7 written 10000000.0 is the default
    assert [(a["result"]["status"], a["result"]["error"]) for a in answers[2:]] == [
        ("rejected", "INVALID_LIMITS"), ("rejected", "INVALID_LIMITS")]


def test_b3_the_raw_json_forms_are_read_as_their_values():
    # The JSON text itself: 1e3 and 1000.0 are both the integer 1000.
    line = json.dumps(execute_request("e", limits_input(compute=1000))).replace('"compute": 1000', '"compute": 1e3')
    line2 = line.replace('"compute": 1e3', '"compute": 1000.0')
    text = json.dumps(hello_request("1.0")) + "\n" + line + "\n" + line2 + "\n"
    proc = subprocess.run([sys.executable, "-m", "conformance.adapter"], input=text, capture_output=True,
                          text=True, timeout=60)
    _, a, b = [json.loads(x) for x in proc.stdout.splitlines()]
    assert a["result"] == b["result"] and a["result"]["status"] == "success"


def test_c1_a_result_decided_before_execution_has_an_empty_trace():
    invalid = next(v for v in VECTORS.values() if v["expected"]["result"]["status"] == "invalid")
    rejected = VECTORS["request/CONTRACT_NOT_FOUND/empty_state"]
    answers = adapter_session([hello_request("1.0"), execute_request("i", invalid["input"], trace=True),
                               execute_request("r", rejected["input"], trace=True),
                               execute_request("ok", BASE["input"], trace=True)])
    assert answers[1]["trace"] == [] and answers[2]["trace"] == []
    assert answers[3]["trace"][-1] == {"computeUsed": BASE["expected"]["result"]["usage"]["compute"],
                                       "error": None, "output": BASE["expected"]["result"]["output"],
                                       "status": "success"}


def _runtime_lifecycle():
    from rtwo_vm.runtime import lifecycle
    return lifecycle


def test_c2_a_callee_not_found_starts_at_the_initial_stage():
    lifecycle = _runtime_lifecycle()
    is_legal_path, path_for_outcome = lifecycle.is_legal_path, lifecycle.path_for_outcome
    path = path_for_outcome("rejected", "CONTRACT_NOT_FOUND", callee=True, survived=False)
    assert path == ["requested", "rolled_back", "finalized"]
    assert is_legal_path(path)
    # and a callee refused by validation: the stages before `validated`, i.e. requested only
    invalid = path_for_outcome("invalid", "BAD_MAGIC", callee=True, survived=False)
    assert invalid == ["requested", "rolled_back", "finalized"] and is_legal_path(invalid)


def test_b4_requested_is_described_as_the_initial_stage_everywhere():
    meaning = next(s["meaning"] for s in spec.raw("lifecycle", "1.0")["stage"] if s["name"] == "requested")
    chapter8 = spec.chapters("1.0")["08-lifecycle.md"]
    row = next(line for line in chapter8.splitlines() if line.startswith("| 1 | `requested`"))
    assert "initial stage" in meaning and "initial stage" in row


def test_b7_call_depth_exceeded_is_never_an_entry_outcome():
    data = spec.raw("sandbox", "1.0")
    assert data["violation_type"]["call_depth"]["entry_action"] == "not_applicable"
    assert "not_applicable" in data["enumerations"]["action"]
    assert all(v["expected"]["result"]["error"] != "CALL_DEPTH_EXCEEDED" for v in VECTORS.values())
    assert any("CALL_DEPTH_EXCEEDED" in v["tags"]["call_outcomes"] for v in VECTORS.values())


@pytest.mark.parametrize("source", [".byte _1\n", ".word _0x10\n", ".zero _2\n", ".byte -_1\n"])
def test_b8_a_number_starts_with_a_digit_or_minus(source):
    with pytest.raises(AssemblyError, match="not a number"):
        assemble(source + "stop\n", "1.0")


def test_b8_underscores_after_the_first_digit_are_separators_and_underscore_names_are_labels():
    assert assemble(".data\n.byte 1_0, 0x_ff\n.code\nstop\n", "1.0") == assemble(".data\n.byte 10, 255\n.code\nstop\n", "1.0")
    assert assemble("jump _1\n_1:\nstop\n", "1.0") == assemble("jump one\none:\nstop\n", "1.0")
    # E4 (9.6): doubled, final and in-prefix separators are allowed and removed, as the text
    # now says with these very examples (1000, 31, 1).
    assert assemble("push 1__000_\npush 0_x_1F\npush 0b_1_\nstop\n", "1.0") == \
        assemble("push 1000\npush 31\npush 1\nstop\n", "1.0")


def test_b1_vectors_exist_for_the_order_of_forcing_and_checking():
    runs = VECTORS["policy/STOP/pure_unknown_external_call_runs"]
    calls = VECTORS["policy/CALL/pure_unknown_external_call_forbids_calls"]
    view = VECTORS["policy/STOP/view_unknown_external_call_is_invalid"]
    assert runs["input"]["sandbox"]["isolation_level"] == "pure" and runs["input"]["policy"]["external_call"] == "sometimes"
    assert runs["expected"]["result"]["status"] == "success"
    assert calls["expected"]["result"]["error"] == "EXTERNAL_CALL_FORBIDDEN"
    assert view["expected"]["result"]["error"] == "INVALID_REQUEST"
