"""Lower a planned region (plan.py) to an LLVM IR function with llvmlite's IR builder.

The function is ``i64 region(ptr ctx, ptr window)`` (abi.py). ``ctx`` holds the frame's values
as 64-bit words (compute used and limit, memory address and size, call data address and size,
caller, address, data and return data sizes, the resume site); ``window`` holds the region's
top stack items, one 64-bit word each, bottom first: the ``need`` items the region takes on
entry, and the items it leaves at an exit. The function returns the index of the exit it took
(``Lowered.exits``): its kind, its target and how many items it left, all fixed when it was
generated. Values from the program (immediates, offsets, costs) enter the IR
only as ``ir.Constant`` operands built by the IR builder; no text is formatted.

Inside, each stack position of the window is an ``alloca`` addressed by a constant index,
which LLVM promotes to registers: the stack lives in machine words. The shapes (plan.py):

- counted loop: ``k = (limit - used) / cost`` iterations of the whole cycle, no check inside;
  a branch off the cycle leaves with the meter at ``used + it * cost + cost so far``; after
  ``k`` iterations it leaves to the interpreter at the head (the next iteration does not fit).
- checked (other loops and blocks): each segment checks and charges its base cost on entry;
  when it does not fit, the code leaves with the meter and stack as they are at the segment's
  start and the interpreter runs the segment instruction by instruction.

A HANDLER instruction (and an IN_PLACE one when memory does not cover it) leaves with the
stack up to it; the engine runs the reference handler and, when a resume site was made for it
(inside a checked region, where the code after it continues), enters again at that site.
"""

from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir

from native_vm import ops
from native_vm.abi import FIELDS, CTX, GOTO, INTERPRET, RUN, Exit
from native_vm.plan import HANDLER, IN_PLACE, NATIVE, Plan, kind
from reference_vm.instructions.stack import family_of
from reference_vm.program import Segment

I8, I64 = ir.IntType(8), ir.IntType(64)
PTR = ir.PointerType()


@dataclass
class Lowered:
    module: ir.Module
    exits: tuple[Exit, ...]
    reads: frozenset[str]        # ctx fields read besides used, limit and resume
    size: int                    # LLVM instructions generated


