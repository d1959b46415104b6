"""Machine state (spec chapter 2): frames and the resource meters they share."""

from __future__ import annotations

from typing import Any, Callable, Protocol

from reference_vm.validate import ValidCode

# A handler receives the frame and the instruction's immediate. It returns the offset to
# continue at when it transfers control, and None to continue at the next instruction.
Handler = Callable[["Frame", int], "int | None"]


class Prepared(Protocol):
    """The code a frame runs, by what the machine reads of it: reference_vm.program.Program.
    Not imported from there: program.py binds the instruction handlers, which take a Frame."""

    @property
    def code(self) -> ValidCode: ...

    @property
    def data(self) -> bytes: ...

    @property
    def segments(self) -> tuple[Any, ...]: ...   # a reference_vm.program.Segment or None per offset


class Meter:
    """Resource meters of one execution, shared by every frame of it (spec chapter 5).

    Counters only grow. ``pages_live`` is the sum of the memory pages of the frames alive now;
    ``pages_peak`` is its maximum so far, which is the memory usage reported.
    """

    __slots__ = ("compute_used", "pages_live", "pages_peak", "memory_limit",
                 "storage_reads", "storage_writes", "storage_new_slots", "storage_units",
                 "storage_limit")

    def __init__(self, memory_limit: int, storage_limit: int):
        self.compute_used = 0
        self.pages_live = 0
        self.pages_peak = 0
        self.memory_limit = memory_limit
        self.storage_reads = 0
        self.storage_writes = 0
        self.storage_new_slots = 0
        self.storage_units = 0
        self.storage_limit = storage_limit


class Frame:
    """One activation of a contract: its own stack, memory and return stack.

    ``compute_limit`` is the value ``Meter.compute_used`` may reach, not pass, while this frame
    runs; a callee's is never above its caller's.
    """

    __slots__ = ("stack", "memory", "return_stack", "pc", "address", "caller", "call_data",
                 "data", "return_data", "program", "compute_limit", "depth", "events",
                 "meter", "execution", "read_only")

    def __init__(self, *, program: Prepared, address: int, caller: int, call_data: bytes,
                 compute_limit: int, depth: int, meter: Meter, execution: Any,
                 read_only: bool = False):
        self.stack: list[int] = []
        self.memory = bytearray()
        self.return_stack: list[int] = []
        self.pc = 0
        self.address = address
        self.caller = caller
        self.call_data = call_data
        self.data = program.data
        self.return_data = b""
        self.program = program
        self.compute_limit = compute_limit
        self.depth = depth
        self.events: list[tuple[int, tuple[int, ...], bytes]] = []
        self.meter = meter
        self.execution = execution
        self.read_only = read_only      # from 1.1: under a STATICCALL (spec 2.4)
