"""The runtime CLI commands against a real SQLite file; bad input changes nothing."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

import spec
from rtwo_vm.cli import main
from rtwo_vm.runtime import CallRequest
from test_runtime_support import EXAMPLES, VERSION, dump

COUNTER = str(EXAMPLES / "counter.rasm")


class Cli:
    def __init__(self, db, capsys):
        self.db, self.capsys = str(db), capsys

    def __call__(self, *args):
        code = main([*args, "--db", self.db])
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, *args):
        code, out, err = self(*args, "--json")
        assert code in (0, 1), err
        return json.loads(out)


@pytest.fixture
def cli(tmp_path, capsys):
    return Cli(tmp_path / "cli.db", capsys)


@pytest.fixture
def deployed(cli):
    for name, address in (("proxy", "0x100"), ("counter", "0x101"), ("reverter", "0x102")):
        code, _, err = cli("deploy", str(EXAMPLES / f"{name}.rasm"), "--address", address)
        assert code == 0, err
    return cli


def test_read_commands_refuse_a_missing_database_and_create_nothing(cli, tmp_path):
    code, out, err = cli("contexts", "list")
    assert code == 2 and err.startswith("rtwo-vm: error: no database at") and err.count("\n") == 1
    assert not (tmp_path / "cli.db").exists()


def test_deploy_call_and_inspect_every_record(deployed):
    cli = deployed
    code, out, _ = cli("call", "0x100")
    assert code == 0 and "committed > finalized" in out and "rolled_back" in out  # the reverter child
    rec = cli.json("call", "0x101", "--compute", "10")
    assert rec["result"]["executionStatus"] == "exhausted" and rec["violations"][0]["violationType"] == "compute_limit"
    assert main(["call", "0x101", "--compute", "10", "--db", cli.db]) == 1
    cli.capsys.readouterr()
    cid = rec["context"]["contextId"]
    shown = cli.json("contexts", "show", cid)
    assert [h["stage"] for h in shown["history"]][-2:] == ["rolled_back", "finalized"]
    assert shown["accounting"]["fee"] == rec["accounting"]["fee"]
    assert cli.json("sandboxes", "show", cid)["status"] == "halted"
    assert cli.json("accounting", "show", cid)["computeUnits"] == rec["accounting"]["computeUnits"]
    assert cli.json("results", "show", rec["result"]["resultId"])["digest"] == rec["result"]["digest"]
    vid = rec["violations"][0]["violationId"]
    assert cli.json("violations", "show", vid)["code"] == "COMPUTE_LIMIT_EXCEEDED"
    assert cli.json("violations", "ack", vid)["status"] == "acknowledged"
    listed = cli.json("violations", "list", "--type", "compute_limit")
    assert vid in [v["violationId"] for v in listed] and len(listed) == 2  # two such calls
    entries = cli.json("contexts", "list", "--entry-only")
    assert {c["contractId"] for c in entries} == {"0x100", "0x101"}
    assert len(cli.json("contexts", "list")) == len(entries) + 2  # the proxy's two callees
    totals = cli.json("accounting", "totals")
    assert totals["contexts"] == 3  # the proxy call and the two exhausted ones
    assert cli.json("contracts", "show", "0x101")["storage"] == {"0x0": "0x1"}
    code, out, _ = cli("results", "list")
    assert code == 0 and "exhausted" in out and "COMPUTE_LIMIT_EXCEEDED" in out
    events = cli.json("events", "list", "--context", cid)
    assert [e["type"] for e in events][-2:] == ["result.recorded", "violation.acknowledged"]
    assert cli.json("events", "show", str(events[0]["eventId"]))["payload"]["stage"] == "requested"


def test_vm_registry_commands(cli):
    code, out, err = cli("vm", "register", "second", "--activate")
    assert code == 0, err
    assert "self-check: 103/103 instructions of spec 1.1" in out  # 1.0's 95 and 8 new
    vm = json.loads(out[out.index("{"):])
    assert vm["status"] == "active" and vm["runtimeCompatibility"] == ["1.1"]
    assert cli.json("vm", "retire", vm["vmId"])["status"] == "retired"
    assert [v["status"] for v in cli.json("vm", "list")] == ["retired"]
    code, _, err = cli("vm", "activate", vm["vmId"])
    assert code == 2 and "retired" in err
    code, out, err = cli("vm", "register", "third", "--activate", "--json")  # stdout is JSON only
    assert code == 0 and json.loads(out)["status"] == "active" and err.startswith("self-check: 103/103")


def test_policy_commands_and_calls_under_a_policy(deployed):
    cli = deployed
    policy = cli.json("policy", "create", "--forbid", "arithmetic", "--allow-time")
    assert policy["forbiddenOperations"] == ["arithmetic"] and policy["timeAccessPolicy"] == "allowed"
    assert cli.json("policy", "create", "--allow-time", "--forbid", "arithmetic") == policy
    check = cli.json("policy", "check", policy["policyId"], COUNTER)
    assert check["refusals"][0]["error"] == "INSTRUCTION_FORBIDDEN" and not check["binds"]
    rec = cli.json("call", "0x101", "--policy", policy["policyId"])
    assert rec["result"]["error"] == "INSTRUCTION_FORBIDDEN"
    assert rec["context"]["resourcePolicyId"] == policy["policyId"]
    assert cli.json("policy", "retire", policy["policyId"])["status"] == "retired"
    code, _, err = cli("call", "0x101", "--policy", policy["policyId"])
    assert code == 2 and "retired" in err


def test_events_sinks_and_delivery(deployed, tmp_path):
    cli = deployed
    out_file = tmp_path / "e.jsonl"
    code, _, err = cli("events", "sink-add", "jsonl", str(out_file))
    assert code == 0, err
    code, out, _ = cli("call", "0x101", "--deliver")
    assert code == 0
    count = len(cli.json("events", "list"))
    assert len(out_file.read_text().splitlines()) == count
    sinks = cli.json("events", "sinks")
    assert list(sinks["undelivered"].values()) == [0]
    code, out, _ = cli("events", "deliver", "--jsonl", str(tmp_path / "adhoc.jsonl"))
    assert code == 0 and f"{count} delivered" in out


def test_instructions_and_readiness(deployed):
    cli = deployed
    add = cli.json("instructions", "show", "add")
    assert add["implemented"] is True and add["instructionType"] == "arithmetic"
    assert len(cli.json("instructions", "list")) == 103   # every version's: 1.0's 95 and 1.1's 8 new
    code, out, err = cli("readiness")
    # No proof report in this test's directory: proof_results is not_available, nothing
    # failed, so readiness is partial and the exit status 0 (1 only for not_ready).
    assert "readiness: partial" in out and code == 0, (out, err)
    for check in ("instruction_coverage", "examples", "database", "smt_semantics", "conformance_vectors"):
        assert check in out
    assert "95/95 instructions of spec 1.0" in out and "103/103 instructions of spec 1.1" in out and "readiness:" in out
    report = cli.json("readiness", "--only", "database", "--only", "lifecycle")
    assert [c["name"] for c in report["checks"]] == ["lifecycle", "database"]
    assert report["readiness"] == "ready"


BAD = [
    ("call", "0x101", "--policy", "pol_nope"),
    ("call", "0x101", "--vm", "vm_nope"),
    ("call", "0x101", "--compute", "abc"),
    ("call", "0x101", "--compute", "1.5"),
    ("call", "0x101", "--memory-pages", "-1"),
    ("call", "0x101", "--isolation", "airtight"),
    ("call", "0x101", "--isolation", "pure", "--storage-access", "read_write"),
    ("call", "0x101", "--seed", "00"),
    ("call", "0x101", "--calldata", "0xzz"),
    ("call", "nonsense"),
    ("deploy", "missing.rasm"),
    ("deploy", "{bad_asm}"),
    ("deploy", "{junk}"),
    ("deploy", COUNTER, "--address", "0x101"),
    ("deploy", COUNTER, "--storage", "1"),
    ("policy", "create", "--forbid", "FLY"),
    ("policy", "create", "--forbid-calls", "--storage-access", "read_only"),
    ("policy", "list", "--forbid-calls"),
    ("violations", "list", "--type", "bogus"),
    ("events", "list", "--type", "bogus"),
    ("policy", "show", "pol_nope"),
    ("policy", "retire", "pol_nope"),
    ("policy", "check", "pol_nope", COUNTER),
    ("contexts", "show", "ctx_nope"),
    ("contexts", "list", "--limit", "0"),
    ("contexts", "list", "--status", "bogus"),
    ("contexts", "list", "--result", "bogus"),
    ("results", "show", "nope"),
    ("sandboxes", "show", "nope"),
    ("accounting", "show", "nope"),
    ("violations", "show", "nope"),
    ("violations", "ack", "nope"),
    ("events", "show", "999999"),
    ("events", "show", "abc"),
    ("events", "sink-add", "carrier", "x"),
    ("events", "sink-add", "webhook", "ftp://x"),
    ("events", "sink-remove", "nope"),
    ("events", "deliver", "--webhook", "gopher://x"),
    ("vm", "show", "vm_nope"),
    ("vm", "activate", "vm_nope"),
    ("vm", "register"),
    ("instructions", "show", "FLY"),
    ("readiness", "--only", "nonsense"),
    ("contexts", "explode"),
]


def test_bad_input_gives_one_line_exit_2_and_changes_nothing(deployed, tmp_path):
    cli = deployed
    (tmp_path / "bad.rasm").write_text("push\n")
    (tmp_path / "junk.bin").write_bytes(b"\x00\x01\x02\x03")
    assert cli("call", "0x100")[0] == 0  # some records to protect
    before = dump(cli.db)
    for args in BAD:
        args = [a.format(bad_asm=tmp_path / "bad.rasm", junk=tmp_path / "junk.bin") for a in args]
        code, out, err = cli(*args)
        assert code == 2, (args, out, err)
        assert err.startswith("rtwo-vm: error: ") and err.count("\n") == 1, (args, err)
        assert dump(cli.db) == before, args


def test_the_console_script_uses_rtwo_vm_db_from_the_environment(tmp_path):
    env = {**os.environ, "RTWO_VM_DB": str(tmp_path / "env.db")}
    run = lambda *a: subprocess.run([sys.executable, "-m", "rtwo_vm.cli", *a], capture_output=True,  # noqa: E731
                                    text=True, cwd=tmp_path, env=env, timeout=60)
    assert run("deploy", COUNTER).returncode == 0
    done = run("call", "0x100", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["executionStatus"] == "success"
    assert (tmp_path / "env.db").exists() and not (tmp_path / "rtwo-vm.db").exists()


def test_contexts_list_filters_on_how_each_context_ended(deployed):
    cli = deployed
    assert cli("call", "0x100")[0] == 0  # the proxy commits; its callees: 0x101 commits, 0x102 reverts
    assert cli("call", "0x101", "--compute", "10")[0] == 1
    ended = lambda *a: {(c["contractId"], c["depth"]) for c in cli.json("contexts", "list", *a)}  # noqa: E731
    assert ended("--status", "rolled_back") == {("0x102", 2), ("0x101", 1)}
    assert ended("--status", "committed") == {("0x100", 1), ("0x101", 2)}
    assert len(ended("--status", "finalized")) == 4 and ended("--status", "executing") == ended()
    assert ended("--result", "exhausted") == {("0x101", 1)}
    assert ended("--result", "reverted", "--entry-only") == set()
    assert ended("--status", "rolled_back", "--result", "reverted") == {("0x102", 2)}
    code, out, _ = cli("contexts", "list", "--entry-only")  # the table shows how each ended
    assert re.search(r"0x101 +1 +rolled_back +exhausted COMPUTE_LIMIT_EXCEEDED ", out)
    assert re.search(r"0x100 +1 +committed +success ", out) and "finalized" not in out
    for flag in ("--status", "--result"):
        code, _, err = cli("contexts", "list", flag, "bogus")
        assert code == 2 and err.count("\n") == 1 and "'bogus'" in err, err


def test_call_deliver_reports_each_sink_and_a_failed_delivery_exits_3(deployed, tmp_path):
    cli = deployed
    good, dead = tmp_path / "good.jsonl", tmp_path / "a-directory"
    dead.mkdir()
    assert cli("events", "sink-add", "jsonl", str(good))[0] == 0
    code, out, _ = cli("call", "0x101", "--deliver")
    assert code == 0 and re.search(rf"delivery to jsonl:{re.escape(str(good))}: \d+ delivered, 0 failed", out)
    assert cli("events", "sink-add", "jsonl", str(dead), "--from-now")[0] == 0
    code, out, _ = cli("call", "0x101", "--deliver")
    assert code == 3, out
    assert f"delivery to jsonl:{dead}: 0 delivered, 1 failed, 0 dead, 11 left; cannot open {dead}: Is a directory\n" in out
    assert f"delivery to jsonl:{good}: 11 delivered, 0 failed, 0 dead, 0 left\n" in out  # the good sink still got everything
    code, out, _ = cli("call", "0x101", "--compute", "10", "--deliver", "--json")
    doc = json.loads(out)
    assert code == 3 and doc["result"]["executionStatus"] == "exhausted"
    assert doc["delivery"][f"jsonl:{dead}"]["failed"] >= 1 and doc["delivery"][f"jsonl:{dead}"]["errors"]
    assert doc["delivery"][f"jsonl:{good}"]["failed"] == 0
    code, out, _ = cli("events", "deliver")
    assert code == 1 and f"cannot open {dead}: Is a directory" in out


def test_deploy_without_an_address_takes_the_lowest_free_one_from_0x100(cli):
    for address in ("0x5", "0x101", "0x102"):
        assert cli("deploy", COUNTER, "--address", address)[0] == 0
    assert cli("deploy", COUNTER)[1].startswith("deployed 0x100:")
    assert cli("deploy", COUNTER)[1].startswith("deployed 0x103:")


def test_an_unknown_contract_is_recorded_as_a_rejected_context_like_the_api_does(deployed):
    cli = deployed
    code, out, err = cli("call", "0x999")
    assert code == 1 and "-> 0x999 (depth 1): rejected CONTRACT_NOT_FOUND" in out, err
    assert "stages: requested > rolled_back > finalized" in out
    (rejected,) = cli.json("contexts", "list", "--result", "rejected")
    assert rejected["contractId"] == "0x999" and rejected["status"] == "finalized"


def test_call_defaults_are_the_api_defaults(deployed):
    rec = deployed.json("call", "0x101")
    assert rec["context"]["callerReference"] == hex(CallRequest(to=0x101).caller) == "0x0"
    # The transaction reference hashes every request field: equal means every default agrees.
    assert rec["context"]["transactionReference"] == CallRequest(to=0x101).reference()


def test_instructions_list_shows_opcodes_in_hex(cli):
    code, out, _ = cli("instructions", "list")
    assert code == 0
    for ins in (spec.load(VERSION).by_mnemonic["STOP"], spec.load(VERSION).by_mnemonic["ADD"]):
        assert re.search(rf"^0x{ins.opcode:02x}\s+{ins.mnemonic}\s", out, re.M), ins.mnemonic


def test_readiness_reads_the_proof_report_named_or_in_the_data_directory(cli, tmp_path, monkeypatch):
    from test_runtime_readiness import complete_report
    doc = complete_report()
    named = tmp_path / "elsewhere.json"
    named.write_text(json.dumps(doc))
    report = cli.json("readiness", "--only", "proof_results", "--proofs-report", str(named))
    assert report["checks"][0]["status"] == "passed" and str(named) in report["checks"][0]["evidence"]
    missing = cli.json("readiness", "--only", "proof_results", "--proofs-report", str(tmp_path / "no.json"))
    assert missing["checks"][0]["status"] == "not_available" and "no.json" in missing["checks"][0]["evidence"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "build").mkdir()   # the working directory's build/ is no longer read
    (tmp_path / "build" / "proofs-report.json").write_text(json.dumps(doc))
    data = tmp_path / "data"
    check = cli.json("readiness", "--only", "proof_results", "--data-dir", str(data))
    assert check["checks"][0]["status"] == "not_available"
    assert check["evidenceFrom"] == {"dataDir": str(data), "proofsReport": str(data / "proofs-report.json")}
    data.mkdir()
    (data / "proofs-report.json").write_text(json.dumps(doc))
    check = cli.json("readiness", "--only", "proof_results", "--data-dir", str(data))["checks"][0]
    assert check["status"] == "passed" and check["evidence"].startswith(
        f"{len(doc['results'])} results in {data / 'proofs-report.json'}")
