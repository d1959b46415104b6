"""The reference adapter with one bug in how it carries state across the steps of a scenario
(spec chapter 11.9.2), run as a real adapter process. Single calls are the reference's own:
every bug shows in scenarios only.

    python tests/conformance_fixtures/scenario_bug_adapter.py --bug BUG

  transient-between-steps  one transient map for all the steps of a scenario (Journal.__init__
                           planted to use it): what a step wrote is there when the next starts
  keeps-failed-writes      a step that does not succeed still has its storage writes applied to
                           the carried state (every SSTORE of the step recorded, Journal.store
                           planted)
  reverse-order            the state before a step is the pre-state with the earlier steps' state
                           changes applied last step first (and so is the post-state)
  no-carry                 every step runs on the scenario's pre-state; the post-state is the
                           pre-state with every step's changes applied in order
  no-capability            the hello announces no "scenario" capability (scenarios are
                           answered UNSUPPORTED_INPUT, as 11.9.4 says)
  misbehaves               the process dies (exit status 70) on a scenario of 5 steps and answers
                           one of 6 steps with a line of 64 MiB (a flood); the rest is right
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any, Mapping

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planting import plant  # noqa: E402

BUGS = ("transient-between-steps", "keeps-failed-writes", "reverse-order", "no-carry", "no-capability", "misbehaves")


class _Setter:
    @staticmethod
    def setattr(owner, name, value) -> None:
        setattr(owner, name, value)


def _install(bug: str) -> None:
    from reference_vm import state
    if bug == "transient-between-steps":
        state._SHARED = None          # type: ignore[attr-defined]  # the scenario's one transient map
        plant(_Setter, state.Journal, "__init__", "self._transient: dict[tuple[int, int], int] = {}",
              "self._transient = _SHARED if _SHARED is not None else {}")
    elif bug == "keeps-failed-writes":
        state._WRITES = []            # type: ignore[attr-defined]  # every SSTORE of the running step
        plant(_Setter, state.Journal, "store", "slot = (address, key)",
              "slot = (address, key)\n    _WRITES.append((address, key, value))")


def _apply(state: Mapping[str, Any], writes) -> dict[str, Any]:
    """``state`` with (address, key, value) writes applied in order (0 removes a slot)."""
    from conformance.scenario.carry import next_state
    changes = [{"address": hex(a), "key": hex(k), "after": hex(v)} for a, k, v in writes
               if hex(a) in state["contracts"]]
    return next_state(state, {"state_changes": changes})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bug", choices=BUGS, required=True)
    bug = parser.parse_args().bug
    _install(bug)
    from conformance.adapter import Adapter, main as serve
    from conformance.corpus.vector import error_stage, request_of
    from conformance.scenario.carry import next_state, step_input
    from reference_vm import state
    vm_state: Any = state          # with the planted module globals _SHARED and _WRITES

    class Buggy(Adapter):
        def step(self, state, step) -> dict[str, Any]:
            version = step["spec_version"]
            request = request_of(step_input(state, step), version)
            return self.engine(request.state, request.message, request.context, request.policy,
                               request.limits, version=version).to_json()

        def scenario(self, scenario_id: str, scenario_input: Mapping[str, Any]) -> dict[str, Any]:
            if bug == "misbehaves" and len(scenario_input["steps"]) == 5:
                print("dying on a scenario of 5 steps", file=sys.stderr, flush=True)
                os._exit(70)
            if bug == "misbehaves" and len(scenario_input["steps"]) == 6:
                out = sys.stdout.buffer
                out.write(b'{"type":"scenario_result","id":"' + scenario_id.encode() + b'","junk":"')
                for _ in range(64):
                    out.write(b"x" * (1 << 20))
                out.write(b'"}\n')
                out.flush()
                return None         # type: ignore[return-value]  # already answered (a flood)
            pre = scenario_input["pre_state"]
            state, results, done = pre, [], []
            if bug == "transient-between-steps":
                vm_state._SHARED = {}
            for step in scenario_input["steps"]:
                if bug == "keeps-failed-writes":
                    vm_state._WRITES.clear()
                result = self.step(pre if bug == "no-carry" else state, step)
                results.append(result)
                done.append(result)
                if bug == "reverse-order":
                    state = pre
                    for earlier in reversed(done):
                        state = next_state(state, earlier)
                elif bug == "keeps-failed-writes" and result["status"] != "success":
                    state = _apply(state, vm_state._WRITES)
                else:
                    state = next_state(state, result)
            if bug == "transient-between-steps":
                vm_state._SHARED = None
            return {"type": "scenario_result", "id": scenario_id,
                    "steps": [{"result": r, "stage": error_stage(r["error"], s["spec_version"])}
                              for r, s in zip(results, scenario_input["steps"])],
                    "post_state": state}

    adapter = Buggy()
    adapter.name = f"scenario-bug-{bug}"
    if bug == "no-capability":
        adapter.capabilities = tuple(c for c in adapter.capabilities if c != "scenario")
    return serve([], adapter)


if __name__ == "__main__":
    sys.exit(main())
