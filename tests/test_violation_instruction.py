"""A violation raised at policy binding names the instruction refused (issue 39 item 2, spec
10.5 {#10.5-refused-instruction}): in the violation record (errorPc = its offset,
instruction = its mnemonic), the CLI (``call``, ``violations list``, ``run``), the API and the
dashboard; the canonical result of chapter 7.5 stays as it was (error_pc null).

Offsets are hand-computed from the assembly: ``push N`` is PUSH1 N (2 bytes, instructions.toml
immediate_size 1), every other instruction used here 1 byte. In examples/counter.rasm
(push 0, sload, push 1, add) ADD is at 0+2+1+2 = 5."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import spec
from reference_vm import Contract, Limits, Message, Policy, WorldState, assemble, execute
from reference_vm.errors import PolicyViolation
from reference_vm.policy import bind, first_refusal
from reference_vm.program import load_program
from reference_vm.rules import rules
from rtwo_vm.cli import main
from rtwo_vm.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
COUNTER = ROOT / "examples" / "counter.rasm"
V = spec.latest()
CALLER = "push 0x103\npush 100000\npush 0\npush 0\ncall\npop\nstop"   # no ADD; calls 0x103
CALLEE = "push 1\npush 2\nadd\npop\nstop"                               # ADD at 2+2 = 4


def _code(text: str) -> bytes:
    return assemble(text, V)


def test_binding_names_the_first_refused_instruction_and_the_result_does_not():
    table = rules(V)
    code = load_program(_code(COUNTER.read_text()), table).code
    found = first_refusal(code, Policy(forbidden_operations=("ADD",)), table.spec)
    assert (found.offset, found.mnemonic, found.error) == (5, "ADD", "INSTRUCTION_FORBIDDEN")
    # the first in offset order: SLOAD (offset 2) before ADD, by its type
    found = first_refusal(code, Policy(forbidden_operations=("ADD", "storage")), table.spec)
    assert (found.offset, found.mnemonic) == (2, "SLOAD")
    assert first_refusal(code, Policy(), table.spec) is None
    with pytest.raises(PolicyViolation) as err:
        bind(code, Policy(forbidden_operations=("ADD",)), table.spec)
    assert err.value.refused.offset == 5 and "ADD at offset 5" in str(err.value)
    result = execute(WorldState({0x100: Contract(_code(COUNTER.read_text()))}),
                     Message(0x100, 0, b""), policy=Policy(forbidden_operations=("ADD",)),
                     version=V)
    assert result.to_json()["error_pc"] is None and result.error == "INSTRUCTION_FORBIDDEN"


def test_entry_and_callee_violations_record_the_instruction(tmp_path):
    with Runtime(tmp_path / "r.db") as rt:
        rt.deploy(_code(COUNTER.read_text()), 0x100)
        rt.deploy(_code(CALLER), 0x102)
        rt.deploy(_code(CALLEE), 0x103)
        policy = rt.policies.create(forbidden_operations=("ADD",)).policy_id
        entry = rt.call(to=0x100, policy_id=policy)
        (v,) = entry.violations
        assert (v.error_pc, v.instruction, v.code) == (5, "ADD", "INSTRUCTION_FORBIDDEN")
        assert entry.result.error_pc is None and entry.result.compared["error_pc"] is None
        nested = rt.call(to=0x102, policy_id=policy)
        assert nested.result.execution_status == "success" and not nested.violations
        (child,) = nested.children
        (cv,) = child.violations
        assert (cv.error_pc, cv.instruction) == (4, "ADD")
        # a violation that is not a binding refusal names no instruction
        limited = rt.call(to=0x100, limits=Limits(compute=3))
        assert limited.violations[0].instruction is None
        # read back from the database, as list and show do
        stored = rt.violations.get_entry(v.violation_id)
        assert (stored.error_pc, stored.instruction) == (5, "ADD")


def _cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_call_violations_and_run_show_the_instruction(tmp_path, capsys):
    db = str(tmp_path / "c.db")
    assert _cli(capsys, "deploy", str(COUNTER), "--address", "0x100", "--db", db)[0] == 0
    _, out, _ = _cli(capsys, "policy", "create", "--forbid", "ADD", "--db", db)
    policy = json.loads(out)["policyId"]
    code, out, _ = _cli(capsys, "call", "0x100", "--policy", policy, "--db", db)
    assert code == 1
    assert "violation INSTRUCTION_FORBIDDEN (ADD at offset 5)" in out
    assert "execution_refused, refused ADD at offset 5" in out
    _, out, _ = _cli(capsys, "violations", "list", "--db", db, "--json")
    doc = json.loads(out)
    items = doc["items"] if isinstance(doc, dict) else doc
    assert [(i["errorPc"], i["instruction"]) for i in items] == [(5, "ADD")]
    code, out, _ = _cli(capsys, "run", str(COUNTER), "--forbid", "ADD")
    assert code == 1 and json.loads(out)["refused_instruction"] == {"mnemonic": "ADD", "offset": 5}
    _, canonical, _ = _cli(capsys, "run", str(COUNTER), "--forbid", "ADD", "--canonical")
    assert "refused" not in canonical and '"error_pc":null' in canonical


def test_api_and_dashboard_show_the_instruction(tmp_path):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    from fastapi.testclient import TestClient
    from rtwo_vm.server import create_app
    db = tmp_path / "d.db"
    with Runtime(db) as rt:
        rt.deploy(_code(COUNTER.read_text()), 0x100)
        policy = rt.policies.create(forbidden_operations=("ADD",)).policy_id
        rec = rt.call(to=0x100, policy_id=policy)
    ctx, res = rec.context.context_id, rec.result.result_id
    with TestClient(create_app(db), base_url="http://localhost") as c:
        shown = c.get(f"/api/v1/violations/{rec.violations[0].violation_id}").json()
        assert (shown["errorPc"], shown["instruction"]) == (5, "ADD")
        context_page = c.get(f"/contexts/{ctx}").text
        assert "<th>instruction</th>" in context_page and "<td>ADD</td><td>recorded</td>" in context_page
        assert "<td>5</td><td>ADD</td>" in c.get("/violations").text
        assert ">ADD at offset 5</code>" in c.get(f"/results/{res}").text
