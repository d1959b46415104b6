"""The z3 model on concrete inputs: build a State of constants from an ``inputs`` dict
(replay.py documents the format), take the one branch whose condition simplifies to true,
and read its post-state back as Python values. Also runs whole callee programs through the
model, which is how a CALL replay gets its call oracle without asking the interpreter.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import z3
from z3 import z3core

from proofs import execute
from proofs.evaluate import compile_term, constant
from proofs.machine import (
    RUNNING, WINDOW, Bytes, CallOracle, Env, State, array_bytes, base_memory, memory_range,
)
from proofs.replay import callees as callee_kinds
from proofs.replay import (
    CALLEE_KEY, CALLS, POLICIES, REENTRANT, REENTRY, REENTRY_KEY, Observed, Sampled,
)
from proofs.words import Sorts, Width, width

MAX_CALLEE_STEPS = 10_000


class ModelError(Exception):
    """The model's branches do not select exactly one outcome for a concrete state."""


def value(term) -> int:
    """The constant ``term`` simplifies to (true / false as 1 / 0), read through z3's C
    API (evaluate.constant): a Python object per simplified term is what made reading
    states slow."""
    v = constant(term.ctx, z3core.Z3_simplify(term.ctx.ref(), term.as_ast()))
    if v is None:
        raise ModelError(f"term does not evaluate to a constant: {z3.simplify(term)}")
    return v


@functools.lru_cache(maxsize=1 << 14)
def numeral(bits: int, v: int) -> z3.BitVecRef:
    """z3.BitVecVal(v, bits), made once (states of constants use the same ones often)."""
    return z3.BitVecVal(v, bits)


def stores(array: z3.ArrayRef, items) -> z3.ArrayRef:
    """z3.Store(...z3.Store(array, i, v)..., ...) over (index, value) terms in order, built
    through z3's C API (the same terms, without a Python object for each store)."""
    ctx = array.ctx
    r, current, owned = ctx.ref(), array.as_ast(), False
    for index, byte in items:
        made = z3core.Z3_mk_store(r, current, index.as_ast(), byte.as_ast())
        z3core.Z3_inc_ref(r, made)
        if owned:
            z3core.Z3_dec_ref(r, current)
        current, owned = made, True
    out = z3.ArrayRef(current, ctx)
    if owned:
        z3core.Z3_dec_ref(r, current)
    return out


def counter(w: Sorts, v: int) -> z3.BitVecRef:
    """w.cval(v), from the numeral cache (w.cval refuses a value out of range)."""
    return numeral(w.counter_bits, v) if 0 <= v < 1 << w.counter_bits else w.cval(v)


def word(w: Sorts, v: int) -> z3.BitVecRef:
    """w.wval(v), from the numeral cache."""
    return numeral(w.bits, v & w.mask)


def byte_array(w: Sorts, data: bytes) -> z3.ArrayRef:
    array = z3.K(z3.BitVecSort(w.counter_bits), numeral(8, 0))
    c = w.counter_bits
    return stores(array, ((numeral(c, k), numeral(8, b)) for k, b in enumerate(data) if b))


def concrete_bytes(w: Sorts, data: bytes) -> Bytes:
    return array_bytes(counter(w, len(data)), byte_array(w, data))


def word_array(w: Sorts, mapping: dict[int, int]) -> z3.ArrayRef:
    array = z3.K(z3.BitVecSort(w.bits), word(w, 0))
    return stores(array, ((word(w, k), word(w, mapping[k])) for k in sorted(mapping)))


def no_call(w: Sorts, storage, transient=None, transient_alive=None) -> CallOracle:
    zero = counter(w, 0)
    return CallOracle(z3.BoolVal(False), z3.BoolVal(False), z3.BoolVal(False), zero, zero,
                      zero, zero, zero, zero, zero, storage, concrete_bytes(w, b""),
                      transient_after=transient, transient_alive_after=transient_alive)


