"""Call data and output as words: ``--calldata-words`` and the decoded output of ``run``,
``call`` and result records.

A word is ``word_bits`` wide (limits.toml, chapter 2) and is read from call data and memory
little-endian (CALLDATALOAD, MLOAD), so call data written as words is each word's bytes,
least significant first, one after the other. Each word is written in decimal or in 0x-hex;
anything else (a sign, a fraction, another base, a value that does not fit the word) is
refused with one line naming the word. Output whose length is a whole number of words is
shown as those words too (beside its hex, never instead of it).
"""

from __future__ import annotations

import re

import spec
from rtwo_vm.arguments.inputs import CliError

_WORD = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]+)")
_SEPARATORS = re.compile(r"[\s,]+")


def word_size(version: str) -> int:
    """Bytes of one word under spec ``version``."""
    return spec.load(version).limits["machine"]["word_bits"] // 8


def parse_words(text: str, what: str, version: str) -> bytes:
    """Words separated by commas or whitespace, each decimal or 0x-hex, as call data: each
    encoded little-endian in the word size of ``version``. At most the call data the spec
    admits (limits.toml call_data_size) is accepted."""
    limits = spec.load(version).limits["machine"]
    size = limits["word_bits"] // 8
    most = limits["call_data_size"] // size
    digits = len(str(1 << limits["word_bits"]))
    # The text is bounded before it is split: the longest list of the longest words.
    if len(text) > most * (digits + 4):
        raise CliError(f"{what}: longer than {most} words (call data holds at most "
                       f"{limits['call_data_size']} bytes)")
    return encode_words([t for t in _SEPARATORS.split(text.strip()) if t], what, version)


def encode_words(items: list[str], what: str, version: str) -> bytes:
    """Words given one by one (``--calldata-words`` split, or a scenario file's list), each
    decimal or 0x-hex, as call data of ``version`` (the one grammar of both)."""
    limits = spec.load(version).limits["machine"]
    size = limits["word_bits"] // 8
    most = limits["call_data_size"] // size
    if len(items) > most:
        raise CliError(f"{what}: {len(items)} words, more than the {most} call data holds "
                       f"({limits['call_data_size']} bytes)")
    out = bytearray()
    for index, item in enumerate(items, 1):
        if not _WORD.fullmatch(item):
            raise CliError(f"{what}: word {index} ({item[:40]!r}) is not a decimal or 0x-hex "
                           "number")
        value = int(item, 16) if item[:2] in ("0x", "0X") else int(item)
        if value >> limits["word_bits"]:
            raise CliError(f"{what}: word {index} ({item[:40]}) does not fit a "
                           f"{limits['word_bits']}-bit word")
        out += value.to_bytes(size, "little")
    return bytes(out)


def output_words(data: bytes, version: str) -> list[int] | None:
    """``data`` as little-endian words of ``version``, when it is a non-empty whole number of
    words; else None (it is shown as hex only)."""
    size = word_size(version)
    if not data or len(data) % size:
        return None
    return [int.from_bytes(data[i:i + size], "little") for i in range(0, len(data), size)]


def hex_words(data: bytes, version: str) -> list[str] | None:
    """``output_words`` in the JSON form of the result's other words (0x-hex, as word_hex)."""
    words = output_words(data, version)
    return None if words is None else [hex(w) for w in words]


def call_data(args, version: str) -> bytes:
    """The call data of ``run`` or ``call``: ``--calldata HEX`` or ``--calldata-words``
    (not both; neither is empty call data)."""
    from rtwo_vm.arguments.inputs import parse_hex
    if args.calldata is not None and args.calldata_words is not None:
        raise CliError("give --calldata or --calldata-words, not both")
    if args.calldata_words is not None:
        return parse_words(args.calldata_words, "--calldata-words", version)
    return parse_hex(args.calldata or "0x", "--calldata")


def add_call_data(parser) -> None:
    parser.add_argument("--calldata", help="call data as hex bytes (default: empty)")
    parser.add_argument("--calldata-words", dest="calldata_words", metavar="WORDS",
                        help="call data as words separated by commas or spaces, each decimal "
                             "or 0x-hex, encoded little-endian (chapter 2): '12, 0x2d' is "
                             "0x0c000000000000002d00000000000000")
