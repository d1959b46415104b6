"""Concrete inputs that hit every branch of an opcode's model, found by z3.

``branch_inputs(mnemonic, bits, version)`` is the entry point other tools use (conformance vectors):
one inputs dict (replay.py's format) per branch of the model — zero divisor, MIN / -1,
shift >= W, every halt (stack underflow and overflow, each limit, return stack, trap),
empty and growing memory ranges, new and existing storage slots, each CALL outcome — plus
'limit exactly reached' variants of the branches that charge. Each dict also carries
"branch" (the label) and "outcome" (the model's status). Deterministic: z3 runs with a fixed
seed on the same queries, each check bounded by z3's own work units (``RLIMIT``, never the
clock: a tier left undecided within it is passed over the same way on any machine; the
wall clock is only a safety net, and a check stopped by it is an error, never a silently
skipped tier), and results are sorted by label. A stack check's halt is first checked
satisfiable at all (``unsatisfiable``): when it is not, no tier can have it and the four
searches are skipped, with the same result.
"""

from __future__ import annotations

import ctypes
import functools
from dataclasses import dataclass

import z3
from z3 import z3core

from proofs.evaluate import compile_term, constant
from proofs.execute import immediate, step
from proofs.machine import RUNNING, WINDOW, fresh_state, well_formed
from proofs.words import width

SMALL_BYTES = 40
# Work units (z3 rlimit) of one branch-input check: the most any check of the 95 opcodes
# spends is about 0.50 million (1,104 checks, each in a context of its own); ten times that.
RLIMIT = 5_000_000
WALL_MS = 20_000   # safety net only


class SafetyNetHit(RuntimeError):
    """A branch-input check stopped by the wall clock, not by its work units."""


def _operand(s, ins, name: str):
    """The operand the row's signature names ``name`` (s.stack[0] is the top)."""
    names = ins.signature.split("--")[0].split()
    return s.stack[len(names) - 1 - names.index(name)]


# Memory ranges an instruction reads or writes, as (start operand, length operand or a
# constant byte count; "W" is the word size, "D" the digest size), by the signature's names.
Range = tuple[str, "str | int"]
_OFFSET_LENGTH: list[Range] = [("offset", "length")]
MEMORY_RANGES: dict[str, list[Range]] = {
    "MLOAD": [("offset", "W")], "MSTORE": [("offset", "W")],
    "MLOAD8": [("offset", 1)], "MSTORE8": [("offset", 1)],
    "MCOPY": [("dst", "length"), ("src", "length")],
    "CALLDATACOPY": [("dst", "length")], "DATACOPY": [("dst", "length")],
    "RETURNDATACOPY": [("dst", "length")],
    "SHA256": [("src", "length"), ("dst", "D")],
    "RETURN": _OFFSET_LENGTH, "REVERT": _OFFSET_LENGTH, "CALL": _OFFSET_LENGTH,
    "STATICCALL": _OFFSET_LENGTH,
    **{f"LOG{k}": _OFFSET_LENGTH for k in range(5)},
}
# Byte strings read past their end as zeros: (string, start operand, length).
SOURCE_RANGES = {
    "CALLDATALOAD": ("call data", "offset", "W"), "CALLDATACOPY": ("call data", "offset", "length"),
    "DATACOPY": ("data", "offset", "length"),
    "RETURNDATACOPY": ("return data", "offset", "length"),
}


def _strings(s) -> dict:
    return {"call data": s.env.call_data, "data": s.env.data, "return data": s.return_data}


def _range(s, ins, start: str, length):
    """(start, length) of a range as counters."""
    w = s.w
    if length == "W":
        length = w.size
    elif length == "D":
        length = w.num.digest_size
    n = w.cval(length) if isinstance(length, int) else w.widen(_operand(s, ins, length))
    return w.widen(_operand(s, ins, start)), n


