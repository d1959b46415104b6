"""The 1.1 corpus's expectations checked against hand computations from the 1.1 text (spec/
CHANGELOG.md's 1.1 items and the sections they name), as tests/test_corpus_expectations.py does
for 1.0: every number below is written by hand, never read from spec/data or computed by
reference_vm.

- the instruction rows, codes and numbers 1.1 adds (N1, N2, F1, T1, P1) are those of the data;
- every MULHU, MULHS, CLZ, CTZ and POPCNT vector of the plain form (push the operands, the
  instruction, return the result): its output from the definitions of 6.3 and 6.5 computed here
  with Python's integers, its usage and fee from the base costs;
- straight-line transient vectors: their outputs, and the compute of 5.6.8's transient_write;
- read-only callees: the call record of a write in a STATICCALL callee (READ_ONLY_WRITE after
  the base cost, before the cost rule);
- the repricing: a one-block SHA256 costs 3 less under 1.1 than under 1.0, the same request.
"""

from __future__ import annotations

import pytest

import spec
from conformance.constants import corpus_dir
from conformance.corpus import store
from test_corpus_expectations import HEADER, OUTCOME_CODES, PAGE_COST, PINNED, fee

W = 64
MASK = (1 << W) - 1
# mnemonic: (opcode, immediate size, inputs, outputs, base cost) -- the 1.1 items, by hand.
NEW = {
    "MULHU": (0x47, 0, 2, 1, 4), "MULHS": (0x48, 0, 2, 1, 4),                       # N1
    "CLZ": (0x69, 0, 1, 1, 2), "CTZ": (0x6A, 0, 1, 1, 2), "POPCNT": (0x6B, 0, 1, 1, 2),  # N2
    "STATICCALL": (0xC1, 0, 4, 1, 100),                                                # F1: CALL's cost
    "TLOAD": (0x84, 0, 1, 1, 5), "TSTORE": (0x85, 0, 2, 0, 8),                        # T1
}
PINNED_1_1 = {**PINNED, **NEW}
NEW_CODES = {"READ_ONLY_WRITE": "fault", "TRANSIENT_STORAGE_FULL": "fault"}          # F1, T1
HASH_COST_1_0, HASH_COST_1_1 = 6, 3                                                    # P1
TRANSIENT_NEW_SLOT_COST, TRANSIENT_SLOTS = 20, 4096                                    # T1
BY_OPCODE = {op: m for m, (op, *_) in PINNED_1_1.items()}

VECTORS = {v["id"]: v for v in store.load(corpus_dir("1.1"))}
VECTORS_1_0 = {v["id"]: v for v in store.load(corpus_dir("1.0"))}


def signed(v: int) -> int:
    return v - (1 << W) if v >> (W - 1) else v