class Lowering:
    def __init__(self, plan: Plan):
        self.plan = plan
        self.region = plan.region
        self.word = word = plan.rules.word
        self.W = ir.IntType(word.bits)
        self.module = ir.Module(name="rtwo")
        fn = ir.Function(self.module, ir.FunctionType(I64, [PTR, PTR]), name="region")
        self.fn = fn
        self.ctx, self.window = fn.args
        self.b = ir.IRBuilder(fn.append_basic_block("entry"))
        self.exits: list[Exit] = []
        self.resumes: list[tuple[ir.Block, int]] = []
        self.reads: set[str] = set()
        self.height = 0          # items in the window at the point being lowered
        self.cost_done = 0       # counted loops: base cost of this iteration charged so far
        self.slots = [self.b.alloca(self.W) for _ in range(self.region.need + self.region.peak)]
        self.vars = {name: self.b.alloca(I64) for name in FIELDS[:-1]}

    # --- context, window, meter ----------------------------------------------------------
    def ctx_field(self, name: str):
        return self.b.gep(self.ctx, [ir.Constant(I64, CTX[name])], source_etype=I64)

    def var(self, name: str):
        if name not in ("used", "limit"):
            self.reads.add(name)
        return self.b.load(self.vars[name], typ=I64)

    def load_window(self, height: int) -> None:
        for i in range(height):
            cell = self.b.gep(self.window, [ir.Constant(I64, i)], source_etype=I64)
            self.b.store(ops.resize(self.b, self.b.load(cell, typ=I64), self.W), self.slots[i])

    def alloca(self, ty):
        """A local in the entry block (where LLVM promotes it to a register; an alloca in a
        loop body would grow the machine stack on every iteration)."""
        with self.b.goto_entry_block():
            return self.b.alloca(ty)

    def used_now(self):
        """The compute meter at this point, as the reference would have it."""
        if not self.plan.counted:
            return self.var("used")
        charged = self.b.mul(self.b.load(self.iteration, typ=I64), ir.Constant(I64, self.cycle_cost))
        return self.b.add(self.b.add(self.used0, charged), ir.Constant(I64, self.cost_done))

    def leave(self, exit: Exit, used=None) -> None:
        """Store the window and the meter, return the exit's index."""
        b = self.b
        for i in range(exit.height):
            cell = b.gep(self.window, [ir.Constant(I64, i)], source_etype=I64)
            b.store(ops.resize(b, b.load(self.slots[i], typ=self.W), I64), cell)
        b.store(self.used_now() if used is None else used, self.ctx_field("used"))
        b.ret(ir.Constant(I64, len(self.exits)))
        self.exits.append(exit)

    def resume_site(self, height: int) -> tuple[int, ir.Block]:
        """A new resume site: entering with ``resume`` = its number continues in its block."""
        block = self.fn.append_basic_block()
        self.resumes.append((block, height))
        return len(self.resumes), block

    # --- the stack -----------------------------------------------------------------------
    def pop(self):
        self.height -= 1
        return self.b.load(self.slots[self.height], typ=self.W)

    def push(self, value) -> None:
        self.b.store(value, self.slots[self.height])
        self.height += 1

    def constant(self, value: int):
        return ir.Constant(self.W, value & self.word.mask)

    def narrow(self, value64):
        return ops.resize(self.b, value64, self.W)

    # --- instructions --------------------------------------------------------------------
    def compute(self, decoded) -> None:
        """One NATIVE instruction other than a jump."""
        ins = decoded.instruction
        m = ins.mnemonic
        b = self.b
        family = family_of(ins)
        if family == "PUSH":
            self.push(self.constant(decoded.immediate))
        elif family == "DUP":
            self.push(b.load(self.slots[self.height - ins.inputs], typ=self.W))
        elif family == "SWAP":
            top, other = self.slots[self.height - 1], self.slots[self.height - ins.inputs]
            x, y = b.load(top, typ=self.W), b.load(other, typ=self.W)
            b.store(y, top)
            b.store(x, other)
        elif m == "POP":
            self.height -= 1
        elif m == "NOP":
            pass
        elif m in ops.BINARY:
            y = self.pop()
            x = self.pop()
            self.push(ops.BINARY[m](b, x, y))
        elif m in ops.UNARY:
            self.push(ops.UNARY[m](b, self.pop()))
        elif m == "CALLDATALOAD":
            self.push(self.call_data_load(self.pop()))
        elif m == "COMPUTELEFT":
            self.push(self.narrow(b.sub(self.var("limit"), self.used_now())))
        else:
            field = {"CALLER": "caller", "SELF": "address", "CALLDATASIZE": "call_data_size",
                     "DATASIZE": "data_size", "RETURNDATASIZE": "return_data_size",
                     "MSIZE": "memory_size"}[m]
            self.push(self.narrow(self.var(field)))

    def call_data_load(self, offset):
        """The word at offset of the call data, little-endian; bytes past its end read 0."""
        b = self.b
        size = self.word.size
        at = ops.resize(b, offset, I64)
        length = self.var("call_data_size")
        base = b.inttoptr(self.var("call_data"), PTR)
        result = self.alloca(self.W)
        b.store(ir.Constant(self.W, 0), result)
        inside = b.icmp_unsigned("<", at, length)
        whole = b.and_(inside, b.icmp_unsigned("<=", b.add(at, ir.Constant(I64, size)), length))
        with b.if_else(whole) as (then, otherwise):
            with then:
                b.store(b.load(b.gep(base, [at], source_etype=I8), typ=self.W, align=1), result)
            with otherwise:
                # A partial word (or none): byte by byte up to the end of the call data.
                head, body, done = (self.fn.append_basic_block() for _ in range(3))
                index = self.alloca(I64)
                b.store(at, index)
                b.cbranch(inside, head, done)
                b.position_at_end(head)
                i = b.load(index, typ=I64)
                b.cbranch(b.icmp_unsigned("<", i, length), body, done)
                b.position_at_end(body)
                byte = ops.resize(b, b.load(b.gep(base, [i], source_etype=I8), typ=I8), self.W)
                shift = ops.resize(b, b.mul(b.sub(i, at), ir.Constant(I64, 8)), self.W)
                b.store(b.or_(b.load(result, typ=self.W), b.shl(byte, shift)), result)
                b.store(b.add(i, ir.Constant(I64, 1)), index)
                b.branch(head)
                b.position_at_end(done)
        return b.load(result, typ=self.W)

    def memory_access(self, decoded, handler, next_block) -> None:
        """MLOAD, MSTORE, MLOAD8, MSTORE8 (a segment's last instruction) in place when memory
        covers the access; otherwise leave and let the handler grow memory or fail."""
        b = self.b
        ins = decoded.instruction
        m = ins.mnemonic
        size = self.word.size if m in ("MLOAD", "MSTORE") else 1
        start = self.height
        offset = ops.resize(b, b.load(self.slots[start - ins.inputs], typ=self.W), I64)
        memory_size = self.var("memory_size")
        covered = b.and_(b.icmp_unsigned(">=", memory_size, ir.Constant(I64, size)),
                         b.icmp_unsigned("<=", offset, b.sub(memory_size, ir.Constant(I64, size))))
        fast, slow = self.fn.append_basic_block(), self.fn.append_basic_block()
        b.cbranch(covered, fast, slow)
        b.position_at_end(slow)
        self.run_handler(decoded, handler, next_block)
        b.position_at_end(fast)
        self.height = start
        cell = b.gep(b.inttoptr(self.var("memory"), PTR), [offset], source_etype=I8)
        if m == "MLOAD":
            self.pop()
            self.push(b.load(cell, typ=self.W, align=1))
        elif m == "MLOAD8":
            self.pop()
            self.push(ops.resize(b, b.load(cell, typ=I8), self.W))
        else:
            value = self.pop()
            self.pop()
            b.store(value if m == "MSTORE" else ops.resize(b, value, I8), cell, align=1)

    def run_handler(self, decoded, handler, next_block) -> None:
        """Leave for the reference handler of ``decoded``, with the stack up to it; enter
        again after it at ``next_block`` when there is one (None: do not come back)."""
        ins = decoded.instruction
        after = self.height - ins.inputs + ins.outputs
        resume, block = self.resume_site(after) if next_block is not None else (0, None)
        end = decoded.end
        self.leave(Exit(RUN, self.height, end, decoded.offset, handler, decoded.immediate,
                        resume, after))
        if block is not None:
            self.b.position_at_end(block)
            self.b.branch(next_block)
        self.height = after

    # --- segments ------------------------------------------------------------------------
    def segment(self, segment: Segment, next_block: ir.Block | None, next_start: int | None) -> None:
        """One segment. In a loop, ``next_block`` is the next segment's (or the latch's) block
        and ``next_start`` its offset; in a block region both are None."""
        b = self.b
        checked = not self.plan.counted
        if checked:
            used = b.add(self.var("used"), ir.Constant(I64, segment.cost))
            with b.if_then(b.icmp_signed(">", used, self.var("limit")), likely=False):
                self.leave(Exit(INTERPRET, self.height, segment.start))
            b.store(used, self.vars["used"])
        self.cost_done += segment.cost
        *body, (last, last_handler) = segment.steps
        for decoded, handler in body:
            if kind(decoded) == NATIVE:
                self.compute(decoded)
            else:                            # a gated read: leave, run it, come back here
                block = self.fn.append_basic_block()
                self.run_handler(decoded, handler, block)
                b.position_at_end(block)
        flow = last.instruction.flow
        # After a handler that continues to the next instruction, a checked region comes
        # back in (a counted one cannot: its meter is a count of whole iterations).
        resume_to = next_block if checked and flow == "next" else None
        if flow == "jump":
            self.goto(last.immediate, next_block, next_start)
        elif flow == "branch":
            cond = b.icmp_unsigned("!=", self.pop(), ir.Constant(self.W, 0))
            target, end = last.immediate, segment.end
            if target == end:
                self.goto(end, next_block, next_start)
            else:
                taken, fallen = self.fn.append_basic_block(), self.fn.append_basic_block()
                b.cbranch(cond, taken, fallen)
                height = self.height
                b.position_at_end(taken)
                self.goto(target, next_block, next_start)
                self.height = height
                b.position_at_end(fallen)
                self.goto(end, next_block, next_start)
        elif flow != "next" or kind(last) == HANDLER:
            self.run_handler(last, last_handler, resume_to)
        elif kind(last) == IN_PLACE:
            self.memory_access(last, last_handler, resume_to)
            self.goto(segment.end, next_block, next_start)
        else:
            self.compute(last)
            self.goto(segment.end, next_block, next_start)

    def goto(self, target: int, next_block, next_start) -> None:
        if next_block is not None and target == next_start:
            self.b.branch(next_block)
        else:
            self.leave(Exit(GOTO, self.height, target))

    # --- the function --------------------------------------------------------------------
    def lower(self) -> Lowered:
        b = self.b
        region = self.region
        need = region.need
        for name in FIELDS[:-1]:
            b.store(b.load(self.ctx_field(name), typ=I64), self.vars[name])
        dispatch = b.block
        start = self.fn.append_basic_block("start")
        b.position_at_end(start)
        self.load_window(need)
        self.height = need
        segments = region.segments
        if self.plan.counted:
            self.counted_loop(segments)
        elif region.loop:
            blocks = [self.fn.append_basic_block() for _ in segments]
            b.branch(blocks[0])
            for i, segment in enumerate(segments):
                b.position_at_end(blocks[i])
                j = (i + 1) % len(segments)
                self.cost_done = 0
                self.segment(segment, blocks[j], segments[j].start)
        else:
            self.segment(segments[0], None, None)
        b.position_at_end(dispatch)
        resume = b.load(self.ctx_field("resume"), typ=I64)
        switch = b.switch(resume, start)
        for number, (block, height) in enumerate(self.resumes, 1):
            entry = self.fn.append_basic_block()
            switch.add_case(ir.Constant(I64, number), entry)
            b.position_at_end(entry)
            self.load_window(height)
            b.branch(block)
        size = sum(len(block.instructions) for block in self.fn.blocks)
        return Lowered(self.module, tuple(self.exits), frozenset(self.reads), size)

    def budget(self, left, cost):
        """Whole iterations the compute left pays for: left // cost (0 when nothing is left)."""
        b = self.b
        return b.select(b.icmp_signed("<", left, ir.Constant(I64, 0)), ir.Constant(I64, 0),
                        b.sdiv(left, cost))

    def counted_loop(self, segments) -> None:
        b = self.b
        self.cycle_cost = sum(s.cost for s in segments)
        self.used0 = self.var("used")
        cost = ir.Constant(I64, self.cycle_cost)
        iterations = self.budget(b.sub(self.var("limit"), self.used0), cost)
        self.iteration = self.alloca(I64)
        b.store(ir.Constant(I64, 0), self.iteration)
        with b.if_then(b.icmp_signed("<=", iterations, ir.Constant(I64, 0)), likely=False):
            self.leave(Exit(INTERPRET, self.height, segments[0].start), used=self.used0)
        blocks = [self.fn.append_basic_block() for _ in segments]
        latch = self.fn.append_basic_block("latch")
        b.branch(blocks[0])
        height = self.height
        for i, segment in enumerate(segments):
            b.position_at_end(blocks[i])
            last = i + 1 == len(segments)
            self.segment(segment, latch if last else blocks[i + 1],
                         segments[0].start if last else segments[i + 1].start)
        b.position_at_end(latch)
        self.height = height
        self.cost_done = 0
        following = b.add(b.load(self.iteration, typ=I64), ir.Constant(I64, 1))
        b.store(following, self.iteration)
        spent = self.fn.append_basic_block("spent")
        b.cbranch(b.icmp_signed("<", following, iterations), blocks[0], spent)
        b.position_at_end(spent)
        self.leave(Exit(INTERPRET, self.height, segments[0].start),
                   used=b.add(self.used0, b.mul(iterations, cost)))
