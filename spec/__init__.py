"""The RTWO VM specification: a sequence of versions, each as data.

Everything normative that a program can use lives in ``spec/data`` (the base version's TOML,
checked against the JSON Schemas in ``spec/schemas``), in each later version's declared diff
(``spec/versions/<version>/diff.toml``) and in the prose (``spec/chapters`` and each later
version's replaced sections). Code reads a version's values through :func:`load`, giving the
version it works under: a version is a value that flows through calls, never a global. No
opcode number, cost, limit or error code is written twice.
"""

from spec.loader import (
    DATA_FILES,
    ErrorCode,
    Instruction,
    Spec,
    VersionError,
    chapters,
    load,
    raw,
    schema,
)
from spec.versioning import Version, latest, lineage, names, version, versions

__all__ = [
    "DATA_FILES",
    "ErrorCode",
    "Instruction",
    "Spec",
    "Version",
    "VersionError",
    "chapters",
    "latest",
    "lineage",
    "load",
    "names",
    "raw",
    "schema",
    "version",
    "versions",
]
