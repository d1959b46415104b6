"""The spec's promises about one instruction, written straight from its text as a second,
independent formulation the model is checked against (theorems.py).

Where the model composes branching rules (accounting.py), this module states outcomes as one
decision list in the order of spec 5.2.3 and 5.6, and characterises rounded quantities
instead of computing them: the pages memory grows by are the *least* whole number covering
the range; a copy or hash charge is the least number of words or blocks covering the length.
"""

from __future__ import annotations

import z3

import spec

from proofs.accounting import umax
from proofs.machine import State
from proofs.words import ceil_div


def outcomes(table: spec.Spec) -> tuple[str, ...]:
    """Every outcome of a step in version ``table``: running, success, reverted, its errors."""
    return ("running", "success", "reverted") + tuple(table.errors)


def code(outcome: str, table: spec.Spec) -> z3.BitVecRef:
    return z3.BitVecVal(outcomes(table).index(outcome), 8)


def operands(pre: State, mnemonic: str) -> dict:
    """The row's inputs by signature name, read unsigned as counters (spec 1.5.3)."""
    ins = pre.w.spec.by_mnemonic[mnemonic]
    names = ins.signature.split("--")[0].split()
    items = list(reversed(pre.stack[:ins.inputs]))  # bottom to top, as the signature lists
    return {n: pre.w.widen(v) for n, v in zip(names, items)} if len(names) == ins.inputs else {}


def touched_ranges(pre: State, mnemonic: str) -> list[tuple]:
    """(offset, length) of every memory range the rule of spec 5.6 touches."""
    ins = pre.w.spec.by_mnemonic[mnemonic]
    op = operands(pre, mnemonic)
    rule, cv = ins.cost_rule, pre.w.cval
    if rule == "memory_expansion":
        if mnemonic in ("RETURN", "REVERT"):
            return [(op["offset"], op["length"])]
        return [(op["offset"], cv(pre.w.size if mnemonic in ("MLOAD", "MSTORE") else 1))]
    if rule == "memory_copy":
        if mnemonic == "MCOPY":
            return [(op["src"], op["length"]), (op["dst"], op["length"])]
        return [(op["dst"], op["length"])]
    if rule == "hash":
        return [(op["dst"], cv(pre.w.num.digest_size)), (op["src"], op["length"])]
    if rule in ("log_data", "call"):
        return [(op["offset"], op["length"])]
    return []


def touched_end(pre: State, mnemonic: str):
    """(touches, end): whether the rule touches memory at all and the end it grows to
    (spec 5.3.3: the largest end among the ranges of non-zero length), in the words of 5.6.2
    and 5.6.5 for the two rules that touch two ranges."""
    op, cv = operands(pre, mnemonic), pre.w.cval
    if mnemonic == "MCOPY":
        return op["length"] != 0, umax(op["src"], op["dst"]) + op["length"]
    if mnemonic == "SHA256":  # the digest range is always touched
        digest_end = op["dst"] + pre.w.num.digest_size
        return z3.BoolVal(True), z3.If(op["length"] == 0, digest_end,
                                       umax(digest_end, op["src"] + op["length"]))
    ranges = touched_ranges(pre, mnemonic)
    if not ranges:
        return z3.BoolVal(False), cv(0)
    (offset, length), = ranges  # every other rule touches one range
    return length != 0, offset + length


def least_cover(pages, end, page_size: int) -> z3.BoolRef:
    """pages is the least whole number of pages of ``page_size`` bytes holding [0, end)."""
    return z3.And(z3.UGE(pages * page_size, end),
                  z3.Or(pages == 0, z3.ULT((pages - 1) * page_size, end)))


def least_units(count, length, unit: int) -> z3.BoolRef:
    """count is ⌈length / unit⌉, characterised."""
    return z3.And(z3.UGE(count * unit, length),
                  z3.Or(count == 0, z3.ULT((count - 1) * unit, length)))


def rule_quantity(pre: State, mnemonic: str):
    """(length, unit size, unit cost) of the copy or hash charge of the row's rule, or None."""
    rule = pre.w.spec.by_mnemonic[mnemonic].cost_rule
    op, n = operands(pre, mnemonic), pre.w.num
    if rule in ("memory_copy", "log_data"):
        return op["length"], n.copy_word_size, n.copy_word_cost
    if rule == "hash":
        return op["length"], n.hash_block_size, n.hash_block_cost
    return None


def new_slot(pre: State, mnemonic: str):
    if mnemonic != "SSTORE":
        return z3.BoolVal(False)
    value, key = pre.stack[0], pre.stack[1]
    return z3.And(value != 0, pre.storage[key] == 0)


# Cost rules of the instructions a read-only frame may not execute (from 1.1, spec 6.11).
WRITE_RULES = ("storage_write", "transient_write", "log_data")


def new_transient_slot(pre: State, mnemonic: str):
    """TSTORE makes a new transient slot (5.6.8 step 1): value is not 0 and the slot is."""
    if mnemonic != "TSTORE" or pre.transient is None:
        return z3.BoolVal(False)
    value, key = pre.stack[0], pre.stack[1]
    return z3.And(value != 0, pre.transient[key] == 0)


