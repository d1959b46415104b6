"""The RTWO VM specification, version 1.0, as data.

Everything normative that a program can use lives in ``spec/data`` (TOML, checked against the
JSON Schemas in ``spec/schemas``) and the prose in ``spec/chapters``. Code elsewhere reads these
values through :func:`load`; no opcode number, cost, limit or error code is written twice.
"""

from spec.loader import (
    SPEC_RELEASE,
    SPEC_VERSION,
    DATA_FILES,
    ErrorCode,
    Instruction,
    Spec,
    chapters,
    load,
    raw,
    schema,
)

__all__ = [
    "SPEC_RELEASE",
    "SPEC_VERSION",
    "DATA_FILES",
    "ErrorCode",
    "Instruction",
    "Spec",
    "chapters",
    "load",
    "raw",
    "schema",
]