def concrete_state(x: dict) -> State:
    w = width(x["width"], x["version"])
    cv = functools.partial(counter, w)
    wv = functools.partial(word, w)
    stack = [0] * (x["height"] - len(x["stack"])) + list(x["stack"])
    window = tuple(wv(v) for v in reversed(stack[-WINDOW:]))
    window += tuple(wv(0) for _ in range(WINDOW - len(window)))  # below the stack
    rs = list(reversed(x["return_stack"][-2:])) + [0, 0]
    storage = word_array(w, x["storage"])
    transient = {}
    if "transient" in x:
        transient = {"transient": word_array(w, x["transient"]),
                     "transient_alive": cv(x["transient_alive"])}
    env = Env(caller=wv(x["caller"]), address=wv(x["address"]),
              call_data=concrete_bytes(w, bytes.fromhex(x["call_data"])),
              data=concrete_bytes(w, bytes.fromhex(x["data"])),
              block_time=wv(x["block_time"]),
              seed=z3.BitVecVal(int.from_bytes(bytes.fromhex(x["seed"]), "little"), 256),
              depth=cv(x["depth"]),
              oracle=no_call(w, storage, transient.get("transient"),
                             transient.get("transient_alive")),
              read_only=z3.BoolVal(bool(x["read_only"])) if "read_only" in x else None)
    return State(
        w=w, pc=cv(x["pc"]), stack=window, height=cv(x["height"]),
        rstack=tuple(cv(v) for v in rs[:2]), rheight=cv(len(x["return_stack"])),
        memory=base_memory(w, cv(x["memory_pages"]),
                           byte_array(w, bytes.fromhex(x["memory"]))),
        storage=storage, compute=cv(x["compute_used"]), compute_limit=cv(x["compute_limit"]),
        pages_live=cv(x["pages_live"]), pages_peak=cv(x["pages_peak"]),
        memory_limit=cv(x["memory_limit"]), storage_units=cv(x["storage_units"]),
        storage_limit=cv(x["storage_limit"]), reads=cv(x["storage_reads"]),
        writes=cv(x["storage_writes"]), new_slots=cv(x["storage_new_slots"]),
        random_counter=cv(x["random_counter"]),
        return_data=concrete_bytes(w, bytes.fromhex(x["return_data"])), env=env, **transient)


def taken(branches) -> "execute.Branch":
    chosen = [b for b in branches if value(b.cond)]
    if len(chosen) != 1:
        raise ModelError(f"{len(chosen)} branches hold: {[b.label for b in chosen]}")
    return chosen[0]


@dataclass
class World:
    """What the frames of a CALL replay share: the code at each address (instruction lists)
    and each contract's storage as the model's state holds it, bound under one policy."""

    programs: dict[int, list]
    storage: dict[int, z3.ArrayRef]
    policy: str
    version: str
    model_table: dict | None = None       # mnemonic -> model (mutation tests), else the table's
    # The call records of spec 7.5.2, in the order calls start: (depth, caller, callee,
    # status, error, error_pc, compute, memory_pages, reads, writes, new_slots, units).
    records: list = dataclasses.field(default_factory=list)
    # From 1.1: each contract's transient slots as the model's state holds them.
    transient: dict[int, z3.ArrayRef] = dataclasses.field(default_factory=dict)

    def refusal(self, address: int) -> str | None:
        """Why the code at address cannot run (spec 7.3, chapter 4): no contract, or the
        first instruction the model of chapter 4 (proofs/policy.py, on this policy) refuses;
        None when it binds."""
        program = self.programs.get(address)
        if program is None:
            return "CONTRACT_NOT_FOUND"
        return next((code for code in (policy_refusal(self.policy, m, self.version)
                                       for m, _ in program)
                     if code is not None), None)


@functools.cache
def policy_refusal(name: str, mnemonic: str, version: str) -> str | None:
    from proofs.policy import concrete_refusal
    table = width(None, version).spec
    code = concrete_refusal(POLICIES[name], table.by_mnemonic[mnemonic], table)
    return None if code == "none" else code


