"""A vector's input read by the second oracle: the checks before execution (spec 7.3.2) and
the sandbox's binding of the policy (10.2), from the spec's text and data alone.

This reading is the model side's own: it does not call the reference's request checks
(reference_vm/request.py) but the table of 7.3.2, in its order:

    1 request fields   rejected  INVALID_REQUEST
    2 contract exists  rejected  CONTRACT_NOT_FOUND
    3 validation       invalid   the first failing check's code      (symbolic/world.admit)
    4 policy           violation the first refusal's code             (symbolic/world.admit)
    5 limits           rejected  INVALID_LIMITS

Checks 3 and 4 are made when the code is admitted by the symbolic executor (which validates
with the container rules and binds with proofs/policy.py); ``read`` makes 1, 2 and 5 and
returns either the refusal or the concrete call to explore. A JSON number is a limit when its
value is an integer (7.3.2 "Integers in JSON"); booleans are not numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

import spec
from proofs.symbolic.world import Refusal
from reference_vm.policy import Policy
from reference_vm.request import Limits


@dataclass(frozen=True)
class Call:
    """A request that passed checks 1, 2 and 5: what the symbolic executor is given."""

    entry: int
    codes: dict            # address -> container bytes
    storage: dict          # address -> {key: value}
    caller: int
    call_data: bytes
    block_time: int
    seed: bytes
    policy: Policy
    limits: Limits | None  # None: check 5 fails (made after checks 3 and 4)


class NotAnInput(ValueError):
    """An input the sandbox refuses before any request exists (10.2): it has no result."""


def _hex_int(text: str) -> int:
    return int(text, 16)


def _hex_bytes(text: str) -> bytes:
    return bytes.fromhex(text[2:])


def refused(code: str, version: str) -> Refusal:
    return Refusal(spec.load(version).errors[code].kind, code)


def bound_policy(policy: dict, sandbox: dict, version: str) -> dict:
    """The policy fields of the request (10.2): the sandbox's storage access, and calls
    forbidden when the isolation level forbids them. NotAnInput when the sandbox is refused."""
    levels = spec.raw("sandbox", version)["isolation"]
    level = levels.get(sandbox["isolation_level"])
    if level is None:
        raise NotAnInput(f"unknown isolation level {sandbox['isolation_level']!r}")
    order = spec.load(version).policy["fields"]["storage_access"]["values"]
    access = sandbox["storage_access"]
    if access not in order or order.index(access) > order.index(level["max_storage_access"]):
        raise NotAnInput(f"storage access {access!r} is unknown or wider than the level allows")
    fields = {"time_access": policy["time_access"], "randomness": policy["randomness"],
              "external_call": policy["external_call"], "storage_access": access}
    if level.get("external_call") == "forbidden":
        fields["external_call"] = "forbidden"
    return fields


def _fields_problem(doc: dict, fields: dict, version: str) -> bool:
    """Check 1: every word a word, the call data and seed of their sizes, the policy's values
    and operation names known to ``version``."""
    table = spec.load(version)
    top = 1 << table.limits["machine"]["word_bits"]
    m, ctx = doc["message"], doc["context"]
    words = [_hex_int(m["to"]), _hex_int(m["caller"]), _hex_int(ctx["block_time"])]
    for address, body in doc["pre_state"]["contracts"].items():
        words.append(_hex_int(address))
        for key, value in body["storage"].items():
            words += [_hex_int(key), _hex_int(value)]
    if any(not 0 <= w < top for w in words):
        return True
    if len(_hex_bytes(m["call_data"])) > table.limits["machine"]["call_data_size"]:
        return True
    if len(_hex_bytes(ctx["random_seed"])) != table.schedule["randomness"]["seed_size"]:
        return True
    if any(fields[name] not in f["values"] for name, f in table.policy["fields"].items()):
        return True
    names = {i.mnemonic for i in table.instructions} | {i.type for i in table.instructions}
    listed = list(doc["policy"]["forbidden_operations"]) + list(
        doc["policy"]["allowed_operations"] or ())
    return any(n not in names for n in listed)


def json_integer(value) -> int | None:
    """The integer a JSON number stands for (7.3.2), None for a non-integer or a boolean."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def _limits(doc: dict, version: str) -> Limits | None:
    """Check 5: each limit an integer in [minimum, maximum] of its dimension."""
    table = spec.load(version)
    low, high = table.limits["minimum"], table.limits["maximum"]
    given = doc["sandbox"]["limits"]
    values = {}
    for name in Limits.DIMENSIONS:
        value = json_integer(given[name]) if name in given else table.limits["default"][name]
        if value is None or not low[name] <= value <= high[name]:
            return None
        values[name] = value
    return Limits(**values)


def read(doc: dict, version: str) -> Call | Refusal:
    """The call a vector input stands for under spec ``version``, or the refusal of check 1,
    2; a failure of check 5 is carried as ``limits`` None (checks 3 and 4 come first)."""
    fields = bound_policy(doc["policy"], doc["sandbox"], version)
    if _fields_problem(doc, fields, version):
        return refused("INVALID_REQUEST", version)
    contracts = {_hex_int(a): body for a, body in doc["pre_state"]["contracts"].items()}
    to = _hex_int(doc["message"]["to"])
    if to not in contracts:
        return refused("CONTRACT_NOT_FOUND", version)
    allowed = doc["policy"]["allowed_operations"]
    policy = Policy(**fields, allowed_operations=None if allowed is None else tuple(allowed),
                    forbidden_operations=tuple(doc["policy"]["forbidden_operations"]))
    limits = _limits(doc, version)
    m, ctx = doc["message"], doc["context"]
    return Call(
        entry=to, codes={a: _hex_bytes(b["code"]) for a, b in sorted(contracts.items())},
        storage={a: {_hex_int(k): _hex_int(v) for k, v in b["storage"].items()}
                 for a, b in sorted(contracts.items())},
        caller=_hex_int(m["caller"]), call_data=_hex_bytes(m["call_data"]),
        block_time=_hex_int(ctx["block_time"]), seed=_hex_bytes(ctx["random_seed"]),
        policy=policy, limits=limits)
