"""Environment (spec 6.8): caller and self in entry and callee frames, call data reads past
the end, COMPUTELEFT after its own cost, the data section, and return data around calls."""

from __future__ import annotations

from conformance.corpus.definitions.common import MASK, OTHER, PAGE, case, push_all, returning

CALL_DATA = bytes(range(1, 14))
DATA = ".data\n.hex 0102030405060708090a\n"
RETURNS_WORD = "push 0\npush 0x1122334455667788\nmstore\npush 0\npush 8\nreturn\n"
REVERTS_WORD = "push 0\npush 0x99\nmstore\npush 0\npush 5\nrevert\n"


def _call(address: int = OTHER, compute: int = 100000, offset: int = 0, length: int = 0) -> str:
    return push_all([address, compute, offset, length]) + "call\n"


def cases():
    yield case("environment/CALLER/entry", "CALLER of the entry frame is the request's caller.",
               "caller\n" + returning(1), opcodes=("CALLER",), categories=("semantics",))
    yield case("environment/CALLER/max_caller", "CALLER with caller 2^64-1.",
               "caller\n" + returning(1), caller=MASK, opcodes=("CALLER",), categories=("semantics", "edge"))
    yield case("environment/CALLER/callee", "CALLER in a callee is the calling contract.",
               _call() + "pop\npush 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(1),
               contracts={OTHER: "caller\n" + returning(1)}, opcodes=("CALLER",),
               categories=("semantics", "call"))
    yield case("environment/SELF/entry", "SELF of the entry frame.", "self\n" + returning(1),
               opcodes=("SELF",), categories=("semantics",))
    yield case("environment/SELF/callee", "SELF in a callee is the callee's address.",
               _call() + "pop\npush 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(1),
               contracts={OTHER: "self\n" + returning(1)}, opcodes=("SELF",), categories=("semantics", "call"))
    for name, data in (("empty", b""), ("thirteen_bytes", CALL_DATA)):
        yield case(f"environment/CALLDATASIZE/{name}", f"CALLDATASIZE with {len(data)} bytes of call data.",
                   "calldatasize\n" + returning(1), call_data=data, opcodes=("CALLDATASIZE",),
                   categories=("semantics",))
    for name, offset in (("start", 0), ("partial_tail", 9), ("at_end", 13), ("past_end", 100), ("max_offset", MASK)):
        yield case(f"environment/CALLDATALOAD/{name}", f"CALLDATALOAD at {hex(offset)} of 13 bytes; missing bytes read 0.",
                   f"push {offset}\ncalldataload\n" + returning(1), call_data=CALL_DATA,
                   opcodes=("CALLDATALOAD",), categories=("semantics", "edge"))
    copies = {"whole": (0, 0, 13), "past_end": (0, 8, 16), "source_far": (0, MASK, 8),
              "zero_length_huge": (MASK, MASK, 0), "dst_unaligned": (3, 2, 5)}
    for mnemonic, extra in (("CALLDATACOPY", {"call_data": CALL_DATA}), ("DATACOPY", {})):
        for name, (dst, src, length) in copies.items():
            code = (push_all([dst, src, length]) + f"{mnemonic.lower()}\npush 0\nmload\npush 8\nmload\nmsize\n"
                    + returning(3))
            yield case(f"environment/{mnemonic}/{name}", f"{mnemonic} dst={hex(dst)} src={hex(src)} length={length}.",
                       code + (DATA if mnemonic == "DATACOPY" else ""), opcodes=(mnemonic,),
                       categories=("semantics", "edge"), **extra)
        yield case(f"environment/{mnemonic}/huge_dst", f"{mnemonic} to a destination no limit allows.",
                   push_all([MASK, 0, 1]) + f"{mnemonic.lower()}\nstop\n", opcodes=(mnemonic,),
                   categories=("limits",), **extra)
    yield case("environment/DATASIZE/empty", "DATASIZE without a data section.", "datasize\n" + returning(1),
               opcodes=("DATASIZE",), categories=("semantics",))
    yield case("environment/DATASIZE/ten_bytes", "DATASIZE of a 10-byte data section.",
               "datasize\n" + returning(1) + DATA, opcodes=("DATASIZE",), categories=("semantics",))
    for name, limit in (("default_limit", None), ("small_limit", 50), ("exact", 1)):
        yield case(f"environment/COMPUTELEFT/{name}", "COMPUTELEFT after its own base cost.",
                   "computeleft\nstop\n" if limit == 1 else "computeleft\n" + returning(1),
                   limits={} if limit is None else {"compute": limit}, opcodes=("COMPUTELEFT",),
                   categories=("semantics",))
    yield case("environment/COMPUTELEFT/in_callee", "COMPUTELEFT in a callee limited by the CALL's compute operand.",
               _call(compute=500) + "pop\npush 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(1),
               contracts={OTHER: "computeleft\n" + returning(1)}, opcodes=("COMPUTELEFT",),
               categories=("semantics", "call"))
    yield case("environment/RETURNDATASIZE/before_call", "RETURNDATASIZE is 0 before any CALL.",
               "returndatasize\n" + returning(1), opcodes=("RETURNDATASIZE",), categories=("semantics",))
    for name, callee in (("after_success", RETURNS_WORD), ("after_revert", REVERTS_WORD), ("after_fault", "trap\n"),
                         ("after_stop", "stop\n")):
        yield case(f"environment/RETURNDATASIZE/{name}", f"RETURNDATASIZE {name.replace('_', ' ')}.",
                   _call() + "returndatasize\n" + returning(2), contracts={OTHER: callee},
                   opcodes=("RETURNDATASIZE",), categories=("semantics", "call"))
        yield case(f"environment/RETURNDATACOPY/{name}", f"RETURNDATACOPY of 8 bytes {name.replace('_', ' ')}.",
                   _call() + "push 0\npush 0\npush 8\nreturndatacopy\npush 0\nmload\n" + returning(2),
                   contracts={OTHER: callee}, opcodes=("RETURNDATACOPY",), categories=("semantics", "call"))
    yield case("environment/RETURNDATACOPY/replaced_by_second_call", "A second CALL replaces the return data.",
               _call() + "pop\n" + _call(address=0x102) + "pop\nreturndatasize\n" + returning(1),
               contracts={OTHER: RETURNS_WORD, 0x102: "stop\n"}, opcodes=("RETURNDATACOPY", "RETURNDATASIZE"),
               categories=("semantics", "call"))
    yield case("environment/RETURNDATACOPY/past_end", "RETURNDATACOPY past the end of the return data reads zeros.",
               _call() + f"pop\npush {PAGE - 8}\npush 4\npush 16\nreturndatacopy\npush {PAGE - 8}\nmload\n" + returning(1),
               contracts={OTHER: RETURNS_WORD}, opcodes=("RETURNDATACOPY",), categories=("semantics", "edge"))
    yield case("environment/RETURNDATACOPY/huge_dst", "RETURNDATACOPY to a destination no limit allows.",
               push_all([MASK, 0, 1]) + "returndatacopy\nstop\n", opcodes=("RETURNDATACOPY",), categories=("limits",))
    yield case("environment/CALLER/zero_caller", "CALLER with caller 0.", "caller\n" + returning(1), caller=0,
               opcodes=("CALLER",), categories=("semantics", "edge"))
