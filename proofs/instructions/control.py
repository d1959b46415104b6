"""Control flow and halting (spec 6.1)."""

from __future__ import annotations

import z3

from proofs.accounting import halt, running, then, touch
from proofs.machine import REVERTED, SUCCESS, Bytes, memory_range
from proofs.words import Width


def models(w: Width) -> dict:
    cv = w.cval
    empty = Bytes(cv(0), lambda j: z3.BitVecVal(0, 8))

    def STOP(s, imm):
        return [halt(s.replace(output=empty), SUCCESS, z3.BoolVal(True), "stop")]

    def NOP(s, imm):
        return [running(s)]

    def JUMP(s, imm):
        return [running(s.replace(pc=w.widen(imm)))]

    def JUMPI(s, imm):
        (cond,), s = s.pop(1)
        taken = cond != 0  # any non-zero word is true (spec 2.1)
        return [running(s.replace(pc=w.widen(imm)), "taken", taken),
                running(s.replace(pc=s.pc + cv(w.spec.by_mnemonic["JUMPI"].size)), "not taken", z3.Not(taken))]

    def CALLSUB(s, imm):
        full = z3.UGE(s.rheight, cv(w.num.return_stack_depth))
        pushed = s.replace(rstack=(s.pc + cv(w.spec.by_mnemonic["CALLSUB"].size),) + s.rstack,
                           rheight=s.rheight + cv(1), pc=w.widen(imm))
        return [halt(s, "RETURN_STACK_OVERFLOW", full), running(pushed, "", z3.Not(full))]

    def RETSUB(s, imm):
        empty_rs = s.rheight == 0
        popped = s.replace(pc=s.rstack[0], rstack=s.rstack[1:], rheight=s.rheight - cv(1))
        return [halt(s, "RETURN_STACK_UNDERFLOW", empty_rs),
                running(popped, "", z3.Not(empty_rs))]

    def returning(status):
        def model(s, imm):
            (length, offset), s = s.pop(2)
            off, ln = w.widen(offset), w.widen(length)

            def finish(t):
                out = memory_range(t.memory, off, ln)
                return [halt(t.replace(output=out), status, z3.BoolVal(True), status)]
            return then(touch(s, off, ln), finish)
        return model

    def TRAP(s, imm):
        return [halt(s, "TRAP_EXECUTED", z3.BoolVal(True))]

    return {"STOP": STOP, "NOP": NOP, "JUMP": JUMP, "JUMPI": JUMPI, "CALLSUB": CALLSUB,
            "RETSUB": RETSUB, "RETURN": returning(SUCCESS), "REVERT": returning(REVERTED),
            "TRAP": TRAP}
