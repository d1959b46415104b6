"""Policies that admit code (spec 4): each gate open with each value that opens it, listings
that admit by type and by name, and gated instructions in callees under the same policy."""

from __future__ import annotations

from conformance.corpus.definitions.common import OTHER, TABLE, case, push_all, returning

OPENING = {
    "TIME": [{"time_access": "allowed"}],
    "RANDOM": [{"randomness": "seeded"}],
    "CALL": [{"external_call": "allowed"}],
    "SLOAD": [{"storage_access": "read_only"}, {"storage_access": "read_write"}],
    "SSTORE": [{"storage_access": "read_write"}],
}
CODE = {"TIME": "time\n" + returning(1), "RANDOM": "random\n" + returning(1),
        "CALL": push_all([OTHER, 1000, 0, 0]) + "call\n" + returning(1),
        "SLOAD": "push 3\nsload\n" + returning(1), "SSTORE": "push 3\npush 4\nsstore\nstop\n"}


def cases():
    for mnemonic, policies in OPENING.items():
        for policy in policies:
            (field, value), = policy.items()
            yield case(f"policy/{mnemonic}/gate_open_{value}", f"{mnemonic} with {field} = {value}.",
                       CODE[mnemonic], policy=policy, contracts={OTHER: "stop\n"}, storage={3: 33},
                       opcodes=(mnemonic,), categories=("policy",))
    yield case("policy/ADD/allowed_by_type", "allowed_operations naming types admits their instructions.",
               "push 1\npush 2\nadd\n" + returning(1), policy={"allowed_operations": ["stack", "arithmetic", "memory", "control"]},
               opcodes=("ADD",), categories=("policy",))
    yield case("policy/ADD/allowed_by_name", "allowed_operations naming each mnemonic admits exactly them.",
               "push 1\npush 2\nadd\nstop\n", policy={"allowed_operations": ["PUSH1", "ADD", "STOP"]},
               opcodes=("ADD",), categories=("policy",))
    yield case("policy/ADD/forbidding_another_type", "Forbidding a type the code does not use changes nothing.",
               "push 1\npush 2\nadd\nstop\n", policy={"forbidden_operations": ["storage", "CALL"]},
               opcodes=("ADD",), categories=("policy",))
    yield case("policy/STOP/storage_none_without_storage", "storage_access none admits code without storage access.",
               "push 1\nstop\n", policy={"storage_access": "none", "external_call": "forbidden"},
               opcodes=("STOP",), categories=("policy",))
    yield case("policy/CALL/callee_gate_closed", "The policy binds callees too: a callee with RANDOM is refused.",
               push_all([OTHER, 1000, 0, 0]) + "call\n" + returning(1), contracts={OTHER: "random\nstop\n"},
               opcodes=("CALL", "RANDOM"), categories=("policy", "call"))
    yield case("policy/CALL/callee_forbidden_by_listing", "A callee holding a forbidden mnemonic is refused.",
               push_all([OTHER, 1000, 0, 0]) + "call\n" + returning(1), contracts={OTHER: "push 1\npush 1\nmul\nstop\n"},
               policy={"forbidden_operations": ["MUL"]}, opcodes=("CALL", "MUL"), categories=("policy", "call"))
    # Isolation levels (chapter 10.2): the level is the narrowest admitting the storage access
    # and call setting, so these vectors name the pure and view levels.
    pure = {"storage_access": "none", "external_call": "forbidden"}
    view = {"storage_access": "read_only"}
    for name, policy, code, ops in (
            ("pure_admits_pure_code", pure, "push 2\npush 3\nmul\n" + returning(1), ("MUL",)),
            ("pure_refuses_storage_reads", pure, CODE["SLOAD"], ("SLOAD",)),
            ("pure_refuses_calls", pure, CODE["CALL"], ("CALL",)),
            ("view_admits_reads", view, CODE["SLOAD"], ("SLOAD",)),
            ("view_refuses_writes", view, CODE["SSTORE"], ("SSTORE",)),
            ("view_refuses_writing_callee", view, CODE["CALL"], ("CALL",))):
        yield case(f"policy/{ops[0]}/level_{name}", f"Isolation level {name.split('_')[0]}: {name.replace('_', ' ')}.",
                   code, policy=policy, storage={3: 33}, contracts={OTHER: "push 1\npush 1\nsstore\nstop\n"},
                   opcodes=ops, categories=("policy", "isolation"))
    every_type = sorted(set(TABLE.instruction_types))
    yield case("policy/STOP/every_type_allowed", "allowed_operations listing every type admits any code.",
               "push 1\nstop\n", policy={"allowed_operations": every_type}, opcodes=("STOP",), categories=("policy",))
