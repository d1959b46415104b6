"""The scenario definitions of the corpus (chapter 11.9), one module per concern; each has
``cases()`` yielding conformance.scenario.case.ScenarioCase. Ids are unique; a definition is
filled for every version it is valid in (``since``/``until``), or once when its steps name
their versions (an upgrade)."""

from __future__ import annotations

import importlib
from typing import Iterator

from conformance.scenario.case import ScenarioCase

MODULES = ("state", "calls", "versions")


def all_cases() -> Iterator[ScenarioCase]:
    for name in MODULES:
        yield from importlib.import_module(f"conformance.scenario.definitions.{name}").cases()
