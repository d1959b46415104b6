"""Blinding of corpus requests (spec chapter 11.8.4): no implementation passes by recognising
the published corpus.

Every corpus vector a run sends is *blinded* first: its input goes through transformations,
drawn per run seed and vector, that keep what the vector tests, so that the request is never
byte for byte a published input. The expected result of the blinded request is computed by
the reference interpreter in the same run (the stored one is checked against the reference
on the published input by ``vectors fill --check``); the implementation's answer is judged
against that, exactly, as any vector (11.2.7).

The transformations, in the order they are applied, are TRANSFORMATIONS (described in the
spec's table, 11.8.4): addresses, code and data tails, call-data tail, block time, random
seed, limits away from the vector's boundary, an unread slot and a decoy contract.

A transformation is kept only when the reference's result of the blinded input still is the
vector's: identical to the stored result once the addresses are mapped back (``preserved``),
or differing only in values that carry a changed address or context value (output bytes,
stored values, event data; ``values``) with the same status, code, error offset, usage, fee
and call records. All of them are tried at once; when that changes the vector, all but one
(nearly always the addresses are to blame: a program computes one, or uses its value as a
number), then one by one, keeping only those that keep it (the reference runs once more per
attempt). A vector none of them keeps (none in the corpus) is sent as published
and counted as ``unblinded``.

A run blinds the vectors of one spec version under that version's rules: the reference runs
under it, and a container a transformation rewrites keeps its own version.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import random
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Protocol, Sequence

import spec
from conformance.corpus.vector import bytes_hex, expected_of, parse_bytes, parse_word, run_reference, word_hex
from conformance.run.blind_summary import (  # re-exported: what the run reports
    OFF, OFF_NOTE, ORDER, PRESERVED, TRANSFORMATIONS, UNBLINDED, VALUES, Summary, line)
from reference_vm import container
from reference_vm.decode import Decoded
from reference_vm.errors import InvalidCode
from reference_vm.rules import rules
from reference_vm.validate import ValidCode, validate

# The word width of every version (64 in 1.0 and 1.1): addresses and keys are words of it.
(_WORD_BITS,) = {spec.load(v).limits["machine"]["word_bits"] for v in spec.names()}
WORD_MASK = (1 << _WORD_BITS) - 1
WORD_BYTES = _WORD_BITS // 8

__all__ = ["OFF", "OFF_NOTE", "ORDER", "PRESERVED", "TRANSFORMATIONS", "UNBLINDED", "VALUES", "Summary", "line",
           "blind_all", "blind_vector", "mapped_back", "transformed", "verdict"]


# ---- the facts a vector's transformations depend on ------------------------------------------

@dataclass
class _Facts:
    version: str                         # the spec version of the run
    vector_id: str
    boundary: str                        # the boundary limit's name, "" for none
    codes: dict[str, ValidCode | None]   # address text -> the validated container (None: invalid)
    mnemonics: frozenset[str]            # of every valid contract
    entry: frozenset[str] | None         # of the entry contract (None: missing or invalid)
    exhausted: bool                      # the stored result or a call record ran out of a limit
    sigma: dict[int, int]                # the address swaps (both ways)
    taken: set[int]                      # addresses in use: originals and their images
    known: dict[str, ValidCode] = field(default_factory=dict)   # codes the transformations made

    @property
    def machine(self) -> Mapping[str, int]:
        return spec.load(self.version).limits["machine"]

    @property
    def limits(self) -> Mapping[str, Any]:
        return spec.load(self.version).limits


@functools.lru_cache(maxsize=8192)
def _valid(code_hex: str, version: str) -> ValidCode | None:
    """The validated container of a code text under ``version`` (cached: a run meets the same
    code often)."""
    try:
        return validate(parse_bytes(code_hex), rules(version))
    except (InvalidCode, ValueError):
        return None


def _is_word(text: Any) -> bool:
    try:
        return isinstance(text, str) and 0 <= parse_word(text) <= WORD_MASK
    except ValueError:
        return False


def _width(value: int) -> int:
    return max(1, (value.bit_length() + 7) // 8)


def _fresh(rng: random.Random, width: int, taken: set[int]) -> int:
    low, high = (0 if width == 1 else 1 << 8 * (width - 1)), (1 << 8 * width) - 1
    for _ in range(10_000):
        value = rng.randint(low, high)
        if value not in taken:
            return value
    raise ValueError("no fresh address of that width")   # 256 one-byte addresses in one vector


def _facts(vector: Mapping[str, Any], seed: int, version: str) -> _Facts:
    vector_input = vector["input"]
    contracts = vector_input["pre_state"]["contracts"]
    codes = {a: _valid(body["code"], version) for a, body in contracts.items()}
    mnemonics = frozenset(m for v in codes.values() if v is not None for m in v.mnemonics)
    entry_code = codes.get(vector_input["message"]["to"])
    result = vector["expected"]["result"]
    exhausted = result["status"] == "exhausted" or any(c["status"] == "exhausted" for c in result["calls"])
    boundary = (vector["tags"].get("boundary") or {}).get("limit", "")
    originals = sorted({parse_word(a) for a in [*contracts, vector_input["message"]["to"],
                                                vector_input["message"]["caller"]] if _is_word(a)})
    rng = _rng(seed, vector["id"], "addresses")
    taken, sigma = set(originals), {}
    for a in originals:
        try:
            b = _fresh(rng, _width(a), taken)
        except ValueError:
            continue
        taken.add(b)
        sigma[a], sigma[b] = b, a
    return _Facts(version, vector["id"], boundary, codes, mnemonics,
                  None if entry_code is None else entry_code.mnemonics, exhausted, sigma, taken)


@functools.lru_cache(maxsize=65536)
def _stream_seed(seed: int, vector_id: str, name: str) -> int:
    digest = hashlib.sha256(f"blind/{seed}/{vector_id}/{name}".encode()).digest()
    return int.from_bytes(digest[:16], "little")


def _rng(seed: int, vector_id: str, name: str) -> random.Random:
    """The random stream of one transformation of one vector in a run (an integer seed: a
    string one costs a SHA-512 every time)."""
    return random.Random(_stream_seed(seed, vector_id, name))


# ---- the transformations -----------------------------------------------------------------------

def _code_of(facts: _Facts, code_hex: str) -> ValidCode | None:
    """The validated container of a code text: one a transformation made, or validated."""
    made = facts.known.get(code_hex)
    return made if made is not None else _valid(code_hex, facts.version)


def _made(facts: _Facts, code: bytes, data: bytes, instructions: Sequence[Decoded],
          version: tuple[int, int]) -> str:
    """The text of a container of ``version`` a transformation made from a valid one (of that
    version), remembered with its instructions (which it knows: they need no second decoding)."""
    text = bytes_hex(container.build(code, data, version))
    facts.known[text] = ValidCode(code, data, tuple(instructions), version)
    return text


def _rewrite_code(facts: _Facts, valid: ValidCode, sigma: Mapping[int, int]) -> str:
    code = bytearray(valid.code)
    instructions = list(valid.instructions)
    for i, d in enumerate(instructions):
        ins = d.instruction
        if ins.immediate_size and ins.immediate_kind != "jump_target" and d.immediate in sigma:
            new = sigma[d.immediate]
            if new >> 8 * ins.immediate_size == 0:
                code[d.offset + 1:d.end] = new.to_bytes(ins.immediate_size, "little")
                instructions[i] = Decoded(d.offset, ins, new)
    return _made(facts, bytes(code), valid.data, instructions, valid.version)


def _rewrite_words(data: bytes, sigma: Mapping[int, int]) -> bytes:
    out, i = bytearray(data), 0
    while i + WORD_BYTES <= len(out):
        value = int.from_bytes(out[i:i + WORD_BYTES], "little")
        if value in sigma and value:
            out[i:i + WORD_BYTES] = sigma[value].to_bytes(WORD_BYTES, "little")
            i += WORD_BYTES
        else:
            i += 1
    return bytes(out)


def _transient(facts: _Facts) -> bool:
    """Whether a contract of the request has a transient storage instruction (chapter 6.13)."""
    table = spec.load(facts.version)
    return any(table.by_mnemonic[m].type == "transient" for m in facts.mnemonics if m in table.by_mnemonic)


def _addresses(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    # A request that uses transient storage keeps its addresses: transient slots are per address,
    # and an execution starts with every one 0 (2.3.3), which only requests of one run sharing
    # addresses can show of an implementation that carries them from one execution to the next.
    sigma = facts.sigma
    if not sigma or _transient(facts):
        return False

    def move(text: str) -> str:
        return word_hex(sigma.get(parse_word(text), parse_word(text))) if _is_word(text) else text

    contracts = {}
    for address, body in inp["pre_state"]["contracts"].items():
        valid = facts.codes.get(address)
        code = _rewrite_code(facts, valid, sigma) if valid is not None else body["code"]
        storage = {k: move(v) for k, v in body["storage"].items()}
        contracts[move(address)] = {"code": code, "storage": storage}
    inp["pre_state"]["contracts"] = contracts
    message = inp["message"]
    message["to"], message["caller"] = move(message["to"]), move(message["caller"])
    message["call_data"] = bytes_hex(_rewrite_words(parse_bytes(message["call_data"]), sigma))
    return True


def _code_tail(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    if facts.boundary == "code_size":
        return False
    changed = False
    for body in inp["pre_state"]["contracts"].values():
        valid = _code_of(facts, body["code"])
        if valid is None or not valid.instructions:
            continue
        tail, added = bytearray(), []
        for d in rng.choices(valid.instructions, k=rng.randint(0, 3)) + [valid.instructions[-1]]:
            ins, raw = d.instruction, bytearray(valid.code[d.offset:d.end])
            immediate = d.immediate
            if ins.immediate_size and ins.immediate_kind != "jump_target":
                immediate = rng.getrandbits(8 * ins.immediate_size)
                raw[1:] = immediate.to_bytes(ins.immediate_size, "little")
            added.append(Decoded(len(valid.code) + len(tail), ins, immediate))
            tail += raw
        if len(valid.code) + len(tail) > facts.machine["code_size"]:
            continue
        body["code"] = _made(facts, valid.code + bytes(tail), valid.data, [*valid.instructions, *added],
                             valid.version)
        changed = True
    return changed


def _data_tail(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    if facts.boundary == "data_size":
        return False
    changed = False
    for body in inp["pre_state"]["contracts"].values():
        valid = _code_of(facts, body["code"])
        if valid is None or "DATASIZE" in valid.mnemonics:
            continue
        size = rng.randint(1, 16)
        if len(valid.data) + size > facts.machine["data_size"]:
            continue
        extra = bytes(size) if "DATACOPY" in valid.mnemonics else rng.randbytes(size)
        body["code"] = _made(facts, valid.code, valid.data + extra, valid.instructions, valid.version)
        changed = True
    return changed


def _call_data_tail(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    if facts.boundary == "call_data_size" or (facts.entry is not None and "CALLDATASIZE" in facts.entry):
        return False
    data = parse_bytes(inp["message"]["call_data"])
    size = rng.randint(1, 16)
    if len(data) + size > facts.machine["call_data_size"]:
        return False
    inp["message"]["call_data"] = bytes_hex(data + rng.randbytes(size))
    return True


def _block_time(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    if not _is_word(inp["context"]["block_time"]):
        return False
    old = parse_word(inp["context"]["block_time"])
    new = rng.getrandbits(_WORD_BITS)
    inp["context"]["block_time"] = word_hex(new if new != old else new ^ 1)
    return True


def _random_seed(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    old = parse_bytes(inp["context"]["random_seed"])
    if not old:
        return False
    new = rng.randbytes(len(old))
    inp["context"]["random_seed"] = bytes_hex(new if new != old else bytes([new[0] ^ 1]) + new[1:])
    return True


def _limits(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    if facts.exhausted:
        return False
    changed = False
    limits = inp["sandbox"]["limits"]
    for name in sorted(limits):
        value = limits[name]
        if name not in facts.limits["minimum"] or name not in facts.limits["maximum"]:
            continue
        low, high = facts.limits["minimum"][name], facts.limits["maximum"][name]
        if (type(value) is not int or not low <= value < high
                or facts.boundary.split(".")[0] == name
                or (name == "compute" and "COMPUTELEFT" in facts.mnemonics)):
            continue
        limits[name] = min(high, value + rng.randint(1, 16 + value // 8))
        changed = True
    return changed


def _unread_slot(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    contracts = inp["pre_state"]["contracts"]
    owners = sorted(a for a in contracts if _is_word(a))
    if not owners:
        return False
    storage = contracts[rng.choice(owners)]["storage"]
    used = {parse_word(k) for k in storage if _is_word(k)}
    key = _fresh(rng, WORD_BYTES, used)
    storage[word_hex(key)] = word_hex(rng.randint(1, WORD_MASK))
    return True


def _decoy_contract(inp: dict[str, Any], facts: _Facts, rng: random.Random) -> bool:
    contracts = inp["pre_state"]["contracts"]
    present = {parse_word(a) for a in contracts if _is_word(a)}
    address = _fresh(rng, WORD_BYTES, facts.taken | present)
    valid = sorted(body["code"] for a, body in contracts.items() if facts.codes.get(a) is not None)
    table = spec.load(facts.version)
    stop = bytes([table.by_mnemonic["STOP"].opcode])
    code = rng.choice(valid) if valid else bytes_hex(container.build(stop, b"", table.number))
    contracts[word_hex(address)] = {"code": code,
                                    "storage": {word_hex(rng.randint(1, WORD_MASK)): word_hex(rng.randint(1, WORD_MASK))}}
    return True


APPLY: dict[str, Callable[[dict[str, Any], _Facts, random.Random], bool]] = {
    "addresses": _addresses, "code_tail": _code_tail, "data_tail": _data_tail,
    "call_data_tail": _call_data_tail, "block_time": _block_time, "random_seed": _random_seed,
    "limits": _limits, "unread_slot": _unread_slot, "decoy_contract": _decoy_contract,
}


def _sorted_contracts(inp: dict[str, Any]) -> None:
    contracts = inp["pre_state"]["contracts"]
    inp["pre_state"]["contracts"] = {a: contracts[a] for a in sorted(
        contracts, key=lambda a: (0, parse_word(a), a) if _is_word(a) else (1, 0, a))}


def _copy_input(inp: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a vector input deep enough for the transformations (faster than deepcopy)."""
    out = dict(inp)
    out["pre_state"] = {"contracts": {a: {"code": b["code"], "storage": dict(b["storage"])}
                                      for a, b in inp["pre_state"]["contracts"].items()}}
    out["message"], out["context"] = dict(inp["message"]), dict(inp["context"])
    out["policy"] = copy.deepcopy(inp["policy"])
    out["sandbox"] = dict(inp["sandbox"], limits=dict(inp["sandbox"]["limits"]))
    return out


