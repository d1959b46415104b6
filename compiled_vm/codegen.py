"""Generate Python source for a region (regions.py): the stack in local variables, one stack
check on entry, one compute check and charge per segment (per iteration for a counted loop).

The generated function is ``region(frame, stack, meter, limit)`` (the word mask M is bound as
a default argument, a local). It returns the offset to continue at, or ``~pc`` to say "run
the segment at pc through the interpreter": it does so, with every meter and the stack
exactly as the reference would have them at pc, whenever an aggregate check fails, so the
per-instruction definition meets the failing instruction with the reference's state.

Three shapes:
- block: one segment, entered when its stack needs, peak and base cost fit.
- counted loop: a cycle whose every instruction is inlined (no handler call, no dynamic
  charge); it runs ``(limit - used) // cost`` iterations at most, each charged the cycle's
  base cost, and leaves through a branch or, when the budget is spent, back to the interpreter.
- loop: a cycle with handler calls or memory accesses: each segment checks and charges its
  base cost on entry; handlers charge their own rules against the live meter.

Inlined instructions (a table from mnemonic to an expression) are the pure stack, arithmetic,
comparison and bitwise operations and the frame's constant reads; memory loads and stores run
in place when memory already covers them; every other instruction calls the reference
handler with the stack materialized. Results of ADD, SUB and MUL stay
unmasked while only other ring operations use them (modular arithmetic allows it), comparison
results stay Python booleans while only a branch or ISZERO uses them.
"""

from __future__ import annotations

from compiled_vm.regions import Region
from reference_vm.instructions.stack import family_of
from reference_vm.machine import Handler
from reference_vm.program import METER_READERS, Segment
from reference_vm.rules import Rules

MAX_DEPTH = 8          # expressions are held in a local after this many operations

RING = {"ADD": "+", "SUB": "-", "MUL": "*"}
MASKED = {"AND": "&", "OR": "|", "XOR": "^"}
COMPARE = {"EQ": "==", "LTU": "<", "GTU": ">"}
SIGNED_COMPARE = {"LTS": "<", "GTS": ">"}
# Reads of frame state that no instruction of the frame changes (evaluated eagerly anyway).
CONSTANT_READS = {"CALLER": "frame.caller", "SELF": "frame.address",
                  "CALLDATASIZE": "len(frame.call_data) & M", "DATASIZE": "len(frame.data) & M"}
# Reads of frame state that handlers change: evaluated where they stand.
STATE_READS = {"MSIZE": "len(frame.memory) & M", "RETURNDATASIZE": "len(frame.return_data) & M",
               "TIME": "frame.execution.context.block_time"}
# Memory accesses done in place when memory already covers them (else the handler grows it).
MEMORY_ACCESS = {"MLOAD", "MSTORE", "MLOAD8", "MSTORE8"}
PURE = (set(RING) | set(MASKED) | set(COMPARE) | set(SIGNED_COMPARE) | set(CONSTANT_READS)
        | set(STATE_READS) | {"NOT", "ISZERO", "DIVU", "REMU", "SHL", "SHRU", "SHRS", "POP", "NOP",
                              "CALLDATALOAD", "JUMP", "JUMPI"})


def inlined(decoded) -> bool:
    ins = decoded.instruction
    if ins.cost_rule is not None or ins.mnemonic in METER_READERS:
        return False
    return ins.mnemonic in PURE or family_of(ins) is not None


class Val:
    """A stack item held in the generated code: ``kind`` is 'int' (a masked value), 'ring' (a
    value still to be masked) or 'bool' (a Python boolean standing for 1 or 0)."""

    __slots__ = ("expr", "kind", "depth")

    def __init__(self, expr: str, kind: str = "int", depth: int = 0):
        self.expr, self.kind, self.depth = expr, kind, depth

    def atomic(self) -> bool:
        return self.kind == "int" and (self.expr.isidentifier() or self.expr.isdigit())


