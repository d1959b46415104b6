"""EIP-3155 traces through the adapter protocol (spec 11.5.5): an execute request with
``trace_format`` "eip3155" gets, from the real reference adapter process, the lines ``rtwo-vm
run --trace-format eip3155`` writes; the values are computed by hand as in
test_trace_eip3155.py; an unknown format is a BAD_MESSAGE and the adapter goes on."""

from __future__ import annotations

import json
import subprocess
import sys

from conformance.protocol import encode, execute_request, hello_request
from conformance.corpus.schema import schema_problems
from conformance.corpus.vector import Case, input_of
from test_trace_eip3155 import ADD, COST, PROGRAM, PUSH1, STOP, check_shape


def converse(*requests):
    proc = subprocess.run([sys.executable, "-m", "conformance.adapter"],
                          input=b"".join(encode(r) for r in requests), capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def test_an_eip3155_trace_request_gets_the_hand_computed_lines():
    vector_input = input_of(Case(id="t", description="t", code=PROGRAM, limits={"compute": 100}))
    request = {**execute_request("r1", vector_input, trace=True), "trace_format": "eip3155"}
    assert schema_problems("runner-message", request, True) == []
    native = execute_request("r2", vector_input, trace=True)
    bad = {**execute_request("r3", vector_input, trace=True), "trace_format": "geth"}
    assert schema_problems("runner-message", bad, True) != []
    hello, eip, nat, refused, after = converse(hello_request("1.0"), request, native, bad,
                                               {**request, "id": "r4"})
    assert "trace_eip3155" in hello["capabilities"] and "trace" in hello["capabilities"]
    step = {"memSize": 0, "depth": 1, "refund": 0}
    check_shape(eip["trace"])
    assert eip["trace"] == [
        {**step, "pc": 0, "op": PUSH1, "opName": "PUSH1", "gas": hex(100), "gasCost": "0x1", "stack": []},
        {**step, "pc": 2, "op": PUSH1, "opName": "PUSH1", "gas": hex(99), "gasCost": "0x1", "stack": ["0x3"]},
        {**step, "pc": 4, "op": ADD, "opName": "ADD", "gas": hex(98), "gasCost": "0x1", "stack": ["0x3", "0x4"]},
        {**step, "pc": 5, "op": STOP, "opName": "STOP", "gas": hex(97), "gasCost": "0x0", "stack": ["0x7"]},
        {"output": "", "gasUsed": hex(COST["PUSH1"] * 2 + COST["ADD"]), "pass": True},
    ]
    # The result itself does not depend on the trace's form; the default stays native.
    assert eip["result"] == nat["result"] and eip["result"]["usage"]["compute"] == 3
    assert [s.get("computeUsed") for s in nat["trace"]] == [0, 1, 2, 3, 3]
    assert refused["type"] == "error" and refused["code"] == "BAD_MESSAGE" and refused["id"] == "r3"
    assert after["id"] == "r4" and after["trace"] == eip["trace"]
