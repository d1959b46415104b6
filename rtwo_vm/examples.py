"""Example scenarios: contracts deployed together and a sequence of calls against them.

A scenario file (TOML) holds ``[[scenario]]`` tables, each with ``contracts`` (address ->
{code = file, storage = {key = value}}) and ``[[scenario.call]]`` entries (to, caller,
calldata as hex or as a list of words, each little-endian, and optionally time, seed,
compute, memory_pages, storage_units, time_access, randomness, external_call,
storage_access, allowed_operations, forbidden_operations, spec_version). A scenario may name
the spec version it runs under (``spec_version = "1.1"``; default: the version the command
was given), which also assembles its ``.rasm`` contracts; a call may name a later version (an
upgrade on one state: versions never decrease along the calls). A scenario may also have a
``description`` and an ``id`` (``rtwo-vm scenario run`` names its vector by them). Each call
runs against the state the previous calls left; only successful calls change it.
"""

from __future__ import annotations

import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reference_vm import (
    Context, Contract, ExecutionResult, Limits, Message, Policy, WorldState, execute,
)
import spec
from rtwo_vm.arguments.inputs import CliError, parse_count, parse_hex, parse_word, read_bounded, read_code

POLICY_FIELDS = ("time_access", "randomness", "external_call", "storage_access")
LIMIT_FIELDS = ("compute", "memory_pages", "storage_units")
OPERATION_FIELDS = ("allowed_operations", "forbidden_operations")
CALL_FIELDS = {"to", "caller", "calldata", "time", "seed", "spec_version", *POLICY_FIELDS,
               *LIMIT_FIELDS, *OPERATION_FIELDS}
MAX_WORDS = 8192            # words of call data written as a list (64 KiB of 64-bit words)
MAX_SCENARIO_FILE = 16 * 1024 * 1024


def bundled_directory() -> Path:
    """The example scenarios installed with the package: the checkout's examples/ beside the
    package (a source or editable install), else the copy a wheel installs under
    <prefix>/share/rtwo-vm/examples (pyproject data-files)."""
    beside = Path(__file__).resolve().parent.parent / "examples"
    if (beside / "scenarios.toml").is_file():
        return beside
    return Path(sys.prefix) / "share" / "rtwo-vm" / "examples"


def _text(value: Any, what: str) -> str:
    """A scenario value that is a number or a string, as text (anything else refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise CliError(f"{what} must be a number or a string, got {type(value).__name__}")
    return str(value)


def _table(value: Any, what: str) -> dict:
    if not isinstance(value, dict):
        raise CliError(f"{what} must be a table")
    return value


@dataclass
class CallRun:
    scenario: str
    index: int
    message: Message
    result: ExecutionResult


def load_scenarios(path: Path) -> list[dict]:
    blob = read_bounded(str(path), MAX_SCENARIO_FILE, "a scenario file may hold")
    try:
        doc = tomllib.loads(blob.decode("utf-8"))
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    except (tomllib.TOMLDecodeError, RecursionError) as err:
        raise CliError(f"{path}: {str(err).splitlines()[0] if str(err) else 'not valid TOML'}") from None
    scenarios = doc.get("scenario")
    if not isinstance(scenarios, list) or not scenarios:
        raise CliError(f"{path}: no [[scenario]] tables")
    for scenario in scenarios:
        _table(scenario, f"{path}: each [[scenario]]")
        name = str(scenario.get("name", "?"))[:40]
        _table(scenario.get("contracts", {}), f"{path}: scenario {name}: contracts")
        calls = scenario.get("call", [])
        if not isinstance(calls, list):
            raise CliError(f"{path}: scenario {name}: call must be [[scenario.call]] tables")
        for call in calls:
            _table(call, f"{path}: scenario {name}: each [[scenario.call]]")
            if "to" not in call:
                raise CliError(f"{path}: scenario {name}: a call needs \"to\"")
    return scenarios


def _version(scenario: dict, default: str) -> str:
    """The scenario's spec version (a known one), else ``default``."""
    name = scenario.get("spec_version", default)
    try:
        return spec.version(name).version
    except ValueError as err:
        raise CliError(f"scenario {str(scenario.get('name', '?'))[:40]}: {err}") from None


def _state(scenario: dict, base: Path, version: str) -> WorldState:
    contracts = {}
    name = str(scenario.get("name", "?"))[:40]
    for addr_text, body in scenario.get("contracts", {}).items():
        if not isinstance(body, dict) or not isinstance(body.get("code"), str):
            raise CliError(f"scenario {name}: contract {addr_text[:40]} needs code (a file name)")
        storage_doc = _table(body.get("storage", {}), f"scenario {name}: storage of {addr_text[:40]}")
        storage = {parse_word(str(k), "storage key"): parse_word(_text(v, "storage value"), "storage value")
                   for k, v in storage_doc.items()}
        contracts[parse_word(addr_text, "contract address")] = Contract(
            read_code(str(base / body["code"]), version), storage)
    return WorldState(contracts)


