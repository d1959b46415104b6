"""The interface between the generated machine code and the engine (no LLVM needed to read it).

The function is ``i64 region(ptr ctx, ptr window)``. ``ctx`` holds the frame's values as
64-bit words at the indices ``CTX``; ``window`` holds the region's top stack items, one 64-bit
word each, bottom first. The function returns the index of the exit it took; ``Exit`` says
what that exit means, all of it fixed when the code was generated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

FIELDS = ("used", "limit", "memory", "memory_size", "call_data", "call_data_size", "caller",
          "address", "data_size", "return_data_size", "resume")
CTX = {name: i for i, name in enumerate(FIELDS)}
CTX_SIZE = len(FIELDS)
GOTO, INTERPRET, RUN = 0, 1, 2     # exit kinds


@dataclass(frozen=True)
class Exit:
    """One exit of the generated code. GOTO: continue at ``target``. INTERPRET: run the
    segment at ``target`` through the interpreter. RUN: run the instruction at ``pc`` through
    ``handler`` (the code charged its segment already), then enter again at ``resume`` (with
    ``resume_height`` items) or, when it is 0, continue at the handler's target or ``target``
    (the segment's end)."""

    kind: int
    height: int
    target: int
    pc: int = 0
    handler: Callable | None = None
    immediate: int = 0
    resume: int = 0
    resume_height: int = 0