def _kind(status: str, w: Width) -> str:
    """A halt's status as a record states it: success, reverted, or the error's kind."""
    return status if status in ("success", "reverted") else w.spec.errors[status].kind


def world_of(x: dict, pre: State) -> World:
    """The contracts of a replay: the callee kind at CALL's address operand, and REENTRY at
    the frame's own address when the callee re-enters it (replay.run_interpreter deploys the
    same)."""
    programs: dict[int, list[tuple[str, int]]] = {}
    storage = {x["address"]: pre.storage}
    callee = callee_kinds(x["version"])[x["callee"]]
    if x["mnemonic"] in CALLS and callee is not None and "callee_address" in x:
        programs[x["callee_address"]] = callee
    if x["callee"] in REENTRANT:
        programs[x["address"]] = REENTRY
    return World(programs, storage, x["policy"], x["version"])


def run_program(state: State, program: list[tuple[str, int]], world: World | None = None):
    """Run a straight program (instruction list) through the model until it halts; a CALL
    in it runs its callee from ``world`` (none: no contract can run)."""
    offsets, pc = {}, 0
    rows = state.w.spec.by_mnemonic
    for mnemonic, imm in program:
        offsets[pc] = (mnemonic, imm)
        pc += rows[mnemonic].size
    table = world.model_table if world is not None else None
    for _ in range(MAX_CALLEE_STEPS):
        mnemonic, imm = offsets[value(state.pc)]
        ins = rows[mnemonic]
        imm_term = z3.BitVecVal(imm, 8 * ins.immediate_size) if ins.immediate_size else None
        model = None if table is None else table.get(mnemonic)
        if mnemonic in CALLS and world is not None:
            state = with_oracle(state, call_oracle(state, world, model,
                                                   mnemonic == "STATICCALL"))
        branch = taken(execute.step(state, mnemonic, imm_term, model))
        if branch.status != RUNNING:
            return branch
        state = branch.state
    raise ModelError("callee did not halt")


def with_oracle(state: State, oracle: CallOracle) -> State:
    return state.replace(env=dataclasses.replace(state.env, oracle=oracle))


