"""Control (spec 6.1): halts and their outputs, static jumps, conditional branches on every
kind of condition word, subroutines and the return stack, TRAP.

Each states what its author expects from 6.1 (and 5.2, 7.1 for what a halt keeps): the
outcome, the output, and the slots a failed or reverted frame leaves."""

from __future__ import annotations

from conformance.corpus.definitions.common import (
    ENTRY, EXCEEDED, MACHINE, MASK, MIN, OTHER, PAGE, TABLE, Boundary, Expect, case, limit_side, push_all,
    returning, words,
)

RETURN_STACK = MACHINE["return_stack_depth"]
STORED = 0x0807060504030201     # the word RETURN and REVERT cases store at 0: bytes 01 .. 08
SELF_JUMP_LIMIT = 1001
JUMP = TABLE.by_mnemonic["JUMP"].cost


def returns(*values: int) -> Expect:
    return Expect(outcome="success", output=words(*values))


def _range_output(offset: int, length: int) -> bytes:
    """memory[offset, offset + length) after the word STORED at 0; zeros past it (fresh pages)."""
    memory = words(STORED)
    return bytes(memory[i] if i < len(memory) else 0 for i in range(offset, offset + length))


def _subroutine_depth(n: int) -> str:
    """CALLSUB nested n deep (counter on the stack), then STOP at the deepest level."""
    return (f"push {n}\ncallsub f\nstop\n"
            "f:\npush1 1\nsub\ndup1\njumpi more\nstop\n"
            "more:\ncallsub f\nretsub\n")


