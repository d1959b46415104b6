"""The spec data is schema-valid and consistent, and the interpreter agrees with it exactly."""

from __future__ import annotations

import re

import pytest

import spec
from reference_vm.instructions import MODULES, table
from reference_vm.rules import rules
from spec.loader import validate_against_schemas

VERSIONS = spec.names()


@pytest.fixture(params=VERSIONS)
def version(request):
    return request.param


@pytest.fixture
def TABLE(version):   # noqa: N802 - the version's table, under the name the tests always used
    return spec.load(version)


def test_every_data_file_matches_its_schema():
    assert validate_against_schemas() == []


def test_schemas_reject_unknown_and_missing_fields():
    import jsonschema

    row = dict(spec.raw("instructions", "1.0")["instruction"][0])
    doc = {"spec_version": "1.0", "instruction": [dict(row, surprise=1)]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, spec.schema("instructions"))
    del row["cost"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"spec_version": "1.0", "instruction": [row]}, spec.schema("instructions"))


def test_opcodes_and_mnemonics_are_unique(TABLE, version):
    assert len({i.opcode for i in TABLE.instructions}) == len(TABLE.instructions)
    assert len({i.mnemonic for i in TABLE.instructions}) == len(TABLE.instructions)


def test_every_opcode_has_exactly_one_handler_of_its_type(TABLE, version):
    handlers = table(rules(version, 64))
    assert set(handlers) == {i.opcode for i in TABLE.instructions}
    for type_name, module in MODULES.items():
        names = set(module.handlers(rules(version, 64)))
        # a module may hold handlers of another version's rows of its type (MULHU in
        # arithmetic under 1.0); table() takes exactly this version's
        ours = {i.mnemonic for i in TABLE.instructions if i.type == type_name}
        any_version = {i.mnemonic for v in VERSIONS for i in spec.load(v).instructions
                       if i.type == type_name}
        assert ours <= names <= any_version, type_name


def test_handler_docstrings_state_the_table_row(TABLE, version):
    """Each handler's docstring opens with the row's stack signature and meaning, and names
    its cost rule if it has one: the spec's own words, checked rather than copied."""
    handlers = table(rules(version, 64))
    for ins in TABLE.instructions:
        doc = handlers[ins.opcode].__doc__ or ""
        assert doc.startswith(f"{ins.signature} : {ins.meaning}"), ins.mnemonic
        if ins.cost_rule:
            assert ins.cost_rule in doc, (ins.mnemonic, ins.cost_rule)


def test_handler_stack_effects_match_the_table(TABLE, version):
    """Run every handler on a full-enough stack and compare the height change to the table."""
    from reference_vm import Contract, Message, Policy, WorldState, execute
    from reference_vm.container import build

    policy = Policy(time_access="allowed", randomness="seeded")
    for ins in TABLE.instructions:
        if ins.flow != "next":
            continue
        # Pushes of small operands (offsets and lengths stay tiny), the instruction, then
        # MSIZE-free bookkeeping: store the stack height via a sentinel count.
        prefix = bytes([TABLE.by_mnemonic["PUSH1"].opcode, 1]) * ins.inputs
        imm = bytes(ins.immediate_size)
        body = prefix + bytes([ins.opcode]) + imm + bytes([TABLE.by_mnemonic["STOP"].opcode])
        counter = _HeightRecorder()
        state = WorldState({0x100: Contract(build(body, b"", TABLE.number)),
                            1: Contract(build(b"\x00", b"", TABLE.number))})
        result = execute(state, Message(0x100, 1), policy=policy, tracer=counter, version=version)
        assert result.status == "success", (ins.mnemonic, result)
        assert counter.heights[-1] - counter.heights[-2] == ins.outputs - ins.inputs, ins.mnemonic


class _HeightRecorder:
    def __init__(self):
        self.heights = []

    def step(self, frame, decoded):
        if frame.depth == 1:
            self.heights.append(len(frame.stack))


def test_spec_sections_referenced_by_data_exist_in_the_chapters(TABLE, version):
    chapters = "\n".join(spec.chapters(version).values())
    headings = set(re.findall(r"^#+\s+(\d+(?:\.\d+)*)\s", chapters, flags=re.M))
    referenced = {i.section for i in TABLE.instructions} | {e.section for e in TABLE.errors.values()}
    missing = sorted(referenced - headings)
    assert not missing, f"sections referenced but not written: {missing}"


def test_lifecycle_has_ten_stages_in_order(TABLE, version):
    stages = TABLE.lifecycle["stage"]
    assert sorted({s["order"] for s in stages}) == list(range(1, 11))
    assert [s["name"] for s in stages if s["order"] == 9] == ["committed", "rolled_back"]


def test_every_gate_names_a_policy_field_and_an_error(TABLE, version):
    gated = [i for i in TABLE.instructions if i.determinism == "gated"]
    assert gated
    for ins in gated:
        gate = TABLE.policy["gate"][ins.gate]
        assert gate["error"] in TABLE.errors
        assert TABLE.errors[gate["error"]].kind == "violation"
