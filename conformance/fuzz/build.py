"""Building requests from nothing: the operand distributions, the stack-aware ``Builder`` of
instruction rows, fresh requests (``fresh``) and malformed ones (``malform``).

Programs are valid by construction (rows with jump targets on rows, a terminating last
instruction) and stack-aware: before each instruction its operands are pushed with values drawn
for what the operand *is* (a memory offset, a length, a shift amount, an address, a call-data
offset, a storage key, a plain word), from boundary-biased distributions; sometimes junk sits
above an operand and a DUPn/SWAPn brings it up, so operands live at any depth. Several
contracts call each other (and themselves, to the depth limit); storage has pre-states; every
policy field, isolation level and storage access is drawn; limits are drawn near each
dimension's boundary. A malformed request has a corrupted container (for the validation rules)
or out-of-range request fields.

Only ``random.Random`` methods whose sequences Python keeps stable (randrange, choice,
getrandbits, random) are used.

Everything is drawn from one spec version's table (``vocabulary``): a campaign of 1.1 emits
MULHU, MULHS, CLZ, CTZ, POPCNT, STATICCALL, TLOAD and TSTORE in 1.1 containers, one of 1.0
never does (and draws exactly what it drew before 1.1 existed).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass
from typing import Mapping, Sequence

import spec
from conformance.corpus.vector import BASE, DEFAULTS, VERSIONS, default_isolation, isolation_levels
from conformance.fuzz.program import ACCESS_ORDER, LIMITS, Code, FuzzInput, default_limits, default_policy, row
from reference_vm.container import HEADER_SIZE, MAGIC

MASK = (1 << 64) - 1
MIN = 1 << 63
SMAX = MIN - 1
# The sizes of the machine (the same in every version; a version's own limits: vocabulary()).
MACHINE = DEFAULTS.limits["machine"]
PAGE = DEFAULTS.schedule["memory"]["page_size"]
WORD_BYTES = MACHINE["word_bits"] // 8
ENTRY, CALLER = 0x100, 0xCA11E7
MISSING = 0x1FF
HALTS = ("STOP", "RETURN", "RETURN", "RETURN", "REVERT", "TRAP")

EDGE_WORDS = (0, 1, 2, 3, 7, 8, 31, 32, 63, 64, 65, 127, 128, 255, 256, 4095, 4096, 4097, 65535, 65536,
              2 ** 31 - 1, 2 ** 31, 2 ** 32 - 1, 2 ** 32, SMAX, MIN, MIN + 1, MASK, MASK - 1)
OFFSETS = (0, 1, 7, 8, 9, 31, 32, 63, 64, PAGE - WORD_BYTES - 1, PAGE - WORD_BYTES, PAGE - WORD_BYTES + 1,
           PAGE - 1, PAGE, PAGE + 1, 2 * PAGE - 1, 2 * PAGE, 3 * PAGE - 4, 4 * PAGE, 8 * PAGE - 8,
           2 ** 32, SMAX, MIN, MASK - 7, MASK)
LENGTHS = (0, 0, 1, 2, 7, 8, 9, 15, 16, 31, 32, 33, 63, 64, 65, 100, PAGE - 1, PAGE, PAGE + 1, 2 ** 32, MASK)
SHIFTS = (0, 1, 2, 7, 8, 31, 32, 33, 62, 63, 64, 65, 127, 128, 255, 256, 2 ** 32, SMAX, MIN, MASK)
KEYS = (0, 0, 1, 1, 2, 3, 7, 255, 2 ** 32, MASK)
COMPUTES = (0, 1, 2, 10, 50, 100, 500, 1000, 5000, 2 ** 32, MASK)
LIMIT_CHOICES = {
    "compute": (0, 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 20000, 50000),
    "memory_pages": (0, 1, 1, 2, 2, 2, 3, 4, 4, 8, 16, 64),
    "storage_units": (0, 1, 3, 4, 5, 16, 17, 20, 21, 50, 100, 1000, 100000),
}
OPERANDS = {  # operand kinds in push order (bottom first)
    "JUMPI": ("cond",), "RETURN": ("offset", "length"), "REVERT": ("offset", "length"),
    "SHL": ("word", "shift"), "SHRU": ("word", "shift"), "SHRS": ("word", "shift"),
    "ROTL": ("word", "shift"), "ROTR": ("word", "shift"),
    "MLOAD": ("offset",), "MSTORE": ("offset", "word"), "MLOAD8": ("offset",), "MSTORE8": ("offset", "word"),
    "MCOPY": ("offset", "offset", "length"), "SLOAD": ("key",), "SSTORE": ("key", "word"),
    "CALLDATALOAD": ("cdoffset",), "CALLDATACOPY": ("offset", "cdoffset", "length"),
    "DATACOPY": ("offset", "cdoffset", "length"), "RETURNDATACOPY": ("offset", "cdoffset", "length"),
    "SHA256": ("offset", "offset", "length"), "CALL": ("address", "compute", "offset", "length"),
    "STATICCALL": ("address", "compute", "offset", "length"), "TLOAD": ("key",), "TSTORE": ("key", "word"),
    "MULHS": ("word", "word"), "MULHU": ("word", "word"),
    "LOG0": ("offset", "length"), "LOG1": ("offset", "length", "word"),
    "LOG2": ("offset", "length", "word", "word"), "LOG3": ("offset", "length", "word", "word", "word"),
    "LOG4": ("offset", "length", "word", "word", "word", "word"),
}
# Instruction weights by type: the interesting ones (memory, calls, storage) more often.
# An instruction is drawn by type first (weights below), then uniformly within the type, so
# the 37 stack instructions do not crowd out the single CALL.
TYPE_WEIGHT = {"control": 2, "stack": 2, "arithmetic": 3, "comparison": 2, "bitwise": 3, "memory": 5,
               "storage": 3, "environment": 4, "hash": 1, "event": 2, "call": 4, "context": 2, "transient": 3}
CALL_OBSERVERS = ("RETURNDATASIZE", "RETURNDATACOPY", "RETURNDATACOPY", "RANDOM", "SLOAD", "MSIZE", "COMPUTELEFT",
                  "CALL")
CALLS = ("CALL", "STATICCALL")      # instructions after which the call's effects are looked at
# Mnemonics whose immediate is a jump target (a row index in the rows), in any version; PUSHn by n.
JUMPS = frozenset(m for v in VERSIONS for m, i in spec.load(v).by_mnemonic.items()
                  if i.immediate_kind == "jump_target")
PUSH_OF_SIZE = {n: f"PUSH{n}" for n in (1, 2, 4, 8)}


@dataclass(frozen=True)
class Vocabulary:
    """What a campaign of one spec version draws from: the version's table, its instructions
    by type and the weighted body of a program."""

    version: str
    table: spec.Spec
    by_type: Mapping[str, list]
    body: list
    machine: Mapping[str, int]


@functools.cache
def vocabulary(version: str) -> Vocabulary:
    table = spec.load(version)
    by_type = {t: [i for i in table.instructions if i.type == t and i.flow != "halt" and i.mnemonic != "RETSUB"]
               for t in TYPE_WEIGHT}
    body = [i for t, w in TYPE_WEIGHT.items() for i in by_type[t] for _ in range(w * 60 // max(1, len(by_type[t])))]
    return Vocabulary(table.version, table, by_type, body, table.limits["machine"])


# The first version's, for callers that name none (the tests of 1.0 campaigns).
BY_TYPE = vocabulary(BASE).by_type
BODY = vocabulary(BASE).body


def _pick(rng: random.Random, choices: Sequence[int], randbits: int = 64, p_random: float = 0.15) -> int:
    return rng.getrandbits(randbits) if rng.random() < p_random else rng.choice(choices)


class Builder:
    """Emits rows for one contract, tracking the stack height."""

    def __init__(self, rng: random.Random, addresses: Sequence[int], call_data_size: int, data_size: int,
                 version: str = BASE):
        self.vocabulary = vocabulary(version)
        self.rng, self.addresses = rng, list(addresses)
        self.cds, self.ds = call_data_size, data_size
        self.rows: list[tuple[str, int]] = []
        self.height = 0
        self.subs: list[int] = []          # rows of CALLSUB whose target is fixed at the end

    def value(self, kind: str) -> int:
        rng = self.rng
        if kind == "offset":
            if rng.random() < 0.5:
                return rng.choice((0, 8, 16, 24, 32, 40, 48, 56, 64)) + rng.choice((0, 0, 0, 1, 4, 7))
            return _pick(rng, OFFSETS, p_random=0.05)
        if kind == "length":
            return _pick(rng, LENGTHS, 12, p_random=0.1)
        if kind == "shift":
            return _pick(rng, SHIFTS, 8, p_random=0.2)
        if kind == "key":
            return _pick(rng, KEYS)
        if kind == "cdoffset":
            size = self.cds if rng.random() < 0.5 else self.ds if rng.random() < 0.5 else rng.choice((8, 16, 64, 72))
            return rng.choice((0, 1, max(0, size - 8), max(0, size - 7), max(0, size - 1), size, size + 1,
                               size + 8, 1 << 32, (1 << 32) + 1, MASK - 3, MIN, MIN + 1))
        if kind == "address":
            return rng.choice(self.addresses) if rng.random() < 0.75 else rng.choice((MISSING, 0, MASK))
        if kind == "compute":
            return rng.choice((5000, 100000, MASK)) if rng.random() < 0.6 else _pick(rng, COMPUTES, p_random=0.05)
        if kind == "cond":
            return rng.choice((0, 0, 1, 2, 256, 2 ** 32, MIN, MASK))
        return _pick(rng, EDGE_WORDS, p_random=0.35)

    def push(self, value: int) -> None:
        size = 1 if value < 1 << 8 else 2 if value < 1 << 16 else 4 if value < 1 << 32 else 8
        if self.rng.random() < 0.2:
            size = 8
        self.rows.append((PUSH_OF_SIZE[size], value))
        self.height += 1

    def operands(self, mnemonic: str) -> None:
        ins = row(mnemonic)
        kinds = OPERANDS.get(mnemonic, ("word",) * ins.inputs)
        rng = self.rng
        if rng.random() < 0.12 and self.height >= ins.inputs:
            return  # use whatever is on the stack
        for kind in kinds:
            if rng.random() < 0.12:
                # the operand deeper, junk above it, brought up by DUPn (or SWAPn)
                self.push(self.value(kind))
                junk = 1 + rng.randrange(min(15, 3 + rng.randrange(13)))
                for _ in range(junk):
                    self.push(self.value("word"))
                if rng.random() < 0.5:
                    self.rows.append((f"DUP{junk + 1}", 0))
                    self.height += 1
                else:
                    self.rows.append((f"SWAP{junk}", 0))
            else:
                self.push(self.value(kind))

    def emit(self, mnemonic: str) -> None:
        ins = row(mnemonic)
        if ins.type != "stack" or mnemonic.startswith(("DUP", "SWAP", "POP")):
            if ins.type != "stack" or self.height < ins.inputs:
                self.operands(mnemonic)
        if ins.immediate_kind == "jump_target":
            if mnemonic == "CALLSUB":
                self.subs.append(len(self.rows))
                target = 0
            else:
                target = len(self.rows) + 1 + self.rng.randrange(4) if self.rng.random() < 0.85 \
                    else self.rng.randrange(len(self.rows) + 1)
            self.rows.append((mnemonic, target))
        elif ins.immediate_size:
            self.rows.append((mnemonic, self.value("word")))
        else:
            self.rows.append((mnemonic, 0))
        self.height = max(0, self.height - ins.inputs) + ins.outputs
        if mnemonic in CALLS and self.rng.random() < 0.6:
            # look at what the call may have changed: return data, the random stream, storage, memory
            self.emit(self.rng.choice(CALL_OBSERVERS))

    def prologue(self) -> None:
        """Non-zero words in the first bytes of memory, so copies and returns carry data."""
        for k in range(1 + self.rng.randrange(4)):
            self.push(8 * k)
            self.push(self.rng.getrandbits(64) | 1)
            self.rows.append(("MSTORE", 0))
            self.height -= 2

    def observe(self) -> int:
        """Store up to four stack words at 64, 72, ... so that RETURN shows them; the bytes to
        return (at least the first 128, where most generated memory accesses land)."""
        dumped = 0
        while dumped < 4 and self.height > 0:
            self.push(64 + 8 * dumped)
            self.rows.append(("SWAP1", 0))
            self.rows.append(("MSTORE", 0))
            self.height -= 2
            dumped += 1
        return max(128, 64 + 8 * dumped)

    def halt(self) -> None:
        mnemonic = self.rng.choice(HALTS)
        if mnemonic in ("RETURN", "REVERT") and self.rng.random() < 0.6:
            end = self.observe()
            self.push(0)
            self.push(end)
            self.rows.append((mnemonic, 0))
            return
        if mnemonic in ("RETURN", "REVERT"):
            if self.rng.random() < 0.7:
                self.push(self.rng.choice((0, 0, 8, 16, 32, 64)))
                self.push(self.rng.choice((0, 1, 8, 8, 16, 32)))
            else:
                self.operands(mnemonic)
        self.rows.append((mnemonic, 0))

    def finish(self) -> list[tuple[str, int]]:
        """Clamp forward jump targets to the rows, append the subroutine for CALLSUBs."""
        n = len(self.rows)
        self.rows = [(m, min(t, n - 1)) if m in JUMPS else (m, t)
                     for m, t in self.rows]
        if self.subs:
            start = len(self.rows)
            for _ in range(1 + self.rng.randrange(4)):
                self.emit(self.rng.choice(self.vocabulary.body).mnemonic) if self.rng.random() < 0.5 else self.emit("ADD")
            self.rows = [(m, min(t, len(self.rows) - 1)) if m in JUMPS
                         and i >= start else (m, t) for i, (m, t) in enumerate(self.rows)]
            self.rows.append(("RETSUB", 0))
            for i in self.subs:
                self.rows[i] = ("CALLSUB", start)
        return self.rows


def recursive_rows(rng: random.Random, version: str = BASE) -> list[tuple[str, int]]:
    """A contract calling itself with all its compute: recursion down to the depth limit (by
    STATICCALL now and then, in a version that has it)."""
    call = "STATICCALL" if "STATICCALL" in vocabulary(version).table.by_mnemonic and rng.random() < 0.3 else "CALL"
    rows = [("SELF", 0), ("PUSH8", MASK), ("PUSH1", rng.choice((0, 8))), ("PUSH1", rng.choice((0, 8))), (call, 0)]
    tail = rng.choice((("PUSH1", 1), ("SLOAD", 0)))
    if tail[0] == "SLOAD":
        rows += [("PUSH1", 0), ("SLOAD", 0), ("PUSH1", 1), ("ADD", 0), ("PUSH1", 0), ("SWAP1", 0), ("SSTORE", 0)]
    rows += [("RETURNDATASIZE", 0), ("PUSH1", 0), ("MSTORE", 0), ("PUSH1", 0), ("PUSH1", 8), ("RETURN", 0)]
    return rows


def deep_rows(rng: random.Random) -> list[tuple[str, int]]:
    """A prefix that takes the operand stack or the return stack to its limit (-2 .. +1)."""
    if rng.random() < 0.6:
        return [("PUSH1", 1)] * (MACHINE["stack_depth"] - 2 + rng.randrange(4))
    depth = MACHINE["return_stack_depth"] - 2 + rng.randrange(4)
    # CALLSUB to the row after it, depth times: every call leaves one return offset behind
    return [("CALLSUB", i + 1) for i in range(depth)]


def fresh_rows(rng: random.Random, addresses: Sequence[int], cds: int, ds: int,
               callee: bool = False, version: str = BASE) -> list[tuple[str, int]]:
    """A fresh program of ``version``'s instructions; a callee's is shorter and more often
    writes memory first, so that it more often succeeds and returns data its caller can look at."""
    b = Builder(rng, addresses, cds, ds, version)
    if rng.random() < (0.8 if callee else 0.5):
        b.prologue()
    sizes = (0, 1, 1, 2, 3, 4, 6) if callee else (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 24)
    body = b.vocabulary.body
    for _ in range(rng.choice(sizes)):
        b.emit(rng.choice(body).mnemonic)
    b.halt()
    return b.finish()


def snippet(rng: random.Random, addresses: Sequence[int], cds: int, ds: int,
            version: str = BASE) -> list[tuple[str, int]]:
    """Rows of one instruction of ``version`` with its operands (no jumps), for insertion by a
    mutator."""
    b = Builder(rng, addresses, cds, ds, version)
    body = b.vocabulary.body
    ins = rng.choice(body)
    while ins.immediate_kind == "jump_target":
        ins = rng.choice(body)
    b.emit(ins.mnemonic)
    return b.rows


def _call_data(rng: random.Random) -> bytes:
    n = rng.choice((0, 0, 1, 7, 8, 9, 16, 31, 32, 33, 64, rng.randrange(100)))
    if rng.random() < 0.5:
        return bytes(rng.getrandbits(8) for _ in range(n))
    words = b"".join(rng.choice(EDGE_WORDS).to_bytes(8, "little") for _ in range(n // 8 + 1))
    return words[:n]


def random_policy(rng: random.Random, mnemonics: Sequence[str], version: str = BASE) -> tuple[dict, str]:
    table = vocabulary(version).table
    fields = table.policy["fields"]
    policy = default_policy()
    for name, odds in (("time_access", 0.85), ("randomness", 0.85), ("external_call", 0.93)):
        values = fields[name]["values"]
        open_value = [v for v in values if v != "forbidden"][0]
        policy[name] = open_value if rng.random() < odds else "forbidden"
    r = rng.random()
    policy["storage_access"] = "read_write" if r < 0.8 else "read_only" if r < 0.9 else "none"
    levels = [n for n, lv in isolation_levels(version).items()
              if ACCESS_ORDER.index(lv["max_storage_access"]) >= ACCESS_ORDER.index(policy["storage_access"])]
    isolation = default_isolation(version) if rng.random() < 0.6 else rng.choice(sorted(levels))
    names = list(mnemonics) + sorted(table.instruction_types)
    if rng.random() < 0.04:
        policy["allowed"] = sorted({rng.choice(names) for _ in range(1 + rng.randrange(6))})
    if rng.random() < 0.04:
        policy["forbidden"] = sorted({rng.choice(names) for _ in range(1 + rng.randrange(2))})
    if rng.random() < 0.01:
        policy[rng.choice(("forbidden", "allowed"))] = ["NOSUCHOP"]
    if rng.random() < 0.005:
        policy["time_access"] = "sometimes"
    return policy, isolation


def has_loop(inp: FuzzInput) -> bool:
    for code, _ in inp.contracts.values():
        rows = code.rows or []
        for i, (m, t) in enumerate(rows):
            if m in JUMPS and t % len(rows) <= i:
                return True
    return False


def random_limits(rng: random.Random) -> dict[str, int]:
    limits = default_limits()
    for name, choices in LIMIT_CHOICES.items():
        if rng.random() < 0.6:
            limits[name] = rng.choice(choices)
    return limits


def request_bound(rng: random.Random, inp: FuzzInput) -> None:
    """Put one limit at the edge of the request range: minimum-1, maximum, maximum+1."""
    name = rng.choice(("compute", "memory_pages", "storage_units"))
    low, high = LIMITS["minimum"][name], LIMITS["maximum"][name]
    choice = rng.choice((low - 1, low, high, high + 1))
    if choice == high and name == "compute" and has_loop(inp):
        choice = high + 1
    inp.limits[name] = choice


def fresh(rng: random.Random, version: str = BASE) -> FuzzInput:
    """A fresh request of spec ``version`` (its instructions, its containers)."""
    count = rng.choice((1, 1, 2, 2, 3, 4))
    addresses = [ENTRY + i for i in range(count)]
    call_data = _call_data(rng)
    contracts = {}
    for address in addresses:
        data = bytes(rng.getrandbits(8) for _ in range(rng.choice((0, 0, 1, 8, 9, 16, 33, 64))))
        if address != ENTRY and rng.random() < 0.15 or (address == ENTRY and rng.random() < 0.04):
            rows = recursive_rows(rng, version)
        else:
            rows = fresh_rows(rng, addresses, len(call_data), len(data), callee=address != ENTRY, version=version)
        if address == ENTRY and rng.random() < 0.02:
            rows = deep_rows(rng) + rows
        storage = {}
        if rng.random() < 0.5:
            storage = {_pick(rng, KEYS): rng.choice(EDGE_WORDS[1:]) for _ in range(1 + rng.randrange(4))}
        contracts[address] = (Code(rows=rows, data=data, version=version), storage)
    inp = FuzzInput(contracts, ENTRY, rng.choice((CALLER, 0, 1, MASK, rng.getrandbits(64))), call_data,
                    rng.choice((0, 1, 1700000000, MASK, rng.getrandbits(64))),
                    bytes(rng.getrandbits(8) for _ in range(32)), version=version)
    inp.policy, inp.isolation = random_policy(rng, inp.mnemonics(), version)
    inp.limits = random_limits(rng)
    if rng.random() < 0.03:
        request_bound(rng, inp)
    if rng.random() < 0.02:
        inp.to = rng.choice((MISSING, 1 << 64))
    if rng.random() < 0.004:
        inp.call_data = bytes(MACHINE["call_data_size"] + rng.choice((0, 1)))
    return inp


MALFORMATIONS = 12


def malform(rng: random.Random, inp: FuzzInput, kind: int | None = None) -> None:
    """Corrupt one contract's container (usually the entry's) for a validation rule; a request
    without contracts gets one, at its entry address when that is a word. ``kind`` (0 ..
    MALFORMATIONS-1) forces the corruption drawn (tests)."""
    if not inp.contracts:
        inp.contracts[inp.to if 0 <= inp.to <= MASK else ENTRY] = (Code(rows=[("STOP", 0)], version=inp.version), {})
    address = inp.to if inp.to in inp.contracts and rng.random() < 0.8 else rng.choice(sorted(inp.contracts))
    code, storage = inp.contracts[address]
    blob = bytearray(code.container())
    drawn = rng.randrange(MALFORMATIONS) if len(blob) >= HEADER_SIZE else 99    # shorter than a header: append
    kind = drawn if kind is None or drawn == 99 else kind
    if kind == 0:
        blob[rng.randrange(len(MAGIC))] ^= 1 << rng.randrange(8)
    elif kind == 1:
        blob[4 + rng.randrange(2)] = rng.choice((0, 2, 255))
    elif kind == 2:
        blob[6 + rng.randrange(2)] = 1 << rng.randrange(8)
    elif kind == 3:
        field = 8 + 4 * rng.randrange(2)
        size = int.from_bytes(blob[field:field + 4], "little") + rng.choice((-1, 1, 1 << 16))
        blob[field:field + 4] = (size % (1 << 32)).to_bytes(4, "little")
    elif kind == 4:
        blob = blob[:rng.randrange(HEADER_SIZE)]
    elif kind == 5 and len(blob) > HEADER_SIZE:
        blob = blob[:-1]
    elif kind == 6 and code.rows:
        # A byte that is no opcode of the container's own version (1.1's new opcodes are
        # undefined in a 1.0 container).
        defined = vocabulary(code.version).table.by_opcode
        undefined = [b for b in range(256) if b not in defined]
        body = bytearray(blob[HEADER_SIZE:HEADER_SIZE + int.from_bytes(blob[8:12], "little")])
        body.insert(rng.randrange(len(body) + 1), rng.choice(undefined))
        blob = bytearray(_container(bytes(body), code.data, code.version))
    elif kind == 7 and code.rows:
        body = blob[HEADER_SIZE:HEADER_SIZE + int.from_bytes(blob[8:12], "little")] + bytes([row("PUSH8").opcode])
        body += bytes(rng.randrange(8))
        blob = bytearray(_container(bytes(body), code.data, code.version))
    elif kind == 8 and code.rows:
        rows = list(code.rows)
        rows.insert(0, ("JUMP", 1))
        body = bytearray(_encode(rows))
        body[1] = (body[1] + 1 + rng.randrange(2)) % 256   # into the middle of an instruction
        blob = bytearray(_container(bytes(body), code.data, code.version))
    elif kind == 9 and code.rows and len(code.rows) > 1:
        blob = bytearray(_container(_encode(code.rows[:-1] + [("NOP", 0)]), code.data, code.version))
    elif kind == 10 and rng.random() < 0.15:
        blob = bytearray(_container(bytes(MACHINE["code_size"] + 1), b"", inp.version))
    elif kind == 11 and rng.random() < 0.15:
        blob = bytearray(_container(b"\x00", bytes(MACHINE["data_size"] + 1), inp.version))
    else:
        blob.append(rng.getrandbits(8))
    inp.contracts[address] = (Code(raw=bytes(blob)), storage)


def _encode(rows):
    from conformance.fuzz.program import encode_rows
    return encode_rows(rows)


def _container(code: bytes, data: bytes, version: str) -> bytes:
    from reference_vm.container import build
    return build(code, data, spec.version(version).number)
