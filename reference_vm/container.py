"""The bytecode container (spec chapter 3.1).

Layout, all integers little-endian::

    offset  size  field
    0       4     magic "RTWO" (52 54 57 4F)
    4       1     major version (1)
    5       1     minor version (0)
    6       2     flags (reserved, 0)
    8       4     code size C
    12      4     data size D
    16      C     code section
    16+C    D     data section

May raise InvalidCode with: CONTAINER_TRUNCATED, BAD_MAGIC, UNSUPPORTED_VERSION,
RESERVED_FLAGS_SET, CONTAINER_SIZE_MISMATCH, CODE_TOO_LARGE, DATA_TOO_LARGE.
"""

from __future__ import annotations

from dataclasses import dataclass

import spec
from reference_vm.errors import InvalidCode

MAGIC = b"RTWO"
VERSION = (1, 0)
HEADER_SIZE = 16


@dataclass(frozen=True, slots=True)
class Container:
    code: bytes
    data: bytes


def parse(blob: bytes) -> Container:
    """Split a container into its code and data sections, checking the header."""
    machine = spec.load().limits["machine"]
    if len(blob) < HEADER_SIZE:
        raise InvalidCode("CONTAINER_TRUNCATED", f"{len(blob)} bytes")
    if blob[0:4] != MAGIC:
        raise InvalidCode("BAD_MAGIC")
    if (blob[4], blob[5]) != VERSION:
        raise InvalidCode("UNSUPPORTED_VERSION", f"{blob[4]}.{blob[5]}")
    if blob[6:8] != b"\0\0":
        raise InvalidCode("RESERVED_FLAGS_SET")
    code_size = int.from_bytes(blob[8:12], "little")
    data_size = int.from_bytes(blob[12:16], "little")
    if len(blob) != HEADER_SIZE + code_size + data_size:
        raise InvalidCode("CONTAINER_SIZE_MISMATCH",
                          f"header says {HEADER_SIZE + code_size + data_size} bytes, got {len(blob)}")
    if code_size > machine["code_size"]:
        raise InvalidCode("CODE_TOO_LARGE", f"{code_size} bytes")
    if data_size > machine["data_size"]:
        raise InvalidCode("DATA_TOO_LARGE", f"{data_size} bytes")
    code_end = HEADER_SIZE + code_size
    return Container(code=bytes(blob[HEADER_SIZE:code_end]), data=bytes(blob[code_end:]))


def build(code: bytes, data: bytes = b"") -> bytes:
    """Wrap code and data sections in a version 1.0 container."""
    return (MAGIC + bytes(VERSION) + b"\0\0" + len(code).to_bytes(4, "little")
            + len(data).to_bytes(4, "little") + code + data)