def _distinct(s, ins) -> list:
    """State z3 leaves 0 (or equal) unless asked, made non-zero and distinct, so that a
    value read or kept wrongly shows: for instructions with memory ranges (and MSIZE),
    memory non-empty with its bytes non-zero where the instruction reads or writes (each
    range's first and last bytes); call data, data and return data
    non-empty with different lengths (an instruction reading one: its first and last
    bytes and the range's first non-zero); caller, address, time, seed and pc non-zero
    and caller != address,
    the storage counters and the random counter non-zero and distinct, the return stack's
    top non-zero. (Storage slots empty and set: ``splits``.)"""
    w, cv = s.w, s.w.cval
    zero, one = cv(0), cv(1)
    memory, size = s.memory, s.memory.size(w)
    env = s.env
    out = [env.caller != env.address, env.caller != 0, env.address != 0,
           env.block_time != 0, env.seed != 0, s.pc != zero,
           s.random_counter != zero, s.compute != zero, s.storage_units != zero,
           z3.Distinct(zero, s.reads, s.writes, s.new_slots),
           z3.Implies(s.rheight != zero, s.rstack[0] != zero)]
    strings = _strings(s)
    out.append(z3.Distinct(zero, *(b.length for b in strings.values())))
    if ins.mnemonic in MEMORY_RANGES or ins.mnemonic == "MSIZE":
        out.append(memory.pages != zero)
    for start, length in MEMORY_RANGES.get(ins.mnemonic, ()):
        a, n = _range(s, ins, start, length)
        for i in (a, a + n - one):
            out.append(z3.Implies(z3.And(n != zero, z3.ULT(i, size)), memory.read(i) != 0))
    if ins.mnemonic in SOURCE_RANGES:
        name, start, length = SOURCE_RANGES[ins.mnemonic]
        a, n = _range(s, ins, start, length)
        data = strings[name]
        out += [data.read(zero) != 0, data.read(data.length - one) != 0,
                z3.Implies(z3.ULT(a, data.length), data.read(a) != 0)]
    return out


def splits(s, ins) -> dict:
    """Cases a running branch of the model merges that a replay must meet apart (labels
    in brackets after the branch's): SSTORE's value 0 or not into an empty or set slot,
    SLOAD of an empty or set slot, every memory range ending exactly at memory's size and
    one byte past it, every range read from call data, data or return data ending exactly
    at the string's end and one byte past it."""
    w, cv = s.w, s.w.cval
    zero, one = cv(0), cv(1)
    m = ins.mnemonic
    cases = {}
    if m == "SSTORE":
        value, slot = s.stack[0], s.storage[s.stack[1]]
        cases = {"value 0 into an empty slot": z3.And(value == 0, slot == 0),
                 "value 0 into a set slot": z3.And(value == 0, slot != 0),
                 "value into a set slot": z3.And(value != 0, slot != 0, value != slot)}
    elif m == "SLOAD":
        cases = {"empty slot": s.storage[s.stack[0]] == 0,
                 "set slot": s.storage[s.stack[0]] != 0}
    size = s.memory.size(w)
    for start, length in MEMORY_RANGES.get(m, ()):
        a, n = _range(s, ins, start, length)
        cases[f"{start} range ends at memory size"] = z3.And(n != zero, a + n == size)
        cases[f"{start} range ends 1 byte past memory size"] = z3.And(n != zero,
                                                                       a + n == size + one)
    if m in SOURCE_RANGES:
        name, start, length = SOURCE_RANGES[m]
        a, n = _range(s, ins, start, length)
        end = _strings(s)[name].length
        cases[f"{name} range ends at its end"] = z3.And(n != zero, a + n == end)
        cases[f"{name} range ends 1 byte past its end"] = z3.And(n != zero, a + n == end + one)
    return cases