def transformed(vector: Mapping[str, Any], facts: _Facts, seed: int, names: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The vector's input with the named transformations applied (each with its own random
    stream, so a subset draws what the whole set draws), and those that changed it."""
    inp = _copy_input(vector["input"])
    applied = [name for name in ORDER if name in names and APPLY[name](inp, facts, _rng(seed, vector["id"], name))]
    _sorted_contracts(inp)
    return inp, applied


# ---- judging whether a transformation kept the vector ---------------------------------------

def mapped_back(result: Mapping[str, Any], sigma: Mapping[int, int]) -> dict[str, Any]:
    """A blinded result with its addresses mapped back (the swaps are their own inverse)."""
    def back(text: str) -> str:
        value = parse_word(text)
        return word_hex(sigma.get(value, value))

    out = dict(result)
    changes = [dict(c, address=back(c["address"])) for c in out["state_changes"]]
    out["state_changes"] = sorted(changes, key=lambda c: (parse_word(c["address"]), parse_word(c["key"])))
    out["events"] = [dict(e, address=back(e["address"])) for e in out["events"]]
    out["calls"] = [dict(c, caller=back(c["caller"]), callee=back(c["callee"])) for c in out["calls"]]
    return out


def _shape(result: Mapping[str, Any]) -> tuple:
    """What a value change must leave alone: outcome, offsets, usage, fee, every call record
    but its addresses, and how many state changes and events of which sizes."""
    return (result["status"], result["error"], result["error_pc"], len(result["output"]),
            sorted(result["usage"].items()), result["fee"],
            [(c["address"], c["key"]) for c in result["state_changes"]],
            [(e["address"], len(e["topics"]), len(e["data"])) for e in result["events"]],
            [sorted((k, v) for k, v in c.items()) for c in result["calls"]])


def verdict(stored: Mapping[str, Any], blinded: Mapping[str, Any], sigma: Mapping[int, int]) -> str | None:
    """PRESERVED, VALUES, or None when the blinded result is not the vector's any more."""
    back = mapped_back(blinded, sigma)
    if back == stored:
        return PRESERVED
    return VALUES if _shape(back) == _shape(stored) else None


