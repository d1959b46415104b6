"""An implementation written to pass: it answers requests it recognises from the published
corpus with the stored result, and runs an engine with one narrow bug on everything else.

    python tests/conformance_fixtures/lookup_adapter.py --bug depth3-compute [--match normalised]

--match exact        answers a request whose input is byte for byte a corpus input (the
                     measured cheat of issue 20)
--match normalised   answers a request recognise.Recogniser traces back to a corpus vector,
                     with the stored result's addresses moved as the request's were (a
                     lookup that knows the blinding)
--match none         never looks anything up (the engine alone)

Bugs of the engine (the reference interpreter, its result changed afterwards):
  depth3-compute   compute of every call record at depth >= 3 one unit more
  depth-success    a call record failing with CALL_DEPTH_EXCEEDED reported as a success
  rstack-as-stack  RETURN_STACK_OVERFLOW reported as STACK_OVERFLOW (result and call records)
  none             no bug
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from conformance.constants import corpus_dir  # noqa: E402
from conformance.corpus import store  # noqa: E402
from conformance.adapter import Adapter  # noqa: E402
from recognise import Recogniser, exact_key, moved  # noqa: E402

BUGS = ("depth3-compute", "depth-success", "rstack-as-stack", "none")


def planted(bug: str, result: dict) -> dict:
    if bug == "depth3-compute":
        for call in result["calls"]:
            if call["depth"] >= 3:
                call["compute"] += 1
    elif bug == "depth-success":
        for call in result["calls"]:
            if call["error"] == "CALL_DEPTH_EXCEEDED":
                call["status"], call["error"] = "success", None
    elif bug == "rstack-as-stack":
        for record in [result, *result["calls"]]:
            if record["error"] == "RETURN_STACK_OVERFLOW":
                record["error"] = "STACK_OVERFLOW"
    return result


class LookupAdapter(Adapter):
    name = "lookup-vm"
    version = "0.1"
    capabilities = ()
    spec_versions = ("1.0",)          # written for 1.0: it knows the 1.0 corpus

    def __init__(self, bug: str, match: str):
        super().__init__()
        self.bug, self.match = bug, match
        vectors = store.load(corpus_dir("1.0")) if match != "none" else []
        self.exact = {exact_key(v["input"]): v for v in vectors}
        self.recogniser = Recogniser(vectors) if match == "normalised" else None
        self.looked_up = 0

    def execute(self, vector_id, vector_input, trace):
        found = self.exact.get(exact_key(vector_input))
        mapping: dict[int, int] = {}
        if found is None and self.recogniser is not None:
            hit = self.recogniser.find(vector_input)
            if hit is not None:
                found, mapping = hit
        if found is not None:
            self.looked_up += 1
            return {"type": "result", "id": vector_id, "result": moved(found["expected"]["result"], mapping),
                    "stage": found["expected"]["error_stage"]}
        reply = super().execute(vector_id, vector_input, False)
        reply["result"] = planted(self.bug, reply["result"])
        return reply


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", choices=BUGS, required=True)
    parser.add_argument("--match", choices=("exact", "normalised", "none"), default="exact")
    args = parser.parse_args()
    return LookupAdapter(args.bug, args.match).serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
