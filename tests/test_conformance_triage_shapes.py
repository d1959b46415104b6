"""Triage from what ran (issue 39, item 1): partial VMs of several shapes, real adapter processes
in Python (tests/conformance_fixtures/shaped_partial_vm.py) and JavaScript (the skeleton of
``conformance init`` with a run_vm that binds forbidden-operation lists), run on a small
filtered corpus. An instruction is known only when a passed vector executed it; unsupported
answers are never called wrong; "what to implement next" is never empty while vectors are
unsupported; the terminal's category table has the unsupported column.

Expectations are computed here from the published vectors with a plain byte scan (as in
tests/test_conformance_triage.py), never from the triage's own code."""

from __future__ import annotations

import json
import shutil
import sys
from collections import Counter
from pathlib import Path

import pytest

import spec
from test_conformance_triage import run_cli

ROOT = Path(__file__).resolve().parent.parent
SHAPED = ROOT / "tests" / "conformance_fixtures" / "shaped_partial_vm.py"
TABLE = spec.load("1.0")
SIZE = {i.opcode: i.size for i in TABLE.instructions}
NAME = {i.opcode: i.mnemonic for i in TABLE.instructions}
FILTERS = ("arithmetic/ADD/*", "policy/ADD/*", "validation/BAD_MAGIC/*")
WRONG_LINE = "their answers are wrong"


def _selected() -> dict[str, dict]:
    vectors = {}
    for name in ("arithmetic", "policy", "validation"):
        for line in (ROOT / "conformance" / "vectors" / "1.0" / f"{name}.jsonl").read_text().splitlines():
            v = json.loads(line)
            if v["id"].startswith(("arithmetic/ADD/", "policy/ADD/", "validation/BAD_MAGIC/")):
                vectors[v["id"]] = v
    return vectors


def _program(code_hex: str) -> set[str]:
    """The mnemonics of a container's code section, read byte by byte with the sizes of
    instructions.toml up to the first undefined byte (none for a container that is not
    RTWO version 1 with consistent sizes)."""
    blob = bytes.fromhex(code_hex[2:])
    if len(blob) < 16 or blob[:8] != b"RTWO\x01\x00\x00\x00":
        return set()
    size = int.from_bytes(blob[8:12], "little")
    if len(blob) != 16 + size + int.from_bytes(blob[12:16], "little"):
        return set()
    code, out, pc = blob[16:16 + size], set(), 0
    while pc < len(code) and code[pc] in SIZE:
        out.add(NAME[code[pc]])
        pc += SIZE[code[pc]]
    return out


def _needs(v: dict) -> set[str]:
    return set().union(*(_program(c["code"]) for c in v["input"]["pre_state"]["contracts"].values()))


SHAPES = {"none": "--validate --policy",
          "push_add": "--implement PUSH*,ADD,STOP,RETURN --validate --policy",
          "unmetered": "--implement PUSH*,ADD,STOP,RETURN,SWAP1,MSTORE,POP,PUSH0 --no-metering"}


def _run(command: str, out: Path) -> tuple[str, dict]:
    filters = [arg for f in FILTERS for arg in ("--filter", f)]
    # --no-blind: the hand counts read the published programs (blinding adds a decoy contract
    # and unreachable code, which a static scan would count). One implementation per run: two
    # in one run are also judged against each other.
    code, text, err = run_cli("conformance", "run", "--no-blind", "--impl", command, "--out", str(out), "--fresh", "0",
                              "--repeat", "0", "--workers", "1", "--show", "0", "--max-bundles", "0", "--spec-version", "1.0",
                              *filters)
    assert code == 1, (text[-3000:], err[-2000:])
    return text, json.loads((out / "1.0" / "report.json").read_text())["implementations"][0]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[str, dict]]:
    """shape -> (the text report, its implementation's entry of report.json)."""
    tmp = tmp_path_factory.mktemp("shapes")
    commands = {shape: f"{sys.executable} {SHAPED} {options}" for shape, options in SHAPES.items()}
    if shutil.which("node") is not None:
        commands["javascript"] = _js_vm(tmp / "vm")
    return {shape: _run(command, tmp / shape) for shape, command in commands.items()}


def _common(text: str, run: dict) -> dict:
    """What every shape shows: no wrong answer claimed, a non-empty list while vectors are
    unsupported, and the category table's unsup column."""
    section = run["what_to_implement_next"]
    unsupported = run["counts"]["unsupported"]
    wrong = run["counts"]["fail"] - unsupported
    assert unsupported > 0 and wrong == 0
    assert section["without_missing"] == 0 and WRONG_LINE not in text
    assert section["instructions"] or section["features"]
    header = next(line for line in text.splitlines() if line.split()[:1] == ["category"])
    assert header.split() == ["category", "pass", "fail", "unsup"]
    rows = {line.split()[0]: [int(n) for n in line.split()[1:]] for line in
            text.split(header, 1)[1].splitlines()[1:4]}
    for group, counts in rows.items():
        assert counts == [run["by_category"][group].get("pass", 0), 0, run["by_category"][group].get("unsupported", 0)]
    assert sum(c[2] for c in rows.values()) == unsupported
    return section


