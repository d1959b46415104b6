"""Promote a lowered function's locals to SSA registers, on llvmlite's IR objects.

lower.py keeps each stack position, each context field and each loop counter in an ``alloca``
read and written only by ``load`` and ``store``. ``promote`` rewrites the function so that
these values live in SSA registers (the classic construction: phi nodes at the iterated
dominance frontier of each local's stores, then a renaming walk over the dominator tree),
which is what LLVM's own mem2reg would do first thing in its -O2 pipeline. Running that
pipeline from Python needs one of llvmlite's PassBuilders, and each PassBuilder leaves its
PassInstrumentationCallbacks (about 1.4 KiB) allocated for the rest of the process; with the
locals already in registers, the machine code is good without it (LLVM's code generator still
runs at -O2: instruction selection with its combiner, machine LICM, CSE, sinking, register
allocation), and compiling a region allocates nothing that outlives it.

An ``alloca`` used any other way (its address stored or passed, a load of another type) is
left in memory. Blocks no path from the entry reaches are removed first (their code can never
run, and a phi needs an entry for each predecessor). Phis that end up unused or trivial (every
incoming value the same, or the phi itself) are removed at the end.
"""

from __future__ import annotations

from typing import Callable

from llvmlite import ir
from llvmlite.ir import instructions as ins


def successors(block: ir.Block) -> list[ir.Block]:
    """The blocks ``block``'s terminator can go to, one per edge (an edge twice is listed
    twice: a phi needs one entry per edge)."""
    term = block.terminator
    if isinstance(term, ins.ConditionalBranch):
        return [term.operands[1], term.operands[2]]
    if isinstance(term, ins.SwitchInstr):
        return [term.default] + [target for _, target in term.cases]
    if isinstance(term, ins.Branch):
        return [term.operands[0]]
    return []          # ret, unreachable


def _operands(instruction) -> list:
    if isinstance(instruction, ins.PhiInstr):
        return [value for value, _ in instruction.incomings]
    return list(instruction.operands)


def _reachable(fn: ir.Function) -> list[ir.Block]:
    """The blocks reachable from the entry, in reverse postorder."""
    seen: set[int] = set()
    order: list[ir.Block] = []
    stack = [(fn.entry_basic_block, iter(successors(fn.entry_basic_block)))]
    seen.add(id(fn.entry_basic_block))
    while stack:
        block, succs = stack[-1]
        for succ in succs:
            if id(succ) not in seen:
                seen.add(id(succ))
                stack.append((succ, iter(successors(succ))))
                break
        else:
            stack.pop()
            order.append(block)
    order.reverse()
    return order


def _dominators(blocks: list[ir.Block], preds: dict[int, list[ir.Block]]) -> dict[int, ir.Block]:
    """Immediate dominators (Cooper, Harvey and Kennedy's iteration over reverse postorder)."""
    number = {id(b): i for i, b in enumerate(blocks)}
    entry = blocks[0]
    idom: dict[int, ir.Block] = {id(entry): entry}

    def intersect(a: ir.Block, b: ir.Block) -> ir.Block:
        while a is not b:
            while number[id(a)] > number[id(b)]:
                a = idom[id(a)]
            while number[id(b)] > number[id(a)]:
                b = idom[id(b)]
        return a

    changed = True
    while changed:
        changed = False
        for block in blocks[1:]:
            done = [p for p in preds[id(block)] if id(p) in idom]
            new = done[0]
            for p in done[1:]:
                new = intersect(p, new)
            if idom.get(id(block)) is not new:
                idom[id(block)] = new
                changed = True
    return idom


def _promotable(fn: ir.Function, blocks: list[ir.Block]) -> list[ins.AllocaInstr]:
    allocas = [i for i in fn.entry_basic_block.instructions
               if isinstance(i, ins.AllocaInstr) and not i.operands]
    ok = {id(a): a for a in allocas}
    for block in blocks:
        for instruction in block.instructions:
            for position, op in enumerate(_operands(instruction)):
                if id(op) not in ok:
                    continue
                if isinstance(instruction, ins.LoadInstr) and instruction.type == op.allocated_type:
                    continue
                if (isinstance(instruction, ins.StoreInstr) and position == 1
                        and instruction.operands[0].type == op.allocated_type):
                    continue
                del ok[id(op)]
    return [a for a in allocas if id(a) in ok]


