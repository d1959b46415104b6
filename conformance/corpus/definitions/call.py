"""Calls (spec 6.11, 5.2.1): success, revert, fault and exhaustion of callees; callees that
cannot run; compute limits of callees; memory alive across frames; storage undo; the call
depth limit; call records in start order.

Each states what its author expects from chapter 6.11: how each call record ends, what the
caller reads after the call ([ok, RETURNDATASIZE, first word of return data]), the slots an
undone callee leaves (its writes gone), the pages alive at the peak (5.3.1)."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MACHINE, MASK, OPEN, OTHER, PAGE, THIRD, Boundary, Expect, build, case, limit_side, push_all,
    returning, words,
)

CALL_DEPTH = MACHINE["call_depth"]
RETURNS_WORD = "push 0\npush 0x1122334455667788\nmstore\npush 0\npush 8\nreturn\n"
# Calls itself with call data n - 1 while n > 0, then returns its CALL's ok (or 1 at n = 0).
RECURSE = ("push 0\ncalldataload\ndup1\njumpi deeper\npush 1\n" + returning(1) +
           "deeper:\npush 1\nsub\npush 0\nswap1\nmstore\n"
           "self\npush 1000000\npush 0\npush 8\ncall\n" + returning(1))


def depth_expect(at: str, n: int) -> Expect:
    """RECURSE with call data n: n calls start (frames of depth 2 to n + 1); above the limit the
    last is refused for depth (6.11 step 3a). Every frame returns its own call's ok: 1."""
    calls = ("success",) * n
    return Expect(outcome="success", output=words(1),
                  calls=limit_side(at, calls, calls[:-1] + ("CALL_DEPTH_EXCEEDED",)))


def call_code(address: int = OTHER, compute: int = 100000, offset: int = 0, length: int = 0) -> str:
    """CALL, then return [ok, returndatasize, first word of return data]."""
    return (push_all([address, compute, offset, length]) + "call\nreturndatasize\n"
            f"push {PAGE - 8}\npush 0\npush 8\nreturndatacopy\npush {PAGE - 8}\nmload\n" + returning(3))


# What the caller of call_code returns after a call that failed (6.11 step 5: ok = 0, the
# return data empty, so RETURNDATACOPY writes zeros, 6.8).
FAILED = words(0, 0, 0)
RETURNED = 0x1122334455667788     # the word RETURNS_WORD returns


def called(outcome: str, output: bytes = FAILED, **kw) -> Expect:
    """A successful caller (call_code) whose one call ended with ``outcome``."""
    return Expect(outcome="success", calls=(outcome,), output=output, **kw)


