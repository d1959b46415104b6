"""Step traces as JSON lines, modelled on EIP-3155.

One object per executed instruction, written before it runs: pc, op, opName, immediate (when
the instruction has one), stack (bottom to top, hex words), computeUsed so far, cost (the base
cost about to be charged), memSize in bytes, depth (1 for the entry frame). A final object
gives the entry frame's status, error, output and computeUsed. Keys are sorted and there is no
whitespace, so traces of two conforming implementations can be compared line by line.
"""

from __future__ import annotations

from typing import TextIO

from reference_vm.decode import Decoded
from reference_vm.machine import Frame, Meter
from reference_vm.result import bytes_hex, canonical


class JsonLinesTracer:
    def __init__(self, out: TextIO):
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