def promote(fn: ir.Function) -> None:
    """Rewrite ``fn`` in place: its promotable allocas become SSA values."""
    blocks = _reachable(fn)
    live = {id(b) for b in blocks}
    fn.blocks[:] = [b for b in fn.blocks if id(b) in live]
    preds: dict[int, list[ir.Block]] = {id(b): [] for b in blocks}
    for block in blocks:
        for succ in successors(block):
            preds[id(succ)].append(block)
    allocas = _promotable(fn, blocks)
    if not allocas:
        return
    idom = _dominators(blocks, preds)
    frontier: dict[int, set[int]] = {id(b): set() for b in blocks}
    by_id = {id(b): b for b in blocks}
    for block in blocks:
        if len(preds[id(block)]) > 1:
            for runner in preds[id(block)]:
                while runner is not idom[id(block)]:
                    frontier[id(runner)].add(id(block))
                    runner = idom[id(runner)]

    slot = {id(a): a for a in allocas}
    phis: dict[int, dict[int, ins.PhiInstr]] = {id(b): {} for b in blocks}   # block -> alloca -> phi
    stored: dict[int, set[int]] = {key: set() for key in slot}    # alloca -> blocks storing it
    for block in blocks:
        for instruction in block.instructions:
            if isinstance(instruction, ins.StoreInstr) and id(instruction.operands[1]) in slot:
                stored[id(instruction.operands[1])].add(id(block))
    for alloca in allocas:
        stores = stored[id(alloca)]
        work = list(stores)
        placed: set[int] = set()
        while work:
            for target in frontier[work.pop()]:
                if target not in placed:
                    placed.add(target)
                    block = by_id[target]
                    phi = ins.PhiInstr(block, alloca.allocated_type, "")
                    block.instructions.insert(0, phi)
                    phis[target][id(alloca)] = phi
                    if target not in stores:
                        work.append(target)

    children: dict[int, list[ir.Block]] = {id(b): [] for b in blocks}
    for block in blocks[1:]:
        children[id(idom[id(block)])].append(block)
    replaced: dict[int, object] = {}
    resolve = _resolver(replaced)

    placed_for = {id(phi): key for per in phis.values() for key, phi in per.items()}
    undefined = {key: ir.Constant(a.allocated_type, ir.Undefined) for key, a in slot.items()}
    # The renaming walk, parents before children along the dominator tree (each block starts
    # from the values at the end of its immediate dominator).
    walk: list[tuple[ir.Block, dict[int, object]]] = [(blocks[0], {})]
    while walk:
        block, current = walk.pop()
        current = dict(current)
        kept = []
        for instruction in block.instructions:
            if isinstance(instruction, ins.PhiInstr):
                if id(instruction) in placed_for:
                    current[placed_for[id(instruction)]] = instruction
                kept.append(instruction)
            elif isinstance(instruction, ins.LoadInstr) and id(instruction.operands[0]) in slot:
                key = id(instruction.operands[0])
                replaced[id(instruction)] = current.get(key, undefined[key])
            elif isinstance(instruction, ins.StoreInstr) and id(instruction.operands[1]) in slot:
                current[id(instruction.operands[1])] = resolve(instruction.operands[0])
            elif not (isinstance(instruction, ins.AllocaInstr) and id(instruction) in slot):
                kept.append(instruction)
        block.instructions[:] = kept
        for succ in successors(block):
            for key, phi in phis[id(succ)].items():
                phi.add_incoming(current.get(key, undefined[key]), block)
        walk.extend((child, current) for child in children[id(block)])

    _rewrite(blocks, resolve)
    _prune(blocks, [phi for per in phis.values() for phi in per.values()])


def _resolver(replaced: dict[int, object]) -> Callable[[object], object]:
    """The value a value stands for, through the chain of ``replaced`` (by id)."""
    def resolve(value: object) -> object:
        while id(value) in replaced:
            value = replaced[id(value)]
        return value
    return resolve


def _rewrite(blocks: list[ir.Block], resolve) -> None:
    """Every operand that named a removed load names its value."""
    for block in blocks:
        for instruction in block.instructions:
            if isinstance(instruction, ins.PhiInstr):
                instruction.incomings = [(resolve(v), b) for v, b in instruction.incomings]
            else:
                operands = [resolve(op) for op in instruction.operands]
                if any(a is not b for a, b in zip(operands, instruction.operands)):
                    instruction.operands = operands
                    if isinstance(instruction, ins.GEPInstr):    # printed from these two
                        instruction.pointer, instruction.indices = operands[0], operands[1:]
                    instruction._clear_string_cache()


def _prune(blocks: list[ir.Block], phis: list[ins.PhiInstr]) -> None:
    """Replace each trivial phi by its one value (rounds until none is left), then remove the
    phis that no other instruction needs."""
    alive = {id(p): p for p in phis}
    while True:
        trivial: dict[int, object] = {}
        for phi in alive.values():
            values = {id(v): v for v, _ in phi.incomings if v is not phi}
            if len(values) == 1:
                trivial[id(phi)] = next(iter(values.values()))
        if not trivial:
            break
        for key in trivial:
            phi = alive.pop(key)
            phi.parent.instructions.remove(phi)
        _rewrite(blocks, _resolver(trivial))
    needed: set[int] = set()
    work: list = []
    for block in blocks:
        for instruction in block.instructions:
            if not isinstance(instruction, ins.PhiInstr):
                work.extend(op for op in instruction.operands if id(op) in alive)
    while work:
        phi = work.pop()
        if id(phi) not in needed:
            needed.add(id(phi))
            work.extend(v for v, _ in phi.incomings if id(v) in alive)
    for key, phi in alive.items():
        if key not in needed:
            phi.parent.instructions.remove(phi)
