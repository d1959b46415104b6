"""Execute a message against a world state (spec chapters 2, 5, 6 and 7).

``execute`` is a pure function of its arguments: it reads no clock, randomness, environment or
host state, iterates over no unordered collection, and returns a result whose canonical JSON is
the same on every run.

The interpreter runs a frame segment by segment (program.py). When a segment's stack needs and
base cost fit, they are checked and charged once and its handlers run back to back; otherwise,
and always when tracing, each instruction goes through ``step`` — stack check, base cost,
handler, next offset — which is the definition the fast path must agree with.

Outcomes: a Halt ends a frame as success or reverted; a VMError ends it with its spec code; an
InternalInvariantError or any unexpected exception ends the whole execution as INTERNAL_ERROR.
"""

from __future__ import annotations

import hashlib
from typing import Callable, Protocol

from reference_vm import policy as policy_mod
from reference_vm.accounting import pages_of, release
from reference_vm.decode import Decoded
from reference_vm.errors import (
    Exhausted, Fault, Halt, InternalInvariantError, RequestRejected, VMError,
)
from reference_vm.machine import Frame, Meter
from reference_vm.program import Program, Segment, load_program
from reference_vm.request import (
    Context, Limits, Message, check_limits, check_request, check_state,
)
from reference_vm.result import CallRecord, Event, ExecutionResult, Usage
from reference_vm.rules import Rules, rules as rules_of
from reference_vm.state import Journal, WorldState


class Tracer(Protocol):
    """Called before each instruction when tracing; an optional ``finish(outcome, meter)`` is
    called once when the entry frame has halted."""

    def step(self, frame: Frame, decoded: Decoded) -> None: ...


class FrameOutcome:
    __slots__ = ("status", "error", "error_pc", "output")

    def __init__(self, status: str, error: str | None, error_pc: int | None, output: bytes):
        self.status, self.error, self.error_pc, self.output = status, error, error_pc, output


def program_at(state: WorldState, address: int, rules: Rules) -> Program:
    """The validated, prepared program of the contract at address (stage validated). Raises
    RequestRejected or InvalidCode."""
    contract = state.contracts.get(address)
    if contract is None:
        raise RequestRejected("CONTRACT_NOT_FOUND", hex(address))
    return load_program(contract.code, rules)


def bound_program(state: WorldState, address: int, policy: policy_mod.Policy,
                  rules: Rules) -> Program:
    """The validated, policy-bound program of the contract at address (stages validated and
    policy_bound). Raises RequestRejected, InvalidCode or PolicyViolation."""
    program = program_at(state, address, rules)
    policy_mod.bind(program.code, policy, rules.spec)
    return program


def checked_program(state: WorldState, address: int, policy: policy_mod.Policy,
                    rules: Rules) -> Program:
    """The entry program: the policy's own check (stage requested), then bound_program."""
    policy.check(rules.spec)
    return bound_program(state, address, policy, rules)


Bind = Callable[[WorldState, int, policy_mod.Policy, Rules], Program]


def with_defaults(context: Context | None, policy: policy_mod.Policy | None,
                  limits: Limits | None) -> tuple[Context, policy_mod.Policy, Limits]:
    """The arguments a Python caller left out, as their defaults."""
    return (Context() if context is None else context,
            policy_mod.Policy() if policy is None else policy,
            Limits() if limits is None else limits)


def admit(state: WorldState, message: Message, context: Context, policy: policy_mod.Policy,
          limits: Limits, rules: Rules, bind: Bind = checked_program) -> Program:
    """Stages requested .. sandbox_provisioned, in the spec's order: the request, the state,
    the policy and the entry program (``bind``: the policy's check, validation and binding),
    then the limits. Nothing runs and nothing is charged. Raises VMError."""
    check_request(message, context, rules)
    check_state(state, rules.word)
    if not isinstance(policy, policy_mod.Policy):
        raise RequestRejected("INVALID_REQUEST", "policy must be a Policy")
    program = bind(state, message.to, policy, rules)
    check_limits(limits, rules.spec)
    return program


