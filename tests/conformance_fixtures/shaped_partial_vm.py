"""A partial VM of a chosen shape behind a real adapter (issue 39): the triage's test subject.

    python tests/conformance_fixtures/shaped_partial_vm.py [--implement M,M,...] [--validate] [--policy]

It speaks protocol version 1 and implements spec 1.0's request checks, the instructions named
by ``--implement`` (``PUSH*`` for every PUSHn), container validation with ``--validate`` and
policy binding with ``--policy``. An input that needs anything else is answered with an error
UNSUPPORTED_INPUT naming the first thing it lacks: ``container validation not implemented``,
``policy binding not implemented`` (an allowed or forbidden list, or a refused program),
``opcode 0x30 at offset 12 not implemented`` (the first instruction of a contract's code
that it lacks, whether or not it would run: it decodes every code before running it), and
with ``--no-metering`` ``compute metering not implemented`` for a run that exhausts its compute.

What it supports is answered by the reference interpreter (the fixture is about what the
runner reports of a partial VM, not about writing a VM): it has no bug.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import spec  # noqa: E402
from conformance.adapter import Adapter, main  # noqa: E402
from reference_vm import container  # noqa: E402
from reference_vm.errors import InvalidCode  # noqa: E402
from reference_vm.rules import rules  # noqa: E402
from half_finished_vm import first_lacking  # noqa: E402 - the same decoding of what a VM lacks

TABLE = spec.load("1.0")


class ShapedVM(Adapter):
    name = "shaped-partial-vm"
    version = "0.1.0"
    capabilities = ()
    spec_versions = ("1.0",)

    def __init__(self, implemented: set[int], validate: bool, policy: bool, meter: bool = True) -> None:
        super().__init__()
        self.implemented, self.validate, self.policy, self.meter = implemented, validate, policy, meter

    def execute(self, vector_id: str, vector_input: Mapping[str, Any], trace: bool) -> dict[str, Any]:
        reply = super().execute(vector_id, vector_input, trace)
        if reply.get("type") != "result":
            return reply
        status = reply["result"]["status"]
        if status == "rejected":
            return reply                     # the request checks: implemented
        if status == "invalid" or any(c.get("status") == "invalid" for c in reply["result"]["calls"]):
            if not self.validate:
                return self.error(vector_id, "UNSUPPORTED_INPUT", "container validation not implemented")
        given = vector_input["policy"]
        if not self.policy and (status == "violation" or given.get("allowed_operations") is not None
                                or given.get("forbidden_operations")):
            return self.error(vector_id, "UNSUPPORTED_INPUT", "policy binding not implemented")
        if status in ("invalid", "violation"):
            return reply                     # decided before anything runs
        for body in vector_input["pre_state"]["contracts"].values():
            try:
                code = container.parse(bytes.fromhex(body["code"][2:]), rules("1.0")).code
            except InvalidCode:
                continue
            message = first_lacking(code, self.implemented)
            if message:
                return self.error(vector_id, "UNSUPPORTED_INPUT", message)
        if not self.meter and reply["result"]["error"] == "COMPUTE_LIMIT_EXCEEDED":
            return self.error(vector_id, "UNSUPPORTED_INPUT", "compute metering not implemented")
        return reply


def shaped(argv: list[str]) -> ShapedVM:
    p = argparse.ArgumentParser()
    p.add_argument("--implement", default="")
    p.add_argument("--validate", action="store_true")
    p.add_argument("--policy", action="store_true")
    p.add_argument("--no-metering", action="store_true")
    args = p.parse_args(argv)
    names = {n for n in args.implement.split(",") if n}
    implemented = {i.opcode for i in TABLE.instructions
                   if i.mnemonic in names or ("PUSH*" in names and i.mnemonic.startswith("PUSH"))}
    return ShapedVM(implemented, args.validate, args.policy, not args.no_metering)


if __name__ == "__main__":
    sys.exit(main([], shaped(sys.argv[1:])))
