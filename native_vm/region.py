"""A compiled native region, called like a compiled_vm region: ``region(frame, stack, meter,
limit)`` returns the offset to continue at, or ``~pc`` to have the interpreter run the segment
at pc (an aggregate check failed, or a counted loop spent its budget).

A call checks the region's stack need and peak against the frame's stack, moves the top
``need`` items into the window, fills the context from the frame (only what the code reads),
and calls the machine code. At its exit the meter is written back and the items it left are
pushed back onto the frame's stack, so stack, meter and pc are exactly the reference's at that
instruction boundary. A RUN exit runs the instruction's reference handler on the frame (it
charges its own cost rule and may raise, ending the frame as the reference would) and then
either enters the machine code again at the exit's resume site or continues at the handler's
target. Nothing in the machine code calls back into Python: memory is never resized while it
runs, and no exception crosses it.

The memory address handed to the machine code is taken afresh on every entry (memory only
grows, through handlers, between entries); call data is an immutable ``bytes``.
"""

from __future__ import annotations

import ctypes
import threading

import spec
from native_vm.abi import CTX, CTX_SIZE, GOTO, INTERPRET, Exit
from native_vm.plan import Plan

# The window holds a region's need + peak items, at most its version's stack depth (plan.py):
# sized for the deepest stack of every version there is.
WINDOW = max(spec.load(v.version).limits["machine"]["stack_depth"] for v in spec.versions())

FUNCTION = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_void_p)
_char = ctypes.c_char
_addressof = ctypes.addressof
USED, LIMIT, RESUME = CTX["used"], CTX["limit"], CTX["resume"]
MEMORY, MEMORY_SIZE = CTX["memory"], CTX["memory_size"]
CALL_DATA, CALL_DATA_SIZE = CTX["call_data"], CTX["call_data_size"]
CALLER, ADDRESS = CTX["caller"], CTX["address"]
DATA_SIZE, RETURN_DATA_SIZE = CTX["data_size"], CTX["return_data_size"]


class Buffers:
    """The context and the stack window of one thread (its executions and their frames take
    turns: machine code never runs two regions at once on a thread, and never calls back)."""

    __slots__ = ("ctx", "window", "ctx_address", "window_address")

    def __init__(self) -> None:
        self.ctx = (ctypes.c_int64 * CTX_SIZE)()
        self.window = (ctypes.c_uint64 * WINDOW)()
        self.ctx_address = _addressof(self.ctx)
        self.window_address = _addressof(self.window)


_local = threading.local()


def thread_buffers() -> Buffers:
    try:
        return _local.buffers
    except AttributeError:
        _local.buffers = Buffers()
        return _local.buffers


def _call_data_address(data: bytes) -> int:
    return ctypes.cast(ctypes.c_char_p(data), ctypes.c_void_p).value or 0


class NativeRegion:
    """The machine code of one region and what the engine needs to run it."""

    __slots__ = ("tracker", "function", "exits", "need", "peak", "bail", "memory", "call_data",
                 "frame_reads", "return_data", "size", "head", "counted", "installs",
                 "generation", "stack_depth", "__weakref__")

    def __init__(self, plan: Plan, lowered, tracker, address: int, generation: int = 0):
        self.tracker = tracker             # keeps the code alive
        self.generation = generation       # the LLJIT that holds the code (jit.py)
        self.function = FUNCTION(address)
        self.exits: tuple[Exit, ...] = lowered.exits
        region = plan.region
        self.need, self.peak = region.need, region.peak
        self.stack_depth = plan.rules.stack_depth
        self.head = plan.head
        self.bail = ~plan.head
        self.counted = plan.counted
        reads = lowered.reads
        self.memory = bool(reads & {"memory", "memory_size"})
        self.call_data = bool(reads & {"call_data", "call_data_size"})
        self.frame_reads = bool(reads & {"caller", "address", "data_size"})
        self.return_data = "return_data_size" in reads
        self.size = lowered.size
        self.installs: list = []           # (profile reference, head) where it is installed

    def fill(self, ctx, frame, meter) -> None:
        ctx[USED] = meter.compute_used
        ctx[LIMIT] = frame.compute_limit
        if self.memory:
            memory = frame.memory
            size = len(memory)
            ctx[MEMORY_SIZE] = size
            ctx[MEMORY] = _addressof(_char.from_buffer(memory)) if size else 0
        if self.call_data:
            data = frame.call_data
            ctx[CALL_DATA_SIZE] = len(data)
            ctx[CALL_DATA] = _call_data_address(data)
        if self.frame_reads:
            ctx[CALLER] = frame.caller
            ctx[ADDRESS] = frame.address
            ctx[DATA_SIZE] = len(frame.data)
        if self.return_data:
            ctx[RETURN_DATA_SIZE] = len(frame.return_data)

    def __call__(self, frame, stack, meter, limit) -> int:
        n = len(stack)
        need = self.need
        if n < need or n + self.peak > self.stack_depth:
            return self.bail
        buffers = thread_buffers()
        ctx, window = buffers.ctx, buffers.window
        ctx_address, window_address = buffers.ctx_address, buffers.window_address
        if need:
            window[:need] = stack[n - need:]
            del stack[n - need:]
        resume = 0
        function, exits = self.function, self.exits
        while True:
            self.fill(ctx, frame, meter)
            ctx[RESUME] = resume
            exit = exits[function(ctx_address, window_address)]
            meter.compute_used = ctx[USED]
            height = exit.height
            if height:
                stack += window[:height]
            kind = exit.kind
            if kind == GOTO:
                return exit.target
            if kind == INTERPRET:
                return ~exit.target
            frame.pc = exit.pc
            target = exit.handler(frame, exit.immediate)
            resume = exit.resume
            if not resume:
                return exit.target if target is None else target
            height = exit.resume_height
            if height:
                n = len(stack)
                window[:height] = stack[n - height:]
                del stack[n - height:]
