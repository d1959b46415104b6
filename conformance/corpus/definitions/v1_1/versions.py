"""Containers of both versions under 1.1 (spec 1.7, 3.1.2, 3.2.1, item C1), undefined opcodes
of a 1.1 container, and policies naming what 1.1 adds (4.2, 4.3).

- A 1.0 container runs under 1.1 with 1.1's prices, and its instruction set stays 1.0's: the
  bytes 1.1 gives to new instructions are undefined in it (every 1.0 definition is filled for
  1.1 with its 1.0 containers; the 1.0 vectors validation/UNDEFINED_OPCODE/byte_0x47 ... 0xc1
  say so in both corpora). Here: the same bytes are instructions in a 1.1 container, a 1.0
  and a 1.1 contract call each other, and a header naming a version 1.1 does not run.
- Every byte that is no opcode of 1.1 is undefined in a 1.1 container.
- The type ``transient`` and the new mnemonics are names of 1.1's policies: forbidding or
  allowing them by type or name, and the gates they do not have.

Each states what its author expects: the validation code of a container 1.1 does not run (3.1,
3.2), what the code of one it runs returns, and the listing's code where a policy refuses
(4.2); a refused request runs nothing (5.5).
"""

from __future__ import annotations

from conformance.corpus.definitions.common import OPEN, OTHER, Expect, build, push_all, refused, returning, words
from reference_vm import assemble
from conformance.corpus.definitions.v1_1.common import TABLE, VERSION, case

OP = {i.mnemonic: i.opcode for i in TABLE.instructions}
STOP = bytes([OP["STOP"]])
NOP = bytes([OP["NOP"]])
LISTED = TABLE.policy["forbidden_by_listing"]["error"]
# CLZ of 1: the 63 zero bits above the lowest (6.5).
CLZ_OF_ONE = TABLE.limits["machine"]["word_bits"] - 1
NEW = ("MULHU", "MULHS", "CLZ", "CTZ", "POPCNT", "STATICCALL", "TLOAD", "TSTORE")


def _header(version: tuple[int, int]) -> bytes:
    return build(STOP, b"", VERSION)[:4] + bytes(version) + build(STOP, b"", VERSION)[6:]


