"""What the 1.1 definitions share: the version's table and limits, and ``case`` writing a
definition of 1.1 (since "1.1": 1.1 containers, filled for 1.1 and every later version)."""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import case as base_case
from conformance.corpus.vector import Case

VERSION = "1.1"
TABLE = spec.load(VERSION)
MACHINE = TABLE.limits["machine"]


def case(id: str, description: str, code, **kw) -> Case:
    """A definition of version 1.1."""
    return base_case(id, description, code, since=VERSION, **kw)
