"""The fuzzer's structured form of an execution request, and its conversions.

A ``FuzzInput`` holds each contract as a list of instruction rows (mnemonic and immediate;
a jump immediate is the *index* of the target row, so rows can be deleted and inserted
without breaking jump targets) or, for a malformed container, its raw bytes. It converts
exactly to a vector input (chapter 11.2) and back, is JSON-serialisable (the pool, the
campaign state and Ray tasks carry it), and is what the mutators and the shrinker edit.

A request is for one spec version (``FuzzInput.version``: the campaign's, the version the
reference and the adapters run it under), and each contract's code is of a container version
(``Code.version``: its header, and the instruction set its rows may use).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


import spec
from conformance.corpus.vector import (
    BASE, DEFAULTS, DETERMINISM_FIELDS, VERSIONS, bytes_hex, default_isolation, isolation_levels, parse_bytes,
    parse_word, word_hex,
)
from reference_vm.container import build, parse
from reference_vm.decode import decode
from reference_vm.errors import InvalidCode
from reference_vm.rules import rules

# The policy fields, storage access order, request range and default limits: the same in every
# version (reference_vm.rules refuses a version that changes the API's defaults).
POLICY_FIELDS = tuple(DEFAULTS.policy["fields"])
ACCESS_ORDER = tuple(DEFAULTS.raw("sandbox")["sandbox"]["storage_access_order"])
LIMITS = DEFAULTS.limits


def row(mnemonic: str) -> spec.Instruction:
    """The row of ``mnemonic`` in the newest version that has it (a row's encoding, immediate
    and flow are the same in every version that has it: versions add rows, chapter 1.7)."""
    return _ROWS[mnemonic]


_ROWS = {m: ins for v in VERSIONS for m, ins in spec.load(v).by_mnemonic.items()}
_BY_OPCODE = {ins.opcode: ins for ins in _ROWS.values()}


def known_mnemonics():
    """Every mnemonic of any version."""
    return _ROWS.keys()


def row_of_opcode(opcode: int) -> spec.Instruction | None:
    """The row whose opcode is ``opcode`` in any version (None: undefined in every one)."""
    return _BY_OPCODE.get(opcode)


def version_name(number: tuple[int, int]) -> str:
    """The version a container header's bytes 4 and 5 name (a known one)."""
    return next(v for v in VERSIONS if spec.version(v).number == number)


@dataclass
class Code:
    """A contract's code: rows of (mnemonic, immediate) with its data section, or raw bytes."""

    rows: list[tuple[str, int]] | None = None
    data: bytes = b""
    raw: bytes | None = None
    version: str = BASE                 # the container's version (rows only: raw bytes carry their own)
    # The last container built and the rows and data it was built from: a request's code is
    # encoded several times (generation, limit tuning, the request line); rows may be edited
    # in place, so the memo is used only while they are equal to what it was built from.
    _memo: tuple[tuple, bytes, bytes] | None = field(default=None, repr=False, compare=False)

    def container(self) -> bytes:
        if self.raw is not None:
            return self.raw
        rows = tuple(self.rows or ())
        memo = self._memo
        if memo is not None and memo[1] == self.data and memo[0] == rows:
            return memo[2]
        blob = build(encode_rows(self.rows or []), self.data, spec.version(self.version).number)
        self._memo = (rows, self.data, blob)
        return blob

    def to_json(self) -> Any:
        if self.raw is not None:
            return {"raw": self.raw.hex()}
        out: dict[str, Any] = {"rows": [list(r) for r in self.rows or []], "data": self.data.hex()}
        if self.version != BASE:
            out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> "Code":
        if "raw" in value:
            return cls(raw=bytes.fromhex(value["raw"]))
        return cls(rows=[(str(m), int(i)) for m, i in value["rows"]], data=bytes.fromhex(value["data"]),
                   version=spec.version(value.get("version", BASE)).version)

    def copy(self) -> "Code":
        return Code(None if self.rows is None else list(self.rows), self.data, self.raw, self.version, self._memo)


# Per mnemonic: (encoded size, opcode, is a jump, immediate size, immediate mask), so that
# encoding a row is one lookup (encoding is done for every generated request).
_ENCODING = {m: (ins.size, ins.opcode, ins.immediate_kind == "jump_target", ins.immediate_size,
                 (1 << (8 * ins.immediate_size)) - 1) for m, ins in _ROWS.items()}
