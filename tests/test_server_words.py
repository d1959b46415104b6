"""Output words over HTTP (issue 39, item 6): the API's call answer and its results carry
``outputWords`` as ``rtwo-vm call --json`` does (one function for both,
rtwo_vm/arguments/recorded.py). Words are 64-bit little-endian (chapter 2); the expected
words below are computed by hand from the programs."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("httpx")

from fastapi.testclient import TestClient  # noqa: E402

from reference_vm import assemble  # noqa: E402
from server_support import AUTH, TOKEN, VERSION  # noqa: E402
from rtwo_vm.cli import main  # noqa: E402
from rtwo_vm.runtime import Runtime  # noqa: E402

API = "/api/v1"

# memory[0..8] := 7, memory[8..16] := 0x2a (MSTORE: offset below value), return 16 bytes:
# 07 00 00 00 00 00 00 00 2a 00 00 00 00 00 00 00 -> the words 7 and 0x2a.
TWO_WORDS = "push 0\npush 7\nmstore\npush 8\npush 0x2a\nmstore\npush 0\npush 16\nreturn"
# memory[0..8] := 0x0102, revert with 8 bytes: 02 01 00 00 00 00 00 00 -> the word 0x102.
REVERTS = "push 0\npush 0x0102\nmstore\npush 0\npush 8\nrevert"
# return 3 bytes of memory: 00 00 00, not a whole word -> no words.
THREE = "push 0\npush 3\nreturn"


@pytest.fixture
def client(tmp_path):
    from rtwo_vm.server import create_app
    db = tmp_path / "rtwo-vm.db"
    with Runtime(db) as rt:
        rt.deploy(assemble(TWO_WORDS, VERSION), 0x100)
        rt.deploy(assemble(REVERTS, VERSION), 0x200)
        rt.deploy(assemble(THREE, VERSION), 0x300)
    with TestClient(create_app(db, token=TOKEN), base_url="http://localhost") as c:
        yield c, db


def _call(c, to: str) -> dict:
    answer = c.post(f"{API}/calls", json={"to": to, "caller": "0x1"}, headers=AUTH)
    assert answer.status_code == 201, answer.text
    return answer.json()


def test_the_call_answer_and_the_results_carry_output_words(client):
    c, _ = client
    doc = _call(c, "0x100")
    assert doc["result"]["output"] == "0x" + "0700000000000000" + "2a00000000000000"
    assert doc["outputWords"] == ["0x7", "0x2a"]
    reverted = _call(c, "0x200")
    assert reverted["result"]["executionStatus"] == "reverted"
    assert reverted["result"]["output"] == "0x0201000000000000"
    assert reverted["outputWords"] == ["0x102"]
    three = _call(c, "0x300")
    assert three["result"]["output"] == "0x000000" and "outputWords" not in three

    by_id = {d["result"]["resultId"]: d for d in (doc, reverted, three)}
    expected = {doc["result"]["resultId"]: ["0x7", "0x2a"],
                reverted["result"]["resultId"]: ["0x102"], three["result"]["resultId"]: None}
    for result_id, words in expected.items():
        one = c.get(f"{API}/results/{result_id}").json()
        assert one["outputWords"] == words
        assert one["output"] == by_id[result_id]["result"]["output"]
        # by its context too, as rtwo-vm results show takes
        context_id = by_id[result_id]["context"]["contextId"]
        assert c.get(f"{API}/results/{context_id}").json()["outputWords"] == words
    listed = c.get(f"{API}/results").json()["items"]
    assert {r["resultId"]: r["outputWords"] for r in listed} == expected


def test_the_api_and_the_cli_show_the_same_words(client, capsys):
    c, db = client
    doc = _call(c, "0x100")
    assert main(["call", "0x100", "--caller", "0x1", "--db", str(db), "--json"]) == 0
    cli = json.loads(capsys.readouterr().out)
    assert cli["outputWords"] == doc["outputWords"] == ["0x7", "0x2a"]
