"""Hand-written test definitions, one module per instruction type and one per concern
(validation, violations, policies, boundaries, calls); ``generic`` derives the per-instruction
vectors every row of the instruction table gets.

Each module has ``cases()`` yielding ``conformance.corpus.vector.Case``; ids are unique across all.
"""

from __future__ import annotations

import importlib
from typing import Iterator

from conformance.corpus.vector import Case

MODULES = ("arithmetic", "comparison", "bitwise", "stack", "control", "memory", "storage",
           "environment", "hash", "event", "call", "context", "generic", "boundaries",
           "violations", "policies", "validation", "clarifications", "beneath", "details", "classes")


def all_cases() -> Iterator[Case]:
    for name in MODULES:
        module = importlib.import_module(f"conformance.corpus.definitions.{name}")
        yield from module.cases()