# Mnemonic -> opcode, the order of ``FuzzInput.mnemonics``.
_OPCODE = {m: ins.opcode for m, ins in _ROWS.items()}


def encode_rows(rows: list[tuple[str, int]]) -> bytes:
    """The code section of rows; a jump immediate names a row index (taken modulo the count)."""
    encoding = _ENCODING
    offsets, pc = [], 0
    for mnemonic, _ in rows:
        offsets.append(pc)
        pc += encoding[mnemonic][0]
    out = bytearray()
    for mnemonic, imm in rows:
        _, opcode, jump, size, mask = encoding[mnemonic]
        out.append(opcode)
        if jump:
            out += offsets[imm % len(rows)].to_bytes(size, "little")
        elif size:
            out += (imm & mask).to_bytes(size, "little")      # imm modulo 2 ** (8 * size)
    return bytes(out)


def code_of_container(blob: bytes, version: str) -> Code:
    """Rows of a container that decodes under spec ``version`` (jump targets on boundaries),
    of its own container version; else its raw bytes."""
    try:
        parsed = parse(blob, rules(version))
        decoded = decode(parsed.code, rules(version).instruction_set(parsed.version))
    except InvalidCode:
        return Code(raw=blob)
    index = {d.offset: i for i, d in enumerate(decoded)}
    rows = []
    for d in decoded:
        imm = d.immediate
        if d.instruction.immediate_kind == "jump_target":
            if imm not in index:
                return Code(raw=blob)
            imm = index[imm]
        rows.append((d.instruction.mnemonic, imm))
    if not rows or build(encode_rows(rows), parsed.data, parsed.version) != blob:
        return Code(raw=blob)
    return Code(rows=rows, data=parsed.data, version=version_name(parsed.version))


def default_policy() -> dict[str, Any]:
    fields = DEFAULTS.policy["fields"]
    return {**{n: fields[n]["default"] for n in POLICY_FIELDS}, "allowed": None, "forbidden": []}


def default_limits() -> dict[str, int]:
    return dict(LIMITS["default"])


def _default_isolation() -> str:
    return default_isolation(BASE)


