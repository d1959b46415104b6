"""The assembler and disassembler: encodings written out by hand from the spec table."""

from __future__ import annotations

import pytest

import spec
from reference_vm import AssemblyError, assemble, disassemble
from reference_vm.errors import InvalidCode

VERSION = "1.0"   # the encodings below are 1.0's; 1.1's own are tested at the end
OP = {i.mnemonic: i.opcode for i in spec.load(VERSION).instructions}


def asm(source: str) -> bytes:
    return assemble(source, VERSION)


def code_of(blob: bytes) -> bytes:
    size = int.from_bytes(blob[8:12], "little")
    return blob[16:16 + size]


def data_of(blob: bytes) -> bytes:
    size = int.from_bytes(blob[8:12], "little")
    return blob[16 + size:]


def test_header_is_magic_version_flags_and_sizes():
    blob = asm("stop\n.data\n.byte 1, 2, 3")
    assert blob == b"RTWO" + bytes([1, 0, 0, 0]) + (1).to_bytes(4, "little") + (3).to_bytes(4, "little") + bytes([OP["STOP"], 1, 2, 3])


@pytest.mark.parametrize("operand, encoding", [
    ("0", [OP["PUSH1"], 0]),
    ("255", [OP["PUSH1"], 255]),
    ("256", [OP["PUSH2"], 0, 1]),
    ("0x10000", [OP["PUSH4"], 0, 0, 1, 0]),
    ("0x1_0000_0000", [OP["PUSH8"], 0, 0, 0, 0, 1, 0, 0, 0]),
    ("-1", [OP["PUSH8"]] + [0xFF] * 8),
    ("0b101", [OP["PUSH1"], 5]),
])
def test_push_picks_the_shortest_encoding(operand, encoding):
    assert code_of(asm(f"push {operand}\nstop")) == bytes(encoding + [OP["STOP"]])


def test_explicit_push_keeps_its_size_and_negative_values_wrap():
    assert code_of(asm("push8 1\nstop"))[:9] == bytes([OP["PUSH8"], 1] + [0] * 7)
    assert code_of(asm("push2 -2\nstop"))[:3] == bytes([OP["PUSH2"], 0xFE, 0xFF])


def test_labels_resolve_forward_and_backward_in_both_sections():
    blob = asm("""
        start: jump end     ; forward
        mid:   jump start   ; backward
        end:   push msg     ; a data label, as PUSH4
               stop
        .data
        pad:   .zero 3
        msg:   .ascii "hi; #not a comment\\n"
    """)
    assert code_of(blob) == bytes([OP["JUMP"], 10, 0, 0, 0, OP["JUMP"], 0, 0, 0, 0,
                                   OP["PUSH4"], 3, 0, 0, 0, OP["STOP"]])
    assert data_of(blob) == b"\0\0\0hi; #not a comment\n"


def test_data_directives():
    blob = asm("stop\n.data\n.word 1, -1\n.hex 00ff\n.ascii \"\\x41\\\"\"")
    assert data_of(blob) == (1).to_bytes(8, "little") + b"\xff" * 8 + b"\x00\xff" + b'A"'


def test_mnemonics_are_case_insensitive_and_any_whitespace_separates():
    assert asm("PUSH 1\nDup1\nStop") == asm("push 1\ndup1\nstop")
    assert asm("push\t1\n\tdup1\nstop") == asm("push 1\ndup1\nstop")


@pytest.mark.parametrize("source, fragment", [
    ("fly\nstop", "unknown mnemonic"),
    ("push\nstop", "needs an operand"),
    ("add 1\nstop", "takes no operand"),
    ("push1 256\nstop", "does not fit"),
    ("a:\na:\nstop", "defined twice"),
    ("jump nowhere", "undefined label"),
    ("jump d\nstop\n.data\nd: .byte 1", "data label"),
    ("stop\n.data\nadd", "belong in the .code"),
    ("push 0x\nstop", "not a number"),
    ("push 18446744073709551616\nstop", "outside the 64-bit word (from -2^63 to 2^64-1)"),
    ("push -9223372036854775809\nstop", "outside the 64-bit word"),
    (".byte 256\nstop", "fit in a byte"),
    (".ascii \"\\q\"\nstop", "unknown escape"),
    (".ascii \"\\x4\"\nstop", "two hex digits"),
    (".ascii \"a\"b\"\nstop", "must be escaped"),
    ("lab\u00e9l: stop", "unknown mnemonic"),
])
def test_errors_name_the_line(source, fragment):
    with pytest.raises(AssemblyError) as err:
        asm(source)
    assert "line " in str(err.value) and fragment in str(err.value)


def test_disassembly_labels_jump_targets_and_keeps_undecodable_bytes():
    blob = asm("top: push 1\njumpi top\n.byte 0xff\nstop\n.data\n.ascii \"x\"")
    text = disassemble(blob, offsets=False)
    assert "L0000:" in text and "jumpi L0000" in text and ".byte 0xff" in text
    assert ".hex 78" in text
    assert asm(text) == blob


def test_push_takes_the_whole_word_in_both_signs():
    # 2^64-1 and -1 are the same word; -2^63 is the lowest signed value (push8 0x80..00)
    assert asm("push 18446744073709551615\nstop") == asm("push -1\nstop")
    low = asm("push -9223372036854775808\nstop")
    assert low == asm("push8 0x8000000000000000\nstop")


def test_a_container_of_1_1_names_its_version_and_knows_1_1_mnemonics():
    # 9.8 / 3.1.1: the header's version bytes are the version's number; MULHU is 0x47 and
    # CLZ 0x69 in 1.1 (spec/versions/1.1/diff.toml items N1, N2).
    blob = assemble("push 3\npush 5\nmulhu\nclz\nstop", "1.1")
    assert blob[:8] == b"RTWO" + bytes([1, 1, 0, 0])
    assert code_of(blob) == bytes([OP["PUSH1"], 3, OP["PUSH1"], 5, 0x47, 0x69, OP["STOP"]])
    assert disassemble(blob, offsets=False).split() == [".code", "push1", "3", "push1", "5", "mulhu",
                                                        "clz", "stop"]


@pytest.mark.parametrize("mnemonic", ["mulhu", "mulhs", "clz", "ctz", "popcnt", "staticcall",
                                      "tload", "tstore"])
def test_1_1_mnemonics_are_unknown_to_1_0(mnemonic):
    with pytest.raises(AssemblyError, match=mnemonic):
        assemble(f"{mnemonic}\nstop", "1.0")


def test_disassembling_a_1_0_container_does_not_decode_1_1_opcodes():
    # 0x47 (MULHU from 1.1) is no instruction of a 1.0 container: shown as a byte
    blob = b"RTWO" + bytes([1, 0, 0, 0]) + (2).to_bytes(4, "little") + bytes(4) + bytes([0x47, 0])
    text = disassemble(blob, offsets=False)
    assert "mulhu" not in text.lower()


def test_an_unknown_version_is_refused():
    with pytest.raises(spec.VersionError):
        assemble("stop", "1.9")
    with pytest.raises(InvalidCode):
        disassemble(b"RTWO" + bytes([1, 9, 0, 0]) + bytes(8) + bytes([0]))
