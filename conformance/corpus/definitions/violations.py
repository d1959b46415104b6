"""Violations and rejected requests (spec 4, 7.3): every gate closed, refusal by listing, the
first refusal in offset order, malformed requests and the order of the checks before
execution.

Each states the code its author expects, from chapter 4 (the gate's error and the listing's,
policy.toml) and 7.3 (the order of the checks); a refused request runs nothing and charges
nothing (5.5)."""

from __future__ import annotations


from conformance.corpus.definitions.common import MASK, TABLE, Boundary, Expect, build, case, limit_side, refused

LISTED = TABLE.policy["forbidden_by_listing"]["error"]
GATE = {name: gate["error"] for name, gate in TABLE.policy["gate"].items()}

LIMITS = TABLE.limits
CALL_DATA_SIZE = LIMITS["machine"]["call_data_size"]

GATED_CODE = {"TIME": "time\nstop\n", "RANDOM": "random\nstop\n",
              "CALL": "push 0x101\npush 0\npush 0\npush 0\ncall\nstop\n",
              "SLOAD": "push 0\nsload\nstop\n", "SSTORE": "push 0\npush 1\nsstore\nstop\n"}
CLOSED = {"time": {"time_access": "forbidden"}, "randomness": {"randomness": "forbidden"},
          "external_call": {"external_call": "forbidden"}, "storage_read": {"storage_access": "none"},
          "storage_write": {"storage_access": "read_only"}}


