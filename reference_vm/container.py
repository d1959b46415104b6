"""The bytecode container (spec chapter 3.1).

Layout, all integers little-endian::

    offset  size  field
    0       4     magic "RTWO" (52 54 57 4F)
    4       1     major version
    5       1     minor version (the container's version: its instruction set, chapter 3.2.1)
    6       2     flags (reserved, 0)
    8       4     code size C
    12      4     data size D
    16      C     code section
    16+C    D     data section

A container's version must be one the execution's version runs (``Rules.container_versions``:
from 1.1, every version of the same major version up to the execution's).

May raise InvalidCode with: CONTAINER_TRUNCATED, BAD_MAGIC, UNSUPPORTED_VERSION,
RESERVED_FLAGS_SET, CONTAINER_SIZE_MISMATCH, CODE_TOO_LARGE, DATA_TOO_LARGE.
"""

from __future__ import annotations

from dataclasses import dataclass

from reference_vm.errors import InvalidCode
from reference_vm.rules import Rules

MAGIC = b"RTWO"
HEADER_SIZE = 16


@dataclass(frozen=True, slots=True)
class Container:
    code: bytes
    data: bytes
    version: tuple[int, int]


def parse(blob: bytes, rules: Rules) -> Container:
    """Split a container into its code and data sections, checking the header."""
    if len(blob) < HEADER_SIZE:
        raise InvalidCode("CONTAINER_TRUNCATED", f"{len(blob)} bytes")
    if blob[0:4] != MAGIC:
        raise InvalidCode("BAD_MAGIC")
    version = (blob[4], blob[5])
    if version not in rules.container_versions:
        raise InvalidCode("UNSUPPORTED_VERSION", f"{blob[4]}.{blob[5]}")
    if blob[6:8] != b"\0\0":
        raise InvalidCode("RESERVED_FLAGS_SET")
    code_size = int.from_bytes(blob[8:12], "little")
    data_size = int.from_bytes(blob[12:16], "little")
    if len(blob) != HEADER_SIZE + code_size + data_size:
        raise InvalidCode("CONTAINER_SIZE_MISMATCH",
                          f"header says {HEADER_SIZE + code_size + data_size} bytes, got {len(blob)}")
    if code_size > rules.code_size:
        raise InvalidCode("CODE_TOO_LARGE", f"{code_size} bytes")
    if data_size > rules.data_size:
        raise InvalidCode("DATA_TOO_LARGE", f"{data_size} bytes")
    code_end = HEADER_SIZE + code_size
    return Container(code=bytes(blob[HEADER_SIZE:code_end]), data=bytes(blob[code_end:]),
                     version=version)


def build(code: bytes, data: bytes, version: tuple[int, int]) -> bytes:
    """Wrap code and data sections in a container of ``version`` ((major, minor): a version's
    ``spec.Spec.number``)."""
    return (MAGIC + bytes(version) + b"\0\0" + len(code).to_bytes(4, "little")
            + len(data).to_bytes(4, "little") + code + data)
