"""Step traces as JSON lines: the native format, and the EIP-3155 form goevmlab-style tools read.

Native (``JsonLinesTracer``): one object per executed instruction, written before it runs: pc,
op, opName, immediate (when the instruction has one), stack (bottom to top, hex words),
computeUsed so far, cost (the base cost about to be charged), memSize in bytes, depth (1 for
the entry frame). A final object gives the entry frame's status, error, output and
computeUsed. Keys are sorted and there is no whitespace, so traces of two conforming
implementations can be compared line by line. A result decided before execution (invalid,
rejected, violation) has an empty trace: no instruction ran (spec chapter 11.5.5).

EIP-3155 (``Eip3155Tracer``): the same steps under the field names of EIP-3155, with compute
in the place of gas:

    EIP-3155   RTWO                                          type
    pc         pc (byte offset in the code section)          number
    op         opcode                                        number
    opName     mnemonic                                      string
    gas        compute left to the frame: its compute limit  hex string
               minus the compute used so far
    gasCost    the instruction's base cost (a cost rule's    hex string
               dynamic part is charged by the handler)
    memSize    memory size in bytes                          number
    stack      bottom to top, hex words                      array of hex strings
    depth      call depth, 1 for the entry frame             number
    refund     always 0 (RTWO has no refunds)                number

and one summary line: output (hex without 0x, as geth prints it), gasUsed (hex: compute used
by the whole execution), pass (true exactly when the entry frame succeeded), error (the spec
outcome code, present only when there is one). There is no state root (RTWO has no Merkle
state) and no time (traces are deterministic).
"""

from __future__ import annotations

from typing import Protocol

from reference_vm.decode import Decoded
from reference_vm.machine import Frame, Meter
from reference_vm.result import bytes_hex, canonical

FORMATS = ("native", "eip3155")


class TextSink(Protocol):
    """Where a trace is written: a text file, an io.StringIO, the CLI's --trace file."""

    def write(self, text: str, /) -> object: ...


class JsonLinesTracer:
    def __init__(self, out: TextSink):
        self.out = out
        self.steps = 0

    def step(self, frame: Frame, decoded: Decoded) -> None:
        ins = decoded.instruction
        line = {"pc": decoded.offset, "op": ins.opcode, "opName": ins.mnemonic,
                "stack": [hex(v) for v in frame.stack], "computeUsed": frame.meter.compute_used,
                "cost": ins.cost, "memSize": len(frame.memory), "depth": frame.depth}
        if ins.immediate_size:
            line["immediate"] = hex(decoded.immediate)
        self.out.write(canonical(line) + "\n")
        self.steps += 1

    def finish(self, outcome, meter: Meter) -> None:
        self.out.write(canonical({"status": outcome.status, "error": outcome.error,
                                  "output": bytes_hex(outcome.output),
                                  "computeUsed": meter.compute_used}) + "\n")


class Eip3155Tracer(JsonLinesTracer):
    """The EIP-3155 form of the trace (the mapping is in this module's docstring)."""

    def step(self, frame: Frame, decoded: Decoded) -> None:
        ins = decoded.instruction
        used = frame.meter.compute_used
        line = {"pc": decoded.offset, "op": ins.opcode, "opName": ins.mnemonic,
                "gas": hex(frame.compute_limit - used), "gasCost": hex(ins.cost),
                "memSize": len(frame.memory), "stack": [hex(v) for v in frame.stack],
                "depth": frame.depth, "refund": 0}
        self.out.write(canonical(line) + "\n")
        self.steps += 1

    def finish(self, outcome, meter: Meter) -> None:
        line = {"output": outcome.output.hex(), "gasUsed": hex(meter.compute_used),
                "pass": outcome.status == "success"}
        if outcome.error is not None:
            line["error"] = outcome.error
        self.out.write(canonical(line) + "\n")


def tracer_for(trace_format: str, out: TextSink) -> JsonLinesTracer:
    """The tracer of a format named in FORMATS."""
    return Eip3155Tracer(out) if trace_format == "eip3155" else JsonLinesTracer(out)