def _tiers(s, ins):
    """Constraint sets tried in order: small states first, so inputs stay readable and
    replayable; later tiers drop the bounds some branches (stack overflow) cannot meet.
    Each is tried first with non-stack state non-zero and distinct (``_distinct``), and
    only when no tier has a state so, without."""
    cv, ule = s.w.cval, z3.ULE
    small_memory = [ule(s.memory.pages, cv(2)), ule(s.pages_live, cv(4)),
                    ule(s.memory_limit, cv(16)), ule(s.pages_peak, cv(8))]
    small_env = [ule(s.env.call_data.length, cv(SMALL_BYTES)),
                 ule(s.env.data.length, cv(SMALL_BYTES)),
                 ule(s.return_data.length, cv(SMALL_BYTES)),
                 ule(s.env.oracle.output.length, cv(SMALL_BYTES)),
                 ule(s.compute_limit, cv(1_000_000)), ule(s.storage_limit, cv(1_000)),
                 ule(s.random_counter, cv(100)), ule(s.pc, cv(1_000)),
                 ule(s.reads, cv(100)), ule(s.writes, cv(100)), ule(s.new_slots, cv(100))]
    if ins.mnemonic in ("CALL", "STATICCALL"):  # the replay deploys the callee there
        small_env.append(s.stack[3] != s.env.address)
    small_stack = [ule(s.height, cv(WINDOW)), ule(s.rheight, cv(2))]
    # Operands z3 leaves free come out 0, which hides byte order and most value bugs:
    # first ask for non-zero operands whose lowest and highest bytes differ.
    varied = [z3.And(v != 0, z3.Extract(7, 0, v) != z3.Extract(s.w.bits - 1, s.w.bits - 8, v))
              if s.w.bits > 8 else v != 0 for v in s.stack[:ins.inputs]]
    tiers = [small_memory + small_env + small_stack + varied,
             small_memory + small_env + small_stack, small_memory + small_env,
             [ule(s.memory.pages, cv(64)), ule(s.pages_live, cv(64))] + small_env]
    distinct = _distinct(s, ins)
    return [tier + distinct for tier in tiers] + tiers


SMALL_TIER = 5   # in _tiers: small memory, byte strings, meters and stack, nothing else


# glibc's mallopt parameters (malloc.h): keep freed memory in the heap for reuse.
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
_HEAP_KEPT: list[bool] = []


def keep_freed_memory() -> None:
    """Ask malloc to keep freed memory for reuse, once per process: every search makes and
    deletes two z3 contexts, each with megabytes of tables; when malloc returns them to the
    system (trimming the heap's top, or unmapping a large block), the next context faults
    every page in again. Measured on the 95 opcodes' searches in one process: in some
    processes 1.6 million page faults and +3.5 s CPU, in others not (it depends on the heap's
    history); with this, 11 thousand in every process. Performance only: no result depends
    on it. A no-op without glibc's mallopt."""
    if _HEAP_KEPT:
        return
    _HEAP_KEPT.append(True)
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(M_MMAP_THRESHOLD, 32 << 20)
    mallopt(M_TRIM_THRESHOLD, 1 << 30)


def _solver(ctx):
    solver = z3.Solver(ctx=ctx)
    solver.set("random_seed", 0)
    # No relevancy filtering: the same answers on the searches for about 13% less work
    # (measured on seven opcodes' 104 searches); deterministic like every other setting.
    solver.set("relevancy", 0)
    solver.set("rlimit", RLIMIT)
    solver.set("timeout", WALL_MS)
    return solver


_PREMISES: list = []


def _premises(s, ins) -> tuple:
    """well_formed(s) and the tiers, built once for the searches of one state and row, and
    the z3 context those searches run in (``_fresh``), and the row's printed texts
    (``print_row``)."""
    if not (_PREMISES and _PREMISES[0] is s and _PREMISES[1] is ins):
        _PREMISES[:] = [s, ins, well_formed(s), _tiers(s, ins), z3.Context(), None]
    return _PREMISES[2], _PREMISES[3]


@dataclass(frozen=True)
class _Printed:
    """A row's search terms printed as SMT-LIB from one z3 context of its own: the
    declarations, and each term's ``(assert …)`` block by its id in the main context. The
    terms are held too: z3 gives a freed term's id to the next term it makes, and a held
    term's id names that term alone."""
    declarations: str
    blocks: dict[int, str]
    terms: tuple

    def text(self, terms) -> str:
        return self.declarations + "\n".join(self.blocks[t.get_id()] for t in terms) + "\n"


