"""Hand-written test definitions, one module per instruction type and one per concern
(validation, violations, policies, boundaries, calls); ``generic`` and ``beneath`` derive the
per-instruction vectors every row of each version's instruction table gets.

Each module has ``cases()`` yielding ``conformance.corpus.vector.Case``; ids are unique within
each version. The modules of this package are written for version 1.0 (and filled for every
later version unless a case says ``until``); ``v1_1/`` holds those written for 1.1.
"""

from __future__ import annotations

import importlib
from typing import Iterator

from conformance.corpus.vector import Case

MODULES = ("arithmetic", "comparison", "bitwise", "stack", "control", "memory", "storage",
           "environment", "hash", "event", "call", "context", "generic", "boundaries",
           "violations", "policies", "validation", "clarifications", "beneath", "details", "classes")


def all_cases() -> Iterator[Case]:
    from conformance.corpus.definitions import v1_1
    for name in MODULES:
        module = importlib.import_module(f"conformance.corpus.definitions.{name}")
        yield from module.cases()
    for name in v1_1.MODULES:
        module = importlib.import_module(f"conformance.corpus.definitions.v1_1.{name}")
        yield from module.cases()
