"""The upgrade check (issue 36, part 2): before a deployed contract is moved to a newer spec
version, the runtime asks whether it gives the same result under both versions' rules —
as a service (Runtime.upgrade_check), a command (``rtwo-vm upgrade-check``) and an HTTP
action (``POST /api/v1/contracts/{address}/upgrade-check``). It reads only, its answer
depends on budgets and never on the clock, and bad input is refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import spec
from reference_vm.assembler import assemble
from rtwo_vm.cli import main
from rtwo_vm.runtime import InvalidInput, Runtime, UnknownRecord
from rtwo_vm.runtime.runtime import counting_ids
from server_support import AUTH, serving
from test_equivalence_versions import HASH_WORD   # the one hashing contract of both files

ROOT = Path(__file__).resolve().parents[1]
EX = ROOT / "examples"
API = "/api/v1"
BEHAVIOUR = ["status", "error", "error_pc", "output", "storage", "events"]
HASH_BLOCK_SAVED = (spec.raw("schedule", "1.0")["hash"]["block_cost"]
                    - spec.raw("schedule", "1.1")["hash"]["block_cost"])


def deploy_all(rt: Runtime) -> None:
    """Under 1.0: SHA-256 of a word at 0x100, the signed max at 0x200 (a branch on call
    data), the proxy at 0x300 calling the counter (0x101) and the reverter (0x102)."""
    for address, source in ((0x100, HASH_WORD), (0x200, (EX / "max.rasm").read_text()),
                            (0x300, (EX / "proxy.rasm").read_text()),
                            (0x101, (EX / "counter.rasm").read_text()),
                            (0x102, (EX / "reverter.rasm").read_text())):
        rt.deploy(assemble(source, "1.0"), address, spec_version="1.0")


@pytest.fixture
def rt():
    with Runtime(":memory:", ids=counting_ids()) as runtime:
        deploy_all(runtime)
        yield runtime


def test_the_service_answers_per_contract_and_records_nothing(rt):
    root = rt.state_root
    hashed = rt.upgrade_check(0x100, "1.1").to_json()
    assert (hashed["answer"], hashed["differing"]) == ("differs", ["usage", "fee"])
    old, new = hashed["results"]["1.0"], hashed["results"]["1.1"]
    assert old["usage"]["compute"] - new["usage"]["compute"] == HASH_BLOCK_SAVED
    assert old["output"] == new["output"]
    assert rt.upgrade_check(0x100, "1.1", compare=BEHAVIOUR).answer == "proved-equal"
    for address in (0x200, 0x300):               # no SHA256: equal, usage and calls included
        doc = rt.upgrade_check(address).to_json()
        assert (doc["answer"], doc["fromVersion"], doc["toVersion"]) == \
            ("proved-equal", "1.0", "1.1"), doc["reasons"]
        assert doc["reasons"] == [] and "usage" in doc["compared"]
    assert rt.state_root == root and rt.contexts.page(limit=5).items == []
    assert rt.contract(0x100)["specVersion"] == "1.0"   # reported, not moved


def test_the_answer_follows_the_budgets_not_the_clock(rt):
    from rtwo_vm.runtime.upgrade import Budget
    small = Budget(max_paths=1)
    first = rt.upgrade_check(0x200, budget=small).to_json()
    assert first["answer"] == "unknown" and any("max-paths 1" in r for r in first["reasons"])
    assert rt.upgrade_check(0x200, budget=small).to_json() == first


@pytest.mark.parametrize("call, error, fragment", [
    (lambda rt: rt.upgrade_check(0x999), UnknownRecord, "no contract at 0x999"),
    (lambda rt: rt.upgrade_check(0x100, "1.0"), InvalidInput, "deployed under 1.0 already"),
    (lambda rt: rt.upgrade_check(0x100, "9.9"), InvalidInput, "unknown spec version"),
    (lambda rt: rt.upgrade_check(0x100, compare=["colour"]), InvalidInput, "not a field"),
])
def test_bad_requests_are_refused(rt, call, error, fragment):
    with pytest.raises(error, match=fragment):
        call(rt)


def test_budgets_above_the_executors_defaults_are_refused(rt):
    from proofs.symbolic import bounds
    from rtwo_vm.runtime.upgrade import Budget
    with pytest.raises(InvalidInput, match="max_work"):
        rt.upgrade_check(0x100, budget=Budget(max_work=bounds.DEFAULT_MAX_WORK + 1))


def test_the_command(capsys):
    with Runtime("t.db") as runtime:
        deploy_all(runtime)
    for argv, code in ((["0x100"], 1), (["0x100", "--compare", ",".join(BEHAVIOUR)], 0),
                       (["0x200"], 0), (["0x200", "--max-paths", "1"], 4)):
        assert main(["upgrade-check", *argv, "--db", "t.db"]) == code, argv
    out = capsys.readouterr().out
    assert "upgrade check of 0x100 from 1.0 to 1.1: differs" in out
    assert "they differ in: usage, fee" in out
    assert main(["upgrade-check", "0x100", "--db", "t.db", "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["answer"] == "differs"
    for argv in (["0x999"], ["0x100", "--to", "1.0"], ["0x100", "--max-work", "1000000000"]):
        assert main(["upgrade-check", *argv, "--db", "t.db"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, err


def test_the_http_action(tmp_path):
    with serving(tmp_path) as srv, srv.client() as c:
        for address, source in (("0x100", HASH_WORD), ("0x200", (EX / "max.rasm").read_text())):
            assert c.post(f"{API}/contracts", headers=AUTH, json={
                "code": assemble(source, "1.0").hex(), "address": address,
                "specVersion": "1.0"}).status_code == 201
        url = f"{API}/contracts/0x100/upgrade-check"
        assert c.post(url, json={}).json()["error"] == "UNAUTHORIZED"
        answer = c.post(url, headers=AUTH, json={})
        assert answer.status_code == 200, answer.text
        doc = answer.json()
        assert (doc["answer"], doc["differing"]) == ("differs", ["usage", "fee"])
        assert sorted(doc["results"]) == ["1.0", "1.1"]
        assert c.post(url, headers=AUTH, json={"compare": BEHAVIOUR}).json()["answer"] == \
            "proved-equal"
        assert c.post(f"{API}/contracts/0x200/upgrade-check", headers=AUTH,
                      json={"to": "1.1"}).json()["answer"] == "proved-equal"
        for body, status, code in (({"maxWork": 10 ** 12}, 400, "INVALID_REQUEST"),
                                   ({"limits": {"compute": -1}}, 400, "INVALID_LIMITS"),
                                   ({"colour": 1}, 400, "INVALID_REQUEST"),
                                   ({"to": "1.0"}, 400, "INVALID_REQUEST")):
            refused = c.post(url, headers=AUTH, json=body)
            assert (refused.status_code, refused.json()["error"]) == (status, code), body
        missing = c.post(f"{API}/contracts/0x999/upgrade-check", headers=AUTH, json={})
        assert missing.json()["error"] == "UNKNOWN_RECORD"
        paths = c.get("/openapi.json").json()["paths"]
        assert "post" in paths[f"{API}/contracts/{{address}}/upgrade-check"]