def print_row(s, ins, conds) -> None:
    """Print the premise, every tier's terms and ``conds`` (the row's searches) at once, in
    the order given, from one fresh context (smtlib.fresh_solver): a search's text is then
    the declarations and its terms' blocks (each assertion names its shared subterms on its
    own), and depends on the row's terms alone, as a text printed per search would, for one
    context per row instead of one per search."""
    from proofs.smtlib import fresh_solver
    from proofs.solvers import toplevel
    premise, tiers = _premises(s, ins)
    terms: dict[int, z3.BoolRef] = {}
    for t in [premise, *(t for tier in tiers for t in tier), *conds]:
        terms.setdefault(t.get_id(), t)
    blocks = toplevel(fresh_solver(list(terms.values())).to_smt2())
    declarations = [b for b in blocks if b.startswith("(declare-")]
    asserts = [b for b in blocks if b.startswith("(assert")]
    if len(asserts) != len(terms):
        raise ValueError("print_row: z3 exported another number of assertions than it was given")
    _PREMISES[5] = _Printed("\n".join(declarations) + "\n", dict(zip(terms, asserts)),
                            tuple(terms.values()))


# The stack checks' halts are infeasible for many rows (an instruction that pushes no more
# than it pops cannot overflow, one that pops nothing cannot underflow).
STACK_HALTS = ("STACK_UNDERFLOW", "STACK_OVERFLOW")


def _likely_unreachable(status: str, ins) -> bool:
    """Which stack halts get the check for no well-formed state at all: those the table's
    counts say cannot happen (z3 decides; a wrong guess only costs or saves a check)."""
    return ((status == "STACK_UNDERFLOW" and ins.inputs == 0)
            or (status == "STACK_OVERFLOW" and ins.outputs <= ins.inputs))


# When a list (proofs/exports.py, for --export-smt2): every search's terms are appended,
# each case's label before its searches.
RECORD: list | None = None


def unsatisfiable(cond, s, ins) -> bool:
    """Whether ``cond`` has no well-formed ``s`` at all: then no tier has one (each tier only
    adds constraints) and ``solve`` would return None. Only an unsat answer is used, which
    does not depend on the context the check runs in; sat or undecided (within the same
    work units) leaves the search to ``solve``."""
    if RECORD is not None:
        RECORD.append((_premises(s, ins)[0], cond))
    solver = z3.Solver()
    solver.set("rlimit", RLIMIT)
    solver.set("timeout", WALL_MS)
    solver.add(_premises(s, ins)[0], cond)
    return solver.check() == z3.unsat


def solve(cond, s, ins):
    """A model (in the main context) of ``cond`` on a well-formed ``s``, from the first tier
    that has one. Each check runs in a z3 context of its own holding only the check's terms
    (smtlib.fresh_solver): the main context numbers terms in creation order, which depends
    on what the process built before and can steer z3 to another model, so solving there
    would make the inputs found depend on the searches before; in a fresh context they
    depend on the query alone (tests pin it)."""
    premise, tiers = _premises(s, ins)
    for tier in tiers:
        solver = _fresh(premise, cond, *tier)
        answer = solver.check()
        if answer == z3.sat:
            return solver.model().translate(z3.main_ctx())
        if answer == z3.unknown and "timeout" in solver.reason_unknown():
            raise SafetyNetHit(f"branch input search hit the {WALL_MS} ms safety net")
    return None


def solve_small(cond, s, ins):
    """A model of ``cond`` on a well-formed ``s`` within the small tier alone (few pages,
    short byte strings, small meters and stack), or None: one check, under the same work
    units as ``solve``'s, in a context of its own."""
    premise, tiers = _premises(s, ins)
    solver = _fresh(premise, cond, *tiers[SMALL_TIER])
    return solver.model().translate(z3.main_ctx()) if solver.check() == z3.sat else None