def cases():
    for ins in TABLE.instructions:
        if ins.gate is None:
            continue
        yield case(f"policy/{ins.mnemonic}/gate_closed", f"{ins.mnemonic} under a policy closing its gate {ins.gate}.",
                   GATED_CODE[ins.mnemonic], policy=CLOSED[ins.gate], opcodes=(ins.mnemonic,),
                   categories=("violation",), expect=refused(GATE[ins.gate]))
        yield case(f"policy/{ins.mnemonic}/gate_closed_unreachable",
                   f"{ins.mnemonic} after STOP is refused too: binding scans all code.",
                   "stop\n" + GATED_CODE[ins.mnemonic], policy=CLOSED[ins.gate], opcodes=(ins.mnemonic,),
                   categories=("violation",), expect=refused(GATE[ins.gate]))
    yield case("policy/SSTORE/storage_none", "SSTORE alone under storage_access none.",
               GATED_CODE["SSTORE"], policy={"storage_access": "none"}, opcodes=("SSTORE",), categories=("violation",),
               expect=refused(GATE["storage_write"]))
    yield case("policy/SLOAD/first_refusal_wins", "SLOAD before SSTORE under storage none: the first refusal decides.",
               "push 0\nsload\npush 1\nsstore\nstop\n", policy={"storage_access": "none"},
               opcodes=("SLOAD", "SSTORE"), categories=("violation",), expect=refused(GATE["storage_read"]))
    yield case("policy/TIME/listing_before_gate", "TIME forbidden by listing and by its gate: the listing error.",
               "time\nstop\n", policy={"forbidden_operations": ["TIME"]}, opcodes=("TIME",), categories=("violation",),
               expect=refused(LISTED))
    yield case("policy/ADD/forbidden_by_type", "ADD refused because its type is forbidden.",
               "push 1\npush 2\nadd\nstop\n", policy={"forbidden_operations": ["arithmetic"]}, opcodes=("ADD",),
               categories=("violation",), expect=refused(LISTED))
    yield case("policy/ADD/not_in_allowed", "allowed_operations [stack, STOP] refuses ADD (chapter 4.2 example).",
               "push 1\npush 2\nadd\nstop\n", policy={"allowed_operations": ["stack", "STOP"]}, opcodes=("ADD",),
               categories=("violation",), expect=refused(LISTED))
    yield case("policy/PUSH1/allowed_list_admits", "allowed_operations [stack, STOP] admits PUSH1; STOP.",
               "push 1\nstop\n", policy={"allowed_operations": ["stack", "STOP"]}, opcodes=("PUSH1", "STOP"),
               categories=("policy",), expect=Expect(outcome="success"))
    yield case("policy/PUSH1/forbidden_beats_allowed", "A name in both lists is forbidden.",
               "push 1\nstop\n", policy={"allowed_operations": ["stack", "STOP"], "forbidden_operations": ["PUSH1"]},
               opcodes=("PUSH1",), categories=("violation",), expect=refused(LISTED))
    yield case("policy/STOP/empty_allowed_list", "An empty allowed_operations list refuses every code.",
               "stop\n", policy={"allowed_operations": []}, opcodes=("STOP",), categories=("violation",),
               expect=refused(LISTED))
    yield case("policy/TIME/allowed_by_type_gate_still_closed", "Listing allows context; TIME's gate is closed.",
               "time\nstop\n", policy={"allowed_operations": ["context", "control"]}, opcodes=("TIME",),
               categories=("violation",), expect=refused(GATE["time"]))
    # Malformed requests: INVALID_REQUEST before the contract is even looked up.
    bad = {
        "unknown_operation": {"policy": {"forbidden_operations": ["FROB"]}},
        "lower_case_mnemonic": {"policy": {"forbidden_operations": ["add"]}},
        "type_in_upper_case": {"policy": {"allowed_operations": ["STACK", "STOP"]}},
        "time_access_value": {"policy": {"time_access": "sometimes"}},
        "randomness_value": {"policy": {"randomness": "allowed"}},
        "external_call_value": {"policy": {"external_call": "yes"}},
        "to_too_large": {"to": MASK + 1, "deploy_entry": False},
        "caller_too_large": {"caller": MASK + 1},
        "block_time_too_large": {"block_time": MASK + 1},
        "seed_31_bytes": {"random_seed": bytes(31)},
        "seed_33_bytes": {"random_seed": bytes(33)},
        "seed_empty": {"random_seed": b""},
        "missing_contract_too": {"policy": {"forbidden_operations": ["FROB"]}, "deploy_entry": False},
        # The pre-state's words are checked too (check 1): an address, a slot key, a slot value.
        "state_address_too_large": {"contracts": {MASK + 1: "stop\n"}},
        "state_key_too_large": {"storage": {MASK + 1: 1}},
        "state_value_too_large": {"storage": {1: MASK + 1}},
    }
    for name, kw in bad.items():
        yield case(f"request/INVALID_REQUEST/{name}", f"Malformed request: {name.replace('_', ' ')}.",
                   "stop\n", categories=("rejected",), expect=refused("INVALID_REQUEST"), **kw)
    for at, size in (("limit-1", CALL_DATA_SIZE - 1), ("limit", CALL_DATA_SIZE), ("limit+1", CALL_DATA_SIZE + 1)):
        yield case(f"request/call_data_size/{at}", f"Call data of {size} bytes (limit {CALL_DATA_SIZE}).",
                   "calldatasize\npush 1\nsub\ncalldataload\n" + "push 0\nswap1\nmstore\npush 0\npush 8\nreturn\n",
                   call_data=bytes([0xAB]) * size, opcodes=("CALLDATASIZE",), categories=("boundary",),
                   boundary=Boundary("call_data_size", at),
                   # the word at the last byte: 0xAB, then zeros past the end (6.4)
                   expect=limit_side(at, Expect(outcome="success", output=bytes([0xAB]) + bytes(7)),
                                     refused("INVALID_REQUEST")))
    yield case("request/CONTRACT_NOT_FOUND/empty_state", "No contract at all.", "stop\n", deploy_entry=False,
               categories=("rejected",), expect=refused("CONTRACT_NOT_FOUND"))
    yield case("request/CONTRACT_NOT_FOUND/other_address", "Contracts exist, but not at the entry address.",
               "stop\n", deploy_entry=False, contracts={0x101: "stop\n"}, categories=("rejected",),
               expect=refused("CONTRACT_NOT_FOUND"))
    yield case("request/CONTRACT_NOT_FOUND/max_address", "Entry address 2^64-1 holds no contract.",
               "stop\n", to=MASK, deploy_entry=False, contracts={0x100: "stop\n"}, categories=("rejected",),
               expect=refused("CONTRACT_NOT_FOUND"))
    yield case("request/order/invalid_code_before_policy", "Invalid code and a refused instruction: invalid wins.",
               build(bytes([TABLE.by_mnemonic["TIME"].opcode, 0x0C])), categories=("invalid",),
               expect=refused("UNDEFINED_OPCODE"))
    yield case("request/order/policy_before_limits", "A refused instruction and bad limits: violation wins.",
               "time\nstop\n", limits={"compute": -1}, opcodes=("TIME",), categories=("violation",),
               expect=refused(GATE["time"]))
    yield case("request/order/not_found_before_limits", "A missing contract and bad limits: not found wins.",
               "stop\n", deploy_entry=False, limits={"memory_pages": -5}, categories=("rejected",),
               expect=refused("CONTRACT_NOT_FOUND"))
    for dimension in ("compute", "memory_pages", "storage_units"):
        low, high = LIMITS["minimum"][dimension], LIMITS["maximum"][dimension]
        for at, value in (("limit-1", high - 1), ("limit", high), ("limit+1", high + 1)):
            yield case(f"request/{dimension}.maximum/{at}", f"{dimension} limit {value} (maximum {high}).",
                       "push 1\nstop\n", limits={dimension: value}, categories=("boundary",),
                       boundary=Boundary(f"{dimension}.maximum", at),
                       expect=limit_side(at, Expect(outcome="success"), refused("INVALID_LIMITS")))
        # For a minimum the request is outside the range below it: limit-1 is the rejected side.
        for at, value in (("limit-1", low - 1), ("limit", low), ("limit+1", low + 1)):
            yield case(f"request/{dimension}.minimum/{at}", f"{dimension} limit {value} (minimum {low}).",
                       "stop\n", limits={dimension: value}, categories=("boundary",),
                       boundary=Boundary(f"{dimension}.minimum", at),
                       expect=limit_side(at, Expect(outcome="success"), refused("INVALID_LIMITS"), fails_at="limit-1"))
