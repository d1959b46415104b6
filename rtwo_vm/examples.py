"""Example scenarios: contracts deployed together and a sequence of calls against them.

A scenario file (TOML) holds ``[[scenario]]`` tables, each with ``contracts`` (address ->
{code = file, storage = {key = value}}) and ``[[scenario.call]]`` entries (to, caller,
calldata as hex, and optionally time, seed, compute, memory_pages, storage_units,
time_access, randomness, external_call, storage_access). Each call runs against the state the
previous calls left; only successful calls change it.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from reference_vm import (
    Context, Contract, ExecutionResult, Limits, Message, Policy, WorldState, execute,
)
from rtwo_vm.inputs import CliError, parse_count, parse_hex, parse_word, read_code

POLICY_FIELDS = ("time_access", "randomness", "external_call", "storage_access")
LIMIT_FIELDS = ("compute", "memory_pages", "storage_units")
CALL_FIELDS = {"to", "caller", "calldata", "time", "seed", *POLICY_FIELDS, *LIMIT_FIELDS}


@dataclass
class CallRun:
    scenario: str
    index: int
    message: Message
    result: ExecutionResult


def load_scenarios(path: Path) -> list[dict]:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise CliError(f"cannot read {path}: {err.strerror or err}") from None
    except tomllib.TOMLDecodeError as err:
        raise CliError(f"{path}: {err}") from None
    scenarios = doc.get("scenario")
    if not isinstance(scenarios, list) or not scenarios:
        raise CliError(f"{path}: no [[scenario]] tables")
    return scenarios


def _state(scenario: dict, base: Path) -> WorldState:
    contracts = {}
    for addr_text, body in scenario.get("contracts", {}).items():
        if not isinstance(body, dict) or "code" not in body:
            raise CliError(f"scenario {scenario.get('name')}: contract {addr_text} needs code")
        storage = {parse_word(str(k), "storage key"): parse_word(str(v), "storage value")
                   for k, v in body.get("storage", {}).items()}
        contracts[parse_word(addr_text, "contract address")] = Contract(
            read_code(str(base / body["code"])), storage)
    return WorldState(contracts)


def _call(spec_: dict, name: str) -> tuple[Message, Context, Policy, Limits]:
    unknown = set(spec_) - CALL_FIELDS
    if unknown:
        raise CliError(f"scenario {name}: unknown call field {sorted(unknown)[0]!r}")
    message = Message(parse_word(str(spec_["to"]), "to"),
                      parse_word(str(spec_.get("caller", "0")), "caller"),
                      parse_hex(spec_.get("calldata", "0x"), "calldata"))
    context = Context(parse_word(str(spec_.get("time", "0")), "time"),
                      parse_hex(spec_["seed"], "seed") if "seed" in spec_ else bytes(32))
    policy = Policy(**{f: spec_[f] for f in POLICY_FIELDS if f in spec_})
    limits = Limits(**{f: parse_count(str(spec_[f]), f) for f in LIMIT_FIELDS if f in spec_})
    return message, context, policy, limits


@dataclass
class CallRequest:
    scenario: str
    index: int
    state: WorldState
    message: Message
    context: Context
    policy: Policy
    limits: Limits

    def run(self, limits: Limits | None = None) -> ExecutionResult:
        return execute(self.state, self.message, self.context, self.policy,
                       self.limits if limits is None else limits)


def iter_requests(path: Path):
    """Each call of each scenario with the state it runs against. The caller must send back
    the result of running it (generator.send) so that the next state can be formed."""
    for scenario in load_scenarios(path):
        name = str(scenario.get("name", "?"))
        state = _state(scenario, path.parent)
        for index, call in enumerate(scenario.get("call", []), start=1):
            request = CallRequest(name, index, state, *_call(call, name))
            result = yield request
            if result is not None and result.ok:
                state = state.with_changes(result.state_changes)


def requests_with_results(path: Path) -> list[tuple[CallRequest, ExecutionResult]]:
    out = []
    gen = iter_requests(path)
    try:
        request = next(gen)
        while True:
            result = request.run()
            out.append((request, result))
            request = gen.send(result)
    except StopIteration:
        return out


def run_file(path: Path) -> list[CallRun]:
    return [CallRun(req.scenario, req.index, req.message, result)
            for req, result in requests_with_results(path)]


def run_directory(directory: Path) -> list[CallRun]:
    files = sorted(directory.glob("*.toml"))
    if not files:
        raise CliError(f"no scenario files (*.toml) in {directory}")
    return [run for f in files for run in run_file(f)]
