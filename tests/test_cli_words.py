"""Call data and output as words (issue 39 item 6): ``--calldata-words`` on ``run`` and
``call``, output shown as words beside its hex; words are 64-bit little-endian (chapter 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import spec
from rtwo_vm.arguments.inputs import CliError
from rtwo_vm.arguments.words import parse_words
from rtwo_vm.cli import main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MAX = str(EXAMPLES / "max.rasm")          # returns the larger of two signed words
V = spec.latest()


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_words_encode_little_endian_decimal_and_hex():
    # hand-encoded: 12 = 0c then seven zero bytes; 0x2d = 2d then seven zero bytes
    assert parse_words("12, 0x2d", "w", V).hex() == "0c00000000000000" + "2d00000000000000"
    assert parse_words(" 18446744073709551615\t0X1 ", "w", V).hex() == "ff" * 8 + "01" + "00" * 7
    assert parse_words("", "w", V) == b""


@pytest.mark.parametrize("text, fragment", [
    ("18446744073709551616", "word 1 (18446744073709551616) does not fit a 64-bit word"),
    ("1, 0x10000000000000000", "word 2 (0x10000000000000000) does not fit"),
    ("1 -2", "word 2 ('-2') is not a decimal or 0x-hex number"),
    ("0xzz", "not a decimal or 0x-hex"),
    ("1.5", "not a decimal or 0x-hex"),
    ("0b101", "not a decimal or 0x-hex"),
    ("1 " * 8193, "8193 words, more than the 8192 call data holds"),
    ("9" * 300_000, "longer than 8192 words"),
])
def test_malformed_or_out_of_range_words_are_refused_in_one_line(text, fragment):
    with pytest.raises(CliError) as err:
        parse_words(text, "--calldata-words", V)
    assert fragment in str(err.value) and "\n" not in str(err.value)


def test_run_takes_words_and_shows_output_as_words(capsys):
    code, out, _ = run(capsys, "run", MAX, "--calldata-words", "0xfffffffffffffffe, 5")   # -2, 5
    doc = json.loads(out)
    assert code == 0 and doc["output"] == "0x0500000000000000" and doc["output_words"] == ["0x5"]
    # the same call written as hex gives the same canonical result; --canonical stays canonical
    _, words, _ = run(capsys, "run", MAX, "--calldata-words", "18446744073709551614 5", "--canonical")
    _, hexed, _ = run(capsys, "run", MAX, "--calldata", "0xfeffffffffffffff0500000000000000",
                      "--canonical")
    assert words == hexed and "output_words" not in words


def test_run_output_that_is_not_whole_words_is_hex_only(capsys):
    code, out, _ = run(capsys, "run", str(EXAMPLES / "reverter.rasm"))
    doc = json.loads(out)
    assert code == 1 and doc["output"] == "0xee" and "output_words" not in doc


@pytest.mark.parametrize("args, fragment", [
    (["--calldata-words", "1", "--calldata", "0x"], "not both"),
    (["--calldata-words", "1 2 x"], "word 3 ('x')"),
])
def test_run_refuses_bad_words_with_exit_2(capsys, args, fragment):
    code, _, err = run(capsys, "run", MAX, *args)
    assert code == 2 and fragment in err and err.count("\n") == 1


def test_call_takes_words_and_prints_output_words(tmp_path, capsys):
    db = str(tmp_path / "w.db")
    assert run(capsys, "deploy", MAX, "--address", "0x100", "--db", db)[0] == 0
    code, out, _ = run(capsys, "call", "0x100", "--calldata-words", "7, 0x2a", "--db", db)
    assert code == 0 and "output 0x2a00000000000000 (words 42);" in out
    code, out, _ = run(capsys, "call", "0x100", "--calldata-words", "7 3", "--db", db, "--json")
    doc = json.loads(out)
    assert doc["result"]["output"] == "0x0700000000000000" and doc["outputWords"] == ["0x7"]
    code, _, err = run(capsys, "call", "0x100", "--calldata-words", "1 99999999999999999999",
                       "--db", db)
    assert code == 2 and "word 2" in err and "64-bit" in err
