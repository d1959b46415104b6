"""The reference adapter with one planted cross-call bug in how it carries state from one step
of a scenario to the next (spec chapter 11.9.2): every single call it answers is the
reference's own result, so only a sequence shows the bug.

    python tests/fuzz_fixtures/sequence_bug_adapter.py --bug NAME

  keep-failed-writes   a step that does not succeed still commits the storage writes of its
                       entry frame to the state the next step runs on (a journal that is not
                       rolled back at the top level)
  transient-kept       transient storage (1.1) is not cleared between top-level calls: a step
                       starts with what the previous step's execution left in it
  no-scenario          no bug; the hello does not announce the capability "scenario"
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from conformance.adapter import Adapter  # noqa: E402
from conformance.corpus.vector import error_stage, request_of  # noqa: E402
from conformance.scenario.carry import next_state, step_input  # noqa: E402
from reference_vm.state import Journal  # noqa: E402

JOURNALS: list[Journal] = []          # the journal of the last execution (read after it)
CARRIED: dict[tuple[int, int], int] = {}  # transient storage carried over (transient-kept)
_init = Journal.__init__


def _recording_init(self, pre):
    _init(self, pre)
    JOURNALS[:] = [self]


def _carrying_init(self, pre):
    _init(self, pre)
    for slot, value in CARRIED.items():
        self._set_transient(slot, 0, value)
    JOURNALS[:] = [self]


class SequenceBugAdapter(Adapter):
    name = "sequence-bug"
    bug = "keep-failed-writes"

    def scenario(self, scenario_id: str, scenario_input: Mapping[str, Any]) -> dict[str, Any]:
        state = dict(scenario_input["pre_state"])
        CARRIED.clear()
        Journal.__init__ = _carrying_init if self.bug == "transient-kept" else _recording_init  # type: ignore[method-assign]
        steps = []
        try:
            for step in scenario_input["steps"]:
                version = step["spec_version"]
                request = request_of(step_input(state, step), version)
                JOURNALS.clear()
                result = self.engine(request.state, request.message, request.context, request.policy,
                                     request.limits, version=version).to_json()
                steps.append({"result": result, "stage": error_stage(result["error"], version)})
                journal = JOURNALS[0] if JOURNALS else None
                if self.bug == "transient-kept" and journal is not None:
                    CARRIED.clear()
                    CARRIED.update(journal._transient)
                if self.bug == "keep-failed-writes" and result["status"] != "success" and journal is not None:
                    result = {**result, "state_changes": [
                        {"address": hex(a), "key": hex(k), "after": hex(v)} for (a, k), v in journal._written.items()
                        if hex(a) in state["contracts"]]}
                state = next_state(state, result)
        finally:
            Journal.__init__ = _init  # type: ignore[method-assign]
            CARRIED.clear()
        return {"type": "scenario_result", "id": scenario_id, "steps": steps, "post_state": state}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", choices=("keep-failed-writes", "transient-kept", "no-scenario"), required=True)
    args = parser.parse_args()
    SequenceBugAdapter.bug = args.bug
    if args.bug == "no-scenario":
        SequenceBugAdapter.capabilities = ("trace", "trace_eip3155")
    return SequenceBugAdapter().serve(sys.stdin.buffer, sys.stdout.buffer)


if __name__ == "__main__":
    sys.exit(main())
