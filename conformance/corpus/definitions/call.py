"""Calls (spec 6.11, 5.2.1): success, revert, fault and exhaustion of callees; callees that
cannot run; compute limits of callees; memory alive across frames; storage undo; the call
depth limit; call records in start order."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    MACHINE, MASK, OPEN, OTHER, PAGE, THIRD, Boundary, build, case, push_all, returning,
)

CALL_DEPTH = MACHINE["call_depth"]
RETURNS_WORD = "push 0\npush 0x1122334455667788\nmstore\npush 0\npush 8\nreturn\n"
# Calls itself with call data n - 1 while n > 0, then returns its CALL's ok (or 1 at n = 0).
RECURSE = ("push 0\ncalldataload\ndup1\njumpi deeper\npush 1\n" + returning(1) +
           "deeper:\npush 1\nsub\npush 0\nswap1\nmstore\n"
           "self\npush 1000000\npush 0\npush 8\ncall\n" + returning(1))


def call_code(address: int = OTHER, compute: int = 100000, offset: int = 0, length: int = 0) -> str:
    """CALL, then return [ok, returndatasize, first word of return data]."""
    return (push_all([address, compute, offset, length]) + "call\nreturndatasize\n"
            f"push {PAGE - 8}\npush 0\npush 8\nreturndatacopy\npush {PAGE - 8}\nmload\n" + returning(3))


def cases():
    callees = {
        "success_with_output": RETURNS_WORD,
        "stop": "stop\n",
        "revert_with_output": "push 0\npush 0x77\nmstore\npush 0\npush 3\nrevert\n",
        "trap": "trap\n",
        "stack_underflow": "add\nstop\n",
        "own_compute_exhausted": "here:\njump here\n",
        "memory_exhausted": f"push {MASK}\nmload\nstop\n",
        "storage_write": "push 1\npush 2\nsstore\n" + RETURNS_WORD,
        "storage_write_then_revert": "push 1\npush 2\nsstore\npush 0\npush 0\nrevert\n",
        "storage_write_then_trap": "push 1\npush 2\nsstore\ntrap\n",
    }
    for name, callee in callees.items():
        yield case(f"call/CALL/callee_{name}", f"CALL of a callee that ends with: {name.replace('_', ' ')}.",
                   call_code(), contracts={OTHER: callee}, opcodes=("CALL",), categories=("semantics", "call"))
    unrunnable = {"missing_contract": None, "invalid_code": build(b"\x01"), "bad_magic": b"XXXX" + bytes(12),
                  "policy_refused": "time\nstop\n"}
    for name, callee in unrunnable.items():
        yield case(f"call/CALL/callee_{name}", f"CALL of a callee that cannot run ({name.replace('_', ' ')}).",
                   call_code(), contracts={} if callee is None else {OTHER: callee}, opcodes=("CALL",),
                   categories=("semantics", "call"))
    yield case("call/CALL/self_call", "A contract calls itself once (call data selects the path).",
               "push 0\ncalldataload\njumpi inner\n" + push_all([0, 1]) + "mstore\n" +
               call_code(address=0x100, length=8) + "inner:\npush 5\n" + returning(1),
               opcodes=("CALL",), categories=("semantics", "call"))
    yield case("call/CALL/call_data_passed", "The callee receives memory[offset, offset+length) as call data.",
               "push 16\npush 0x0102030405060708\nmstore\n" + call_code(offset=16, length=8),
               contracts={OTHER: "push 0\ncalldataload\ncalldatasize\n" + returning(2)},
               opcodes=("CALL", "CALLDATALOAD"), categories=("semantics", "call"))
    yield case("call/CALL/huge_compute_operand", "A compute operand of 2^64-1 is capped by the caller's limit.",
               call_code(compute=MASK), contracts={OTHER: "computeleft\n" + returning(1)},
               limits={"compute": 5000}, opcodes=("CALL", "COMPUTELEFT"), categories=("semantics", "call"))
    yield case("call/CALL/zero_compute_operand", "A callee given 0 compute can only STOP.",
               call_code(compute=0), contracts={OTHER: "push 1\nstop\n"}, opcodes=("CALL",),
               categories=("semantics", "call", "limits"))
    yield case("call/CALL/call_data_range_exhausts_caller",
               "The call-data range no memory limit allows halts the caller; no call is recorded.",
               call_code(offset=MASK, length=2), contracts={OTHER: "stop\n"}, opcodes=("CALL",),
               categories=("limits", "call"))
    yield case("call/CALL/zero_length_far_offset", "A zero-length call-data range at a huge offset touches nothing.",
               call_code(offset=MASK, length=0), contracts={OTHER: "calldatasize\n" + returning(1)},
               opcodes=("CALL",), categories=("semantics", "call", "edge"))
    yield case("call/CALL/grandchild_writes_undone", "A parent's revert undoes its successful child's writes.",
               call_code(), contracts={OTHER: push_all([THIRD, 100000, 0, 0]) + "call\npop\npush 0\npush 0\nrevert\n",
                                       THIRD: "push 3\npush 4\nsstore\nstop\n"},
               opcodes=("CALL", "SSTORE"), categories=("semantics", "call"))
    yield case("call/CALL/records_in_start_order", "Call records: a call's record precedes its callee's calls.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\n" + call_code(address=THIRD),
               contracts={OTHER: push_all([THIRD, 100000, 0, 0]) + "call\npop\ntrap\n", THIRD: RETURNS_WORD},
               opcodes=("CALL",), categories=("semantics", "call"))
    yield case("call/CALL/storage_of_callee", "SSTORE in a callee writes the callee's storage.",
               call_code(), contracts={OTHER: ("push 9\nsload\npush 1\nadd\npush 9\nswap1\nsstore\nstop\n", {9: 41})},
               storage={9: 1000}, opcodes=("CALL", "SSTORE", "SLOAD"), categories=("semantics", "call"))
    yield case("call/CALL/callee_policy_refused_storage", "A callee holding SSTORE under read_only is refused.",
               call_code(), contracts={OTHER: "push 1\npush 1\nsstore\nstop\n"},
               policy={"storage_access": "read_only"}, opcodes=("CALL",), categories=("call", "policy"))
    yield case("call/CALL/callee_uses_open_gates", "A callee reads TIME and RANDOM under an open policy.",
               call_code(), contracts={OTHER: "time\nrandom\nadd\n" + returning(1)}, block_time=7,
               policy=OPEN, opcodes=("CALL", "TIME", "RANDOM"), categories=("semantics", "call"))
    for at, n in (("limit-1", CALL_DEPTH - 2), ("limit", CALL_DEPTH - 1), ("limit+1", CALL_DEPTH)):
        yield case(f"call/CALL/depth_{at}", f"Recursive CALLs whose deepest frame would have depth {n + 1} "
                   f"(limit {CALL_DEPTH}).", RECURSE, call_data=n.to_bytes(8, "little"), opcodes=("CALL",),
                   categories=("boundary", "call"), boundary=Boundary("call_depth", at))
    # Pages alive across frames: the caller holds 2 pages while its callee grows 2 more.
    grow_two = f"push {2 * PAGE - 1}\nmload8\n"
    for at, limit in (("limit-1", 5), ("limit", 4), ("limit+1", 3)):
        yield case(f"call/CALL/pages_alive_{at}", f"Caller and callee hold 2 pages each; memory limit {limit}.",
                   grow_two + call_code(), contracts={OTHER: grow_two + "stop\n"}, limits={"memory_pages": limit},
                   opcodes=("CALL",), categories=("boundary", "call"), boundary=Boundary("memory_pages", at))
    yield case("call/CALL/pages_released_after_return", "A callee's pages are released: peak, not sum.",
               call_code(), contracts={OTHER: grow_two + "stop\n"}, opcodes=("CALL",),
               categories=("semantics", "call"))
    yield case("call/CALL/sequential_callees_reuse_pages", "Two callees in turn each grow 2 pages; peak stays low.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\n" + call_code(), contracts={OTHER: grow_two + "stop\n"},
               limits={"memory_pages": 3}, opcodes=("CALL",), categories=("semantics", "call"))
