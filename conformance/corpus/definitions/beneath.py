"""Every instruction on distinct operands with two unrelated words beneath them (spec 6): a
handler that reads the wrong stack slot, or consumes or clobbers an item below its operands,
changes the output. Memory, call data, the data section and the return data hold patterns, and
offsets and sources are non-zero, so a handler using the wrong offset or source shows too.

After the instruction the whole remaining stack (its outputs and the two words beneath) is
stored at offset 256 upwards and memory [0, 256 + 8 * items) is returned, so memory effects and
stack effects are both in the output. The jumps and subroutine calls get the two words beneath
them too; STOP and TRAP, whose results hold no stack, are left out.

Every version's rows get them (across_versions): a 1.0 instruction's vector is the same in
every version, a later version's instruction's is written for that version.
"""

from __future__ import annotations

import spec
from conformance.corpus.definitions.common import OPEN, OTHER, across_versions, case, home, push_all

JUNK = (0x5EED5EED5EED5EED, 0x0BAD0BAD0BAD0BAD)
A, B = 0x1F3D5B79E1, 5
P1, P2, P3 = 0x8877665544332211, 0xFFEEDDCCBBAA9988, 0x0102030405060708
SKIPPED = {"STOP", "TRAP", "JUMP", "JUMPI", "CALLSUB", "RETSUB"}
# Control flow above the same two words: the skipped instruction would change the output.
CONTROL = {
    "JUMP": "jump end\npush 0xBAD\nend:\n",
    "JUMPI": "push 7\njumpi end\npush 0xBAD\nend:\n",
    "CALLSUB": "callsub sub\n",
    "RETSUB": "callsub sub\n",
}
SUBROUTINE = "sub:\npush 0x77\npop\nretsub\n"
MEMORY = f"push 8\npush {P1}\nmstore\npush 16\npush {P2}\nmstore\n"   # bytes 8..24 non-zero
CALL_DATA = bytes(range(0xC1, 0xC1 + 24))
DATA = "\n.data\n.byte " + ", ".join(str(b) for b in range(0x31, 0x31 + 24)) + "\n"
STORAGE = {7: 0x77, 9: 0x99}
DUMP_BASE = 256
# The callee returns 24 bytes of pattern (for the return-data instructions)...
PATTERN_CALLEE = (f"push 0\npush {P3}\nmstore\npush 8\npush {P1}\nmstore\npush 16\npush {P2}\nmstore\n"
                  "push 0\npush 24\nreturn\n")
RETURN_DATA = f"push {OTHER}\npush 1000\npush 0\npush 0\ncall\npop\n"
# ...and, for CALL, its own call data back.
ECHO_CALLEE = "push 0\npush 0\ncalldatasize\ncalldatacopy\npush 0\ncalldatasize\nreturn\n"

OPERANDS = {
    "MLOAD": [11], "MSTORE": [11, A], "MLOAD8": [11], "MSTORE8": [11, A], "MCOPY": [40, 11, 10],
    "SLOAD": [7], "SSTORE": [7, 0x5A], "CALLDATALOAD": [3], "CALLDATACOPY": [40, 3, 10],
    "DATACOPY": [40, 3, 10], "RETURNDATACOPY": [40, 3, 10], "SHA256": [40, 11, 10],
    "CALL": [OTHER, 1000, 11, 10], "STATICCALL": [OTHER, 1000, 11, 10], "RETURN": [11, 10], "REVERT": [11, 10],
    **{f"LOG{n}": [11, 10] + [0x71 + i for i in range(n)] for n in range(5)},
}


def _distinct(n: int) -> list[int]:
    return [0x0101010101010101 * (i + 1) + (i << 56) for i in range(n)]


def operands(ins) -> list[int]:
    if ins.mnemonic in OPERANDS:
        return OPERANDS[ins.mnemonic]
    if ins.mnemonic.startswith(("DUP", "SWAP")):
        return _distinct(ins.inputs)
    return [A, B][:ins.inputs] if ins.inputs <= 2 else [A, B, 3][:ins.inputs]


def dump(items: int) -> str:
    """Store the top ``items`` stack items at DUMP_BASE upwards (top first) and return memory."""
    stores = "".join(f"push {DUMP_BASE + 8 * i}\nswap1\nmstore\n" for i in range(items))
    return stores + f"push 0\npush {DUMP_BASE + 8 * items}\nreturn\n"


def _op(ins) -> str:
    if ins.immediate_size:
        return f"{ins.mnemonic.lower()} {0xA5C3E1F7D9B2C4A6 & ((1 << 8 * ins.immediate_size) - 1)}\n"
    return f"{ins.mnemonic.lower()}\n"


def cases():
    return across_versions(_cases)


def _cases(version: str):
    table = spec.load(version)
    for m, body in CONTROL.items():
        ins = table.by_mnemonic[m]
        yield case(f"{ins.type}/{m}/junk_beneath", f"{m} above two unrelated words; the remaining stack is returned.",
                   push_all(JUNK) + body + dump(len(JUNK)) + (SUBROUTINE if "sub" in body else ""),
                   opcodes=(m,), categories=("semantics", "beneath"), since=home(m))
    for ins in table.instructions:
        m = ins.mnemonic
        if m in SKIPPED:
            continue
        prefix = MEMORY + (RETURN_DATA if m.startswith("RETURNDATA") else "")
        body = prefix + push_all(JUNK) + push_all(operands(ins)) + _op(ins)
        calls = ins.cost_rule == "call"
        if calls:
            body += "push 100\npush 0\nreturndatasize\nreturndatacopy\n"  # the callee's answer
        tail = "" if ins.flow == "halt" else dump(len(JUNK) + ins.outputs)
        callee = ECHO_CALLEE if calls else PATTERN_CALLEE
        yield case(f"{ins.type}/{m}/junk_beneath",
                   f"{m} on distinct operands above two unrelated words, with patterned memory, call data "
                   "and data; the remaining stack and memory are returned.",
                   body + tail + (DATA if m.startswith("DATA") else ""), opcodes=(m,),
                   categories=("semantics", "beneath"), call_data=CALL_DATA, storage=STORAGE,
                   contracts={OTHER: callee}, policy=OPEN, block_time=0x65432100,
                   random_seed=bytes(range(32)), since=home(m))
    # Small operands above the same words, where a result read from the bottom of the stack
    # would coincide with the right one for the large operands above (found by the strength
    # run's candidates): equal, ordered and zero divisors.
    extra = {"arithmetic": (("small", 1, 7), ("zero_divisor", 7, 0)),
             "comparison": (("small", 1, 7), ("equal", 1, 1))}
    for ins in table.instructions:
        for suffix, a, b in extra.get(ins.type, ()):
            if ins.inputs != 2:
                continue
            yield case(f"{ins.type}/{ins.mnemonic}/junk_beneath_{suffix}",
                       f"{ins.mnemonic} of {a} and {b} above two unrelated words; the stack is returned.",
                       push_all(JUNK) + push_all([a, b]) + _op(ins) + dump(len(JUNK) + 1),
                       opcodes=(ins.mnemonic,), categories=("semantics", "beneath"), since=home(ins.mnemonic))