class Execution:
    """The state of one execution shared by its frames: the rules of its version, journal,
    meter, context, policy."""

    def __init__(self, pre: WorldState, context: Context, policy: policy_mod.Policy,
                 limits: Limits, rules: Rules, tracer: Tracer | None):
        self.pre = pre
        self.journal = Journal(pre)
        self.context = context
        self.policy = policy
        self.rules = rules
        self.word = rules.word
        self.stack_depth = rules.stack_depth
        self.meter = Meter(limits.memory_pages, limits.storage_units)
        self.tracer = tracer
        self.random_counter = 0
        self.calls: list[CallRecord | None] = []

    def next_random(self) -> int:
        """The next word of the random stream: SHA-256(seed || counter), little-endian."""
        block = self.context.random_seed + self.random_counter.to_bytes(self.rules.counter_size, "little")
        self.random_counter += 1
        return int.from_bytes(hashlib.sha256(block).digest()[:self.word.size], "little")

    def call(self, caller: Frame, address: int, compute: int, call_data: bytes,
             read_only: bool = False) -> tuple[bool, bytes]:
        """Run a nested frame for CALL or STATICCALL (``read_only``: the callee's frame is
        read-only, spec 2.4); return (succeeded, return data for the caller)."""
        rules = self.rules
        meter = self.meter
        depth = caller.depth + 1
        index = len(self.calls)
        self.calls.append(None)  # calls are recorded in the order they start
        start = (meter.compute_used, meter.storage_reads, meter.storage_writes,
                 meter.storage_new_slots, meter.storage_units)

        def record(status: str, error: str | None, error_pc: int | None,
                   frame: Frame | None = None) -> None:
            used = (meter.compute_used, meter.storage_reads, meter.storage_writes,
                    meter.storage_new_slots, meter.storage_units)
            compute, reads, writes, new_slots, units = (a - b for a, b in zip(used, start))
            self.calls[index] = CallRecord(
                depth, caller.address, address, status, error, error_pc, compute,
                memory_pages=pages_of(rules, frame) if frame is not None else 0,
                storage_reads=reads, storage_writes=writes, storage_new_slots=new_slots,
                storage_units=units)

        if depth > rules.call_depth:
            record("fault", "CALL_DEPTH_EXCEEDED", None)
            return False, b""
        try:
            program = self.bind_callee(address)
        except VMError as err:
            record(err.kind, err.code, None)
            return False, b""
        limit = min(caller.compute_limit, meter.compute_used + compute)
        callee = Frame(program=program, address=address, caller=caller.address,
                       call_data=call_data, compute_limit=limit, depth=depth,
                       meter=meter, execution=self, read_only=read_only)
        mark = self.journal.mark()
        outcome = self.run_frame(callee)
        record(outcome.status, outcome.error, outcome.error_pc, callee)
        if outcome.status == "success":
            caller.events.extend(callee.events)
            return True, outcome.output
        self.journal.revert_to(mark)
        return False, outcome.output if outcome.status == "reverted" else b""

    def bind_callee(self, address: int) -> Program:
        """A callee's validated, policy-bound program (step 3 of spec 6.11; engines override
        it to bind their own prepared programs)."""
        return bound_program(self.pre, address, self.policy, self.rules)

    def run_frame(self, frame: Frame) -> FrameOutcome:
        try:
            if self.tracer is None:
                self._run(frame)
            else:
                self._run_traced(frame)
        except Halt as halt:
            return FrameOutcome("reverted" if halt.reverted else "success", None, None, halt.output)
        except VMError as err:
            return FrameOutcome(err.kind, err.code, frame.pc, b"")
        finally:
            release(self.rules, self.meter, frame)
        raise InternalInvariantError("a frame ended without halting")

    def _run(self, frame: Frame) -> None:
        segments = frame.program.segments
        run_segment = self.run_segment
        pc = 0
        while True:
            segment = segments[pc]
            target = run_segment(frame, segment)
            pc = segment.end if target is None else target

    def run_segment(self, frame: Frame, segment) -> int | None:
        """One straight-line segment: checked and charged as a whole when its stack need, its
        peak and its base cost fit, otherwise instruction by instruction (``step``), so that
        the failing instruction, its pc and every meter are exactly the per-instruction ones.
        Returns the jump target, or None to fall through to the next segment."""
        stack = frame.stack
        meter = self.meter
        height = len(stack)
        used = meter.compute_used + segment.cost
        if height >= segment.need and height + segment.peak <= self.stack_depth and used <= frame.compute_limit:
            meter.compute_used = used
            for handler, immediate in segment.body:
                handler(frame, immediate)
            frame.pc = segment.last_pc
            handler, immediate = segment.last
            return handler(frame, immediate)
        return self.step(frame, segment)

    def _run_traced(self, frame: Frame) -> None:
        segments = frame.program.segments
        pc = 0
        while True:
            segment = segments[pc]
            target = self.step(frame, segment)
            pc = segment.end if target is None else target

    def step(self, frame: Frame, segment: Segment) -> int | None:
        """Run a segment one instruction at a time with every check (the defining path)."""
        stack = frame.stack
        meter = self.meter
        tracer = self.tracer
        stack_depth = self.stack_depth
        target = None
        for decoded, handler in segment.steps:
            ins = decoded.instruction
            frame.pc = decoded.offset
            if tracer is not None:
                tracer.step(frame, decoded)
            height = len(stack)
            if height < ins.inputs:
                raise Fault("STACK_UNDERFLOW", ins.mnemonic)
            if height - ins.inputs + ins.outputs > stack_depth:
                raise Fault("STACK_OVERFLOW", ins.mnemonic)
            if meter.compute_used + ins.cost > frame.compute_limit:
                raise Exhausted("COMPUTE_LIMIT_EXCEEDED", ins.mnemonic)
            meter.compute_used += ins.cost
            target = handler(frame, decoded.immediate)
        return target


