"""A half-finished VM's adapter, for ``rtwo-vm conformance selftest``: it has PUSH1..PUSH32, ADD,
STOP and RETURN, and nothing else.

    python tests/conformance_fixtures/partial_selftest_adapter.py [--wrong-on VECTOR_ID] [--no-id]

It speaks the whole protocol (the reference adapter's handling of every message). An execute
request whose contracts' code holds only those instructions is run on the reference interpreter
(what a correct implementation of them answers); any other is answered with an error
UNSUPPORTED_INPUT naming the first instruction it lacks, in code order (``opcode 0x52 (MSTORE)
not implemented``), or saying that it does not check containers when a code is no valid
container. It claims the capability ``trace`` (and not ``trace_eip3155``).

``--wrong-on VECTOR_ID`` plants one wrong answer: on the input of that corpus vector the output
bytes are wrong (the fixture finds the vector by its input: requests carry opaque ids).
``--no-id`` answers UNSUPPORTED_INPUT without the request's id (``"id": null``): a wrong answer too.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.adapter import Adapter  # noqa: E402

HAVE = {"ADD", "STOP", "RETURN"}


def _key(vector_input: Any) -> str:
    return json.dumps(vector_input, sort_keys=True, separators=(",", ":"))


def missing(vector_input: Mapping[str, Any]) -> str | None:
    """Why this VM cannot run the input (the first instruction it lacks), or None."""
    from reference_vm import container
    from reference_vm.decode import decode
    from reference_vm.rules import rules
    contracts = vector_input["pre_state"]["contracts"]
    for address in sorted(contracts):
        try:
            parsed = container.parse(bytes.fromhex(contracts[address]["code"][2:]), rules("1.0"))
            decoded = decode(parsed.code, rules("1.0").instruction_set(parsed.version))
        except Exception:  # noqa: BLE001 - any code that does not decode
            return f"container checks not implemented (the code of {address} is no valid container)"
        for d in decoded:
            name = d.instruction.mnemonic
            if name not in HAVE and not name.startswith("PUSH"):
                return f"opcode 0x{d.instruction.opcode:02x} ({name}) not implemented"
    return None


class PartialAdapter(Adapter):
    name = "half-finished-vm"
    version = "0.1.0"
    capabilities = ("trace",)
    spec_versions = ("1.0",)          # a VM of 1.0

    def __init__(self, wrong_on: str | None, no_id: bool = False):
        super().__init__()
        self.no_id = no_id
        self.wrong = None
        if wrong_on is not None:
            (target,) = [v for v in store.load(corpus_dir("1.0")) if v["id"] == wrong_on]
            self.wrong = _key(target["input"])

    def execute(self, vector_id, vector_input, trace):
        why = missing(vector_input)
        if why is not None:
            return self.error(None if self.no_id else vector_id, "UNSUPPORTED_INPUT", why)
        reply = super().execute(vector_id, vector_input, trace)
        if self.wrong is not None and _key(vector_input) == self.wrong:
            output = reply["result"]["output"]
            reply["result"]["output"] = "0x00" if output != "0x00" else "0x01"
        return reply


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--wrong-on", default=None, metavar="VECTOR_ID")
    parser.add_argument("--no-id", action="store_true")
    args = parser.parse_args()
    return PartialAdapter(args.wrong_on, args.no_id).serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
