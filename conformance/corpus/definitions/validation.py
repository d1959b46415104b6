"""Container and code validation (spec 3): every header check, every undefined opcode byte,
every truncated immediate, jump targets that are not boundaries, termination, the code and
data size limits at limit-1/limit/limit+1, and the order of the checks.

Each vector of a validation code expects that code (with nothing run or charged, 5.5); each
that chapter 3 accepts expects what its code then does when it runs (chapter 6)."""

from __future__ import annotations

from reference_vm.container import HEADER_SIZE, MAGIC

import spec
from conformance.corpus.definitions.common import (
    BASE, MACHINE, TABLE, VERSIONS, Boundary, Expect, build, case, limit_side, refused,
)

OP = {i.mnemonic: i.opcode for i in TABLE.instructions}
STOP = bytes([OP["STOP"]])
NOP = bytes([OP["NOP"]])
# A container ending in each terminating instruction is valid (3.2) and runs it with an empty
# stack: RETURN and REVERT lack their inputs, RETSUB its return offset, TRAP traps, and a JUMP to
# itself loops until its compute limit (chapters 5.2.3, 6.1).
TERMINATED_RUNS = {"STOP": "success", "RETURN": "STACK_UNDERFLOW", "REVERT": "STACK_UNDERFLOW",
                   "TRAP": "TRAP_EXECUTED", "JUMP": "COMPUTE_LIMIT_EXCEEDED", "RETSUB": "RETURN_STACK_UNDERFLOW"}
TOO_LARGE = {"code_size": "CODE_TOO_LARGE", "data_size": "DATA_TOO_LARGE"}


def _header(code: bytes, data: bytes = b"", magic: bytes = MAGIC, version=(1, 0), flags=b"\0\0",
            code_size: int | None = None, data_size: int | None = None) -> bytes:
    code_size = len(code) if code_size is None else code_size
    data_size = len(data) if data_size is None else data_size
    return (magic + bytes(version) + flags + code_size.to_bytes(4, "little")
            + data_size.to_bytes(4, "little") + code + data)


def _jump(mnemonic: str, target: int) -> bytes:
    return bytes([OP[mnemonic]]) + target.to_bytes(4, "little")


def _filler(size: int) -> bytes:
    """Valid unreachable code of exactly ``size`` bytes: mostly PUSH8, so that decoding it
    takes few instructions, then NOPs."""
    push8 = bytes([OP["PUSH8"]]) + bytes(8)
    count, rest = divmod(size, len(push8))
    return push8 * count + NOP * rest