# 6.3 and 6.5, as the text defines them.
DEFINED = {
    "MULHU": lambda a, b: (a * b) >> W,
    "MULHS": lambda a, b: ((signed(a) * signed(b)) // (1 << W)) & MASK,    # floor division
    "CLZ": lambda a: W - a.bit_length(),
    "CTZ": lambda a: W if a == 0 else next(i for i in range(W) if a >> i & 1),
    "POPCNT": lambda a: bin(a).count("1"),
}


def decode(container_hex: str) -> list[tuple[int, str, int]]:
    blob = bytes.fromhex(container_hex[2:])
    code = blob[HEADER:HEADER + int.from_bytes(blob[8:12], "little")]
    out, pc = [], 0
    while pc < len(code):
        mnemonic = BY_OPCODE[code[pc]]
        size = PINNED_1_1[mnemonic][1]
        out.append((pc, mnemonic, int.from_bytes(code[pc + 1:pc + 1 + size], "little")))
        pc += 1 + size
    return out


def code_of(vector, address: str | None = None) -> list[tuple[int, str, int]]:
    inp = vector["input"]
    return decode(inp["pre_state"]["contracts"][address or inp["message"]["to"]]["code"])


def cost(*mnemonics: str) -> int:
    return sum(PINNED_1_1[m][4] for m in mnemonics)


def words(output: str) -> list[int]:
    blob = bytes.fromhex(output[2:])
    return [int.from_bytes(blob[i:i + 8], "little") for i in range(0, len(blob), 8)]


# returning(n) of conformance/corpus/definitions/common.py, as instructions.
RETURNING_1 = ["PUSH1", "SWAP1", "MSTORE", "PUSH1", "PUSH1", "RETURN"]


def test_the_1_1_data_holds_the_pinned_numbers():
    table = spec.load("1.1")
    assert {i.mnemonic: (i.opcode, i.immediate_size, i.inputs, i.outputs, i.cost)
            for i in table.instructions} == PINNED_1_1
    assert {e.code: e.kind for e in table.errors.values()} == {**OUTCOME_CODES, **NEW_CODES}
    assert table.schedule["hash"]["block_cost"] == HASH_COST_1_1
    assert spec.load("1.0").schedule["hash"]["block_cost"] == HASH_COST_1_0
    assert table.schedule["transient"]["new_slot_cost"] == TRANSIENT_NEW_SLOT_COST
    assert table.limits["machine"]["transient_slots"] == TRANSIENT_SLOTS


def _plain(mnemonic: str):
    """The vectors of ``mnemonic`` whose entry code is: push the operands, the instruction,
    return its result; (vector, operands)."""
    arity = PINNED_1_1[mnemonic][2]
    for vid, vector in sorted(VECTORS.items()):
        if f"/{mnemonic}/" not in vid or vector["tags"]["source"] != "definition":
            continue
        code = code_of(vector)
        names = [m for _, m, _ in code]
        if (len(names) == arity + 1 + len(RETURNING_1) and all(n.startswith("PUSH") for n in names[:arity])
                and names[arity] == mnemonic and names[arity + 1:] == RETURNING_1):
            yield vector, [imm for _, _, imm in code[:arity]]


@pytest.mark.parametrize("mnemonic, at_least", [("MULHU", 45), ("MULHS", 45), ("CLZ", 14), ("CTZ", 14),
                                                ("POPCNT", 14)])
def test_every_plain_vector_of_a_new_operation_matches_its_definition(mnemonic, at_least):
    checked = 0
    for vector, operands in _plain(mnemonic):
        result = vector["expected"]["result"]
        compute = cost(*(m for _, m, _ in code_of(vector))) + PAGE_COST      # returning's MSTORE: one page
        assert result["status"] == "success", vector["id"]
        assert words(result["output"]) == [DEFINED[mnemonic](*operands)], (vector["id"], operands)
        assert result["usage"] == {"compute": compute, "memory_pages": 1, "storage_units": 0, "storage_reads": 0,
                                   "storage_writes": 0, "storage_new_slots": 0}, vector["id"]
        assert result["fee"] == fee(compute, 1), vector["id"]
        checked += 1
    assert checked >= at_least


def test_the_edges_the_text_names():
    """6.3's and 6.5's stated examples, by operands (whatever the vector ids)."""
    MIN = 1 << (W - 1)
    assert DEFINED["MULHU"](2 ** 63, 4) == 2
    assert DEFINED["MULHS"](MASK, 1) == MASK          # -1 x 1 = -1: the high word is all ones
    assert DEFINED["MULHS"](MASK, MASK) == 0          # -1 x -1 = 1
    assert DEFINED["MULHS"](MIN, MIN) == 2 ** 62
    assert DEFINED["MULHS"](MIN, MASK) == 0           # MIN x -1 = 2^63: high word 0
    assert (DEFINED["CLZ"](0), DEFINED["CTZ"](0), DEFINED["POPCNT"](MASK)) == (W, W, W)
    seen = {(m, tuple(ops)) for m in ("MULHU", "MULHS") for _, ops in _plain(m)}
    for pair in ((2 ** 63, 4), (MASK, 1), (MASK, MASK), (MIN, MIN), (MIN, MASK)):
        assert ("MULHS", pair) in seen or ("MULHU", pair) in seen, pair
    counted = {(m, ops[0]) for m in ("CLZ", "CTZ", "POPCNT") for _, ops in _plain(m)}
    assert {("CLZ", 0), ("CTZ", 0), ("POPCNT", MASK), ("CLZ", MASK), ("CTZ", MIN)} <= counted


# Straight-line transient vectors: (id, output words, new transient slots made), by hand.
TRANSIENT = [
    ("transient/TLOAD/unwritten_is_zero", [0, 0], 0),
    ("transient/TSTORE/then_tload", [5, 0], 1),
    ("transient/TSTORE/overwrite", [6], 1),
    ("transient/TSTORE/zero_clears", [0], 1),
    ("transient/TSTORE/max_key_and_value", [MASK], 1),
    ("transient/TSTORE/new_slot_charge", [], 1),
    ("transient/TSTORE/zero_write_no_charge", [], 0),
    ("transient/TSTORE/rewrite_no_charge", [], 1),
]


@pytest.mark.parametrize("vid, output, new_slots", TRANSIENT)
def test_straight_line_transient_vectors_by_hand(vid, output, new_slots):
    vector = VECTORS[vid]
    result = vector["expected"]["result"]
    names = [m for _, m, _ in code_of(vector)]
    assert not {"JUMP", "JUMPI", "CALL", "CALLSUB"} & set(names)
    pages = 1 if "MSTORE" in names else 0
    compute = cost(*names) + pages * PAGE_COST + new_slots * TRANSIENT_NEW_SLOT_COST
    assert result["status"] == "success" and result["error"] is None
    assert words(result["output"]) == output
    # transient storage is never reported and never counts as storage (2.3.3, 5.6.8)
    assert result["state_changes"] == [] and result["events"] == []
    assert result["usage"] == {"compute": compute, "memory_pages": pages, "storage_units": 0, "storage_reads": 0,
                               "storage_writes": 0, "storage_new_slots": 0}
    assert result["fee"] == fee(compute, pages)


def _log_call(n: int):
    # _log(n): push1 0, push1 8, n topics by push1, then LOGn: READ_ONLY_WRITE at the LOG, after
    # its base cost (20 + 10 n) and before its cost rule (no memory, no copy).
    return (f"log{n}", f"LOG{n}", 2 * (2 + n), cost(*["PUSH1"] * (2 + n), f"LOG{n}"))


@pytest.mark.parametrize("name, mnemonic, error_pc, compute", [
    ("sstore", "SSTORE", 4, cost("PUSH1", "PUSH1", "SSTORE")),       # no new-slot charge, no units
    ("tstore", "TSTORE", 4, cost("PUSH1", "PUSH1", "TSTORE")),       # no transient_write charge
    *[_log_call(n) for n in range(5)],
])
def test_a_write_in_a_static_callee_is_a_read_only_write_after_its_base_cost(name, mnemonic, error_pc, compute):
    vector = VECTORS[f"call/STATICCALL/callee_{name}_read_only_write"]
    result = vector["expected"]["result"]
    (record,) = result["calls"]
    callee = code_of(vector, record["callee"])
    assert [m for pc, m, _ in callee if pc == error_pc] == [mnemonic]
    assert record == {"caller": "0x100", "callee": "0x101", "depth": 2, "status": "fault",
                      "error": "READ_ONLY_WRITE", "error_pc": error_pc, "compute": compute, "memory_pages": 0,
                      "storage_reads": 0, "storage_writes": 0, "storage_new_slots": 0, "storage_units": 0}
    # the entry frame goes on: ok = 0, no return data, nothing written, no event
    assert result["status"] == "success" and words(result["output"])[:2] == [0, 0]
    assert result["state_changes"] == [] and result["events"] == []


def test_the_repricing_of_a_hash_block():
    """hash/SHA256/happy hashes 8 bytes (one block) into memory at 0: the same request in both
    corpora; under 1.1 one block costs 3, under 1.0 6, and nothing else changes."""
    old, new = VECTORS_1_0["hash/SHA256/happy"], VECTORS["hash/SHA256/happy"]
    assert old["input"] == new["input"]
    names = [m for _, m, _ in code_of(new)]
    for vector, block in ((old, HASH_COST_1_0), (new, HASH_COST_1_1)):
        result = vector["expected"]["result"]
        compute = cost(*names) + PAGE_COST + block
        assert result["usage"]["compute"] == compute and result["fee"] == fee(compute, 1)
    a, b = old["expected"]["result"], new["expected"]["result"]
    assert {k: v for k, v in a.items() if k not in ("usage", "fee")} == \
        {k: v for k, v in b.items() if k not in ("usage", "fee")}
