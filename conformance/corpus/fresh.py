"""The fresh sample of a conformance run (spec chapter 11.8.2): vectors generated at run time
from a seed, never stored, so that an implementation cannot pass by looking answers up in the
published corpus.

Half of a default sample are random valid programs (conformance.corpus.random_source.program), half
are *variants* of selected corpus vectors, which visit the selection's boundary classes in
rounds (:func:`strata`: call depth, return stack, stack, memory pages, storage units and
compute twice a round, every other boundary class once, vectors at no boundary once). A
variant of a boundary vector mostly moves its demand by a small step to either side (the
limit of a sandbox dimension, or the operand or call-data word nearest a machine limit's
value); otherwise one push operand changes (which moves offsets, lengths and values), the
call data changes, or a limit moves. With a --filter the sample holds variants of the
selected vectors only. Every expected result comes from the reference
interpreter in the same run. Ids are ``fresh/<seed>/<n>``.

A sample is for one spec version (the run's): its random programs are of that version (its
instructions, its containers), and every expected result is the reference's under it.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any, Mapping, Sequence

import spec
from conformance.corpus.random_source import EDGE_WORDS, random_case
from conformance.corpus.vector import (
    DEFAULTS, bytes_hex, expected_of, fill_case, outcome_of, parse_bytes, run_reference, tags_of,
)
from reference_vm import container
from reference_vm.decode import decode
from reference_vm.rules import rules

PREFIX = "fresh/"


def is_fresh(vector_id: str) -> bool:
    return vector_id.startswith(PREFIX)


# The request range and default sandbox (the same in every version); machine limits are the
# version's (_machine).
LIMITS = DEFAULTS.limits


def _machine(version: str):
    return spec.load(version).limits["machine"]


def new_seed() -> int:
    """A seed for a run that was given none (printed, so the run can be repeated)."""
    return random.SystemRandom().randrange(1, 1 << 32)


def _random_vector(rng: random.Random, seed: int, n: int, version: str) -> dict[str, Any]:
    # The corpus's random programs (conformance.corpus.random_source), with a larger compute range.
    case = random_case(rng, f"fresh/{seed}/{n:04d}",
                       f"Fresh random valid program {n} of seed {seed}.", compute_max=20000, version=version)
    vector = fill_case(case, version)
    vector.pop("_meta", None)
    return vector


def _parsed(blob: bytes, version: str):
    """(container, its instructions) of a valid container under ``version``; None otherwise."""
    try:
        parsed = container.parse(blob, rules(version))
        return parsed, decode(parsed.code, rules(version).instruction_set(parsed.version))
    except Exception:  # noqa: BLE001 - invalid code has no operands to change
        return None


def _change_operand(rng: random.Random, blob: bytes, version: str) -> tuple[bytes, str] | None:
    found = _parsed(blob, version)
    if found is None:
        return None
    parsed, decoded = found
    pushes = [d for d in decoded if d.instruction.immediate_size and d.instruction.immediate_kind != "jump_target"]
    if not pushes:
        return None
    d = rng.choice(pushes)
    size = d.instruction.immediate_size
    bits = 8 * size
    choices = [d.immediate + 1, d.immediate - 1, d.immediate * 2, rng.choice(EDGE_WORDS), rng.getrandbits(bits)]
    value = rng.choice(choices) % (1 << bits)
    if value == d.immediate:
        value = (value + 1) % (1 << bits)
    code = bytearray(parsed.code)
    code[d.offset + 1:d.end] = value.to_bytes(size, "little")
    return (container.build(bytes(code), parsed.data, parsed.version),
            f"{d.instruction.mnemonic} at offset {d.offset}: {d.immediate} -> {value}")


def _change_limit(rng: random.Random, vector_input: dict[str, Any], boundary) -> str:
    limits = vector_input["sandbox"]["limits"]
    numbers = sorted(k for k, v in limits.items() if type(v) is int and k in LIMITS["minimum"])
    own = boundary["limit"].split(".")[0] if boundary else ""
    if not numbers:
        return "limits unchanged"
    name = own if own in numbers else rng.choice(numbers)
    low, high = LIMITS["minimum"][name], LIMITS["maximum"][name]
    old = limits[name]
    if boundary and "." in boundary["limit"] and own == name:
        # A request bound: two or three past it on either side, never a sibling's value
        # (the bound's own vectors sit at one below, at and one above it).
        bound = LIMITS[boundary["limit"].split(".")[1]][name]
        limits[name] = bound + rng.choice((-3, -2, 2, 3))
        return f"limit {name}: {old} -> {limits[name]}"
    new = min(high, max(low, old + rng.choice((-2, -1, 1, 2, 3))))
    if new == old:
        new = min(high, old + 1) if old < high else old - 1
    limits[name] = new
    return f"limit {name}: {old} -> {new}"


def _variant(rng: random.Random, base: Mapping[str, Any], seed: int, n: int,
             version: str) -> dict[str, Any] | None:
    vector_input = copy.deepcopy(base["input"])
    contracts = vector_input["pre_state"]["contracts"]
    entry = contracts.get(vector_input["message"]["to"])
    boundary = base["tags"].get("boundary")
    what = None
    kind = rng.randrange(4)
    if boundary and kind < 3:
        # At a boundary: its demand or its limit moves by a small step, to either side.
        if boundary["limit"].split(".")[0] in SANDBOX:
            what = _change_limit(rng, vector_input, boundary)
        elif boundary["limit"] in SIZES:
            what = _size_step(rng, vector_input, boundary["limit"])
        else:
            what = _demand_step(rng, vector_input, boundary["limit"], version)
    elif kind <= 1 and entry is not None:
        changed = _change_operand(rng, parse_bytes(entry["code"]), version)
        if changed is not None:
            entry["code"], what = bytes_hex(changed[0]), changed[1]
    if what is None and kind == 2:
        data = bytearray(parse_bytes(vector_input["message"]["call_data"]) or b"\0")
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        vector_input["message"]["call_data"] = bytes_hex(bytes(data[:_machine(version)["call_data_size"]]))
        what = "call data changed"
    if what is None:
        what = _change_limit(rng, vector_input, boundary)
    result = run_reference(vector_input, version)
    if result.status == "internal":
        return None
    result_json = result.to_json()
    if result_json == base["expected"]["result"]:
        return None         # the change was not read (unread call data, a limit not reached): no new vector
    tags = dict(base["tags"], outcome=outcome_of(result_json),
                call_outcomes=sorted({outcome_of(c) for c in result_json["calls"]}))
    return {"id": f"fresh/{seed}/{n:04d}", "description": f"Fresh variant of {base['id']} ({what}).",
            "tags": tags, "input": vector_input, "expected": expected_of(result, version)}


# The boundary classes a sample aims at first (chapter 11.8.2): each is visited twice per
# round, every other boundary class of the selection once, and vectors at no boundary once.
PRIORITY = ("call_depth", "return_stack_depth", "stack_depth", "memory_pages", "storage_units", "compute")
SANDBOX = frozenset(LIMITS["default"])


def strata(selected: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[Mapping[str, Any]]]]:
    """The selection by boundary class (tags.boundary.limit; "" for none), in the order one
    round of the sample visits them."""
    by: dict[str, list[Mapping[str, Any]]] = {}
    for v in selected:
        by.setdefault((v["tags"].get("boundary") or {}).get("limit", ""), []).append(v)
    first = [c for c in PRIORITY if c in by]
    rest = sorted(c for c in by if c not in PRIORITY and c)
    order = first + first + rest + ([""] if "" in by else [])
    return [(c, by[c]) for c in order]


SIZES = ("code_size", "data_size", "call_data_size")
STOP = bytes([DEFAULTS.by_mnemonic["STOP"].opcode])     # the same byte in every version


def _size_step(rng: random.Random, vector_input: dict[str, Any], limit: str) -> str | None:
    """Move a size at its machine limit by a small step: the call data's length, or the code
    or data section of the entry container (bytes appended or dropped at its end, the header
    kept consistent)."""
    step = rng.choice((-2, -1, 1, 2, 3))
    if limit == "call_data_size":
        data = parse_bytes(vector_input["message"]["call_data"])
        new = data + rng.randbytes(step) if step > 0 else data[:step - 1] + rng.randbytes(1)
        vector_input["message"]["call_data"] = bytes_hex(new)
        return f"call data length: {len(data)} -> {len(new)}"
    entry = vector_input["pre_state"]["contracts"].get(vector_input["message"]["to"])
    if entry is None:
        return None
    blob = parse_bytes(entry["code"])
    if len(blob) < container.HEADER_SIZE:
        return None
    code_size, data_size = int.from_bytes(blob[8:12], "little"), int.from_bytes(blob[12:16], "little")
    code, data = blob[16:16 + code_size], blob[16 + code_size:]
    if limit == "code_size":
        code = code + STOP * step if step > 0 else code[:step]          # STOP bytes, or fewer
    else:   # random bytes: a step must not land on a sibling vector's very container
        data = data + rng.randbytes(step) if step > 0 else data[:step - 1] + rng.randbytes(1)
    header = blob[:8] + len(code).to_bytes(4, "little") + len(data).to_bytes(4, "little")
    entry["code"] = bytes_hex(header + code + data)
    return f"{limit.replace('_', ' ')}: {code_size if limit == 'code_size' else data_size} -> " \
           f"{len(code) if limit == 'code_size' else len(data)}"


def _demand_step(rng: random.Random, vector_input: dict[str, Any], limit: str, version: str) -> str | None:
    """Move the push operand or call-data word of the entry code nearest the machine limit's
    value by a small step (-2 to +4): for a vector at a machine limit, what sets its demand
    (a depth, a count) moves across it."""
    entry = vector_input["pre_state"]["contracts"].get(vector_input["message"]["to"])
    found: list[tuple[int, str, int, int]] = []      # value, where, offset, size
    parsed = None
    if entry is not None:
        both = _parsed(parse_bytes(entry["code"]), version)
        parsed, decoded = both if both is not None else (None, [])
        found += [(d.immediate, "code", d.offset + 1, d.instruction.immediate_size) for d in decoded
                  if d.instruction.immediate_kind == "value"]
    data = parse_bytes(vector_input["message"]["call_data"])
    found += [(int.from_bytes(data[i:i + 8], "little"), "data", i, 8) for i in range(0, len(data) - 7, 8)]
    if not found:
        return None
    target = _machine(version).get(limit, 0)
    value, where, offset, size = min(found, key=lambda f: (abs(f[0] - target), rng.random()))
    # More often beyond than below: a narrow bug in a limit's error shows only past it.
    new = (value + rng.choice((-2, -1, 1, 2, 3, 4))) % (1 << 8 * size)
    if where == "data":
        vector_input["message"]["call_data"] = bytes_hex(data[:offset] + new.to_bytes(size, "little") + data[offset + size:])
        return f"call data word at {offset}: {value} -> {new}"
    assert entry is not None and parsed is not None
    code = bytearray(parsed.code)
    code[offset:offset + size] = new.to_bytes(size, "little")
    entry["code"] = bytes_hex(container.build(bytes(code), parsed.data, parsed.version))
    return f"operand at offset {offset - 1}: {value} -> {new}"


def _key(vector_input: Mapping[str, Any]) -> str:
    return json.dumps(vector_input, sort_keys=True, separators=(",", ":"))


def sample(seed: int, count: int, selected: Sequence[Mapping[str, Any]], filtered: bool,
           version: str) -> list[dict[str, Any]]:
    """``count`` fresh vectors of spec ``version`` from ``seed`` (the same on every machine for
    the same inputs). The variants visit the selection's boundary classes in rounds (strata)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    randoms = 0 if filtered or not selected else count // 2
    for n in range(randoms):
        out.append(_random_vector(rng, seed, n, version))
    n = randoms
    visits = 0
    rounds = strata(selected)
    published = {_key(v["input"]) for v in selected}
    while len(out) < count and selected and visits < 4 * count:
        cls, members = rounds[visits % len(rounds)]
        visits += 1
        for _ in range(8):          # a few draws per visit: a boundary step may change nothing
            variant = _variant(rng, rng.choice(members), seed, n, version)
            # A variant that lands on a published input (a boundary step onto a sibling) is
            # no fresh vector: a lookup would answer it.
            if variant is not None and _key(variant["input"]) not in published:
                out.append(variant)
                n += 1
                break
    while len(out) < count:      # nothing selected to vary: random programs only
        out.append(_random_vector(rng, seed, n, version))
        n += 1
    return out


__all__ = ["PREFIX", "is_fresh", "new_seed", "sample", "tags_of"]