def expected_outcome(pre: State, mnemonic: str):
    """The outcome code spec 5.2.3 and 5.6 prescribe for the pre-state, as one decision list
    (first matching line wins). CALL's callee never halts the caller, so only its rule can."""
    table, n = pre.w.spec, pre.w.num
    ins = table.by_mnemonic[mnemonic]
    cv = pre.w.cval
    page_size, page_cost = n.page_size, n.page_cost
    after_base = pre.compute + cv(ins.cost)
    lines = [
        (z3.ULT(pre.height, cv(ins.inputs)), "STACK_UNDERFLOW"),
        (z3.UGT(pre.height - cv(ins.inputs) + cv(ins.outputs), cv(n.stack_depth)),
         "STACK_OVERFLOW"),
        (z3.UGT(after_base, pre.compute_limit), "COMPUTE_LIMIT_EXCEEDED"),
    ]
    if ins.cost_rule in WRITE_RULES and pre.env.read_only is not None:
        lines.append((pre.env.read_only, "READ_ONLY_WRITE"))
    touches, end = touched_end(pre, mnemonic)
    grows = z3.And(touches, z3.UGT(end, pre.memory.pages * page_size))
    new_pages = ceil_div(end, page_size) - pre.memory.pages  # meaningful only when it grows
    lines += [(z3.And(grows, z3.UGT(pre.pages_live + new_pages, pre.memory_limit)),
               "MEMORY_LIMIT_EXCEEDED"),
              (z3.And(grows, z3.UGT(after_base + new_pages * page_cost, pre.compute_limit)),
               "COMPUTE_LIMIT_EXCEEDED")]
    quantity = rule_quantity(pre, mnemonic)
    if quantity is not None:
        length, unit, unit_cost = quantity
        units = ceil_div(length, unit) * unit_cost
        touched = after_base + new_pages * page_cost
        lines += [(z3.And(grows, z3.UGT(touched + units, pre.compute_limit)),
                   "COMPUTE_LIMIT_EXCEEDED"),
                  (z3.And(z3.Not(grows), z3.UGT(after_base + units, pre.compute_limit)),
                   "COMPUTE_LIMIT_EXCEEDED")]
    if ins.cost_rule == "storage_read":
        lines.append((z3.UGT(pre.storage_units + n.read_units, pre.storage_limit),
                      "STORAGE_LIMIT_EXCEEDED"))
    if ins.cost_rule == "storage_write":
        fresh = new_slot(pre, mnemonic)
        lines += [(z3.And(fresh, z3.UGT(after_base + n.new_slot_cost, pre.compute_limit)),
                   "COMPUTE_LIMIT_EXCEEDED"),
                  (z3.UGT(pre.storage_units + z3.If(fresh, cv(n.write_units + n.new_slot_units),
                                                     cv(n.write_units)), pre.storage_limit),
                   "STORAGE_LIMIT_EXCEEDED")]
    if ins.cost_rule == "transient_write":
        fresh = new_transient_slot(pre, mnemonic)
        lines += [(z3.And(fresh, pre.transient_alive == cv(n.transient()[0])),
                   "TRANSIENT_STORAGE_FULL"),
                  (z3.And(fresh, z3.UGT(after_base + n.transient()[1],
                                        pre.compute_limit)), "COMPUTE_LIMIT_EXCEEDED")]
    final = {"STOP": "success", "RETURN": "success", "REVERT": "reverted",
             "TRAP": "TRAP_EXECUTED"}.get(mnemonic, "running")
    if mnemonic == "CALLSUB":
        lines.append((z3.UGE(pre.rheight, cv(n.return_stack_depth)), "RETURN_STACK_OVERFLOW"))
    if mnemonic == "RETSUB":
        lines.append((pre.rheight == 0, "RETURN_STACK_UNDERFLOW"))
    result = code(final, table)
    for cond, outcome in reversed(lines):
        result = z3.If(cond, code(outcome, table), result)
    return result


def _expand(side: str) -> list[str]:
    """Signature names of one side, bottom to top, with ranges "x4..x2" spelled out."""
    out = []
    for token in side.split():
        if ".." in token:
            high, low = (int(t.lstrip("x")) for t in token.split(".."))
            out += [f"x{k}" for k in range(high, low - 1, -1)]
        else:
            out.append(token)
    return out


# Chapter 6.9: the frame's identity reads.
IDENTITY = {"SELF": lambda env: env.address, "CALLER": lambda env: env.caller}


def pushed_values(pre: State, mnemonic: str, imm) -> list[tuple[int, z3.BitVecRef]]:
    """(position from the top after the step, value) of the items a continuing step of a
    stack row or an identity read must leave: a stack row's outputs as its signature names
    them from its inputs (DUPn copies the n-th item, SWAPn exchanges the top and the
    (n+1)-th), a PUSH's immediate zero-extended (6.2), SELF the frame's address and CALLER
    its caller (6.9)."""
    w = pre.w
    ins = w.spec.by_mnemonic[mnemonic]
    if mnemonic in IDENTITY:
        return [(0, IDENTITY[mnemonic](pre.env))]
    if ins.type != "stack":
        return []
    if mnemonic.startswith("PUSH"):
        bits = 8 * ins.immediate_size
        return [(0, z3.ZeroExt(w.bits - bits, imm) if bits <= w.bits
                 else z3.Extract(w.bits - 1, 0, imm))]
    before, after = (_expand(side) for side in ins.signature.split("--"))
    value = {name: pre.stack[len(before) - 1 - p] for p, name in enumerate(before)}
    return [(len(after) - 1 - q, value[name]) for q, name in enumerate(after) if name in value]