def _before_execution(status: str, code: str) -> ExecutionResult:
    return ExecutionResult(status=status, error=code, error_pc=None, output=b"",
                           state_changes=(), events=(), calls=(), usage=Usage())


def run_entry(execution: "Execution", program: Program, message: Message, limits: Limits,
              tracer: Tracer | None = None) -> ExecutionResult:
    """Stages executing .. result_recorded: run the entry frame of a checked request and
    assemble its result (a failed entry keeps no state change and no event)."""
    entry = Frame(program=program, address=message.to, caller=message.caller,
                  call_data=message.call_data, compute_limit=limits.compute, depth=1,
                  meter=execution.meter, execution=execution)
    outcome = execution.run_frame(entry)
    if tracer is not None and hasattr(tracer, "finish"):
        tracer.finish(outcome, execution.meter)
    succeeded = outcome.status == "success"
    calls = tuple(call for call in execution.calls if call is not None)
    assert len(calls) == len(execution.calls), "every nested call records itself before it returns"
    return ExecutionResult(
        status=outcome.status, error=outcome.error, error_pc=outcome.error_pc,
        output=outcome.output,
        state_changes=execution.journal.changes() if succeeded else (),
        events=tuple(Event(a, t, d) for a, t, d in entry.events) if succeeded else (),
        calls=calls,
        usage=Usage.of(execution.meter, execution.rules))


def execute(state: WorldState, message: Message, context: Context | None = None,
            policy: policy_mod.Policy | None = None, limits: Limits | None = None, *,
            version: str, word_bits: int | None = None,
            tracer: Tracer | None = None) -> ExecutionResult:
    """Run ``message`` against ``state`` under spec version ``version`` and return the result.
    Never raises, except spec.VersionError (a ValueError) for a version that does not exist:
    that is the caller's mistake, not an outcome of the request."""
    rules = rules_of(version, word_bits)
    context, policy, limits = with_defaults(context, policy, limits)
    try:
        try:
            program = admit(state, message, context, policy, limits, rules)
        except VMError as err:
            return _before_execution(err.kind, err.code)
        return run_entry(Execution(state, context, policy, limits, rules, tracer), program,
                         message, limits, tracer)
    except Exception:  # noqa: BLE001 - any escape is an implementation bug, reported as such
        return _before_execution("internal", "INTERNAL_ERROR")