def call_oracle(pre: State, world: World, model=None, static: bool = False) -> CallOracle:
    """The call oracle of the CALL about to run in ``pre``, from the model alone: a first
    step with a callee that uses nothing gives the caller's meters after its base cost and
    call-data touch (or its halt, or the depth rule's refusal); the callee's program then
    runs through the model from there in a fresh frame whose compute limit is
    min(caller's limit, used + compute) (spec 5.2.1), with memory[offset, offset + length)
    as call data, over ``world``'s storage with the caller's own as it is now. A callee
    that does not succeed leaves ``world`` as it found it (spec 6.11: its writes, and its
    callees', are undone); one that succeeds leaves its writes, re-entrant ones included,
    and the oracle's storage is the caller's as the callee left it. ``static``: a
    STATICCALL, whose callee is read-only (so is a CALL's in a read-only frame). The callee
    programs touch no transient slot: the oracle's transient slots are the caller's."""
    w, cv = pre.w, pre.w.cval
    target, caller = value(pre.stack[3]), value(pre.env.address)
    none = no_call(w, pre.storage, pre.transient, pre.transient_alive)
    idle = dataclasses.replace(none, runnable=z3.BoolVal(True), succeeded=z3.BoolVal(True))
    mnemonic = "STATICCALL" if static else "CALL"
    first = taken(execute.step(with_oracle(pre, idle), mnemonic, None, model))
    depth = value(pre.env.depth) + 1
    if first.label.endswith("call depth exceeded"):
        world.records.append((depth, caller, target, "fault", "CALL_DEPTH_EXCEEDED", None,
                              0, 0, 0, 0, 0, 0))
    if not first.label.endswith("callee succeeded"):
        return none  # halted before the call, or the depth rule refused it
    refused = world.refusal(target)
    if refused is not None:
        world.records.append((depth, caller, target, _kind(refused, w), refused, None,
                              0, 0, 0, 0, 0, 0))
        return none
    index = len(world.records)
    world.records.append(None)   # calls are recorded in the order they start
    after = first.state
    start_compute = value(after.compute)
    limit = min(value(after.compute_limit), start_compute + value(pre.stack[2]))
    saved, saved_transient = dict(world.storage), dict(world.transient)
    world.storage[caller] = after.storage
    if after.transient is not None:
        world.transient[caller] = after.transient
    offset, length = w.widen(pre.stack[1]), w.widen(pre.stack[0])
    frame = after.replace(
        pc=cv(0), stack=tuple(w.wval(0) for _ in range(WINDOW)), height=cv(0),
        rstack=(cv(0), cv(0)), rheight=cv(0), memory=base_memory(w, cv(0), byte_array(w, b"")),
        storage=world.storage.get(target, word_array(w, {})), events=(), output=None,
        transient=(None if after.transient is None
                   else world.transient.get(target, word_array(w, {}))),
        return_data=concrete_bytes(w, b""), compute_limit=cv(limit),
        env=Env(caller=w.wval(caller), address=w.wval(target),
                call_data=memory_range(pre.memory, offset, length),
                data=concrete_bytes(w, b""), block_time=after.env.block_time,
                seed=after.env.seed, depth=after.env.depth + cv(1), oracle=none,
                read_only=(None if pre.env.read_only is None else
                           z3.BoolVal(static or bool(value(pre.env.read_only))))))
    end = run_program(frame, world.programs[target], world)
    t = end.state
    ok = end.status == "success"
    if ok:
        world.storage[target] = t.storage
        if t.transient is not None:
            world.transient[target] = t.transient
    else:
        world.storage.clear()
        world.storage.update(saved)
        world.transient.clear()
        world.transient.update(saved_transient)
    gained = lambda name: cv(value(getattr(t, name)) - value(getattr(after, name)))  # noqa: E731
    used = [value(getattr(t, n)) - value(getattr(after, n))
            for n in ("compute", "reads", "writes", "new_slots", "storage_units")]
    error = None if end.status in ("success", "reverted") else end.status
    world.records[index] = (depth, caller, target, _kind(end.status, w), error,
                            value(t.pc) if error else None, used[0], value(t.memory.pages),
                            *used[1:])
    return CallOracle(
        runnable=z3.BoolVal(True), succeeded=z3.BoolVal(ok),
        reverted=z3.BoolVal(end.status == "reverted"), compute=gained("compute"),
        pages=cv(max(0, value(t.pages_peak) - value(after.pages_live))),
        storage_units=gained("storage_units"), reads=gained("reads"),
        writes=gained("writes"), new_slots=gained("new_slots"),
        randoms=gained("random_counter"),
        storage_after=world.storage[caller] if ok else pre.storage,
        output=t.output if t.output is not None else concrete_bytes(w, b""),
        events=t.events if ok else (),
        transient_after=world.transient[caller] if ok and after.transient is not None
        else pre.transient,
        transient_alive_after=(None if t.transient_alive is None
                               else cv(value(t.transient_alive if ok else pre.transient_alive))))