def cases():
    yield case("control/STOP/empty", "STOP as the only instruction: success, nothing charged.",
               "stop\n", opcodes=("STOP",), categories=("semantics",),
               expect=Expect(outcome="success", output=b"", usage={"compute": 0, "fee": 0}))
    yield case("control/STOP/with_state", "STOP with items on the stack and memory grown: output empty.",
               "push 0\npush 7\nmstore\npush 1\nstop\n", opcodes=("STOP",), categories=("semantics",),
               expect=Expect(outcome="success", output=b""))
    yield case("control/NOP/sequence", "NOPs change nothing but compute.",
               "push 3\nnop\nnop\nnop\n" + returning(1), opcodes=("NOP",), categories=("semantics",),
               expect=returns(3))
    yield case("control/JUMP/forward", "JUMP skips a TRAP.",
               "push 1\njump over\ntrap\nover:\n" + returning(1), opcodes=("JUMP",),
               categories=("semantics",), expect=returns(1))
    yield case("control/JUMP/backward_loop", "A backward JUMP closing a counted loop (JUMPI exits).",
               "push 5\npush 0\nloop:\npush 1\nadd\nswap1\npush 1\nsub\ndup1\niszero\njumpi done\nswap1\njump loop\n"
               "done:\npop\n" + returning(1), opcodes=("JUMP", "JUMPI"), categories=("semantics",),
               expect=returns(5))
    yield case("control/JUMP/to_self_until_exhausted", "JUMP to itself runs until compute is exhausted.",
               "here:\njump here\n", opcodes=("JUMP",), limits={"compute": SELF_JUMP_LIMIT},
               categories=("semantics", "limits"),
               # every JUMP that fits is charged in full; the next one, passing the limit, is not (5.2.2)
               expect=Expect(outcome=EXCEEDED["compute"], usage={"compute": SELF_JUMP_LIMIT - SELF_JUMP_LIMIT % JUMP}))
    for name, cond in (("zero", 0), ("one", 1), ("min", MIN), ("minus_one", MASK), ("high_bit_only", 1 << 40)):
        yield case(f"control/JUMPI/cond_{name}", f"JUMPI with cond {hex(cond)}: taken unless zero.",
                   f"push {cond}\njumpi taken\npush 0xaa\n" + returning(1) + "taken:\npush 0xbb\n" + returning(1),
                   opcodes=("JUMPI",), categories=("semantics",), expect=returns(0xbb if cond else 0xaa))
    yield case("control/CALLSUB/return_offset", "CALLSUB continues after itself on RETSUB.",
               "push 1\ncallsub s\npush 3\n" + returning(3) + "s:\npush 2\nretsub\n",
               opcodes=("CALLSUB", "RETSUB"), categories=("semantics",), expect=returns(1, 2, 3))
    yield case("control/CALLSUB/nested_three", "Three nested subroutines return in order.",
               "callsub a\npush 4\n" + returning(4) +
               "a:\npush 1\ncallsub b\nretsub\nb:\npush 2\ncallsub c\nretsub\nc:\npush 3\nretsub\n",
               opcodes=("CALLSUB", "RETSUB"), categories=("semantics",), expect=returns(1, 2, 3, 4))
    yield case("control/RETSUB/empty_return_stack", "RETSUB with an empty return stack faults.",
               "push 1\nretsub\n", opcodes=("RETSUB",), categories=("fault",),
               expect=Expect(outcome="RETURN_STACK_UNDERFLOW"))
    yield case("control/RETSUB/after_return", "A second RETSUB after the only return faults.",
               "callsub s\nretsub\ns:\nretsub\n", opcodes=("RETSUB", "CALLSUB"), categories=("fault",),
               expect=Expect(outcome="RETURN_STACK_UNDERFLOW"))
    for at, n in (("limit-1", RETURN_STACK - 1), ("limit", RETURN_STACK), ("limit+1", RETURN_STACK + 1)):
        yield case(f"control/CALLSUB/return_stack_{at}",
                   f"CALLSUB nested {n} deep against a return stack of {RETURN_STACK}.",
                   _subroutine_depth(n), opcodes=("CALLSUB",), categories=("boundary",),
                   boundary=Boundary("return_stack_depth", at),
                   expect=Expect(outcome=limit_side(at, "success", "RETURN_STACK_OVERFLOW")))
    for name, (offset, length) in {
        "empty_at_zero": (0, 0), "empty_at_huge_offset": (MASK, 0), "one_word": (0, 8),
        "page_end": (PAGE - 8, 8), "crosses_page": (PAGE - 4, 8), "beyond_memory": (3 * PAGE, 16),
    }.items():
        for mnemonic in ("RETURN", "REVERT"):
            yield case(f"control/{mnemonic}/{name}",
                       f"{mnemonic} of memory[{offset}, {offset}+{length}) after storing a word at 0.",
                       f"push 0\npush 0x0807060504030201\nmstore\npush {offset}\npush {length}\n{mnemonic.lower()}\n",
                       opcodes=(mnemonic,), categories=("semantics",),
                       expect=Expect(outcome="success" if mnemonic == "RETURN" else "reverted",
                                     output=_range_output(offset, length)))
    yield case("control/RETURN/huge_length", "RETURN of a length no memory limit allows.",
               push_all([0, MASK]) + "return\n", opcodes=("RETURN",), categories=("limits",),
               expect=Expect(outcome=EXCEEDED["memory_pages"]))
    yield case("control/REVERT/undoes_storage_and_events",
               "REVERT of the entry frame: no state changes, no events, output kept.",
               "push 1\npush 2\nsstore\npush 0\npush 0\nlog0\npush 0\npush 0x99\nmstore\npush 0\npush 8\nrevert\n",
               opcodes=("REVERT",), categories=("semantics",),
               expect=Expect(outcome="reverted", output=words(0x99), storage={ENTRY: {1: 0}}))
    yield case("control/TRAP/after_storage_write", "TRAP after SSTORE: fault, no state changes.",
               "push 1\npush 2\nsstore\ntrap\n", opcodes=("TRAP",), categories=("fault",),
               expect=Expect(outcome="TRAP_EXECUTED", output=b"", storage={ENTRY: {1: 0}}))
    yield case("control/TRAP/alone", "TRAP as the only instruction.", "trap\n", opcodes=("TRAP",),
               categories=("fault",), expect=Expect(outcome="TRAP_EXECUTED"))
    yield case("control/TRAP/in_callee", "A callee's TRAP makes CALL push 0; the caller succeeds.",
               push_all([OTHER, 100000, 0, 0]) + "call\n" + returning(1), contracts={OTHER: "trap\n"},
               opcodes=("TRAP", "CALL"), categories=("fault", "call"),
               expect=Expect(outcome="success", calls=("TRAP_EXECUTED",), output=words(0)))
