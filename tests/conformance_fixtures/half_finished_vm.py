"""A half-finished VM behind a real adapter (issue 23): what a team has after its first day.

    python tests/conformance_fixtures/half_finished_vm.py

It speaks protocol version 1 (spec chapter 11.5) and implements only PUSH1..PUSH32, ADD, STOP
and RETURN; it checks containers (with the reference's parser) before anything else. Every other opcode is answered with an error
UNSUPPORTED_INPUT naming it (``opcode 0x30 at offset 12 not implemented``), and so is an
allowed_operations list (``policy allowed_operations not implemented``). Its one bug: it does
not meter compute, so a program that should run out of compute runs as if its compute limit
were the largest one (a wrong answer, never an unsupported one).

Programs it supports are executed by the reference interpreter (this fixture is about what
the runner does with a partial VM, not about writing a VM).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import spec  # noqa: E402
from conformance.adapter import Adapter, main  # noqa: E402
from reference_vm import container  # noqa: E402
from reference_vm.errors import InvalidCode  # noqa: E402
from reference_vm.rules import rules  # noqa: E402

TABLE = spec.load("1.0")           # a VM of 1.0
IMPLEMENTED = {i.opcode for i in TABLE.instructions
               if i.mnemonic.startswith("PUSH") or i.mnemonic in ("ADD", "STOP", "RETURN")}
LARGEST_COMPUTE = TABLE.limits["maximum"]["compute"]


def first_lacking(code: bytes, implemented: set[int] = IMPLEMENTED) -> str | None:
    """The message for the first opcode of a code section a VM implementing ``implemented``
    lacks (None: all known)."""
    pc = 0
    while pc < len(code):
        op = code[pc]
        ins = TABLE.by_opcode.get(op)
        if ins is None:
            return None          # an undefined byte: the container is invalid, which it handles
        if op not in implemented:
            return f"opcode 0x{op:02X} at offset {pc} not implemented"
        pc += ins.size
    return None


class HalfFinishedVM(Adapter):
    name = "half-finished-vm"
    version = "0.1.0"
    capabilities = ()
    spec_versions = ("1.0",)

    def execute(self, vector_id: str, vector_input: Mapping[str, Any], trace: bool) -> dict[str, Any]:
        if vector_input["policy"].get("allowed_operations") is not None:
            return self.error(vector_id, "UNSUPPORTED_INPUT", "policy allowed_operations not implemented")
        for body in vector_input["pre_state"]["contracts"].values():
            try:
                code = container.parse(bytes.fromhex(body["code"][2:]), rules("1.0")).code
            except InvalidCode:
                continue         # the container checks come first, and those it has
            message = first_lacking(code)
            if message:
                return self.error(vector_id, "UNSUPPORTED_INPUT", message)
        reply = super().execute(vector_id, vector_input, trace)
        if reply["result"]["error"] == "COMPUTE_LIMIT_EXCEEDED":
            # The bug: no compute metering.
            unmetered = dict(vector_input, sandbox=dict(vector_input["sandbox"], limits=dict(
                vector_input["sandbox"]["limits"], compute=LARGEST_COMPUTE)))
            reply = super().execute(vector_id, unmetered, trace)
        return reply


if __name__ == "__main__":
    sys.exit(main([], HalfFinishedVM()))