def _call_data(value: Any, what: str, version: str) -> bytes:
    """Call data written as hex text, or as a list of words (numbers or strings), each encoded
    little-endian in the word size of ``version`` (chapter 6: CALLDATALOAD reads words so)."""
    if isinstance(value, list):
        if len(value) > MAX_WORDS:
            raise CliError(f"{what} holds more than {MAX_WORDS} words")
        from rtwo_vm.arguments.words import encode_words
        # Numbers as written in TOML, strings by the grammar of --calldata-words (decimal or
        # 0x-hex: no sign, no 0b, no underscores).
        return encode_words([str(w) if type(w) is int else _text(w, what) for w in value],
                            what, version)
    return parse_hex(_text(value, what), what)


def _operations(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value) or len(value) > 256:
        raise CliError(f"{what} must be a list of at most 256 mnemonics or instruction types")
    return tuple(value)


def _call(spec_: dict, name: str, version: str = spec.latest()) -> tuple[Message, Context, Policy, Limits]:
    unknown = set(spec_) - CALL_FIELDS
    if unknown:
        raise CliError(f"scenario {name[:40]}: unknown call field {sorted(unknown)[0][:40]!r}")
    what = f"scenario {name[:40]}:"
    message = Message(parse_word(_text(spec_["to"], f"{what} to"), f"{what} to"),
                      parse_word(_text(spec_.get("caller", "0"), f"{what} caller"), f"{what} caller"),
                      _call_data(spec_.get("calldata", "0x"), f"{what} calldata", version))
    context = Context(parse_word(_text(spec_.get("time", "0"), f"{what} time"), f"{what} time"),
                      parse_hex(_text(spec_["seed"], f"{what} seed"), f"{what} seed")
                      if "seed" in spec_ else bytes(32))
    if len(context.random_seed) != 32:
        raise CliError(f"{what} seed must be 32 bytes of hex")
    chosen: dict[str, Any] = {f: _text(spec_[f], f"{what} {f}") for f in POLICY_FIELDS if f in spec_}
    if "allowed_operations" in spec_:
        chosen["allowed_operations"] = _operations(spec_["allowed_operations"], f"{what} allowed_operations")
    if "forbidden_operations" in spec_:
        chosen["forbidden_operations"] = _operations(spec_["forbidden_operations"],
                                                     f"{what} forbidden_operations")
    policy = Policy(**chosen)   # POLICY_FIELDS are Policy's string fields
    limits = Limits(**{f: parse_count(_text(spec_[f], f"{what} {f}"), f"{what} {f}")
                       for f in LIMIT_FIELDS if f in spec_})
    return message, context, policy, limits


def call_version(call: dict, name: str, previous: str) -> str:
    """The version a call runs under: its own ``spec_version``, else the one before it; a
    version older than the one before it is refused (an upgrade never goes back)."""
    if "spec_version" not in call:
        return previous
    version = _version({"name": name, "spec_version": _text(call["spec_version"], "spec_version")},
                       previous)
    if spec.version(version).number < spec.version(previous).number:
        raise CliError(f"scenario {name[:40]}: a call runs {version} after {previous} "
                       "(versions never decrease along the calls)")
    return version


@dataclass
class CallRequest:
    scenario: str
    index: int
    state: WorldState
    message: Message
    context: Context
    policy: Policy
    limits: Limits
    version: str

    def run(self, limits: Limits | None = None) -> ExecutionResult:
        return execute(self.state, self.message, self.context, self.policy,
                       self.limits if limits is None else limits, version=self.version)


def iter_requests(path: Path, version: str):
    """Each call of each scenario with the state it runs against, under the scenario's version
    (``version`` when it names none). The caller must send back the result of running it
    (generator.send) so that the next state can be formed."""
    for scenario in load_scenarios(path):
        name = str(scenario.get("name", "?"))
        scenario_version = _version(scenario, version)
        state = _state(scenario, path.parent, scenario_version)
        for index, call in enumerate(scenario.get("call", []), start=1):
            scenario_version = call_version(call, name, scenario_version)
            request = CallRequest(name, index, state, *_call(call, name, scenario_version),
                                  scenario_version)
            result = yield request
            if result is not None and result.ok:
                state = state.with_changes(result.state_changes)


def requests_with_results(path: Path, version: str) -> list[tuple[CallRequest, ExecutionResult]]:
    out = []
    gen = iter_requests(path, version)
    try:
        request = next(gen)
        while True:
            result = request.run()
            out.append((request, result))
            request = gen.send(result)
    except StopIteration:
        return out


def run_file(path: Path, version: str) -> list[CallRun]:
    return [CallRun(req.scenario, req.index, req.message, result)
            for req, result in requests_with_results(path, version)]


def run_directory(directory: Path, version: str) -> list[CallRun]:
    if not directory.is_dir():
        raise CliError(f"{directory}: not a directory of scenario files")
    files = sorted(f for f in directory.glob("*.toml") if f.is_file())
    if not files:
        raise CliError(f"no scenario files (*.toml) in {directory}")
    return [run for f in files for run in run_file(f, version)]