def observe(x: dict, branch, probe_keys=(), extra_probes=(), world: World | None = None) -> Observed[Sampled]:
    s, w = branch.state, branch.state.w
    height = value(s.height)
    depth = min(height, len(s.stack))
    stack = [value(v) for v in reversed(s.stack[:depth])]
    size = value(s.memory.pages) * w.num.page_size
    probes = sorted(set(memory_probes(x, size)) | {i for i in extra_probes if i < size})
    memory = bytearray(size)
    for i, byte in zip(probes, read_at(w, s.memory.read, probes)):
        memory[i] = byte
    keys = set(x["storage"]) | set(probe_keys) | {REENTRY_KEY}
    callee_storage = None
    if "callee_address" in x:
        at = x["callee_address"]
        if world is not None and at in world.storage:
            callee_storage = value(world.storage[at][w.wval(CALLEE_KEY)])
        else:
            callee_storage = 0   # a contract no frame of the replay has written
    events = [(value(e.address), tuple(value(t) for t in e.topics), read_bytes(w, e.data))
              for e in s.events]
    transient, alive = None, None
    if s.transient is not None:
        tkeys = set(x.get("transient", {})) | set(probe_keys)
        transient = {k: value(s.transient[w.wval(k)]) for k in sorted(tkeys)}
        alive = value(s.transient_alive)
    callee_transient = None
    if s.transient is not None and "callee_address" in x:
        at = x["callee_address"]
        held = world.transient.get(at) if world is not None else None
        callee_transient = 0 if held is None else value(held[w.wval(CALLEE_KEY)])
    return Observed(
        transient=transient, transient_alive=alive, callee_transient=callee_transient,
        status=branch.status, pc=value(s.pc) if branch.status == RUNNING else None,
        stack=stack, height=height, return_stack=return_stack_view(s),
        memory=bytes(memory),
        storage={k: value(s.storage[w.wval(k)]) for k in sorted(keys)},
        meters={"compute": value(s.compute), "pages_live": value(s.pages_live),
                "pages_peak": value(s.pages_peak), "storage_units": value(s.storage_units),
                "reads": value(s.reads), "writes": value(s.writes),
                "new_slots": value(s.new_slots)},
        events=events, output=None if s.output is None else read_bytes(w, s.output),
        return_data=read_bytes(w, s.return_data), random_counter=value(s.random_counter),
        callee_storage=callee_storage)


SAMPLE_HEAD, SAMPLE_TAIL = 96, 32


def sample_indices(length: int) -> list[int]:
    """Byte strings are compared at their first and last bytes (and by length): reading a
    long string byte by byte through z3 is slow, and theorems cover every index."""
    if length <= SAMPLE_HEAD + SAMPLE_TAIL:
        return list(range(length))
    return list(range(SAMPLE_HEAD)) + list(range(length - SAMPLE_TAIL, length))


def sample(data: bytes) -> Sampled:
    return len(data), tuple(data[j] for j in sample_indices(len(data)))


def return_stack_view(s: State) -> list:
    """Bottom to top, with None for the entries below the model's window."""
    rheight = value(s.rheight)
    top = [value(v) for v in reversed(s.rstack[:min(rheight, len(s.rstack))])]
    return [None] * (rheight - len(top)) + top


def read_bytes(w: Width, data: Bytes) -> Sampled:
    n = value(data.length)
    return n, tuple(read_at(w, data.read, sample_indices(n)))


def read_at(w: Width, read, indices) -> list[int]:
    """``value(read(i))`` for every index: the read term is built once at a symbolic index
    and simplified, then compiled to a Python function of the index (evaluate.compile_term,
    SMT-LIB's semantics) evaluated at each index. Building the term, or substituting into
    it, per index is what made observing a state slow. A term the compiler does not handle
    (an uninterpreted function, a free constant) is evaluated by z3 at each index, so a read
    that is not constant is still a ModelError (tests check both paths agree)."""
    indices = list(indices)
    if len(indices) < 4:
        return [value(read(w.cval(i))) for i in indices]
    j = z3.BitVec("concrete_probe_index", w.counter_bits)
    term = z3.simplify(read(j))
    try:
        evaluate = compile_term(term, [j])
    except NotImplementedError:
        return [value(z3.substitute(term, (j, w.cval(i)))) for i in indices]
    return [evaluate(i) for i in indices]


def memory_probes(x: dict, size: int) -> list[int]:
    """Indices compared: the first bytes, the initial bytes, and a window around every
    operand read as an offset (theorems cover every other index)."""
    probes = set(range(min(size, 64))) | {i for i in range(len(x["memory"]) // 2)}
    for v in x["stack"][-6:]:
        if v < size:
            probes.update(range(max(0, v - 2), min(size, v + 80)))
    return sorted(i for i in probes if i < size)

