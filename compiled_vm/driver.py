"""The driver of the tiered engines: interpret first, count, and run what a tier compiled.

A frame runs segment by segment exactly as the reference's fast path does (stack needs, peak
and base cost checked once per segment, else every instruction stepped through the
reference's ``step``), counting how often each segment starts. When a segment has started
``threshold`` times, the engine's ``compile`` is asked for the region at it, and every later
visit runs the function it installed in the profile's slot: ``fn(frame, stack, meter, limit)``
returns the offset to continue at, or ``~pc`` to have the interpreter run the segment at pc.
Counts and installed functions are kept per code and per ``Rules`` (the spec version and word
width the code runs under) for the whole process (cache.py). Code seen for the first time is
not profiled at all unless its frame runs more than ``cold_segments`` segments: most programs
of a corpus run once and pay nothing for the tiers they never reach.

Everything else — request checks, policy binding, nested calls and their records, the
journal, accounting, results — is the reference's own code (``reference_vm.execute``), so an
engine can differ from the reference only in how a frame's instructions are run; the one
addition is that the engine remembers which policies passed ``Policy.check`` and which (code,
policy) pairs passed binding for the entry frame (pure functions of those values, which for
short programs run repeatedly cost more than the execution). With a tracer the whole execution
goes through the reference (every instruction must be seen).

Both the compiled engine (compiled_vm.engine: regions compiled to Python) and the native tier
(native_vm.engine: and then to machine code) are this driver with their own ``compile``, their
own profile class and, for the native tier, its own profiled loop; this module imports
neither.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import ClassVar

from reference_vm import policy as policy_mod
from reference_vm.errors import VMError
from reference_vm.execute import (
    Execution, Tracer, _before_execution, admit, execute as reference_execute, program_at,
    run_entry, with_defaults,
)
from reference_vm.machine import Frame
from reference_vm.program import Program
from reference_vm.request import Context, Limits, Message
from reference_vm.result import ExecutionResult
from reference_vm.rules import Rules, rules as rules_of
from reference_vm.state import WorldState

from compiled_vm.cache import COLD, Profile, ProfileCache

POLICY_FIELDS = tuple(f.name for f in dataclasses.fields(policy_mod.Policy))
_POLICY_VALUES = operator.attrgetter(*POLICY_FIELDS)
MAX_REMEMBERED = 4096
# Segment starts before the region at it is compiled. A loop of a few dozen iterations that
# runs once costs less interpreted than compiled (compiling a region: about 150 us).
THRESHOLD = 64
COLD_SEGMENTS = 256   # segments a frame of code seen for the first time runs before profiling


class TieredExecution(Execution):
    """An execution whose frames run on the engine's tiers."""

    def __init__(self, engine: "TieredEngine", *args):
        super().__init__(*args)
        self.engine = engine

    def _run(self, frame: Frame) -> None:
        program = frame.program
        code = program.code.code
        engine = self.engine
        cache = engine.cache
        table = cache.table(self.rules)
        profile = table.get(code)
        pc = 0
        if profile is None:     # first sight of this code: interpret, unless the frame runs long
            cache.put(table, code, COLD)
            pc = self._run_cold(frame) if engine.cold_segments else 0
            profile = table.get(code)   # a nested call of the same code may have profiled it
        kind = engine.profile_class
        if type(profile) is not kind:   # seen before (COLD), dropped meanwhile, or another engine's
            assert isinstance(program, Program)  # program_at prepared it
            profile = kind(program)
            cache.put(table, code, profile)
        self._run_profiled(frame, profile, pc)

    def _run_cold(self, frame: Frame) -> int:
        """The reference's loop for at most ``cold_segments`` segments; the offset reached."""
        segments = frame.program.segments
        run_segment = self.run_segment
        pc = 0
        left = self.engine.cold_segments
        while left:
            left -= 1
            segment = segments[pc]
            target = run_segment(frame, segment)
            pc = segment.end if target is None else target
        return pc

    def _run_profiled(self, frame: Frame, profile, pc: int) -> None:
        engine = self.engine
        threshold = engine.threshold
        segments = frame.program.segments
        counts = profile.counts
        fns = profile.fns
        stack = frame.stack
        meter = self.meter
        limit = frame.compute_limit
        run_segment = self.run_segment
        rules = self.rules
        while True:
            fn = fns[pc]
            if fn is not None:
                result = fn(frame, stack, meter, limit)
                if result >= 0:
                    pc = result
                    continue
                pc = ~result   # an aggregate check failed: interpret this segment
            else:
                count = counts[pc] + 1
                counts[pc] = count
                if count == threshold:
                    engine.compile(profile, pc, rules)
                    if fns[pc] is not None:
                        continue
            segment = segments[pc]
            target = run_segment(frame, segment)
            pc = segment.end if target is None else target


