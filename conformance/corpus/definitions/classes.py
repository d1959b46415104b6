"""Whole classes of bugs a few vectors cannot show (spec 7.5, 6.6, 6.8, 6.10, 6.11, 3.1):

- the order of state changes: several addresses and keys written out of order, keys and
  addresses whose hexadecimal string order differs from their numeric order (0x9 and 0x10),
  addresses whose order differs from their keys' order;
- every copy instruction (the memory_copy rule) whose source range runs past the end of its
  source into memory that already holds non-zero bytes: the bytes past the end are zeros;
- event data of 0, 1, 7, 8 and 9 bytes for every LOGn (one byte short of a word, a word, one
  byte past it);
- the return data after each kind of call that is refused before its callee runs (6.11 step
  3 a-d), following a successful call: it is empty, not the earlier output; and the output of
  an entry frame that fails after a call (7.1): empty, not its return data;
- container size fields whose high bytes are both set, so that a sum computed modulo 2^32 or
  on signed fields would cancel: the sizes still do not add up.

Where the author's intent is a value, the definition states it (conformance.corpus.expect):
the slots after the writes, the return data after a refused call, the empty output of a failed
entry frame, the validation code of the sizes.
"""

from __future__ import annotations


from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MACHINE, MASK, PAGE, TABLE, Expect, build, case, push_all, refused, words,
)

CALL_DEPTH = MACHINE["call_depth"]
COPIES = tuple(i.mnemonic for i in TABLE.instructions if i.cost_rule == "memory_copy")
SOURCE = bytes([0xA1, 0xA2, 0xA3, 0xA4, 0xA5])
# Memory [0, 32) all 0xff before the copy; the 32 bytes are the output.
DIRTY = "".join(f"push {8 * i}\npush {MASK}\nmstore\n" for i in range(4))
SHOW = "push 0\npush 32\nreturn\n"
TALKER = 0x7A1   # returns 8 bytes 0x5151
TALKS = "push 0\npush 0x5151\nmstore\npush 0\npush 8\nreturn\n"


def _writes(pairs) -> str:
    return "".join(push_all([key, value]) + "sstore\n" for key, value in pairs)


def _calls(addresses) -> str:
    return "".join(push_all([a, 100000, 0, 0]) + "call\npop\n" for a in addresses)


