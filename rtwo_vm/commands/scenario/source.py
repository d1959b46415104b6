"""What ``rtwo-vm scenario run FILE`` reads: a scenario TOML file (the ``[[scenario]]`` format of
rtwo_vm/examples.py, which ``rtwo-vm examples`` runs too) turned into scenario inputs of
chapter 11.9, or a file of scenario vectors (.jsonl), each checked against its schema.

Everything here is hostile until checked: the file is read bounded (spec.files: a FIFO, a
device or a file that grows is refused), a scenario holds at most 64 calls and a file at most
MAX_SCENARIOS scenarios, the contract files a TOML file names must be relative paths inside
its folder (or, for a bundled example, inside the installed share folder) through no
symbolic link, and a scenario input that the schema refuses is refused whole. A TOML value is
data: nothing in it is run or looked up but the contract files it names.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.corpus.vector import bytes_hex, level_for, word_hex
from conformance.scenario.carry import MAX_STEPS
from conformance.scenario.schema import input_problems, vector_problems
from reference_vm import Limits
from rtwo_vm.arguments.inputs import CliError
from spec.files import FileRefused, depth_of, read_bounded

MAX_SCENARIOS = 64                 # scenarios in one file
MAX_VECTOR_FILE = 64 << 20         # bytes of a .jsonl file of scenario vectors
MAX_JSON_DEPTH = 32                # a scenario vector nests 7 levels deep
_NAME = re.compile(r"[^A-Za-z0-9_.+=-]+")


@dataclass
class Scenario:
    """One scenario to run: its vector id and description, its input (11.9.1), and the
    vector it comes from (None for a TOML scenario)."""

    id: str
    description: str
    input: dict[str, Any]
    vector: dict[str, Any] | None = None


def bundled(name: str) -> Path | None:
    """The bundled example ``name`` (``ledger`` or ``ledger.toml``), when FILE names no file."""
    from rtwo_vm.examples import bundled_directory
    if "/" in name or os.sep in name or name.startswith("."):
        return None
    found = bundled_directory() / (name if name.endswith(".toml") else f"{name}.toml")
    return found if found.is_file() else None


def resolve(file: str) -> tuple[Path, Path]:
    """(the scenario file, the folder its contract files must stay inside)."""
    path = Path(file)
    if not path.exists() and not path.is_symlink():
        found = bundled(file)
        if found is not None:
            # The installed examples refer to ../benchmarks (share/rtwo-vm/benchmarks).
            return found, found.parent.parent
    return path, path.parent


def _inside(root: Path, base: Path, name: str, what: str) -> Path:
    """``base / name`` when ``name`` is a relative path that stays inside ``root`` and passes
    through no symbolic link; CliError otherwise."""
    if not isinstance(name, str) or not name or "\0" in name or len(name) > 4096:
        raise CliError(f"{what}: a contract file must be named by a relative path")
    if os.path.isabs(name):
        raise CliError(f"{what}: {name[:60]!r} is an absolute path (contract files are named "
                       "relative to the scenario file)")
    target = base / name
    here = Path(os.path.abspath(root))
    full = Path(os.path.abspath(target))
    if here != full and here not in full.parents:
        raise CliError(f"{what}: {name[:60]!r} is outside the scenario file's folder {root}")
    walk = here
    for part in full.relative_to(here).parts:
        walk = walk / part
        if walk.is_symlink():
            raise CliError(f"{what}: {name[:60]!r} passes through the symbolic link {walk}")
    return target


def _step(message, context, policy, limits: Limits, version: str) -> dict[str, Any]:
    return {
        "spec_version": version,
        "message": {"to": word_hex(message.to), "caller": word_hex(message.caller),
                    "call_data": bytes_hex(message.call_data)},
        "context": {"block_time": word_hex(context.block_time),
                    "random_seed": bytes_hex(context.random_seed)},
        "policy": {"time_access": policy.time_access, "randomness": policy.randomness,
                   "external_call": policy.external_call,
                   "allowed_operations": None if policy.allowed_operations is None
                   else list(policy.allowed_operations),
                   "forbidden_operations": list(policy.forbidden_operations)},
        "sandbox": {"isolation_level": _level(policy, version),
                    "storage_access": policy.storage_access,
                    "limits": {d: getattr(limits, d) for d in Limits.DIMENSIONS}},
    }


def _level(policy, version: str) -> str:
    try:
        return level_for(policy.storage_access, policy.external_call, version)
    except (KeyError, ValueError):      # an unknown value: the schema check names it
        return "?"


def _id(scenario: dict, name: str, path: Path) -> str:
    given = scenario.get("id")
    if given is None:
        return f"scenario/{_NAME.sub('-', path.stem)[:60] or 'file'}/{_NAME.sub('-', name)[:60] or 'unnamed'}"
    if not isinstance(given, str) or not re.fullmatch(r"scenario(/[A-Za-z0-9_.+=-]+)+", given) or len(given) > 200:
        raise CliError(f"scenario {name[:40]}: id must be scenario/<group>/<name> (letters, digits, _.+=-)")
    return given


def from_toml(path: Path, root: Path, version: str, names: list[str] | None) -> list[Scenario]:
    """The scenarios of a TOML file (those named ``names``, when given), each as a scenario
    input: contracts assembled under the scenario's version, every field explicit."""
    from rtwo_vm.examples import _call, _state, _version, call_version, load_scenarios
    try:
        tables = load_scenarios(path)
    except RecursionError:
        raise CliError(f"{path}: nested too deeply") from None
    if len(tables) > MAX_SCENARIOS:
        raise CliError(f"{path}: {len(tables)} scenarios; a file may hold at most {MAX_SCENARIOS}")
    known = [str(t.get("name", "?")) for t in tables]
    for name in names or ():
        if name not in known:
            raise CliError(f"{path}: no scenario named {name[:40]!r} (scenarios: {', '.join(known)[:200]})")
    out = []
    for table in tables:
        name = str(table.get("name", "?"))
        if names and name not in names:
            continue
        calls = table.get("call", [])
        if not calls:
            raise CliError(f"{path}: scenario {name[:40]} has no calls")
        if len(calls) > MAX_STEPS:
            raise CliError(f"{path}: scenario {name[:40]} has {len(calls)} calls; a scenario has at "
                           f"most {MAX_STEPS} (chapter 11.9.1)")
        description = table.get("description", f"The calls of scenario {name[:60]} of {path.name[:60]}.")
        if not isinstance(description, str) or not description.strip() or len(description) > 1000:
            raise CliError(f"{path}: scenario {name[:40]}: description must be a non-empty string")
        for address, body in table.get("contracts", {}).items():
            if isinstance(body, dict) and "code" in body:
                _inside(root, path.parent, body["code"], f"{path}: scenario {name[:40]}: contract {address[:40]}")
        current = _version(table, version)
        state = _state(table, path.parent, current)
        steps = []
        for call in calls:
            current = call_version(call, name, current)
            steps.append(_step(*_call(call, name, current), current))
        scenario_input = {"pre_state": {"contracts": {
            word_hex(a): {"code": bytes_hex(c.code),
                          "storage": {word_hex(k): word_hex(v) for k, v in sorted(c.storage.items()) if v}}
            for a, c in sorted(state.contracts.items())}}, "steps": steps}
        problems = input_problems(scenario_input)
        if problems:
            raise CliError(f"{path}: scenario {name[:40]}: {problems[0]}"[:300])
        out.append(Scenario(_id(table, name, path), description.strip(), scenario_input))
    return out