# callee name -> what the call gives: a failed callee's writes are undone (slot 1 of OTHER stays 0).
CALLEES = {
    "success_with_output": called("success", words(1, 8, RETURNED)),
    "stop": called("success", words(1, 0, 0)),
    "revert_with_output": called("reverted", words(0, 3, 0x77)),
    "trap": called("TRAP_EXECUTED"),
    "stack_underflow": called("STACK_UNDERFLOW"),
    "own_compute_exhausted": called(EXCEEDED["compute"]),
    "memory_exhausted": called(EXCEEDED["memory_pages"]),
    "storage_write": called("success", words(1, 8, RETURNED), storage={OTHER: {1: 2}}),
    "storage_write_then_revert": called("reverted", storage={OTHER: {1: 0}}),
    "storage_write_then_trap": called("TRAP_EXECUTED", storage={OTHER: {1: 0}}),
    # callees that cannot run (6.11 step 3): the record's code, nothing run
    "missing_contract": called("CONTRACT_NOT_FOUND"),
    "invalid_code": called("CODE_NOT_TERMINATED"),
    "bad_magic": called("BAD_MAGIC"),
    "policy_refused": called("TIME_ACCESS_FORBIDDEN"),
}


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
                   call_code(), contracts={OTHER: callee}, opcodes=("CALL",), categories=("semantics", "call"),
                   expect=CALLEES[name])
    unrunnable = {"missing_contract": None, "invalid_code": build(b"\x01"), "bad_magic": b"XXXX" + bytes(12),
                  "policy_refused": "time\nstop\n"}
    for name, callee in unrunnable.items():
        yield case(f"call/CALL/callee_{name}", f"CALL of a callee that cannot run ({name.replace('_', ' ')}).",
                   call_code(), contracts={} if callee is None else {OTHER: callee}, opcodes=("CALL",),
                   categories=("semantics", "call"), expect=CALLEES[name])
    yield case("call/CALL/self_call", "A contract calls itself once (call data selects the path).",
               "push 0\ncalldataload\njumpi inner\n" + push_all([0, 1]) + "mstore\n" +
               call_code(address=0x100, length=8) + "inner:\npush 5\n" + returning(1),
               opcodes=("CALL",), categories=("semantics", "call"), expect=called("success", words(1, 8, 5)))
    yield case("call/CALL/call_data_passed", "The callee receives memory[offset, offset+length) as call data.",
               "push 16\npush 0x0102030405060708\nmstore\n" + call_code(offset=16, length=8),
               contracts={OTHER: "push 0\ncalldataload\ncalldatasize\n" + returning(2)},
               opcodes=("CALL", "CALLDATALOAD"), categories=("semantics", "call"),
               expect=called("success", words(1, 16, 0x0102030405060708)))
    yield case("call/CALL/huge_compute_operand", "A compute operand of 2^64-1 is capped by the caller's limit.",
               call_code(compute=MASK), contracts={OTHER: "computeleft\n" + returning(1)},
               limits={"compute": 5000}, opcodes=("CALL", "COMPUTELEFT"), categories=("semantics", "call"))
    yield case("call/CALL/zero_compute_operand", "A callee given 0 compute can only STOP.",
               call_code(compute=0), contracts={OTHER: "push 1\nstop\n"}, opcodes=("CALL",),
               categories=("semantics", "call", "limits"), expect=called(EXCEEDED["compute"]))
    yield case("call/CALL/call_data_range_exhausts_caller",
               "The call-data range no memory limit allows halts the caller; no call is recorded.",
               call_code(offset=MASK, length=2), contracts={OTHER: "stop\n"}, opcodes=("CALL",),
               categories=("limits", "call"), expect=Expect(outcome=EXCEEDED["memory_pages"], calls=()))
    yield case("call/CALL/zero_length_far_offset", "A zero-length call-data range at a huge offset touches nothing.",
               call_code(offset=MASK, length=0), contracts={OTHER: "calldatasize\n" + returning(1)},
               opcodes=("CALL",), categories=("semantics", "call", "edge"), expect=called("success", words(1, 8, 0)))
    yield case("call/CALL/grandchild_writes_undone", "A parent's revert undoes its successful child's writes.",
               call_code(), contracts={OTHER: push_all([THIRD, 100000, 0, 0]) + "call\npop\npush 0\npush 0\nrevert\n",
                                       THIRD: "push 3\npush 4\nsstore\nstop\n"},
               opcodes=("CALL", "SSTORE"), categories=("semantics", "call"),
               expect=Expect(outcome="success", calls=("reverted", "success"), output=FAILED, storage={THIRD: {3: 0}}))
    yield case("call/CALL/records_in_start_order", "Call records: a call's record precedes its callee's calls.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\n" + call_code(address=THIRD),
               contracts={OTHER: push_all([THIRD, 100000, 0, 0]) + "call\npop\ntrap\n", THIRD: RETURNS_WORD},
               opcodes=("CALL",), categories=("semantics", "call"),
               expect=Expect(outcome="success", calls=("TRAP_EXECUTED", "success", "success"),
                             output=words(1, 8, RETURNED)))
    yield case("call/CALL/storage_of_callee", "SSTORE in a callee writes the callee's storage.",
               call_code(), contracts={OTHER: ("push 9\nsload\npush 1\nadd\npush 9\nswap1\nsstore\nstop\n", {9: 41})},
               storage={9: 1000}, opcodes=("CALL", "SSTORE", "SLOAD"), categories=("semantics", "call"),
               expect=called("success", words(1, 0, 0), storage={OTHER: {9: 42}, ENTRY: {9: 1000}}))
    yield case("call/CALL/callee_policy_refused_storage", "A callee holding SSTORE under read_only is refused.",
               call_code(), contracts={OTHER: "push 1\npush 1\nsstore\nstop\n"},
               policy={"storage_access": "read_only"}, opcodes=("CALL",), categories=("call", "policy"),
               expect=called("STORAGE_WRITE_FORBIDDEN", storage={OTHER: {1: 0}}))
    yield case("call/CALL/callee_uses_open_gates", "A callee reads TIME and RANDOM under an open policy.",
               call_code(), contracts={OTHER: "time\nrandom\nadd\n" + returning(1)}, block_time=7,
               policy=OPEN, opcodes=("CALL", "TIME", "RANDOM"), categories=("semantics", "call"),
               expect=Expect(outcome="success", calls=("success",)))
    for at, n in (("limit-1", CALL_DEPTH - 2), ("limit", CALL_DEPTH - 1), ("limit+1", CALL_DEPTH)):
        yield case(f"call/CALL/depth_{at}", f"Recursive CALLs whose deepest frame would have depth {n + 1} "
                   f"(limit {CALL_DEPTH}).", RECURSE, call_data=n.to_bytes(8, "little"), opcodes=("CALL",),
                   categories=("boundary", "call"), boundary=Boundary("call_depth", at), expect=depth_expect(at, n))
    # Pages alive across frames: the caller holds 2 pages while its callee grows 2 more.
    grow_two = f"push {2 * PAGE - 1}\nmload8\n"
    for at, limit in (("limit-1", 5), ("limit", 4), ("limit+1", 3)):
        yield case(f"call/CALL/pages_alive_{at}", f"Caller and callee hold 2 pages each; memory limit {limit}.",
                   grow_two + call_code(), contracts={OTHER: grow_two + "stop\n"}, limits={"memory_pages": limit},
                   opcodes=("CALL",), categories=("boundary", "call"), boundary=Boundary("memory_pages", at),
                   # 2 + 2 pages alive; refused, the callee's growth leaves the caller's 2 (5.3.1)
                   expect=limit_side(at, called("success", words(1, 0, 0), usage={"memory_pages": 4}),
                                     called(EXCEEDED["memory_pages"], usage={"memory_pages": 2})))
    yield case("call/CALL/pages_released_after_return", "A callee's pages are released: peak, not sum.",
               call_code(), contracts={OTHER: grow_two + "stop\n"}, opcodes=("CALL",),
               categories=("semantics", "call"), expect=called("success", words(1, 0, 0), usage={"memory_pages": 2}))
    yield case("call/CALL/sequential_callees_reuse_pages", "Two callees in turn each grow 2 pages; peak stays low.",
               push_all([OTHER, 100000, 0, 0]) + "call\npop\n" + call_code(), contracts={OTHER: grow_two + "stop\n"},
               limits={"memory_pages": 3}, opcodes=("CALL",), categories=("semantics", "call"),
               expect=Expect(outcome="success", calls=("success", "success"), usage={"memory_pages": 2}))
