"""STATICCALL and read-only frames (spec 6.11, 2.4, 7.2, item F1): every write in a read-only
frame (SSTORE, TSTORE, LOG0-LOG4) halts it with READ_ONLY_WRITE, a call record only; frames
created below a read-only one are read-only, CALL or STATICCALL; a read-only callee that only
reads, returns or reverts is like any callee; the order of the checks (stack, base cost, then
READ_ONLY_WRITE, before any cost rule); what the caller keeps; callees that cannot run; the call
depth; the gate, the policy and memory at the call-data range, as for CALL.

Each states what its author expects from 6.11 and 7.2 (1.1): the call records' outcomes, what
the caller reads after the call ([ok, RETURNDATASIZE, first word]), and the slots a read-only
frame's refused write leaves (nothing written)."""

from __future__ import annotations

from conformance.corpus.definitions.call import RETURNED, called, depth_expect
from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MASK, OPEN, OTHER, PAGE, THIRD, Boundary, Expect, limit_side, push_all, refused, returning, words,
)
from conformance.corpus.definitions.v1_1.common import MACHINE, TABLE, case

CALL_DEPTH = MACHINE["call_depth"]
RETURNS_WORD = "push 0\npush 0x1122334455667788\nmstore\npush 0\npush 8\nreturn\n"
LOGS = tuple(f"log{n}" for n in range(5))
READ_ONLY = "READ_ONLY_WRITE"
GATE = TABLE.policy["gate"]["external_call"]["error"]


def static_code(address: int = OTHER, compute: int = 100000, offset: int = 0, length: int = 0) -> str:
    """STATICCALL, then return [ok, returndatasize, first word of return data]."""
    return (push_all([address, compute, offset, length]) + "staticcall\nreturndatasize\n"
            f"push {PAGE - 8}\npush 0\npush 8\nreturndatacopy\npush {PAGE - 8}\nmload\n" + returning(3))


def _log(n: int) -> str:
    return push_all([0, 8] + [0x71 + i for i in range(n)]) + f"log{n}\n"


# Calls itself by STATICCALL with call data n - 1 while n > 0, then returns its call's ok.
RECURSE = ("push 0\ncalldataload\ndup1\njumpi deeper\npush 1\n" + returning(1) +
           "deeper:\npush 1\nsub\npush 0\nswap1\nmstore\n"
           "self\npush 1000000\npush 0\npush 8\nstaticcall\n" + returning(1))


# Callees a STATICCALL cannot run (6.11 step 3): each record's code; one byte is no container.
UNRUNNABLE = {"missing_contract": called("CONTRACT_NOT_FOUND"), "invalid_code": called("CONTAINER_TRUNCATED"),
              "policy_refused": called("TIME_ACCESS_FORBIDDEN")}


def _c(name: str, description: str, code: str, **kw):
    kw.setdefault("opcodes", ("STATICCALL",))
    kw.setdefault("categories", ("semantics", "call", "read_only"))
    return case(f"call/STATICCALL/{name}", description, code, **kw)