def cases():
    v = "validation"
    for n in (0, 1, 4, HEADER_SIZE - 1):
        yield case(f"{v}/CONTAINER_TRUNCATED/{n}_bytes", f"A container of {n} bytes.", build(STOP)[:n],
                   categories=("invalid",), expect=refused("CONTAINER_TRUNCATED"))
    for name, magic in (("lower_case", b"rtwo"), ("zeros", bytes(4)), ("reversed", b"OWTR")):
        yield case(f"{v}/BAD_MAGIC/{name}", f"Magic {magic!r}.", _header(STOP, magic=magic), categories=("invalid",),
                   expect=refused("BAD_MAGIC"))
    for version in ((1, 1), (2, 0), (0, 0), (0, 9), (255, 255)):
        # A 1.1 container is unsupported by 1.0 only: 1.1 runs it (definitions/v1_1/versions.py).
        later = version if version in {spec.version(n).number for n in VERSIONS} else None
        yield case(f"{v}/UNSUPPORTED_VERSION/v{version[0]}_{version[1]}", f"Container version {version[0]}.{version[1]}.",
                   _header(STOP, version=version), categories=("invalid",),
                   until=None if later is None else BASE, expect=refused("UNSUPPORTED_VERSION"))
    for name, flags in (("low_bit", b"\x01\0"), ("high_bit", b"\0\x80")):
        yield case(f"{v}/RESERVED_FLAGS_SET/{name}", f"Reserved flags {flags.hex()}.", _header(STOP, flags=flags),
                   categories=("invalid",), expect=refused("RESERVED_FLAGS_SET"))
    for name, blob in (("trailing_byte", build(STOP) + b"\0"), ("code_size_too_big", _header(STOP, code_size=2)),
                       ("data_size_too_big", _header(STOP, b"ab", data_size=3)),
                       ("sizes_overflow", _header(STOP, code_size=2 ** 32 - 1))):
        yield case(f"{v}/CONTAINER_SIZE_MISMATCH/{name}", f"Header sizes disagree with the length ({name}).", blob,
                   categories=("invalid",), expect=refused("CONTAINER_SIZE_MISMATCH"))
    defined = {i.opcode for i in TABLE.instructions}
    for byte in range(256):
        if byte not in defined:
            yield case(f"{v}/UNDEFINED_OPCODE/byte_0x{byte:02x}", f"Byte 0x{byte:02x} is not an opcode.",
                       build(NOP + bytes([byte]) + STOP), categories=("invalid",),
                       expect=refused("UNDEFINED_OPCODE"))
    yield case(f"{v}/UNDEFINED_OPCODE/inside_data_is_fine", "Undefined bytes in the data section are allowed.",
               build(STOP, bytes([0xFF, 0x0C])), opcodes=("STOP",), categories=("semantics",),
               expect=Expect(outcome="success"))
    yield case(f"{v}/UNDEFINED_OPCODE/inside_immediate_is_fine", "An undefined byte inside an immediate is data.",
               build(bytes([OP["PUSH1"], 0xFF]) + STOP), opcodes=("PUSH1",), categories=("semantics",),
               expect=Expect(outcome="success"))
    for ins in TABLE.instructions:
        if ins.immediate_size:
            for missing in sorted({1, ins.immediate_size}):
                code = bytes([ins.opcode]) + bytes(ins.immediate_size - missing)
                yield case(f"{v}/TRUNCATED_IMMEDIATE/{ins.mnemonic}_missing_{missing}",
                           f"{ins.mnemonic} with {missing} immediate byte(s) missing at the end.",
                           build(STOP + code), opcodes=(ins.mnemonic,), categories=("invalid",),
                           expect=refused("TRUNCATED_IMMEDIATE"))
    for mnemonic in ("JUMP", "JUMPI", "CALLSUB"):
        for name, target in (("inside_immediate", 2), ("past_end", 100), ("at_end", 7), ("max", 2 ** 32 - 1)):
            code = STOP + _jump(mnemonic, target) + STOP
            yield case(f"{v}/INVALID_JUMP_TARGET/{mnemonic}_{name}", f"{mnemonic} to offset {target}.",
                       build(code), opcodes=(mnemonic,), categories=("invalid",),
                       expect=refused("INVALID_JUMP_TARGET"))
        yield case(f"{v}/INVALID_JUMP_TARGET/{mnemonic}_valid_last", f"{mnemonic} to the last instruction is valid.",
                   build(bytes([OP["PUSH1"], 1]) + _jump(mnemonic, 7) + STOP), opcodes=(mnemonic,),
                   categories=("semantics",), expect=Expect(outcome="success"))
    for name, code in (("empty", b""), ("ends_with_nop", NOP), ("ends_with_push", bytes([OP["PUSH1"], 0])),
                       ("ends_with_jumpi", _jump("JUMPI", 0)), ("ends_with_callsub", _jump("CALLSUB", 0)),
                       ("ends_with_add", bytes([OP["ADD"]]))):
        yield case(f"{v}/CODE_NOT_TERMINATED/{name}", f"Code that can run past its end ({name}).", build(code),
                   categories=("invalid",), expect=refused("CODE_NOT_TERMINATED"))
    for mnemonic in ("STOP", "RETURN", "REVERT", "TRAP", "JUMP", "RETSUB"):
        ins = TABLE.by_mnemonic[mnemonic]
        last = bytes([ins.opcode]) + bytes(ins.immediate_size)
        yield case(f"{v}/CODE_NOT_TERMINATED/ends_with_{mnemonic}_is_valid", f"Code ending in {mnemonic} is terminated.",
                   build(last), opcodes=(mnemonic,), categories=("semantics",),
                   limits={"compute": 100} if mnemonic == "JUMP" else {},
                   expect=Expect(outcome=TERMINATED_RUNS[mnemonic]))
    yield case(f"{v}/order/header_before_code", "Bad version and undefined opcode: the header check wins.",
               _header(bytes([0x0C]), version=(2, 0)), categories=("invalid",),
               expect=refused("UNSUPPORTED_VERSION"))
    yield case(f"{v}/order/decode_before_jump_targets", "Bad jump target then undefined opcode: decoding wins.",
               build(_jump("JUMP", 3) + bytes([0x0C]) + STOP), categories=("invalid",),
               expect=refused("UNDEFINED_OPCODE"))
    yield case(f"{v}/order/jump_target_before_termination", "Bad jump target and unterminated: target wins.",
               build(_jump("JUMPI", 3)), categories=("invalid",),
               expect=refused("INVALID_JUMP_TARGET"))
    yield case(f"{v}/order/size_mismatch_before_size_limits", "Oversized and mismatched: mismatch wins.",
               _header(STOP, code_size=MACHINE["code_size"] + 1), categories=("invalid",),
               expect=refused("CONTAINER_SIZE_MISMATCH"))
    for what in ("code_size", "data_size"):
        limit = MACHINE[what]
        for at, size in (("limit-1", limit - 1), ("limit", limit), ("limit+1", limit + 1)):
            if what == "code_size":
                # JUMP over filler to a final STOP, so even the largest code runs in 2 steps.
                blob = build(_jump("JUMP", size - 1) + _filler(size - 6) + STOP)
            else:
                blob = build(STOP, bytes(size))
            yield case(f"{v}/{what}/{at}", f"A {what.replace('_', ' ')} of {size} bytes (limit {limit}).", blob,
                       opcodes=("JUMP",) if what == "code_size" else (), categories=("boundary",),
                       boundary=Boundary(what, at),
                       expect=limit_side(at, Expect(outcome="success"), refused(TOO_LARGE[what])))