def _orders():
    # Written in the order 0x10, 0x9, 0xa, 0x2, 0x100, 0x1: neither write order nor the order of
    # "0x1" < "0x10" < "0x100" < "0x2" < "0x9" < "0xa" is the numeric order.
    keys = (0x10, 0x9, 0xA, 0x2, 0x100, 0x1)
    yield case("storage/SSTORE/changes_sorted_numerically",
               "Six keys written out of order, 0x9 and 0x10 among them: changes are sorted by numeric key.",
               _writes((k, 0x50 + i) for i, k in enumerate(keys)) + "stop\n",
               opcodes=("SSTORE",), categories=("semantics", "result"), sections=("7.5",),
               expect=Expect(outcome="success", storage={ENTRY: {k: 0x50 + i for i, k in enumerate(keys)}}))
    yield case("storage/SSTORE/changes_of_every_kind_sorted",
               "Deletes, rewrites, new slots and a restored slot interleaved: changes sorted by key, the restored one absent.",
               _writes(((0x10, 0), (0x2, 7), (0x9, 3), (0xA, 0x44), (0x1, 8), (0xA, 0))) + "stop\n",
               storage={0x9: 2, 0x10: 1, 0x1: 8, 0x20: 5}, opcodes=("SSTORE",),
               categories=("semantics", "result"), sections=("7.5",),
               expect=Expect(outcome="success", storage={ENTRY: {0x10: 0, 0x2: 7, 0x9: 3, 0xA: 0, 0x1: 8, 0x20: 5}}))
    # Address order 0x100 < 0x101 < 0x102, key order the reverse; written callee-first.
    yield case("call/CALL/changes_sorted_by_address_then_key",
               "Three contracts write keys in the reverse of their address order, the last address first: "
               "changes are sorted by address, then key.",
               _calls((0x102, 0x101)) + _writes(((0x30, 1), (0x5, 2))) + "stop\n",
               contracts={0x101: _writes(((0x3, 3), (0x1, 4), (0x20, 5))) + "stop\n",
                          0x102: _writes(((0x2, 6),)) + "stop\n"},
               opcodes=("CALL", "SSTORE"), categories=("semantics", "call", "result"), sections=("7.5",),
               expect=Expect(outcome="success", calls=("success", "success"),
                             storage={0x100: {0x30: 1, 0x5: 2}, 0x101: {0x3: 3, 0x1: 4, 0x20: 5}, 0x102: {0x2: 6}}))
    # Addresses 0x9 < 0x10 < 0x100 < 0x1000 numerically, "0x10" < "0x100" < "0x1000" < "0x9" as strings.
    yield case("call/CALL/changes_sorted_by_numeric_address",
               "Contracts at 0x9, 0x10 and 0x1000 and the entry at 0x100 write keys 0x9 and 0x10: "
               "changes are sorted by numeric address, then numeric key.",
               _calls((0x1000, 0x10, 0x9)) + _writes(((0x10, 1), (0x9, 2))) + "stop\n",
               contracts={a: _writes(((0x10, a + 1), (0x9, a + 2))) + "stop\n" for a in (0x9, 0x10, 0x1000)},
               opcodes=("CALL", "SSTORE"), categories=("semantics", "call", "result"), sections=("7.5",),
               expect=Expect(outcome="success", calls=("success",) * 3,
                             storage={0x100: {0x10: 1, 0x9: 2},
                                      **{a: {0x10: a + 1, 0x9: a + 2} for a in (0x9, 0x10, 0x1000)}}))


def _copy_source(mnemonic: str, dst: int, offset: int, length: int, source: bytes):
    """(code, keyword arguments) of a case that copies with ``mnemonic`` into dirty memory."""
    copy = push_all([dst, offset, length]) + f"{mnemonic.lower()}\n"
    if mnemonic == "CALLDATACOPY":
        return DIRTY + copy + SHOW, {"call_data": source}
    if mnemonic == "DATACOPY":
        data = f".data\n.hex {source.hex()}\n" if source else ""
        return DIRTY + copy + SHOW + data, {}
    if mnemonic == "RETURNDATACOPY":
        word = int.from_bytes(source.ljust(8, bytes(1)), "little")
        callee = f"push 0\npush {word}\nmstore\npush 0\npush {len(source)}\nreturn\n"
        return (DIRTY + push_all([TALKER, 100000, 0, 0]) + "call\npop\n" + copy + SHOW,
                {"contracts": {TALKER: callee}})
    # MCOPY: the source is memory; past its end is memory that does not exist yet. The last
    # 8 bytes of the first page hold 0x0102..08, the second page does not exist.
    return (DIRTY + f"push {PAGE - 8}\npush 0x0102030405060708\nmstore\n" + copy + SHOW, {})


def _copies():
    for mnemonic in COPIES:
        if mnemonic == "MCOPY":
            shapes = {"partly_past_the_end": (2, PAGE - 3, 12), "wholly_past_the_end": (4, 2 * PAGE, 9)}
        else:
            shapes = {"partly_past_the_end": (2, 3, 12), "at_the_end": (4, len(SOURCE), 8),
                      "far_past_the_end": (1, MASK, 9), "empty_source": (0, 0, 16)}
        for name, (dst, offset, length) in shapes.items():
            source = b"" if name == "empty_source" else SOURCE
            code, extra = _copy_source(mnemonic, dst, offset, length, source)
            yield case(f"{TABLE.by_mnemonic[mnemonic].type}/{mnemonic}/{name}_into_dirty_memory",
                       f"{mnemonic} dst={dst} offset={offset:#x} length={length} from a {len(source)}-byte source "
                       "over memory of 0xff bytes: bytes past the source's end are written as zeros.",
                       code, opcodes=(mnemonic,), categories=("semantics", "edge"),
                       sections=(TABLE.by_mnemonic[mnemonic].section, "5.6.2"), **extra)