def cases():
    v = "validation"
    for version in ((1, 2), (1, 255), (2, 1)):
        yield case(f"{v}/UNSUPPORTED_VERSION/v{version[0]}_{version[1]}",
                   f"Container version {version[0]}.{version[1]}: not one 1.1 runs.", _header(version),
                   categories=("invalid",), expect=refused("UNSUPPORTED_VERSION"))
    yield case(f"{v}/container_version/v1_1_runs", "A 1.1 container (header 01 01) runs under 1.1.",
               "push 7\n" + returning(1), opcodes=("PUSH1",), categories=("semantics", "version"),
               expect=Expect(outcome="success", output=words(7)))
    yield case(f"{v}/container_version/v1_0_runs", "A 1.0 container (header 01 00) runs under 1.1.",
               "push 7\n" + returning(1), opcodes=("PUSH1",), container="1.0", categories=("semantics", "version"),
               expect=Expect(outcome="success", output=words(7)))
    for byte, name in ((OP["CLZ"], "clz"), (OP["MULHS"], "mulhs"), (OP["TLOAD"], "tload")):
        yield case(f"{v}/container_version/byte_0x{byte:02x}_is_{name}_in_v1_1",
                   f"Byte 0x{byte:02x} is {name.upper()} in a 1.1 container (undefined in a 1.0 one).",
                   build(bytes([OP["PUSH1"], 6, OP["PUSH1"], 3]) + bytes([byte]) + STOP, b"", VERSION),
                   opcodes=(name.upper(),), categories=("semantics", "version"), expect=Expect(outcome="success"))
    yield case(f"{v}/container_version/v1_0_calls_v1_1", "A 1.0 contract CALLs a 1.1 contract that uses CLZ; "
               "both run under 1.1.", push_all([OTHER, 100000, 0, 0]) + "call\nreturndatasize\n" + returning(2),
               contracts={OTHER: assemble("push 1\nclz\n" + returning(1), VERSION)}, container="1.0",
               opcodes=("CALL",), categories=("semantics", "version", "call"),
               expect=Expect(outcome="success", calls=("success",), output=words(1, 8)))
    yield case(f"{v}/container_version/v1_1_calls_v1_0_with_clz_byte", "A 1.1 contract CALLs a 1.0 contract "
               "holding byte 0x69: the callee is invalid (UNDEFINED_OPCODE in its record).",
               push_all([OTHER, 100000, 0, 0]) + "call\n" + returning(1),
               contracts={OTHER: build(NOP + bytes([OP["CLZ"]]) + STOP)}, opcodes=("CALL",),
               categories=("semantics", "version", "call"),
               expect=Expect(outcome="success", calls=("UNDEFINED_OPCODE",), output=words(0)))
    defined = {i.opcode for i in TABLE.instructions}
    for byte in range(256):
        if byte not in defined:
            yield case(f"{v}/UNDEFINED_OPCODE/v1_1_byte_0x{byte:02x}",
                       f"Byte 0x{byte:02x} is no opcode of 1.1: undefined in a 1.1 container.",
                       build(NOP + bytes([byte]) + STOP, b"", VERSION), categories=("invalid",),
                       expect=refused("UNDEFINED_OPCODE"))
    # Policies naming 1.1's type and mnemonics (4.2): valid names now.
    tstore = "push 1\npush 2\ntstore\npush 1\ntload\n" + returning(1)
    yield case("policy/TSTORE/forbidden_by_type", "forbidden_operations [transient] refuses TSTORE.", tstore,
               policy={"forbidden_operations": ["transient"]}, opcodes=("TSTORE",), categories=("violation",),
               expect=refused(LISTED))
    yield case("policy/TLOAD/forbidden_by_name", "forbidden_operations [TLOAD] refuses TLOAD.", tstore,
               policy={"forbidden_operations": ["TLOAD"]}, opcodes=("TLOAD",), categories=("violation",),
               expect=refused(LISTED))
    yield case("policy/TSTORE/allowed_by_type", "allowed_operations naming transient admits TLOAD and TSTORE.",
               tstore, policy={"allowed_operations": ["stack", "transient", "memory", "control"]},
               opcodes=("TLOAD", "TSTORE"), categories=("policy",), expect=Expect(outcome="success", output=words(2)))
    yield case("policy/TSTORE/not_in_allowed", "allowed_operations without transient refuses TSTORE.",
               tstore, policy={"allowed_operations": ["stack", "memory", "control"]}, opcodes=("TSTORE",),
               categories=("violation",), expect=refused(LISTED))
    yield case("policy/TSTORE/pure_level_admits", "Transient storage has no gate: the pure level (storage "
               "none, calls forbidden) admits TLOAD and TSTORE.", tstore,
               policy={"storage_access": "none", "external_call": "forbidden"}, opcodes=("TLOAD", "TSTORE"),
               categories=("policy", "isolation"), expect=Expect(outcome="success", output=words(2)))
    yield case("policy/MULHU/forbidden_by_type", "forbidden_operations [arithmetic] refuses MULHU.",
               "push 2\npush 3\nmulhu\nstop\n", policy={"forbidden_operations": ["arithmetic"]},
               opcodes=("MULHU",), categories=("violation",), expect=refused(LISTED))
    yield case("policy/CLZ/allowed_by_name", "allowed_operations naming CLZ admits it.",
               "push 1\nclz\n" + returning(1), policy={"allowed_operations": ["CLZ", "PUSH1", "MSTORE", "SWAP1",
                                                                               "RETURN"]},
               opcodes=("CLZ",), categories=("policy",), expect=Expect(outcome="success", output=words(CLZ_OF_ONE)))
    yield case("policy/STOP/every_type_allowed_v1_1", "allowed_operations listing every type of 1.1 admits any code.",
               tstore, policy={"allowed_operations": sorted(set(TABLE.instruction_types))},
               opcodes=("TSTORE",), categories=("policy",), expect=Expect(outcome="success", output=words(2)))
    for mnemonic in NEW:
        yield case(f"policy/{mnemonic}/named_in_policy_runs_other_code", f"A policy forbidding {mnemonic} is "
                   "valid in 1.1 (INVALID_REQUEST in 1.0, which does not know the name): other code runs.",
                   "push 7\n" + returning(1), policy={**OPEN, "forbidden_operations": [mnemonic]},
                   opcodes=("PUSH1",), categories=("policy",), expect=Expect(outcome="success", output=words(7)))