def _fresh(*terms) -> z3.Solver:
    """A solver with the search's settings over ``terms``. They are printed as SMT-LIB from
    a z3 context of their own — the row's, when ``print_row`` printed them all, else one
    for this search (smtlib.fresh_solver; a translation keeps traces of the main context's
    numbering, the printed text does not) — and parsed into the context of the searches of
    this state and row (made by ``_premises``, holding nothing else but the texts parsed
    before in the row): what it finds depends on the row's queries alone, never on what the
    process built before (tests pin it)."""
    if RECORD is not None:
        RECORD.append(terms)
    printed = _PREMISES[5]
    if printed is not None and all(t.get_id() in printed.blocks for t in terms):
        text = printed.text(terms)
    else:
        from proofs.smtlib import fresh_solver
        text = fresh_solver(list(terms)).to_smt2()
    solver = _solver(_PREMISES[4])
    solver.from_string(text)
    return solver


def _exact_limits(branch, pre):
    """Extra coverage points: a charge that reaches its limit exactly (allowed, 5.1)."""
    t = branch.state
    points = {"compute limit reached exactly": z3.And(t.compute == t.compute_limit,
                                                      t.compute != pre.compute)}
    if t.memory is not pre.memory or t.pages_live is not pre.pages_live:
        points["memory limit reached exactly"] = z3.And(t.pages_live == t.memory_limit,
                                                        t.pages_live != pre.pages_live)
    if t.storage_units is not pre.storage_units:
        points["storage limit reached exactly"] = z3.And(
            t.storage_units == t.storage_limit, t.storage_units != pre.storage_units)
    return points


@functools.cache
def _branch_inputs(mnemonic: str, bits: int, version: str) -> tuple:
    keep_freed_memory()
    w = width(bits, version)
    ins = w.spec.by_mnemonic[mnemonic]
    pre = fresh_state(w)
    imm = immediate(w, ins)
    found = []
    every = step(pre, mnemonic, imm)
    cases_of = []
    for branch in every:
        cases = {branch.label: branch.cond}
        if branch.status == RUNNING:
            for name, extra in _exact_limits(branch, pre).items():
                cases[f"{branch.label} [{name}]"] = z3.And(branch.cond, extra)
        cases_of.append(cases)
    # Each split case once, on whichever running branch has it (labelled by that branch).
    running = [b for b in every if b.status == RUNNING]
    split = {name: z3.And(extra, z3.Or([b.cond for b in running]))
             for name, extra in splits(pre, ins).items()}
    print_row(pre, ins, [c for cases in cases_of for c in cases.values()] + list(split.values()))
    for branch, cases in zip(every, cases_of):
        if RECORD is not None:
            RECORD.append(branch.label)
        if _likely_unreachable(branch.status, ins) and unsatisfiable(branch.cond, pre, ins):
            continue
        for label, cond in cases.items():
            if RECORD is not None:
                RECORD.append(label)
            model = solve(cond, pre, ins)
            if model is not None:
                x = inputs_from_model(model, pre, mnemonic, imm)
                found.append({"branch": label, "outcome": branch.status, **x})
    for name, cond in split.items():
        if RECORD is not None:
            RECORD.append(f"[{name}]")
        model = solve(cond, pre, ins)
        if model is not None:
            branch = next(b for b in running if _read(model, b.cond))
            x = inputs_from_model(model, pre, mnemonic, imm)
            found.append({"branch": f"{branch.label} [{name}]", "outcome": branch.status, **x})
    return tuple(sorted(found, key=lambda d: d["branch"]))


def branch_inputs(mnemonic: str, bits: int, version: str) -> list[dict]:
    """Concrete inputs hitting each branch of ``mnemonic``'s model of spec ``version`` at
    ``bits`` (see module doc)."""
    if mnemonic not in width(bits, version).spec.by_mnemonic:
        raise KeyError(f"no instruction {mnemonic!r} in spec version {version}")
    return [dict(d) for d in _branch_inputs(mnemonic, bits, version)]


def _read(model, term) -> int:
    """The model's value of ``term`` (with completion; true / false as 1 / 0), through
    z3's C API (evaluate.constant)."""
    ctx, out = model.ctx, (z3.Ast * 1)()
    if z3core.Z3_model_eval(ctx.ref(), model.model, term.as_ast(), True, out):
        v = constant(ctx, out[0])
        if v is not None:
            return v
    v = model.eval(term, model_completion=True)   # not a constant: fails as it always did
    return 1 if z3.is_true(v) else 0 if z3.is_false(v) else v.as_long()


