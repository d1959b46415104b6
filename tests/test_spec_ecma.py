"""The schemas' patterns read as ECMA-262 ones (spec 11.2.1, changelog E1), and a line with two
members of one name refused (11.5.4, E2): expectations from the text of ECMA-262 and of the
spec, checked on every reader of the schemas."""

from __future__ import annotations

import pytest

from conformance.corpus import fastschema
from conformance.protocol import loads_bounded
from spec import ecma
from spec import schema as load_schema

WORD = "^0x(0|[1-9a-f][0-9a-f]*)$"


@pytest.mark.parametrize("pattern, translated", [
    ("^a$", r"^a\Z"), (r"^\$$", r"^\$\Z"), ("[$]x$", r"[$]x\Z"), ("[]$]$", r"[]$]\Z"), ("a|b$", r"a|b\Z"),
])
def test_dollar_outside_a_class_becomes_the_very_end(pattern, translated):
    assert ecma.translate(pattern) == translated


@pytest.mark.parametrize("text, matches", [
    ("0x100", True), ("0x100\n", False), ("\n0x100", False), ("0x0", True), ("0x01", False), ("0x1AB", False),
])
def test_a_word_followed_by_a_newline_is_no_word(text, matches):
    assert bool(ecma.compile_pattern(WORD).search(text)) is matches


def test_digits_are_ascii_only():
    assert ecma.compile_pattern(r"^\d+$").search("١٢") is None       # Arabic-Indic digits


def test_every_validator_of_the_vector_schema_refuses_a_trailing_newline():
    from conformance.corpus.schema import schema_problems
    import json
    from pathlib import Path
    line = (Path(__file__).resolve().parent.parent / "conformance/vectors/1.0/control.jsonl").read_text().splitlines()[0]
    vector = json.loads(line)
    assert schema_problems("vector", vector, authoritative=True) == []
    vector["input"]["message"]["to"] += "\n"
    assert schema_problems("vector", vector, authoritative=True) != []           # jsonschema
    assert schema_problems("vector", vector) != []                              # the compiled closures
    assert fastschema.compile_schema(load_schema("vector"))(vector) != []


@pytest.mark.parametrize("line", [b'{"a":1,"a":2}', b'{"x":{"b":[{"c":1,"c":1}]}}', '{"é":1,"é":1}'])
def test_two_members_of_one_name_are_refused_at_any_depth(line):
    with pytest.raises(ValueError, match="two members named"):
        loads_bounded(line)


def test_members_of_one_name_in_different_objects_are_fine():
    assert loads_bounded(b'{"a":{"a":1},"b":[{"a":2},{"a":3}]}') == {"a": {"a": 1}, "b": [{"a": 2}, {"a": 3}]}
