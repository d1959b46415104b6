"""The compiled engine: the tiered driver (driver.py) with regions compiled to Python.

Frames run as the driver runs them: interpreted through the reference's fast path and
counted; when a segment has started ``threshold`` times, the region at it (a loop through it,
else the segment alone; regions.py) is compiled into a Python function (codegen.py) and every
later visit runs that function. Everything else is the reference's own code (driver.py).
"""

from __future__ import annotations

from reference_vm import policy as policy_mod
from reference_vm.execute import Tracer
from reference_vm.request import Context, Limits, Message
from reference_vm.result import ExecutionResult
from reference_vm.rules import Rules
from reference_vm.state import WorldState

from compiled_vm.cache import Profile
from compiled_vm.driver import COLD_SEGMENTS, THRESHOLD, TieredEngine, TieredExecution

__all__ = ["COLD_SEGMENTS", "DEFAULT", "THRESHOLD", "CompiledExecution", "Engine", "execute"]


class CompiledExecution(TieredExecution):
    engine: "Engine"


class Engine(TieredEngine):
    """A compiled engine with its own cache; ``execute`` has the reference's signature.

    ``threshold``: segment starts before the region at a segment is compiled (1: at once).
    ``cold_segments``: segments a first execution of a code runs before it is profiled
    (0: profile from the first execution on)."""

    execution_class = CompiledExecution
    profile_class = Profile

    def compile(self, profile, head: int, rules: Rules) -> None:
        before = profile.size
        try:
            profile.compile_at(head, rules)
        except Exception:  # noqa: BLE001 - a region that cannot be compiled stays interpreted
            self.compile_failures += 1
        if profile.size != before:
            self.cache.grew(profile, profile.size - before)


DEFAULT = Engine()


def execute(state: WorldState, message: Message, context: Context | None = None,
            policy: policy_mod.Policy | None = None, limits: Limits | None = None, *,
            version: str, word_bits: int | None = None,
            tracer: Tracer | None = None) -> ExecutionResult:
    """``reference_vm.execute`` on the process-wide compiled engine."""
    return DEFAULT.execute(state, message, context, policy, limits, version=version,
                           word_bits=word_bits, tracer=tracer)