# ---- blinding vectors ---------------------------------------------------------------------------

def blind_vector(vector: Mapping[str, Any], seed: int, version: str,
                 summary: Summary | None = None) -> dict[str, Any]:
    """The blinded vector sent in place of ``vector`` in a run of ``seed`` checking spec
    ``version``: same id, tags and description, the blinded input, the reference's expected
    result for it under ``version``, and ``blinding`` (the seed, the transformations applied and
    the verdict)."""
    summary = summary if summary is not None else Summary(seed)
    stored = vector["expected"]["result"]
    facts = _facts(vector, seed, version)

    def attempt(names: Sequence[str]) -> tuple[dict[str, Any], list[str], Any, str | None]:
        inp, applied = transformed(vector, facts, seed, names)
        if not applied:
            return inp, applied, None, None
        result = run_reference(inp, version)
        summary.reference_runs += 1
        return inp, applied, result, verdict(stored, result.to_json(), facts.sigma if "addresses" in applied else {})

    inp, applied, result, kept = attempt(ORDER)
    for left_out in ORDER if kept is None else ():
        # Nearly always one transformation is to blame (the addresses, where a program
        # computes one or uses its value as a number): all but one, then one by one.
        trial = attempt([name for name in ORDER if name != left_out])
        if trial[3] is not None:
            inp, applied, result, kept = trial
            break
    if kept is None:                       # one by one: keep those that keep the vector
        chosen: list[str] = []
        last = None
        for name in ORDER:
            trial = attempt([*chosen, name])
            if trial[3] is not None and name in trial[1]:
                chosen.append(name)
                last = trial
        if last is not None:
            inp, applied, result, kept = last
    summary.vectors += 1
    if kept is None or result is None:
        return _unblinded(vector, seed, summary)
    summary.verdicts[kept] += 1
    for name in applied:
        summary.applied[name] += 1
    return {"id": vector["id"], "description": vector["description"], "tags": vector["tags"],
            "input": inp, "expected": expected_of(result, version),
            "blinding": {"seed": seed, "transformations": applied, "verdict": kept}}


class Counts(Protocol):
    """What counts the vectors sent unblinded: a Summary, or a scenario pass's."""
    verdicts: dict[str, int]
    unblinded: list[str]


def _unblinded(vector: Mapping[str, Any], seed: int, summary: Counts) -> dict[str, Any]:
    """The vector as published (without its provenance), counted as sent unblinded."""
    summary.verdicts[UNBLINDED] += 1
    summary.unblinded.append(vector["id"])
    return {k: v for k, v in vector.items() if k != "_meta"} | {
        "blinding": {"seed": seed, "transformations": [], "verdict": UNBLINDED}}


def blind_all(vectors: Sequence[Mapping[str, Any]], seed: int, version: str) -> tuple[list[dict[str, Any]], Summary]:
    """Every vector blinded for ``seed`` under spec ``version``, and what the blinding did."""
    started = time.perf_counter()
    summary = Summary(seed)
    out = []
    for v in vectors:
        try:
            out.append(blind_vector(v, seed, version, summary))
        except Exception:  # noqa: BLE001 - a vector the transformations cannot read is sent as it is, and counted
            summary.vectors += 1
            out.append(_unblinded(v, seed, summary))
    summary.seconds = time.perf_counter() - started
    return out, summary

