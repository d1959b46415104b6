"""The native tier on top of the compiled engine: interpret, compile to Python, then to machine
code what keeps running.

Frames run on compiled_vm's tiered driver (compiled_vm/driver.py: the request stages, the
profiles and the generated Python of compiled_vm are used unchanged; this engine brings its
profile class, its profiled loop and its ``compile``): segments are interpreted through the reference's fast path and counted, and at ``threshold``
starts the region at a segment is compiled to Python. A region the native tier can take
(plan.py: a loop, or a long block) is then watched: each call of its Python function is given
at most ``native_work`` compute units (a lower limit can only make a region hand over to the
interpreter earlier, at an exact segment start), and once the region has run ``native_work``
units on the compiled tier it is lowered to LLVM IR, optimised and JIT-compiled, and the
machine code takes the region's slot. Compute units, not time: which tier runs a region is a
function of the requests alone. ``native_work=0`` compiles every region the native tier can
take to machine code the first time it reaches the threshold (for tests and fuzzing).

A region that cannot be lowered or compiled (LLVM refuses it, it is past a bound) stays on the
compiled tier; the failure is counted, never raised. Results are the reference's: the
request stages, calls, journal, accounting and results are the reference's code, as in the
compiled engine, and the machine code leaves at exact instruction boundaries (region.py).
"""

from __future__ import annotations

import hashlib
import weakref

from compiled_vm.cache import Profile
from compiled_vm.engine import CompiledExecution, Engine as CompiledEngine, THRESHOLD, COLD_SEGMENTS
from native_vm.cache import CACHE, NativeCache
from native_vm.plan import MAX_IR, MIN_BLOCK, PER_HANDLER, Plan, plan_for
from native_vm.region import NativeRegion
from reference_vm import policy as policy_mod
from reference_vm.execute import Tracer
from reference_vm.machine import Frame
from reference_vm.program import Program
from reference_vm.request import Context, Limits, Message
from reference_vm.result import ExecutionResult
from reference_vm.rules import Rules
from reference_vm.state import WorldState

# Compute units a region runs on the compiled tier before going native. Compiling a region
# with LLVM takes tens of milliseconds (the loop benchmark's loop: about 0.1 s on a busy
# 2-core machine, LLVM's start-up included), about what the compiled tier takes to run 2^22
# units there: a region goes native once it has cost about as much as compiling it would.
NATIVE_WORK = 1 << 22


class NativeProfile(Profile):
    """A compiled_vm profile with, per head, the compute units its compiled-tier function has
    run while watched (None: not watched) and the compiled-tier functions native code took
    the place of."""

    __slots__ = ("work", "lower", "_digest", "__weakref__")

    def __init__(self, program: Program) -> None:
        super().__init__(program)
        self.work: list[int | None] = [None] * len(program.segments)
        self.lower: dict[int, object] = {}
        self._digest: bytes | None = None

    def digest(self) -> bytes:
        """SHA-256 of the code section: the native cache's key (computed when first needed)."""
        if self._digest is None:
            self._digest = hashlib.sha256(self.program.code.code).digest()
        return self._digest


class NativeExecution(CompiledExecution):
    """The driver's execution with the native tier's profiled loop: a region's compiled-tier
    function, while watched, is given at most the rest of its budget and goes native once it
    has run it."""

    engine: "Engine"

    def _run_profiled(self, frame: Frame, profile, pc: int) -> None:
        engine = self.engine
        threshold = engine.threshold
        budget = engine.native_work
        segments = frame.program.segments
        counts, fns, work = profile.counts, profile.fns, profile.work
        stack = frame.stack
        meter = self.meter
        limit = frame.compute_limit
        run_segment = self.run_segment
        while True:
            fn = fns[pc]
            if fn is not None:
                done = work[pc]
                if done is None:
                    result = fn(frame, stack, meter, limit)
                else:   # watched: at most the rest of the budget on the compiled tier
                    before = meter.compute_used
                    result = fn(frame, stack, meter, min(limit, before + budget))
                    done += meter.compute_used - before
                    if done >= budget:
                        work[pc] = None
                        engine.go_native(profile, pc, self.rules)
                    else:
                        work[pc] = done
                if result >= 0:
                    pc = result
                    continue
                pc = ~result   # an aggregate check failed: interpret this segment
            else:
                count = counts[pc] + 1
                counts[pc] = count
                if count == threshold:
                    engine.compile(profile, pc, self.rules)
                    if fns[pc] is not None:
                        continue
            segment = segments[pc]
            target = run_segment(frame, segment)
            pc = segment.end if target is None else target


