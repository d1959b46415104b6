"""The worked examples and rules of the text that no vector can observe, replayed on the
reference (spec/coverage/untestable.toml names this file for them): the container of 3.1.1,
the code sections of 3.2.4, the successful result of 7.5.2 and the canonical encoding's member
order and whitespace, the pre-state 8.4 leaves alone, and where 7.1 says each kind of code is
defined. Expectations are written out from the text by hand."""

from __future__ import annotations

import json
import re

import pytest

import spec
from reference_vm import Contract, Limits, Message, WorldState, assemble, execute
from reference_vm.container import build
from spec import clauses

ENTRY = 0x100


def text(clause_id: str, version: str = "1.0") -> str:
    return " ".join(clauses.by_id(version)[clause_id].text.split())


def test_3_1_1_the_container_of_stop():
    stop_1_0 = "52 54 57 4F 01 00 00 00 01 00 00 00 00 00 00 00 00"
    stop_1_1 = "52 54 57 4F 01 01 00 00 01 00 00 00 00 00 00 00 00"
    assert stop_1_0 in text("3.1.1-example", "1.0") and "(17 bytes)" in text("3.1.1-example", "1.0")
    assert stop_1_1 in text("3.1.1-example", "1.1") and stop_1_0 in text("3.1.1-example", "1.1")
    assert assemble("stop\n", "1.0") == bytes.fromhex(stop_1_0.replace(" ", ""))
    assert assemble("stop\n", "1.1") == bytes.fromhex(stop_1_1.replace(" ", ""))


@pytest.mark.parametrize("code, error", [("10 05 03 00 00 00 00 00", None),
                                         ("02 01 00 00 00 00", "INVALID_JUMP_TARGET"),
                                         ("10 05", "CODE_NOT_TERMINATED"),
                                         ("12 05 00", "TRUNCATED_IMMEDIATE")])
def test_3_2_4_the_code_sections(code, error):
    assert f"`{code}`" in text("3.2.4-examples")
    container = build(bytes.fromhex(code.replace(" ", "")), b"", (1, 0))
    result = execute(WorldState({ENTRY: Contract(container)}), Message(ENTRY, 1), None, None,
                     Limits(compute=100), version="1.0")
    if error is None:      # valid: it runs (PUSH1 5; JUMPI 0 loops until compute runs out)
        assert (result.status, result.error) == ("exhausted", "COMPUTE_LIMIT_EXCEEDED")
    else:
        assert (result.status, result.error) == ("invalid", error)


# 7.5.2's successful execution: slot 1 (absent) set to 5, one event with topic 0x4d and data
# 01 02 03, and the eight bytes 01 ... 08 returned.
EXAMPLE = """
push1 1
push1 5
sstore
push1 0
push4 0x030201
mstore
push1 0
push1 3
push1 0x4d
log1
push1 0
push8 0x0807060504030201
mstore
push1 0
push1 8
return
"""


def _example(version: str):
    state = WorldState({ENTRY: Contract(assemble(EXAMPLE, version))})
    return state, execute(state, Message(ENTRY, 1), version=version)


@pytest.mark.parametrize("version", spec.names())
def test_7_5_2_the_successful_result_encodes_as_the_text_shows(version):
    template = re.search(r"(\{\"calls\".*\})", clauses.by_id(version)["7.5.2-example-success"].text).group(1)
    pattern = re.escape(template)
    for name in "FCPU":
        pattern = pattern.replace(f":{name}", rf":(?P<{name}>\d+)")
    _, result = _example(version)
    found = re.fullmatch(pattern, result.canonical_json())
    assert found, result.canonical_json()
    fee = spec.raw("schedule", version)["fee"]
    c, p, u = int(found["C"]), int(found["P"]), int(found["U"])
    assert int(found["F"]) == c * fee["compute_price"] + p * fee["memory_page_price"] + u * fee["storage_unit_price"]


def _pairs_in_order(pairs):
    names = [k for k, _ in pairs]
    assert names == sorted(names), names      # str order is code point order
    return dict(pairs)


def test_7_5_2_members_in_code_point_order_and_no_whitespace():
    # CALL address compute offset length: the callee 0x200 with 10000 compute, no call data
    state = WorldState({ENTRY: Contract(assemble("push2 0x200\npush2 10000\npush1 0\npush1 0\n"
                                                 "call\nstop\n", "1.0")),
                        0x200: Contract(assemble("push1 7\npush1 9\nsstore\nstop\n", "1.0"))})
    encoded = execute(state, Message(ENTRY, 1), version="1.0").canonical_json()
    outside_strings = re.sub(r'"[^"]*"', '""', encoded)
    assert not re.search(r"\s", outside_strings)
    decoded = json.loads(encoded, object_pairs_hook=_pairs_in_order)
    assert list(decoded) == ["calls", "error", "error_pc", "events", "fee", "output", "state_changes",
                             "status", "usage"]
    assert decoded["calls"] and decoded["calls"][0]["callee"] == "0x200" and decoded["state_changes"]
    assert "error" in decoded["calls"][0] and "error_pc" in decoded["calls"][0]


def test_8_4_the_pre_state_is_not_modified():
    state, result = _example("1.0")
    assert result.status == "success" and result.state_changes
    assert dict(state.contracts[ENTRY].storage) == {}


CHAPTER = {"invalid": "3", "violation": "4", "exhausted": "5", "fault": "7.2", "rejected": "7.3",
           "internal": "7.4"}


@pytest.mark.parametrize("version", spec.names())
def test_7_1_each_kind_of_code_is_defined_where_the_text_says(version):
    assert "chapter 3 for `invalid` codes" in text("7.1-code-sections", version)
    for error in spec.load(version).errors.values():
        expected = CHAPTER[error.kind]
        assert error.section == expected or error.section.startswith(expected + "."), error
