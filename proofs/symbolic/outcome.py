"""A path's end as the canonical result of chapter 7.5, with symbolic fields.

``End`` holds z3 terms for every field of ``ExecutionResult.to_json()``: status, error and
error_pc are fixed by the path; output, state changes, events, calls, usage and fee are terms
over the inputs. ``concretise`` evaluates them in a model (the result the reference must give
on the model's witness input); ``describe`` prints each field as a constant where the path
fixes it and as a [least, greatest] range otherwise.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

import z3

from proofs.evaluate import compile_term
from proofs.machine import Bytes
from proofs.symbolic.budget import TermTooLarge, simplify
from proofs.symbolic.solve import Solver, value
USAGE = ("compute", "memory_pages", "storage_reads", "storage_writes", "storage_new_slots",
         "storage_units")
DESCRIBE_BYTES = 256         # longest output or event data described byte by byte


@dataclass(frozen=True)
class Record:
    """One call record (spec 7.5.2) with symbolic fields."""

    depth: int
    caller: int
    callee: z3.BitVecRef
    status: str
    error: str | None
    error_pc: int | None
    compute: z3.BitVecRef
    memory_pages: z3.BitVecRef
    storage_reads: z3.BitVecRef
    storage_writes: z3.BitVecRef
    storage_new_slots: z3.BitVecRef
    storage_units: z3.BitVecRef


@dataclass(frozen=True)
class End:
    index: int
    status: str
    error: str | None
    error_pc: int | None
    output: Bytes
    events: tuple                 # proofs.machine.Event, on success only
    pre: dict                     # address -> storage array before the call
    post: dict                    # address -> storage array after (pre unless success)
    written: tuple                # (address, key term) of every SSTORE on the path
    usage: dict                   # USAGE name -> counter term
    records: tuple                # Record
    conds: tuple                  # the path condition (conjuncts)
    keys: tuple                   # (address, key term) read or written: the witness's slots
    apps: tuple                   # SHA-256 and random-stream applications on the path
    flags: tuple = ()             # e.g. a branch kept because its feasibility was unknown
    pcs: tuple = ()               # the entry frame's instruction offsets, in order
    choices: tuple = ()           # (address, pc, branch label) of every fork, callees' too
    prices: dict | None = None    # the version's fee prices (schedule.toml [fee])

    @property
    def fee(self):
        u, prices = self.usage, self.prices
        if prices is None:
            raise ValueError("an End without the fee prices of its version")
        return (u["compute"] * prices["compute_price"]
                + u["memory_pages"] * prices["memory_page_price"]
                + u["storage_units"] * prices["storage_unit_price"])

    @property
    def outcome(self) -> str:
        return self.error or self.status


def read_bytes(model, data: Bytes) -> bytes:
    """The bytes of ``data`` in ``model``: the read term at a free index is evaluated once
    (the index left free) and compiled to a Python function of the index
    (proofs.evaluate.compile_term), evaluated at each index; a term it does not handle is
    evaluated index by index."""
    n = value(model, data.length)
    if n == 0:
        return b""
    j = z3.BitVec("outcome_index", data.length.size())
    term = data.read(j)
    try:
        read = compile_term(z3.simplify(model.eval(term, model_completion=False)), [j])
        return bytes(read(i) for i in range(n))
    except (NotImplementedError, RecursionError, ctypes.ArgumentError):
        # a term the compiler does not handle, or too deep for its recursion (ctypes reports
        # a RecursionError raised inside an argument conversion as an ArgumentError)
        return bytes(value(model, z3.substitute(term, (j, z3.BitVecVal(i, j.size()))))
                     for i in range(n))


def concretise(end: End, model: z3.ModelRef) -> dict:
    """The canonical result (ExecutionResult.to_json's shape) of ``end`` in ``model``."""
    changes = {}
    for address, key in end.written:
        k = value(model, key)
        before = value(model, end.pre[address][key])
        after = value(model, end.post[address][key])
        if before != after:
            changes[(address, k)] = (before, after)
    usage = {name: value(model, end.usage[name]) for name in USAGE}
    return {
        "status": end.status, "error": end.error, "error_pc": end.error_pc,
        "output": "0x" + read_bytes(model, end.output).hex(),
        "state_changes": [{"address": hex(a), "key": hex(k), "before": hex(b), "after": hex(f)}
                          for (a, k), (b, f) in sorted(changes.items())],
        "events": [{"address": hex(value(model, e.address)),
                    "topics": [hex(value(model, t)) for t in e.topics],
                    "data": "0x" + read_bytes(model, e.data).hex()} for e in end.events],
        "calls": [{"depth": r.depth, "caller": hex(r.caller), "callee": hex(value(model, r.callee)),
                   "status": r.status, "error": r.error, "error_pc": r.error_pc,
                   "compute": value(model, r.compute),
                   "memory_pages": value(model, r.memory_pages),
                   "storage_reads": value(model, r.storage_reads),
                   "storage_writes": value(model, r.storage_writes),
                   "storage_new_slots": value(model, r.storage_new_slots),
                   "storage_units": value(model, r.storage_units)} for r in end.records],
        "usage": usage,
        "fee": value(model, end.fee),
    }


def constant(term) -> int | None:
    """The term's value when it simplifies to a constant; None otherwise (or when it is too
    large to simplify within the budget)."""
    try:
        t = simplify(term)
    except TermTooLarge:
        return None
    if z3.is_bv_value(t) or z3.is_int_value(t):
        return t.as_long()
    return None


def input_names(exploration, words: int = 64) -> dict:
    """Names for people of the inputs' terms as the paths hold them (simplified): the caller,
    the call data's words at the first offsets (as CALLDATALOAD reads them), its size, the
    storage arrays before the call."""
    from proofs.words import little_endian_word
    inputs, w = exploration.inputs, exploration.inputs.caller.size()
    names = {z3.simplify(inputs.caller).get_id(): "caller",
             z3.simplify(inputs.block_time).get_id(): "block_time"}
    length = inputs.call_data_length
    names[z3.simplify(z3.Extract(w - 1, 0, length)).get_id()] = "calldata.size"
    for k in range(min(words, exploration.setup.max_calldata)):
        term = little_endian_word(inputs.call_data.read, z3.BitVecVal(k, length.size()), w // 8)
        names.setdefault(z3.simplify(term).get_id(), f"calldata.word({k})")
    for address, array in inputs.storage.items():
        names.setdefault(array.get_id(), f"storage_at({address:#x})")
    return names


def short(term, limit: int = 160, names: dict | None = None) -> str:
    from proofs.symbolic.properties import render
    try:
        term = simplify(term)
    except TermTooLarge:
        pass
    text = " ".join(render(term, names or {}, limit).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def number(solver: Solver, conds, term, ranges: bool):
    """A constant, or [least, greatest] under the path condition (None where undecided)."""
    c = constant(term)
    if c is not None:
        return c
    if not ranges:
        return "symbolic"
    low, high = solver.bounds(list(conds), term)
    return low if low is not None and low == high else [low, high]


def word_text(term, names: dict | None = None) -> str:
    c = constant(term)
    return hex(c) if c is not None else short(term, names=names)


def bytes_text(solver: Solver, conds, data: Bytes, ranges: bool):
    n = constant(data.length)
    if n is None:
        return {"length": number(solver, conds, data.length, ranges), "bytes": "symbolic"}
    if n > DESCRIBE_BYTES:
        return {"length": n, "bytes": "not shown"}
    out = []
    for j in range(n):
        b = constant(data.read(z3.BitVecVal(j, data.length.size())))
        out.append("??" if b is None else f"{b:02x}")
    text = "0x" + "".join(out)
    return text if "??" not in text else {"length": n, "bytes": text}


def describe(end: End, solver: Solver, ranges: bool = True, names: dict | None = None) -> dict:
    """The path's end for people and --json: constants where the path fixes a field, ranges
    (or the term, its inputs by the names of ``input_names``) otherwise."""
    names = names or {}
    changes = []
    seen = set()
    for address, key in end.written:
        if (address, key.get_id()) in seen:
            continue
        seen.add((address, key.get_id()))
        before, after = end.pre[address][key], end.post[address][key]
        try:
            same = simplify(before == after)
        except TermTooLarge:
            same = before == after
        if z3.is_true(same):
            continue
        changes.append({"address": hex(address), "key": word_text(key, names),
                        "before": word_text(before, names), "after": word_text(after, names),
                        **({} if z3.is_false(same) else {"when": "after differs from before"})})
    return {
        "status": end.status, "error": end.error, "error_pc": end.error_pc,
        "output": bytes_text(solver, end.conds, end.output, ranges),
        "state_changes": changes,
        "events": [{"address": word_text(e.address, names),
                    "topics": [word_text(t, names) for t in e.topics],
                    "data": bytes_text(solver, end.conds, e.data, ranges)} for e in end.events],
        "calls": [{"depth": r.depth, "caller": hex(r.caller), "callee": word_text(r.callee, names),
                   "status": r.status, "error": r.error, "error_pc": r.error_pc,
                   "compute": number(solver, end.conds, r.compute, ranges)}
                  for r in end.records],
        "usage": {name: number(solver, end.conds, end.usage[name], ranges) for name in USAGE},
        "fee": number(solver, end.conds, end.fee, ranges),
    }