class Engine(CompiledEngine):
    """The compiled engine with a native tier; ``execute`` has the reference's signature.

    ``threshold`` and ``cold_segments`` as compiled_vm.Engine's; ``native_work``: compute
    units a region runs on the compiled tier before it is compiled to machine code (0: at
    once); ``min_block``: instructions a single segment needs to go native; ``per_handler``:
    native instructions a loop needs per instruction that leaves native code; ``cache``: the
    native code cache (the process's by default)."""

    execution_class = NativeExecution
    profile_class = NativeProfile

    def __init__(self, threshold: int = THRESHOLD, cold_segments: int = COLD_SEGMENTS,
                 native_work: int = NATIVE_WORK, min_block: int = MIN_BLOCK,
                 per_handler: int = PER_HANDLER, cache: NativeCache | None = None):
        super().__init__(threshold, cold_segments)
        if native_work < 0 or min_block < 1 or per_handler < 0:
            raise ValueError("native_work and per_handler must be at least 0, min_block at least 1")
        self.native_work = native_work
        self.min_block = min_block
        self.per_handler = per_handler
        self.native = CACHE if cache is None else cache
        self.native_compiled = 0     # regions this engine compiled to machine code
        self.native_failures = 0     # regions LLVM refused or that failed to lower
        self.native_refused = 0      # regions past the IR bound, or larger than the whole cache

    def plan(self, profile, head: int, rules: Rules) -> Plan | None:
        return plan_for(profile.program, head, rules, self.min_block, self.per_handler)

    def compile(self, profile, head: int, rules: Rules) -> None:
        plan = self.plan(profile, head, rules)
        if plan is not None and not self.native_work and self.go_native(profile, head, rules, plan):
            return
        super().compile(profile, head, rules)
        if plan is not None and self.native_work and profile.fns[head] is not None:
            profile.work[head] = 0

    @staticmethod
    def region_key(profile: NativeProfile, head: int, rules: Rules) -> tuple:
        """The native cache's key of the region at ``head`` of the profile's code under
        ``rules``. The version is part of it: the same code runs other handlers (SHA256's
        price, say) and other instructions under another version."""
        return (profile.digest(), rules.version, rules.bits, head)

    def go_native(self, profile, head: int, rules: Rules, plan: Plan | None = None) -> bool:
        """Install machine code for the region at head (from the cache, or compiled now);
        False when it stays on the lower tiers."""
        if plan is None:
            plan = self.plan(profile, head, rules)
            if plan is None:
                return False
        key = self.region_key(profile, head, rules)
        region = self.native.get(key)
        if region is None:
            region = self.build(plan)
            if region is None:
                return False
            fresh = True
        else:
            fresh = False
        current = profile.fns[head]
        if current is not None and current is not region:
            profile.lower[head] = current
        profile.fns[head] = region
        profile.work[head] = None
        region.installs[:] = [(r, h) for r, h in region.installs if r() is not None]
        region.installs.append((weakref.ref(profile), head))
        if fresh:
            self.native.put(key, region)
        return True

    def build(self, plan: Plan) -> NativeRegion | None:
        try:
            # LLVM is loaded when a region first goes native: a process that runs only code
            # that runs once never pays for it.
            from native_vm import jit
            from native_vm.lower import Lowering
            lowered = Lowering(plan).lower()
            # Past the bound, or larger than the whole cache (it would leave as it arrives).
            if lowered.size > MAX_IR or not self.native.fits(lowered.size):
                self.native_refused += 1
                return None
            tracker, address, generation = jit.compile_module(lowered.module)
            region = NativeRegion(plan, lowered, tracker, address, generation)
        except Exception:  # noqa: BLE001 - a region LLVM refuses stays on the compiled tier
            self.native_failures += 1
            return None
        self.native_compiled += 1
        return region


DEFAULT = Engine()


def execute(state: WorldState, message: Message, context: Context | None = None,
            policy: policy_mod.Policy | None = None, limits: Limits | None = None, *,
            version: str, word_bits: int | None = None,
            tracer: Tracer | None = None) -> ExecutionResult:
    """``reference_vm.execute`` on the process-wide native engine."""
    return DEFAULT.execute(state, message, context, policy, limits, version=version,
                           word_bits=word_bits, tracer=tracer)