def test_validating_and_binding_vm_without_instructions_knows_none(runs):
    """The issue's VM, without even PUSH and ADD: it passes the invalid containers and the
    refused programs, whose instructions never ran; every failing vector needs its program's
    instructions (on main: PUSH1, ADD ... were "seen" in the refused programs and 7 unsupported
    vectors were called wrong answers)."""
    text, run = runs["none"]
    section = _common(text, run)
    vectors = _selected()
    failed = set(run["failed_ids"])
    assert section["known_instructions"] == []
    blocked = Counter(m for vid in failed for m in _needs(vectors[vid]))
    assert {r["name"]: r["blocked"] for r in section["instructions"]} == dict(blocked)
    assert blocked["ADD"] == len(failed)


def test_vm_with_push_add_stop_return_knows_only_what_ran(runs):
    """PUSH*, ADD, STOP and RETURN with validation and binding (the issue's VM): known
    instructions are among those, and every instruction it lacks is listed."""
    text, run = runs["push_add"]
    section = _common(text, run)
    implemented = {m for m in NAME.values() if m.startswith("PUSH")} | {"ADD", "STOP", "RETURN"}
    assert {"ADD", "PUSH1"} <= set(section["known_instructions"]) <= implemented
    vectors = _selected()
    lacking = Counter(m for vid in run["failed_ids"] for m in _needs(vectors[vid]) - implemented)
    rows = {r["name"]: r["blocked"] for r in section["instructions"]}
    assert {m: rows[m] for m in lacking} == dict(lacking)


def test_vm_without_validation_or_binding_and_unmetered_is_told_what_is_unseen(runs):
    """No validation, no binding, no metering: the invalid containers and policy lists are
    missing features; vectors that need only what ran elsewhere but were unsupported (compute
    metering) get their own row, never the wrong-answer line."""
    text, run = runs["unmetered"]
    section = _common(text, run)
    features = {r["name"]: r["blocked"] for r in section["features"]}
    assert features["invalid code: BAD_MAGIC"] == 3
    assert "policy forbidden_operations list" in features
    from conformance.report.triage import UNSUPPORTED_WITH_KNOWN
    vectors = _selected()
    exhausted = [vid for vid in run["failed_ids"]
                 if vectors[vid]["expected"]["result"]["error"] == "COMPUTE_LIMIT_EXCEEDED"]
    assert exhausted and features.get(UNSUPPORTED_WITH_KNOWN, 0) >= 1
    assert "need only instructions and features shown working in passed vectors" in text


def _js_vm(folder: Path) -> str:
    """The JavaScript skeleton with a run_vm that binds forbidden-operation lists by name
    (and answers UNSUPPORTED_INPUT for everything else), as an implementer would write it."""
    code, out, err = run_cli("conformance", "init", "--lang", "javascript", "--spec-version", "1.0", str(folder))
    assert code == 0, err
    table = json.dumps({i.opcode: [i.mnemonic, i.size] for i in TABLE.instructions})
    vm = f"""const TABLE = {table};
function runVm(input) {{
  const {{ message, policy }} = input;
  const entry = input.pre_state.contracts[message.to];
  if (!entry || policy.allowed_operations !== null || !policy.forbidden_operations.length) {{
    throw new Unsupported("only forbidden-operation lists are implemented");
  }}
  const blob = Buffer.from(entry.code.slice(2), "hex");
  if (blob.length < 16 || blob.toString("latin1", 0, 4) !== "RTWO") throw new Unsupported("container validation");
  const code = blob.subarray(16, 16 + blob.readUInt32LE(8));
  const names = [];
  for (let pc = 0; pc < code.length;) {{
    const ins = TABLE[code[pc]];
    if (!ins) throw new Unsupported("container validation");
    names.push(ins[0]);
    pc += ins[1];
  }}
  if (!names.some((n) => policy.forbidden_operations.includes(n))) throw new Unsupported("execution");
  return {{ status: "violation", error: "INSTRUCTION_FORBIDDEN", error_pc: null, output: "0x", state_changes: [],
    events: [], calls: [], usage: zeroUsage(), fee: 0 }};
}}

"""
    path = folder / "adapter.js"
    source = path.read_text()
    start, end = source.index("// Your VM:"), source.index("// --- the protocol")
    path.write_text(source[:start] + vm + source[end:])
    return f"node {path}"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_javascript_vm_from_the_skeleton_gets_a_correct_list_on_its_first_run(runs):
    """A JavaScript VM that only binds forbidden lists by name passes the refused programs:
    nothing it passed executed an instruction, so every failing vector's instructions are to
    implement (on main its refused programs' instructions counted as seen, and unsupported
    vectors were called wrong answers)."""
    text, run = runs["javascript"]
    section = _common(text, run)
    assert run["counts"]["pass"] >= 1 and section["known_instructions"] == []
    vectors = _selected()
    blocked = Counter(m for vid in run["failed_ids"] for m in _needs(vectors[vid]))
    assert {r["name"]: r["blocked"] for r in section["instructions"]} == dict(blocked)
    assert "policy forbidden_operations list" not in {r["name"] for r in section["features"]}
