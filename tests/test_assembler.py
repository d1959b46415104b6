"""The assembler and disassembler: encodings written out by hand from the spec table."""

from __future__ import annotations

import pytest

import spec
from reference_vm import AssemblyError, assemble, disassemble

OP = {i.mnemonic: i.opcode for i in spec.load().instructions}


def code_of(blob: bytes) -> bytes:
    size = int.from_bytes(blob[8:12], "little")
    return blob[16:16 + size]


def data_of(blob: bytes) -> bytes:
    size = int.from_bytes(blob[8:12], "little")
    return blob[16 + size:]


def test_header_is_magic_version_flags_and_sizes():
    blob = assemble("stop\n.data\n.byte 1, 2, 3")
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
    assert code_of(assemble(f"push {operand}\nstop")) == bytes(encoding + [OP["STOP"]])


def test_explicit_push_keeps_its_size_and_negative_values_wrap():
    assert code_of(assemble("push8 1\nstop"))[:9] == bytes([OP["PUSH8"], 1] + [0] * 7)
    assert code_of(assemble("push2 -2\nstop"))[:3] == bytes([OP["PUSH2"], 0xFE, 0xFF])


def test_labels_resolve_forward_and_backward_in_both_sections():
    blob = assemble("""
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
    blob = assemble("stop\n.data\n.word 1, -1\n.hex 00ff\n.ascii \"\\x41\\\"\"")
    assert data_of(blob) == (1).to_bytes(8, "little") + b"\xff" * 8 + b"\x00\xff" + b'A"'


def test_mnemonics_are_case_insensitive_and_any_whitespace_separates():
    assert assemble("PUSH 1\nDup1\nStop") == assemble("push 1\ndup1\nstop")
    assert assemble("push\t1\n\tdup1\nstop") == assemble("push 1\ndup1\nstop")


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
        assemble(source)
    assert "line " in str(err.value) and fragment in str(err.value)


def test_disassembly_labels_jump_targets_and_keeps_undecodable_bytes():
    blob = assemble("top: push 1\njumpi top\n.byte 0xff\nstop\n.data\n.ascii \"x\"")
    text = disassemble(blob, offsets=False)
    assert "L0000:" in text and "jumpi L0000" in text and ".byte 0xff" in text
    assert ".hex 78" in text
    assert assemble(text) == blob


def test_push_takes_the_whole_word_in_both_signs():
    # 2^64-1 and -1 are the same word; -2^63 is the lowest signed value (push8 0x80..00)
    assert assemble("push 18446744073709551615\nstop") == assemble("push -1\nstop")
    low = assemble("push -9223372036854775808\nstop")
    assert low == assemble("push8 0x8000000000000000\nstop")