class TieredEngine:
    """An engine with its own profile cache; ``execute`` has the reference's signature.

    ``threshold``: segment starts before the region at a segment is compiled (1: at once).
    ``cold_segments``: segments a first execution of a code runs before it is profiled
    (0: profile from the first execution on). Subclasses name their execution class and
    profile class and define ``compile``."""

    execution_class: ClassVar[type[TieredExecution]] = TieredExecution
    profile_class: ClassVar[type[Profile]] = Profile

    def __init__(self, threshold: int = THRESHOLD, cold_segments: int = COLD_SEGMENTS):
        if threshold < 1 or cold_segments < 0:
            raise ValueError("threshold must be at least 1 and cold_segments at least 0")
        self.threshold = threshold
        self.cold_segments = cold_segments
        self.cache = ProfileCache()
        self.compile_failures = 0
        self.checked: dict[tuple, bool] = {}     # policies that passed policy.check()
        self.bound: dict[tuple, bool] = {}       # (code, policy) pairs that passed binding

    def compile(self, profile, head: int, rules: Rules) -> None:
        """Install a function for the region at ``head`` in ``profile.fns`` (or nothing: the
        segment stays interpreted)."""

    def bound_program(self, state: WorldState, address: int, policy: policy_mod.Policy,
                      rules: Rules) -> Program:
        """``reference_vm.execute.checked_program`` (the policy's check, then the program at
        ``address`` bound to the policy), remembering what passed: both are pure functions of
        the policy's fields, the version (and the code), and for the short programs run again
        and again they cost more than running the code."""
        key = _policy_key(policy, rules)
        if key is None or key not in self.checked:
            policy.check(rules.spec)
            if key is not None:
                _remember(self.checked, key)
        program = program_at(state, address, rules)
        bound = None if key is None else (program.code.code, key)
        if bound is None or bound not in self.bound:
            policy_mod.bind(program.code, policy, rules.spec)
            if bound is not None:
                _remember(self.bound, bound)
        return program

    def execute(self, state: WorldState, message: Message, context: Context | None = None,
                policy: policy_mod.Policy | None = None, limits: Limits | None = None, *,
                version: str, word_bits: int | None = None,
                tracer: Tracer | None = None) -> ExecutionResult:
        """Run ``message`` against ``state`` under spec version ``version``; the same result as
        ``reference_vm.execute``."""
        if tracer is not None:
            return reference_execute(state, message, context, policy, limits, version=version,
                                     word_bits=word_bits, tracer=tracer)
        rules = rules_of(version, word_bits)
        context, policy, limits = with_defaults(context, policy, limits)
        try:
            try:
                program = admit(state, message, context, policy, limits, rules, self.bound_program)
            except VMError as err:
                return _before_execution(err.kind, err.code)
            execution = self.execution_class(self, state, context, policy, limits, rules, None)
            return run_entry(execution, program, message, limits)
        except Exception:  # noqa: BLE001 - as the reference: any escape is INTERNAL_ERROR
            return _before_execution("internal", "INTERNAL_ERROR")


def _policy_key(policy: object, rules: Rules) -> tuple | None:
    """The rules (the version: one ``Rules`` per version and width) and the policy's fields as
    a key, when the fields are exactly strings and tuples of strings (None otherwise: such a
    policy is checked and bound afresh every time)."""
    if type(policy) is not policy_mod.Policy:
        return None
    values = _POLICY_VALUES(policy)
    key = (rules, values)
    for value in values:
        kind = type(value)
        if kind is str or value is None:
            continue
        if kind is not tuple:
            return None
        for item in value:
            if type(item) is not str:
                return None
    return key


def _remember(table: dict, key: tuple) -> None:
    if len(table) >= MAX_REMEMBERED:
        table.clear()
    table[key] = True