def _events():
    pattern = "push 0\npush 0x0807060504030201\nmstore\npush 8\npush 0x100f0e0d0c0b0a09\nmstore\n"
    for n in range(5):
        for length in (0, 1, 7, 8, 9):
            yield case(f"event/LOG{n}/data_of_{length}_bytes",
                       f"LOG{n} of {length} bytes at offset 1 of memory holding bytes 0x01..0x10.",
                       pattern + push_all([1, length, *range(0xB1, 0xB1 + n)]) + f"log{n}\nstop\n",
                       opcodes=(f"LOG{n}",), categories=("semantics", "edge"), sections=("6.10",))


# After CALL TALKER (success, 8 bytes) and CALL of the refused callee: [ok, ok, RETURNDATASIZE]
# as words and the 8 bytes RETURNDATACOPY wrote over 0xff bytes.
def _after(target: int, first: int = TALKER) -> str:
    return (f"push 24\npush {MASK}\nmstore\n" + push_all([first, 100000, 0, 0]) + "call\n"
            + push_all([target, 100000, 0, 0]) + "call\nreturndatasize\npush 24\npush 0\npush 8\nreturndatacopy\n"
            + "push 16\nswap1\nmstore\npush 8\nswap1\nmstore\npush 0\nswap1\nmstore\n" + SHOW)


# The record of each call refused before its callee runs (6.11 step 3): a 16-byte container
# one byte short is a size mismatch, code 0x01 (NOP) is not terminated.
REFUSED = {"contract_not_found": "CONTRACT_NOT_FOUND", "bad_magic": "BAD_MAGIC",
           "size_mismatch": "CONTAINER_SIZE_MISMATCH", "invalid_code": "CODE_NOT_TERMINATED",
           "policy_refused": "TIME_ACCESS_FORBIDDEN"}
# How each entry frame of call/CALL/entry_*_after_a_call_outputs_nothing ends, and its calls.
# The stack_underflow one never runs: its code ends with ADD, which can continue past the end,
# so the container is refused (CODE_NOT_TERMINATED, 3.2) and neither the call nor the underflow
# happens; the vector shows an empty output, not the one of a frame failing after a call.
ENTRY_FAILS = {"trap": ("TRAP_EXECUTED", ("success",)), "stack_underflow": ("CODE_NOT_TERMINATED", ()),
               "memory_exhausted": (EXCEEDED["memory_pages"], ("success",))}