def _read_at(model, read, bits: int, indices) -> list[int]:
    """``_read(model, read(i))`` for every index: the read term is built once at a bound
    variable in place of the index, evaluated by the model (with completion, as ``_read``
    evaluates: the variable stays), then compiled (evaluate.compile_term) and run at each
    index. A term beyond the compiler (a function symbol) is evaluated by the model at
    each index."""
    indices = list(indices)
    if len(indices) >= 4:
        j = z3.Var(0, z3.BitVecSort(bits))
        try:
            evaluate = compile_term(z3.simplify(model.eval(read(j), model_completion=True)),
                                    [j])
        except NotImplementedError:
            pass
        else:
            return [evaluate(i) for i in indices]
    return [_read(model, read(z3.BitVecVal(i, bits))) for i in indices]


def _bytes(model, data, limit: int = 4096) -> str:
    n = min(_read(model, data.length), limit)
    return bytes(_read_at(model, data.read, data.length.size(), range(n))).hex()


def inputs_from_model(model, s, mnemonic: str, imm=None) -> dict:
    """The concrete pre-state a z3 model assigns to fresh_state ``s`` (replay.py format)."""
    w = s.w
    r = functools.partial(_read, model)
    height = r(s.height)
    window = [r(v) for v in s.stack]
    stack = list(reversed(window[:min(height, WINDOW)]))
    pages = r(s.memory.pages)
    size = pages * w.num.page_size
    interesting = set(range(min(size, 64)))
    for v in window[:6]:
        if v < size:
            interesting.update(range(v, min(size, v + 80)))
    probes = sorted(interesting)
    memory = dict(zip(probes, _read_at(model, s.memory.read, w.counter_bits, probes)))
    last = max((i for i, b in memory.items() if b), default=-1)
    keys = sorted(set(window[:2]))
    storage = {k: r(s.storage[w.wval(k)]) for k in keys}
    rheight = r(s.rheight)
    rs = [r(v) for v in s.rstack]
    x = {
        "mnemonic": mnemonic, "width": w.bits, "version": w.version,
        "immediate": r(imm) if imm is not None else 0, "stack": stack, "height": height,
        "return_stack": [0] * max(0, rheight - 2) + list(reversed(rs[:min(rheight, 2)])),
        "pc": r(s.pc), "compute_used": r(s.compute), "compute_limit": r(s.compute_limit),
        "memory_pages": pages,
        "memory": bytes(memory.get(i, 0) for i in range(last + 1)).hex(),
        "pages_live": r(s.pages_live), "pages_peak": r(s.pages_peak),
        "memory_limit": r(s.memory_limit), "storage_units": r(s.storage_units),
        "storage_limit": r(s.storage_limit), "storage_reads": r(s.reads),
        "storage_writes": r(s.writes), "storage_new_slots": r(s.new_slots),
        "storage": {k: v for k, v in storage.items() if v},
        "caller": r(s.env.caller), "address": r(s.env.address),
        "call_data": _bytes(model, s.env.call_data), "data": _bytes(model, s.env.data),
        "return_data": _bytes(model, s.return_data), "block_time": r(s.env.block_time),
        "seed": r(s.env.seed).to_bytes(32, "little").hex(),
        "random_counter": r(s.random_counter), "depth": r(s.env.depth),
    }
    if s.transient is not None:
        transient = {k: r(s.transient[w.wval(k)]) for k in keys}
        x["transient"] = {k: v for k, v in transient.items() if v}
        x["transient_alive"] = max(r(s.transient_alive), len(x["transient"]))
    if s.env.read_only is not None:
        x["read_only"] = bool(r(s.env.read_only))
    if mnemonic in ("CALL", "STATICCALL"):
        o = s.env.oracle
        x["callee"] = ("absent" if not r(o.runnable) else "stop" if r(o.succeeded)
                       else "revert" if r(o.reverted) else "trap")
    return x