def cases():
    writes = {"sstore": ("push 1\npush 2\nsstore\n", "SSTORE"), "tstore": ("push 1\npush 2\ntstore\n", "TSTORE"),
              **{f"log{n}": (_log(n), f"LOG{n}") for n in range(5)}}
    for name, (code, mnemonic) in writes.items():
        yield _c(f"callee_{name}_read_only_write",
                 f"A STATICCALL callee executes {mnemonic}: READ_ONLY_WRITE, nothing written, ok = 0.",
                 static_code(), contracts={OTHER: code + RETURNS_WORD}, opcodes=("STATICCALL", mnemonic),
                 expect=called(READ_ONLY, storage={OTHER: {1: 0}}))
    reads = {
        "sload": ("push 9\nsload\n" + returning(1), ("SLOAD",)),
        "tload": ("push 9\ntload\n" + returning(1), ("TLOAD",)),
        "context": ("caller\nself\ncalldatasize\n" + returning(3), ("CALLER", "SELF", "CALLDATASIZE")),
        "memory_and_hash": ("push 0\npush 0x0102\nmstore\npush 64\npush 0\npush 8\nsha256\npush 64\npush 32\nreturn\n",
                            ("MSTORE", "SHA256")),
    }
    for name, (code, ops) in reads.items():
        yield _c(f"callee_reads_{name}", "A STATICCALL callee that only reads and returns succeeds.",
                 static_code(), contracts={OTHER: (code, {9: 0x99})}, opcodes=("STATICCALL", *ops),
                 expect=Expect(outcome="success", calls=("success",)))
    yield _c("callee_returns_output", "A read-only callee's output is the return data, as for CALL.",
             static_code(), contracts={OTHER: RETURNS_WORD}, expect=called("success", words(1, 8, RETURNED)))
    yield _c("callee_reverts_with_output", "A read-only callee may revert with output: ok = 0, its output kept.",
             static_code(), contracts={OTHER: "push 0\npush 0x77\nmstore\npush 0\npush 3\nrevert\n"},
             expect=called("reverted", words(0, 3, 0x77)))
    yield _c("callee_trap", "A read-only callee that traps: TRAP_EXECUTED, ok = 0, empty return data.",
             static_code(), contracts={OTHER: "trap\n"}, expect=called("TRAP_EXECUTED"))
    nested = push_all([THIRD, 100000, 0, 0])
    yield _c("nested_call_is_read_only", "A CALL below a STATICCALL creates a read-only frame: the grandchild's "
             "SSTORE halts it with READ_ONLY_WRITE, its caller goes on and succeeds.",
             static_code(), contracts={OTHER: nested + "call\n" + returning(1), THIRD: "push 3\npush 4\nsstore\nstop\n"},
             opcodes=("STATICCALL", "CALL", "SSTORE"),
             expect=Expect(outcome="success", calls=("success", READ_ONLY), output=words(1, 8, 0),
                           storage={THIRD: {3: 0}}))
    yield _c("nested_tstore_is_read_only", "A TSTORE two frames below a STATICCALL: READ_ONLY_WRITE.",
             static_code(), contracts={OTHER: nested + "call\n" + returning(1), THIRD: "push 3\npush 4\ntstore\nstop\n"},
             opcodes=("STATICCALL", "CALL", "TSTORE"),
             expect=Expect(outcome="success", calls=("success", READ_ONLY), output=words(1, 8, 0)))
    yield _c("nested_staticcall_below_call", "A CALL's callee may STATICCALL: that grandchild is read-only, the "
             "child is not (its own SSTORE after the call stays).",
             push_all([OTHER, 100000, 0, 0]) + "call\n" + returning(1),
             contracts={OTHER: nested + "staticcall\npop\npush 5\npush 6\nsstore\nstop\n",
                        THIRD: "push 1\npush 1\nsstore\nstop\n"},
             opcodes=("STATICCALL", "CALL", "SSTORE"),
             expect=Expect(outcome="success", calls=("success", READ_ONLY), output=words(1),
                           storage={OTHER: {5: 6}, THIRD: {1: 0}}))
    yield _c("callee_log_caller_event_kept", "The caller's event before a STATICCALL stays; the read-only "
             "callee's LOG0 halts it with READ_ONLY_WRITE and emits nothing.",
             _log(1) + static_code(), contracts={OTHER: _log(0) + "stop\n"}, opcodes=("STATICCALL", "LOG0", "LOG1"),
             expect=called(READ_ONLY))
    yield _c("caller_write_before_kept", "The caller's SSTORE before a failing STATICCALL is not undone.",
             "push 5\npush 6\nsstore\n" + static_code(), contracts={OTHER: "push 1\npush 2\nsstore\nstop\n"},
             opcodes=("STATICCALL", "SSTORE"), expect=called(READ_ONLY, storage={ENTRY: {5: 6}, OTHER: {1: 0}}))
    yield _c("caller_writes_after", "After a STATICCALL returns, the caller is not read-only: its SSTORE and "
             "TSTORE run.", push_all([OTHER, 100000, 0, 0]) + "staticcall\n"
             "push 5\nswap1\nsstore\npush 7\npush 8\ntstore\npush 7\ntload\n" + returning(1),
             contracts={OTHER: "stop\n"}, opcodes=("STATICCALL", "SSTORE", "TSTORE"),
             # [the STATICCALL's ok 1 stored at key 5, then TLOAD of key 7]
             expect=Expect(outcome="success", calls=("success",), output=words(8), storage={ENTRY: {5: 1}}))
    yield _c("callee_reads_caller_transient", "A STATICCALL to the caller's own address reads the transient "
             "slot the caller wrote (shared by every frame of the contract).",
             "push 0\ncalldataload\njumpi inner\npush 4\npush 0x44\ntstore\n" + push_all([0, 1]) + "mstore\n"
             + static_code(address=0x100, length=8) + "inner:\npush 4\ntload\n" + returning(1),
             opcodes=("STATICCALL", "TLOAD", "TSTORE"), expect=called("success", words(1, 8, 0x44)))
    yield _c("stack_underflow_before_read_only", "SSTORE with one item in a read-only frame: STACK_UNDERFLOW, "
             "the stack checks come first.", static_code(), contracts={OTHER: "push 1\nsstore\nstop\n"},
             opcodes=("STATICCALL", "SSTORE"), expect=called("STACK_UNDERFLOW"))
    yield _c("base_cost_before_read_only", "A read-only callee without compute for SSTORE's base cost: "
             "COMPUTE_LIMIT_EXCEEDED, not READ_ONLY_WRITE.", static_code(compute=2),
             contracts={OTHER: "push 1\npush 2\nsstore\nstop\n"}, opcodes=("STATICCALL", "SSTORE"),
             expect=called(EXCEEDED["compute"]))
    yield _c("read_only_before_log_cost_rule", "LOG0 of a range no memory limit allows, in a read-only frame: "
             "READ_ONLY_WRITE before the log_data rule grows memory.", static_code(),
             contracts={OTHER: push_all([MASK, 8]) + "log0\nstop\n"}, opcodes=("STATICCALL", "LOG0"),
             expect=called(READ_ONLY))
    yield _c("read_only_before_transient_rule", "TSTORE of a new slot with no compute for its rule, in a "
             "read-only frame: READ_ONLY_WRITE, nothing more charged.", static_code(compute=20),
             contracts={OTHER: "push 1\npush 2\ntstore\nstop\n"}, opcodes=("STATICCALL", "TSTORE"),
             expect=called(READ_ONLY))
    yield _c("sstore_allowed_by_policy_still_read_only", "A policy allowing SSTORE does not make a read-only "
             "frame writable.", static_code(), contracts={OTHER: "push 1\npush 2\nsstore\nstop\n"},
             policy={"allowed_operations": ["stack", "memory", "call", "storage", "control", "environment"]},
             opcodes=("STATICCALL", "SSTORE"), categories=("semantics", "call", "read_only", "policy"),
             expect=called(READ_ONLY, storage={OTHER: {1: 0}}))
    yield _c("records_in_start_order", "Call records of a STATICCALL tree: start order, statuses per frame.",
             push_all([OTHER, 100000, 0, 0]) + "staticcall\npop\n" + static_code(address=THIRD),
             contracts={OTHER: push_all([THIRD, 100000, 0, 0]) + "call\npop\npush 1\npush 1\nsstore\nstop\n",
                        THIRD: RETURNS_WORD},
             expect=Expect(outcome="success", calls=(READ_ONLY, "success", "success"), output=words(1, 8, RETURNED),
                           storage={OTHER: {1: 0}}))
    unrunnable = {"missing_contract": None, "invalid_code": b"\x01", "policy_refused": "time\nstop\n"}
    for name, callee in unrunnable.items():
        yield _c(f"callee_{name}", f"STATICCALL of a callee that cannot run ({name.replace('_', ' ')}).",
                 static_code(), contracts={} if callee is None else {OTHER: callee}, expect=UNRUNNABLE[name])
    yield _c("call_data_range_exhausts_caller", "The call-data range no memory limit allows halts the caller; "
             "no call is recorded.", static_code(offset=MASK, length=2), contracts={OTHER: "stop\n"},
             categories=("limits", "call"), expect=Expect(outcome=EXCEEDED["memory_pages"], calls=()))
    yield _c("huge_compute_operand", "A compute operand of 2^64-1 is capped by the caller's limit.",
             static_code(compute=MASK), contracts={OTHER: "computeleft\n" + returning(1)},
             limits={"compute": 5000}, opcodes=("STATICCALL", "COMPUTELEFT"))
    for at, n in (("limit-1", CALL_DEPTH - 2), ("limit", CALL_DEPTH - 1), ("limit+1", CALL_DEPTH)):
        yield _c(f"depth_{at}", f"Recursive STATICCALLs whose deepest frame would have depth {n + 1} "
                 f"(limit {CALL_DEPTH}).", RECURSE, call_data=n.to_bytes(8, "little"),
                 categories=("boundary", "call"), boundary=Boundary("call_depth", at), expect=depth_expect(at, n))
    grow_two = f"push {2 * PAGE - 1}\nmload8\n"
    for at, limit in (("limit-1", 5), ("limit", 4), ("limit+1", 3)):
        yield _c(f"pages_alive_{at}", f"Caller and read-only callee hold 2 pages each; memory limit {limit}.",
                 grow_two + static_code(), contracts={OTHER: grow_two + "stop\n"}, limits={"memory_pages": limit},
                 categories=("boundary", "call"), boundary=Boundary("memory_pages", at),
                 expect=limit_side(at, called("success", words(1, 0, 0), usage={"memory_pages": 4}),
                                   called(EXCEEDED["memory_pages"], usage={"memory_pages": 2})))
    # The gate of CALL (external_call), and the policy naming it.
    yield case("policy/STATICCALL/gate_closed", "STATICCALL under a policy closing its gate external_call.",
               "push 0x101\npush 0\npush 0\npush 0\nstaticcall\nstop\n", policy={"external_call": "forbidden"},
               opcodes=("STATICCALL",), categories=("violation",), expect=refused(GATE))
    yield case("policy/STATICCALL/gate_closed_unreachable", "STATICCALL after STOP is refused too.",
               "stop\npush 0x101\npush 0\npush 0\npush 0\nstaticcall\nstop\n", policy={"external_call": "forbidden"},
               opcodes=("STATICCALL",), categories=("violation",), expect=refused(GATE))
    yield case("policy/STATICCALL/gate_open_allowed", "STATICCALL with external_call = allowed.",
               push_all([OTHER, 1000, 0, 0]) + "staticcall\n" + returning(1), contracts={OTHER: "stop\n"},
               policy={"external_call": "allowed"}, opcodes=("STATICCALL",), categories=("policy",),
               expect=Expect(outcome="success", calls=("success",), output=words(1)))
    yield case("policy/STATICCALL/view_level_admits", "The view level (read_only storage) admits STATICCALL "
               "of a reading callee.", static_code(), contracts={OTHER: ("push 3\nsload\n" + returning(1), {3: 33})},
               policy={"storage_access": "read_only"}, opcodes=("STATICCALL", "SLOAD"),
               categories=("policy", "isolation"), expect=called("success", words(1, 8, 33)))
    yield case("policy/STATICCALL/forbidden_leaves_call", "Forbidding STATICCALL by name refuses it, not CALL.",
               push_all([OTHER, 1000, 0, 0]) + "call\n" + returning(1), contracts={OTHER: "stop\n"},
               policy={**OPEN, "forbidden_operations": ["STATICCALL"]}, opcodes=("CALL",), categories=("policy",),
               expect=Expect(outcome="success", calls=("success",), output=words(1)))
