"""Running a scenario input (chapter 11.9) on an engine or through the runtime.

An engine (the reference, compiled_vm, native_vm: one signature, conformance.scenario.carry's
driver) runs the steps directly, the state carried by 11.9.2. The runtime runs them as a
platform would: the pre-state's contracts deployed into a fresh database, each step an
invocation through the ten lifecycle stages (its policy a determinism policy record, its
sandbox the isolation level, storage access and limits of the call), the state carried by
the database; the post-state is then read back from it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from conformance.corpus.vector import error_stage, parse_bytes, parse_word
from conformance.scenario.carry import run_steps
from rtwo_vm.arguments.inputs import CliError

# --engine -> the runtime's execution mode (sandbox.toml enumerations.execution_mode)
MODES = {"reference": "reference_interpreter", "compiled": "compiled_engine",
         "native": "native_engine"}


@dataclass
class Run:
    """What running a scenario gave: each step's result (canonical JSON) and stage, the state
    after the last step, and the runtime's context id of each step (runtime runs only)."""

    results: list[dict[str, Any]]
    stages: list[str | None]
    post_state: dict[str, Any]
    contexts: list[str] | None = None


def on_engine(scenario_input: Mapping[str, Any], engine) -> Run:
    run = run_steps(scenario_input, engine)
    return Run(list(run.results), list(run.stages), run.post_state)


def _single_version(scenario_input: Mapping[str, Any]) -> str:
    versions = {step["spec_version"] for step in scenario_input["steps"]}
    if len(versions) != 1:
        raise CliError("the runtime runs a contract's calls under the version it was deployed "
                       f"under: a scenario whose steps change version ({', '.join(sorted(versions))}) "
                       "runs on an engine only")
    return versions.pop()


def on_runtime(scenario_input: Mapping[str, Any], db: str | None, engine: str) -> Run:
    """Deploy the pre-state into a new runtime database (``db``, else one in memory) and run
    every step through the runtime. A database this run created is removed again when the
    run fails, so nothing half-made is left."""
    version = _single_version(scenario_input)
    if db is not None and (os.path.lexists(db) or os.path.lexists(db + "-wal")):
        raise CliError(f"{db}: exists; scenario run --runtime deploys its contracts into a new database")
    from rtwo_vm.runtime import CallRequest, Runtime
    from rtwo_vm.runtime.store import StoreError
    from reference_vm import Limits
    try:
        runtime = Runtime(db if db is not None else ":memory:", create=True)
    except StoreError as err:
        raise CliError(str(err).splitlines()[0]) from None
    done = False
    try:
        contracts = scenario_input["pre_state"]["contracts"]
        for address, body in contracts.items():
            runtime.deploy(parse_bytes(body["code"]), parse_word(address),
                           {parse_word(k): parse_word(v) for k, v in body["storage"].items()},
                           validate_code=False, spec_version=version)
        results, stages, ids = [], [], []
        for step in scenario_input["steps"]:
            policy, sandbox = step["policy"], step["sandbox"]
            record = runtime.policies.create(
                time_access=policy["time_access"], randomness=policy["randomness"],
                external_call=policy["external_call"],
                allowed_operations=policy["allowed_operations"],
                forbidden_operations=tuple(policy["forbidden_operations"]))
            recorded = runtime.call(CallRequest(
                to=parse_word(step["message"]["to"]), caller=parse_word(step["message"]["caller"]),
                call_data=parse_bytes(step["message"]["call_data"]),
                block_time=parse_word(step["context"]["block_time"]),
                random_seed=parse_bytes(step["context"]["random_seed"]),
                policy_id=record.policy_id, isolation_level=sandbox["isolation_level"],
                storage_access=sandbox["storage_access"], limits=Limits(**sandbox["limits"]),
                execution_mode=MODES[engine]))
            result = recorded.result.compared
            results.append(result)
            stages.append(error_stage(result["error"], version))
            ids.append(recorded.context.context_id)
        post: dict[str, Any] = {"contracts": {}}
        for address, body in contracts.items():
            held = runtime.contract(parse_word(address))
            storage = held.get("storage", {})
            post["contracts"][address] = {
                "code": body["code"],
                "storage": dict(sorted(storage.items(), key=lambda kv: int(kv[0], 16)))}
        done = True
        return Run(results, stages, post, ids)
    finally:
        runtime.close()
        if not done and db is not None:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(db + suffix).unlink(missing_ok=True)


def differences(expected_results: list[Mapping[str, Any]], expected_post: Mapping[str, Any],
                got: Run) -> list[str]:
    """Where ``got`` differs from the expected results (11.9.3): the first divergent step
    (its index from 0), else the post-state."""
    for index, (want, have) in enumerate(zip(expected_results, got.results)):
        if want != have:
            fields = [k for k in want if want.get(k) != have.get(k)]
            return [f"step {index} diverges ({', '.join(fields)}): expected "
                    f"{_brief(want)}, got {_brief(have)}"]
    if len(expected_results) != len(got.results):
        return [f"{len(got.results)} results for {len(expected_results)} steps"]
    if expected_post != got.post_state:
        return ["every step agrees; the state after the last step does not"]
    return []


def _brief(result: Mapping[str, Any]) -> str:
    out = result.get("status", "?")
    if result.get("error"):
        out += f" {result['error']}"
    return f"{out}, output {str(result.get('output'))[:40]}, fee {result.get('fee')}"