def _refused():
    refused_at = 0x7B0
    kinds = {"contract_not_found": None, "bad_magic": b"XXXX" + bytes(12),
             "size_mismatch": build(b"\x00")[:-1] + b"\x00\x00", "invalid_code": build(b"\x01"),
             "policy_refused": "time\nstop\n"}
    for name, callee in kinds.items():
        contracts = {TALKER: TALKS} if callee is None else {TALKER: TALKS, refused_at: callee}
        yield case(f"call/CALL/return_data_after_refused_{name}",
                   f"A call that returns 8 bytes, then a call refused before its callee runs ({name.replace('_', ' ')}): "
                   "RETURNDATASIZE is 0 and RETURNDATACOPY writes zeros.",
                   _after(refused_at), contracts=contracts, opcodes=("CALL", "RETURNDATASIZE", "RETURNDATACOPY"),
                   categories=("call", "semantics"), sections=("6.11",),
                   expect=Expect(outcome="success", calls=("success", REFUSED[name]), output=words(1, 0, 0, 0)))
    yield case("call/CALL/return_data_after_revert_then_refused",
               "A call that reverts with 8 bytes, then a call of a missing contract: RETURNDATASIZE is 0.",
               _after(refused_at, first=0x7A2),
               contracts={0x7A2: "push 0\npush 0x5252\nmstore\npush 0\npush 8\nrevert\n"},
               opcodes=("CALL", "RETURNDATASIZE", "RETURNDATACOPY"), categories=("call", "semantics"),
               sections=("6.11",),
               expect=Expect(outcome="success", calls=("reverted", "CONTRACT_NOT_FOUND"), output=words(0, 0, 0, 0)))
    # 7.1: a frame's output after an error is empty, whatever return data it holds.
    for name, tail in (("trap", "trap\n"), ("stack_underflow", "add\n"),
                       ("memory_exhausted", f"push {MASK}\nmload\nstop\n")):
        yield case(f"call/CALL/entry_{name}_after_a_call_outputs_nothing",
                   f"The entry frame receives 8 bytes of return data, then ends with {name.replace('_', ' ')}: "
                   "the result's output is empty.",
                   push_all([TALKER, 100000, 0, 0]) + "call\npop\n" + tail, contracts={TALKER: TALKS},
                   opcodes=("CALL",), categories=("call", "result"), sections=("7.1", "7.5"),
                   expect=Expect(outcome=ENTRY_FAILS[name][0], calls=ENTRY_FAILS[name][1], output=b""))
    # Every frame above the deepest one calls TALKER (its return data: 8 bytes), then itself with
    # n - 1; the deepest frame's CALL is refused (depth) and it returns what it reads; each
    # frame returns its callee's output.
    deepest = (f"push 24\npush {MASK}\nmstore\n" + push_all([TALKER, 100000, 0, 0])
               + "call\nreturndatasize\npush 24\npush 0\npush 8\nreturndatacopy\n"
               + "push 8\nswap1\nmstore\npush 0\nswap1\nmstore\n" + SHOW)
    recurse = ("push 0\ncalldataload\ndup1\njumpi deeper\npop\n" + deepest
               + "deeper:\n" + push_all([TALKER, 100000, 0, 0]) + "call\npop\n"
               + "push 1\nsub\npush 0\nswap1\nmstore\nself\npush 10000000\npush 0\npush 8\ncall\npop\n"
               + "push 0\npush 0\nreturndatasize\nreturndatacopy\npush 0\nreturndatasize\nreturn\n")
    yield case("call/CALL/return_data_after_refused_depth",
               f"At depth {CALL_DEPTH}, after the frame above it received 8 bytes of return data, a CALL refused "
               "for depth: RETURNDATASIZE is 0 and RETURNDATACOPY writes zeros.",
               recurse, call_data=(CALL_DEPTH - 1).to_bytes(8, "little"), contracts={TALKER: TALKS},
               opcodes=("CALL", "RETURNDATASIZE", "RETURNDATACOPY"), categories=("call", "semantics"),
               sections=("6.11",))


def _header(code_size: int, data_size: int, code: bytes, data: bytes) -> bytes:
    blob = build(code, data)
    return blob[:8] + code_size.to_bytes(4, "little") + data_size.to_bytes(4, "little") + blob[16:]


def _sizes():
    code, data = bytes([0x10, 0x01, 0x00]), b"\xab\xcd"
    # Each pair adds (x, y) to the true sizes; x + y = 2^32, so the sum cancels modulo 2^32,
    # and (0x7f.., 0x81..) also cancels when the fields are read as signed.
    for x, y in ((0x8000_0000, 0x8000_0000), (0x7F00_0000, 0x8100_0000), (0x8100_0000, 0x7F00_0000),
                 (0x0100_0000, 0xFF00_0000), (0xFF00_0000, 0x0100_0000), (0x0101_0000, 0xFEFF_0000)):
        yield case(f"validation/CONTAINER_SIZE_MISMATCH/high_bytes_{x >> 24:02x}_{y >> 24:02x}",
                   f"Code size {len(code) + x:#x} and data size {len(data) + y:#x} (true sizes {len(code)} and "
                   f"{len(data)}): their sum modulo 2^32 would match, the sizes do not add up.",
                   _header(len(code) + x, len(data) + y, code, data), categories=("invalid",), sections=("3.1",),
                   expect=refused("CONTAINER_SIZE_MISMATCH"))


def cases():
    yield from _orders()
    yield from _copies()
    yield from _events()
    yield from _refused()
    yield from _sizes()