class Gen:
    def __init__(self, region: Region, rules: Rules, head: int):
        self.region = region
        self.rules = rules
        self.word = rules.word
        self.head = head
        self.lines: list[str] = []
        self.indent = 1
        self.sym: list[Val] = []
        self.listed = 0          # items in the real list relative to the base below the entry items
        self.temps = 0
        self.namespace: dict[str, object] = {"M": self.word.mask}
        steps = [d for s in region.segments for d, _ in s.steps]
        self.counted = (region.loop and sum(s.cost for s in region.segments) > 0
                        and all(inlined(d) for d in steps))
        self.cost_before = 0     # counted loops: base cost of the path segments finished so far

    # --- emitting -----------------------------------------------------------------------
    def emit(self, line: str) -> None:
        self.lines.append("    " * self.indent + line)

    def temp(self, expr: str) -> str:
        name = f"t{self.temps}"
        self.temps += 1
        self.emit(f"{name} = {expr}")
        return name

    def handler(self, decoded, handler: Handler) -> str:
        name = f"h{decoded.offset}"
        self.namespace[name] = handler
        return name

    # --- the symbolic stack -------------------------------------------------------------
    def ensure(self, k: int) -> None:
        """Hold at least k items in locals, taking them from the real list."""
        missing = k - len(self.sym)
        if missing <= 0:
            return
        names = [f"t{self.temps + i}" for i in range(missing)]
        self.temps += missing
        self.load(names)
        self.sym[:0] = [Val(n) for n in names]
        self.listed -= missing

    def pop(self) -> Val:
        self.ensure(1)
        return self.sym.pop()

    def as_int(self, v: Val) -> str:
        if v.kind == "ring":
            return f"(({v.expr}) & M)"
        if v.kind == "bool":
            return f"(1 if {v.expr} else 0)"
        return v.expr if v.atomic() else f"({v.expr})"

    def as_name(self, v: Val) -> str:
        return v.expr if v.atomic() else self.temp(self.as_int(v))

    def shallow(self, v: Val) -> Val:
        """v, or a local holding it when its expression is already MAX_DEPTH operations deep."""
        if v.depth < MAX_DEPTH:
            return v
        if v.kind == "bool":
            return Val(self.temp(v.expr), "bool")
        return Val(self.temp(self.as_int(v)))

    def operands(self, k: int) -> list[Val]:
        """The top k items, deepest first, each shallow enough to be composed."""
        vals = [self.shallow(self.pop()) for _ in range(k)]
        return vals[::-1]

    def as_ring(self, v: Val) -> str:
        return f"({v.expr})" if v.kind == "ring" else self.as_int(v)

    def as_bool(self, v: Val) -> str:
        return f"({v.expr})" if v.kind == "bool" else self.as_int(v)

    def materialized(self) -> str | None:
        """Source that pushes every local item onto the real list (None when there are none)."""
        if not self.sym:
            return None
        items = [self.as_int(v) for v in self.sym]
        if len(items) == 1:
            return f"stack.append({items[0]})"
        return f"stack.extend(({', '.join(items)}))"

    def flush(self) -> None:
        line = self.materialized()
        if line is not None:
            self.emit(line)
        self.listed += len(self.sym)
        self.sym = []

    def leave(self, target: str, cost_done: int) -> None:
        """Emit an exit: the stack onto the list, the meter exact, return target."""
        line = self.materialized()
        if line is not None:
            self.emit(line)
        if self.counted:
            self.emit(f"meter.compute_used = used + it * {self.region_cost} + {cost_done}")
        self.emit(f"return {target}")

    # --- instructions -------------------------------------------------------------------
    def inline(self, decoded) -> None:
        ins = decoded.instruction
        m = ins.mnemonic
        family = family_of(ins)
        sym = self.sym
        if family == "PUSH":
            sym.append(Val(str(decoded.immediate & self.word.mask)))
        elif family == "DUP":
            self.ensure(ins.inputs)
            v = sym[-ins.inputs]
            if not v.atomic() and not (v.kind == "bool" and v.expr.isidentifier()):
                name = self.temp(v.expr if v.kind == "bool" else self.as_int(v))
                v = Val(name, "bool") if v.kind == "bool" else Val(name)
                sym[-ins.inputs] = v
            sym.append(v)
        elif family == "SWAP":
            self.ensure(ins.inputs)
            sym[-1], sym[-ins.inputs] = sym[-ins.inputs], sym[-1]
        elif m == "POP":
            self.pop()
        elif m == "NOP":
            pass
        elif m in RING:
            a, b = self.operands(2)
            sym.append(Val(f"{self.as_ring(a)} {RING[m]} {self.as_ring(b)}", "ring",
                           max(a.depth, b.depth) + 1))
        elif m in MASKED:
            a, b = self.operands(2)
            sym.append(Val(f"{self.as_int(a)} {MASKED[m]} {self.as_int(b)}", "int",
                           max(a.depth, b.depth) + 1))
        elif m == "NOT":
            (a,) = self.operands(1)
            sym.append(Val(f"{self.as_int(a)} ^ M", "int", a.depth + 1))
        elif m in COMPARE:
            a, b = self.operands(2)
            sym.append(Val(f"{self.as_int(a)} {COMPARE[m]} {self.as_int(b)}", "bool",
                           max(a.depth, b.depth) + 1))
        elif m in SIGNED_COMPARE:
            a, b = self.operands(2)
            flip = self.word.sign_bit
            sym.append(Val(f"({self.as_int(a)} ^ {flip}) {SIGNED_COMPARE[m]} ({self.as_int(b)} ^ {flip})",
                           "bool", max(a.depth, b.depth) + 1))
        elif m == "ISZERO":
            (a,) = self.operands(1)
            sym.append(Val(f"not {self.as_bool(a)}" if a.kind == "bool" else f"{self.as_int(a)} == 0",
                           "bool", a.depth + 1))
        elif m in ("DIVU", "REMU"):
            b, a = self.pop(), self.pop()
            nb, na = self.as_name(b), self.as_name(a)
            expr = f"{na} // {nb} if {nb} else M" if m == "DIVU" else f"{na} % {nb} if {nb} else {na}"
            sym.append(Val(self.temp(expr)))
        elif m in ("SHL", "SHRU", "SHRS"):
            b, a = self.pop(), self.pop()
            nb, na = self.as_name(b), self.as_name(a)
            bits = self.word.bits
            if m == "SHL":
                expr = f"({na} << {nb}) & M if {nb} < {bits} else 0"
            elif m == "SHRU":
                expr = f"{na} >> {nb} if {nb} < {bits} else 0"
            else:
                expr = (f"(({na} - {1 << bits}) if {na} & {self.word.sign_bit} else {na}) "
                        f">> ({nb} if {nb} < {bits - 1} else {bits - 1}) & M")
            sym.append(Val(self.temp(expr)))
        elif m == "CALLDATALOAD":
            na = self.as_name(self.pop())
            end = f"{na} + {self.word.size}"
            sym.append(Val(self.temp(f"int.from_bytes(frame.call_data[{na}:{end}], 'little')")))
        elif m in CONSTANT_READS:
            sym.append(Val(self.temp(CONSTANT_READS[m])))
        elif m in STATE_READS:
            sym.append(Val(self.temp(STATE_READS[m])))
        else:  # JUMP, JUMPI are handled by the segment's exit
            raise AssertionError(m)

    def call(self, decoded, handler: Handler, last: bool) -> str:
        """Call the reference handler with the stack on the list; the call's source."""
        ins = decoded.instruction
        self.flush()
        name = self.handler(decoded, handler)
        if last:
            self.emit(f"frame.pc = {decoded.offset}")
        self.listed += ins.outputs - ins.inputs
        return f"{name}(frame, {decoded.immediate})"

    def memory_access(self, decoded, handler: Handler) -> None:
        """MLOAD, MSTORE, MLOAD8, MSTORE8 inside memory as it is: its memory_expansion rule
        charges nothing there, so the access is done in place. Otherwise the reference
        handler runs (it grows memory or halts) on its operands alone: a handler uses only
        its own operands of the stack, so the items below stay in locals."""
        m = decoded.instruction.mnemonic
        wide = m in ("MLOAD", "MSTORE")
        size = self.word.size if wide else 1
        operands = [self.as_name(v) for v in self.operands(decoded.instruction.inputs)]
        offset = operands[0]
        result = f"t{self.temps}"
        self.temps += 1
        self.emit(f"if {offset} + {size} <= len(frame.memory):")
        self.indent += 1
        if m == "MLOAD":
            word = f"frame.memory[{offset}:{offset} + {size}]"
            self.emit(f"{result} = int.from_bytes({word}, 'little')")
        elif m == "MLOAD8":
            self.emit(f"{result} = frame.memory[{offset}]")
        elif m == "MSTORE":
            value = f"({operands[1]}).to_bytes({size}, 'little')"
            self.emit(f"frame.memory[{offset}:{offset} + {size}] = {value}")
        else:
            self.emit(f"frame.memory[{offset}] = {operands[1]} & 255")
        self.indent -= 1
        self.emit("else:")
        self.indent += 1
        pushed = operands[0] if len(operands) == 1 else f"({', '.join(operands)})"
        self.emit(f"stack.append({pushed})" if len(operands) == 1 else f"stack.extend({pushed})")
        self.emit(f"frame.pc = {decoded.offset}")
        self.emit(f"{self.handler(decoded, handler)}(frame, {decoded.immediate})")
        if decoded.instruction.outputs:
            self.emit(f"{result} = stack.pop()")
        self.indent -= 1
        if decoded.instruction.outputs:
            self.sym.append(Val(result))

    # --- segments and regions -----------------------------------------------------------
    def check_compute(self, segment: Segment) -> None:
        """Loops and blocks: charge the segment's base cost, or leave to the interpreter."""
        self.emit(f"u = meter.compute_used + {segment.cost}")
        self.emit("if u > limit:")
        self.indent += 1
        self.leave(f"~{segment.start}", 0)
        self.indent -= 1
        self.emit("meter.compute_used = u")

    def segment(self, segment: Segment, on_path: int | None) -> None:
        """One segment; on_path is the next segment's offset inside a loop, None in a block."""
        if not self.counted:
            self.check_compute(segment)
        *body, (last, last_handler) = segment.steps
        for decoded, handler in body:
            if inlined(decoded):
                self.inline(decoded)
            else:
                self.emit(self.call(decoded, handler, last=False))
        self.cost_before += segment.cost
        ins = last.instruction
        flow = ins.flow
        if flow == "jump":
            if on_path is None:
                self.leave(str(last.immediate), self.cost_before)
        elif flow == "branch":
            cond = self.as_bool(self.pop())
            target, end = last.immediate, segment.end
            if on_path is None:
                if target == end:
                    self.leave(str(end), self.cost_before)
                else:
                    line = self.materialized()
                    if line is not None:
                        self.emit(line)
                    self.emit(f"return {target} if {cond} else {end}")
            elif target != end:
                off = end if on_path == target else target
                self.emit(f"if {cond}:" if off == target else f"if not {cond}:")
                self.indent += 1
                self.leave(str(off), self.cost_before)
                self.indent -= 1
        elif inlined(last):
            self.inline(last)
            if on_path is None:
                self.leave(str(segment.end), self.cost_before)
        elif ins.mnemonic in MEMORY_ACCESS:
            self.memory_access(last, last_handler)
            if on_path is None:
                self.leave(str(segment.end), self.cost_before)
        else:
            call = self.call(last, last_handler, last=True)
            if flow == "next":
                self.emit(call)
                if on_path is None:
                    self.emit(f"return {segment.end}")
            else:  # halt, call_sub, return_sub: the handler raises or names the target
                self.emit(f"return {call}")

    def generate(self) -> str:
        region = self.region
        need = region.need
        self.region_cost = sum(s.cost for s in region.segments)
        self.emit("n = len(stack)")
        self.emit(f"if n < {need} or n + {region.peak} > {self.rules.stack_depth}:")
        self.emit(f"    return ~{self.head}")
        entry = [f"v{i}" for i in range(need)]
        if self.counted:
            self.emit("used = meter.compute_used")
            self.emit(f"k = (limit - used) // {self.region_cost}")
            self.emit("if k <= 0:")
            self.emit(f"    return ~{self.head}")
        if not region.loop:  # items are taken from the list as they are used
            self.segment(region.segments[0], None)
        else:
            self.load(entry)
            self.sym = [Val(v) for v in entry]
            self.emit("for it in range(k):" if self.counted else "while True:")
            self.indent += 1
            segments = region.segments
            for i, segment in enumerate(segments):
                self.segment(segment, segments[(i + 1) % len(segments)].start)
            self.back_edge(entry)
            if self.lines[-1].endswith(":"):
                self.emit("pass")
            self.indent -= 1
            if self.counted:  # the budget is spent: the interpreter takes the next iteration
                self.sym = [Val(v) for v in entry]
                self.cost_before = 0
                line = self.materialized()
                if line is not None:
                    self.emit(line)
                self.emit(f"meter.compute_used = used + k * {self.region_cost}")
                self.emit(f"return ~{self.head}")
        return "def region(frame, stack, meter, limit, M=M):\n" + "\n".join(self.lines) + "\n"

    def load(self, names: list[str]) -> None:
        """Move the top len(names) items of the list into the named locals."""
        if len(names) == 1:
            self.emit(f"{names[0]} = stack.pop()")
        elif names:
            self.emit(f"{', '.join(names)} = stack[-{len(names)}:]")
            self.emit(f"del stack[-{len(names)}:]")

    def back_edge(self, entry: list[str]) -> None:
        """Bring the locals back to the entry names (v0 ...) for the next iteration."""
        need = len(entry)
        if self.listed == 0 and len(self.sym) == need:
            pairs = [(name, self.as_int(v)) for name, v in zip(entry, self.sym)
                     if v.expr != name or v.kind != "int"]
            if pairs:
                self.emit(f"{', '.join(n for n, _ in pairs)} = {', '.join(e for _, e in pairs)}")
        else:
            self.flush()
            if self.listed != need:
                raise AssertionError("loop stack height does not return")
            self.load(entry)
            self.listed = 0
        self.sym = [Val(v) for v in entry]
        self.cost_before = 0


def generate(region: Region, rules: Rules) -> tuple[str, dict[str, object]]:
    """The source of the region's function and the names it needs."""
    gen = Gen(region, rules, region.segments[0].start)
    return gen.generate(), gen.namespace