@dataclass
class FuzzInput:
    contracts: dict[int, tuple[Code, dict[int, int]]]
    to: int = 0x100
    caller: int = 0xCA11E7
    call_data: bytes = b""
    block_time: int = 0
    random_seed: bytes = bytes(32)
    policy: dict[str, Any] = field(default_factory=default_policy)
    isolation: str = field(default_factory=_default_isolation)
    limits: dict[str, int] = field(default_factory=default_limits)
    version: str = BASE             # the spec version the request runs under (the campaign's)

    def copy(self) -> "FuzzInput":
        p = self.policy
        return FuzzInput(
            contracts={a: (c.copy(), dict(s)) for a, (c, s) in self.contracts.items()}, to=self.to,
            caller=self.caller, call_data=self.call_data, block_time=self.block_time,
            random_seed=self.random_seed,
            policy={**p, "forbidden": list(p["forbidden"]),
                    "allowed": None if p["allowed"] is None else list(p["allowed"])},
            isolation=self.isolation, limits=dict(self.limits), version=self.version)

    def fixed_isolation(self) -> "FuzzInput":
        """The same request with a storage access no wider than its isolation level allows."""
        level = isolation_levels(self.version).get(self.isolation)
        if level is None:
            self.isolation = default_isolation(self.version)
            level = isolation_levels(self.version)[self.isolation]
        top = ACCESS_ORDER.index(level["max_storage_access"])
        access = self.policy["storage_access"]
        if access in ACCESS_ORDER and ACCESS_ORDER.index(access) > top:    # an unknown one stays: malformed
            self.policy["storage_access"] = ACCESS_ORDER[top]
        return self

    def vector_input(self) -> dict[str, Any]:
        contracts = {}
        for address in sorted(self.contracts):
            code, storage = self.contracts[address]
            contracts[word_hex(address)] = {
                "code": bytes_hex(code.container()),
                "storage": {word_hex(k): word_hex(v) for k, v in sorted(storage.items()) if v}}
        p = self.policy
        return {
            "pre_state": {"contracts": contracts},
            "message": {"to": word_hex(self.to), "caller": word_hex(self.caller),
                        "call_data": bytes_hex(self.call_data)},
            "context": {"block_time": word_hex(self.block_time), "random_seed": bytes_hex(self.random_seed)},
            "policy": {**{n: p[n] for n in DETERMINISM_FIELDS},
                       "allowed_operations": None if p["allowed"] is None else list(p["allowed"]),
                       "forbidden_operations": list(p["forbidden"])},
            "sandbox": {"isolation_level": self.isolation, "storage_access": p["storage_access"],
                        "limits": dict(self.limits)},
        }

    @classmethod
    def from_vector_input(cls, vi: Mapping[str, Any], version: str) -> "FuzzInput":
        """The request of a vector input, run under spec ``version``."""
        contracts = {}
        for address, body in vi["pre_state"]["contracts"].items():
            contracts[parse_word(address)] = (code_of_container(parse_bytes(body["code"]), version),
                                              {parse_word(k): parse_word(v) for k, v in body["storage"].items()})
        pol, sandbox = vi["policy"], vi["sandbox"]
        allowed = pol["allowed_operations"]
        policy = {**{n: pol[n] for n in DETERMINISM_FIELDS}, "storage_access": sandbox["storage_access"],
                  "allowed": None if allowed is None else list(allowed),
                  "forbidden": list(pol["forbidden_operations"])}
        return cls(contracts, parse_word(vi["message"]["to"]), parse_word(vi["message"]["caller"]),
                   parse_bytes(vi["message"]["call_data"]), parse_word(vi["context"]["block_time"]),
                   parse_bytes(vi["context"]["random_seed"]), policy, sandbox["isolation_level"],
                   dict(sandbox["limits"]), version)

    def to_json(self) -> dict[str, Any]:
        out = {"contracts": [[a, c.to_json(), [[k, v] for k, v in sorted(s.items())]]
                             for a, (c, s) in sorted(self.contracts.items())],
               "to": self.to, "caller": self.caller, "call_data": self.call_data.hex(),
               "block_time": self.block_time, "random_seed": self.random_seed.hex(),
               "policy": self.policy, "isolation": self.isolation, "limits": self.limits}
        if self.version != BASE:
            out["version"] = self.version
        return out

    @classmethod
    def from_json(cls, j: Mapping[str, Any]) -> "FuzzInput":
        contracts = {int(a): (Code.from_json(c), {int(k): int(v) for k, v in s}) for a, c, s in j["contracts"]}
        return cls(contracts, int(j["to"]), int(j["caller"]), bytes.fromhex(j["call_data"]), int(j["block_time"]),
                   bytes.fromhex(j["random_seed"]), dict(j["policy"]), str(j["isolation"]), dict(j["limits"]),
                   spec.version(j.get("version", BASE)).version)

    def mnemonics(self) -> list[str]:
        """Every mnemonic in the (row form) contracts, in opcode order."""
        found = {m for code, _ in self.contracts.values() for m, _ in (code.rows or [])}
        return sorted(found, key=_OPCODE.__getitem__)

    def size(self) -> int:
        """Instructions in all contracts (raw containers count their code bytes)."""
        total = 0
        for code, _ in self.contracts.values():
            total += len(code.rows or ()) if code.raw is None else max(0, len(code.raw) - 16)
        return total


def disassemble(code: Code) -> list[str]:
    """One line per row: offset, mnemonic, immediate (a jump shows its target offset)."""
    if code.raw is not None:
        return [f"(raw container, {len(code.raw)} bytes) {code.raw[:48].hex()}{'...' if len(code.raw) > 48 else ''}"]
    rows = code.rows or []
    offsets, pc = [], 0
    for m, _ in rows:
        offsets.append(pc)
        pc += row(m).size
    out = []
    for (m, imm), off in zip(rows, offsets):
        ins = row(m)
        arg = f" @{offsets[imm % len(rows)]}" if ins.immediate_kind == "jump_target" else (
            f" {imm % (1 << (8 * ins.immediate_size)):#x}" if ins.immediate_size else "")
        out.append(f"{off:5d}  {m}{arg}")
    if code.data:
        out.append(f"       data 0x{code.data[:32].hex()}{'...' if len(code.data) > 32 else ''}")
    return out