def from_vectors(path: Path, ids: list[str] | None) -> list[Scenario]:
    """The scenario vectors of a .jsonl file (those whose id is among ``ids``, when given),
    each checked (conformance.scenario.schema.vector_problems) before it is used."""
    try:
        blob = read_bounded(path, MAX_VECTOR_FILE, "scenario vector file")
        text = blob.decode("utf-8")
    except FileRefused as err:
        raise CliError(str(err).splitlines()[0]) from None
    except UnicodeDecodeError:
        raise CliError(f"{path}: not UTF-8 text") from None
    out: list[Scenario] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if len(out) >= MAX_SCENARIOS:
            raise CliError(f"{path}: more than {MAX_SCENARIOS} scenario vectors")
        try:
            vector = json.loads(line, parse_constant=_no_constant)
        except (ValueError, RecursionError):
            raise CliError(f"{path}:{number}: not a JSON scenario vector") from None
        if depth_of(vector) > MAX_JSON_DEPTH:
            raise CliError(f"{path}:{number}: nested more than {MAX_JSON_DEPTH} levels")
        try:
            problems = vector_problems(vector)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            problems = [f"{type(err).__name__}: {err}"]
        if problems:
            raise CliError(f"{path}:{number}: not a scenario vector: {problems[0]}"[:300])
        if ids and vector["id"] not in ids:
            continue
        out.append(Scenario(vector["id"], vector["description"], vector["input"], vector))
    if not out:
        raise CliError(f"{path}: no scenario vectors" + (" with those ids" if ids else ""))
    return out


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def read(file: str, version: str, names: list[str] | None) -> list[Scenario]:
    """The scenarios FILE holds: a .jsonl file of scenario vectors, else a scenario TOML file
    (a path, or the name of a bundled example)."""
    path, root = resolve(file)
    if path.suffix == ".jsonl":
        return from_vectors(path, names)
    return from_toml(path, root, version, names)
