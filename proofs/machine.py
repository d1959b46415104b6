"""Symbolic machine state (spec chapter 2) and the shape of a transition.

A State holds z3 terms for everything one instruction can read or change: the top of the
operand stack as a window of words plus a symbolic height, the return stack likewise, memory
(pages and a byte-read function), the executing contract's storage, the meters and limits of
chapter 2.3.2, the frame's environment and the events and output it produced.

An instruction's transition is a list of Branches: disjoint conditions on the pre-state,
each with its post-state and its outcome ("running" = continues, "success", "reverted" or an
errors.toml code). Theorems quantify over branches; branches.py solves each condition for
concrete inputs. Memory is a read function rather than an array so that copies of symbolic
length need no lambda or quantifier (both outside the SMT-LIB fragment we export).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import z3

from proofs.words import Width

WINDOW = 18            # deepest item any instruction reads is SWAP16's 17th; one spare
SMALL_BITS = 40        # bound of abstract counts (offsets in code, callee usage): < 2^40

RUNNING, SUCCESS, REVERTED = "running", "success", "reverted"


@dataclass(frozen=True)
class Memory:
    """A frame's memory: ``pages`` (counter) and ``read(index) -> byte``.

    ``hash_key`` is (array, size in bytes) while the memory is still its initial array with
    zeros past the size: the argument the SHA-256 function symbol takes (hash.py)."""

    pages: z3.BitVecRef
    read: Callable[[z3.BitVecRef], z3.BitVecRef]
    hash_key: tuple | None = None

    def size(self, w: Width) -> z3.BitVecRef:
        return self.pages * w.cval(w.num.page_size)


def base_memory(w: Width, pages, array) -> Memory:
    size = pages * w.cval(w.num.page_size)
    zero = z3.BitVecVal(0, 8)
    return Memory(pages, lambda i: z3.If(z3.ULT(i, size), array[i], zero), (array, size))


@dataclass(frozen=True)
class Bytes:
    """A byte string of symbolic length: byte j is ``read(j)`` for j < length."""

    length: z3.BitVecRef
    read: Callable[[z3.BitVecRef], z3.BitVecRef]


def array_bytes(length, array) -> Bytes:
    """Bytes at or past the end read as zero (spec 2.8, 2.9, 2.11)."""
    zero = z3.BitVecVal(0, 8)
    return Bytes(length, lambda j: z3.If(z3.ULT(j, length), array[j], zero))


def memory_range(memory: Memory, offset, length) -> Bytes:
    return Bytes(length, lambda j: memory.read(offset + j))


@dataclass(frozen=True)
class Event:
    address: z3.BitVecRef
    topics: tuple
    data: Bytes


@dataclass(frozen=True)
class CallOracle:
    """What a callee does, abstracted (CALL, spec 6.11): the caller-side semantics are
    modelled exactly and the callee's run is an input. Amounts are clamped by the model to
    what the spec allows the callee, so every oracle value is a possible callee."""

    runnable: z3.BoolRef          # contract exists, validates, and the policy binds it
    succeeded: z3.BoolRef
    reverted: z3.BoolRef          # when not succeeded: reverted (output kept) or an error
    compute: z3.BitVecRef         # units the callee would use
    pages: z3.BitVecRef           # most pages the callee would have alive
    storage_units: z3.BitVecRef
    reads: z3.BitVecRef
    writes: z3.BitVecRef
    new_slots: z3.BitVecRef
    randoms: z3.BitVecRef
    storage_after: z3.ArrayRef    # the executing contract's storage after a successful callee
    output: Bytes
    events: tuple = ()            # concrete replays only: the callee's events on success
    # From 1.1 (spec 2.3.3): the executing contract's transient slots and the transient
    # slots alive after a successful callee (None under a version without them).
    transient_after: z3.ArrayRef | None = None
    transient_alive_after: z3.BitVecRef | None = None


@dataclass(frozen=True)
class Env:
    """Read-only inputs of the frame (spec 2.4, 2.12)."""

    caller: z3.BitVecRef
    address: z3.BitVecRef
    call_data: Bytes
    data: Bytes
    block_time: z3.BitVecRef
    seed: z3.BitVecRef            # 256 bits
    depth: z3.BitVecRef
    oracle: CallOracle
    read_only: z3.BoolRef | None = None   # from 1.1 (spec 2.4): the frame is read-only


@dataclass(frozen=True)
class State:
    w: Width
    pc: z3.BitVecRef
    stack: tuple                  # top first
    height: z3.BitVecRef
    rstack: tuple                 # top first
    rheight: z3.BitVecRef
    memory: Memory
    storage: z3.ArrayRef
    compute: z3.BitVecRef
    compute_limit: z3.BitVecRef
    pages_live: z3.BitVecRef
    pages_peak: z3.BitVecRef
    memory_limit: z3.BitVecRef
    storage_units: z3.BitVecRef
    storage_limit: z3.BitVecRef
    reads: z3.BitVecRef
    writes: z3.BitVecRef
    new_slots: z3.BitVecRef
    random_counter: z3.BitVecRef
    return_data: Bytes
    env: Env
    events: tuple = ()
    output: Bytes | None = None
    # From 1.1 (spec 2.3.3): the executing contract's transient slots (key -> word) and the
    # execution's transient slots alive (every contract's); None under 1.0.
    transient: z3.ArrayRef | None = None
    transient_alive: z3.BitVecRef | None = None

    def replace(self, **changes) -> "State":
        return dataclasses.replace(self, **changes)

    def pop(self, n: int) -> tuple[tuple, "State"]:
        """The top n items (top first) and the state without them."""
        items = self.stack[:n]
        return items, self.replace(stack=self.stack[n:], height=self.height - self.w.cval(n))

    def push(self, *values) -> "State":
        """Push values in order (the last one ends on top)."""
        return self.replace(stack=tuple(reversed(values)) + self.stack,
                            height=self.height + self.w.cval(len(values)))


@dataclass(frozen=True)
class Branch:
    label: str
    status: str
    cond: z3.BoolRef
    state: State


NAMES = ("compute", "compute_limit", "pages_live", "pages_peak", "memory_limit",
         "storage_units", "storage_limit", "reads", "writes", "new_slots", "random_counter",
         "height", "rheight", "pc")


def fresh_bytes(w: Width, name: str) -> tuple[Bytes, z3.BitVecRef, z3.ArrayRef]:
    length = w.counter(f"{name}_len")
    array = z3.Array(name, z3.BitVecSort(w.counter_bits), z3.BitVecSort(8))
    return array_bytes(length, array), length, array


def has_transient(w: Width) -> bool:
    """Whether the version has transient storage (TLOAD, TSTORE: 1.1 on)."""
    return "TSTORE" in w.spec.by_mnemonic


def has_read_only(w: Width) -> bool:
    """Whether the version has read-only frames (STATICCALL: 1.1 on)."""
    return "STATICCALL" in w.spec.by_mnemonic


def word_array(w: Width, name: str) -> z3.ArrayRef:
    return z3.Array(name, z3.BitVecSort(w.bits), z3.BitVecSort(w.bits))


def fresh_oracle(w: Width, p: str) -> CallOracle:
    small = lambda n: w.widen(z3.BitVec(f"{p}callee_{n}", SMALL_BITS))  # noqa: E731
    output, _, _ = fresh_bytes(w, f"{p}callee_output")
    transient = {}
    if has_transient(w):
        transient = {"transient_after": word_array(w, f"{p}callee_transient"),
                     "transient_alive_after": w.counter(f"{p}callee_transient_alive")}
    return CallOracle(
        runnable=z3.Bool(f"{p}callee_runnable"), succeeded=z3.Bool(f"{p}callee_succeeded"),
        reverted=z3.Bool(f"{p}callee_reverted"), compute=small("compute"),
        pages=small("pages"), storage_units=small("storage_units"), reads=small("reads"),
        writes=small("writes"), new_slots=small("new_slots"), randoms=small("randoms"),
        storage_after=z3.Array(f"{p}callee_storage", z3.BitVecSort(w.bits),
                               z3.BitVecSort(w.bits)),
        output=output, **transient)


def fresh_env(w: Width, p: str) -> Env:
    call_data, _, _ = fresh_bytes(w, f"{p}call_data")
    data, _, _ = fresh_bytes(w, f"{p}data")
    return Env(caller=w.word(f"{p}caller"), address=w.word(f"{p}address"),
               call_data=call_data, data=data, block_time=w.word(f"{p}block_time"),
               seed=z3.BitVec(f"{p}seed", 256), depth=w.counter(f"{p}depth"),
               oracle=fresh_oracle(w, p),
               read_only=z3.Bool(f"{p}read_only") if has_read_only(w) else None)


def fresh_state(w: Width, p: str = "", window: int = WINDOW) -> State:
    """A pre-state with every component an unconstrained variable named with prefix p."""
    c = {n: w.counter(p + n) for n in NAMES}
    memory_array = z3.Array(f"{p}memory", z3.BitVecSort(w.counter_bits), z3.BitVecSort(8))
    return_data, _, _ = fresh_bytes(w, f"{p}return_data")
    transient = {}
    if has_transient(w):
        transient = {"transient": word_array(w, f"{p}transient"),
                     "transient_alive": w.counter(f"{p}transient_alive")}
    return State(
        w=w, pc=c["pc"], stack=tuple(w.word(f"{p}s{k}") for k in range(window)),
        height=c["height"],
        rstack=tuple(w.widen(z3.BitVec(f"{p}r{k}", 32)) for k in range(2)),
        rheight=c["rheight"],
        memory=base_memory(w, w.counter(f"{p}mem_pages"), memory_array),
        storage=z3.Array(f"{p}storage", z3.BitVecSort(w.bits), z3.BitVecSort(w.bits)),
        compute=c["compute"], compute_limit=c["compute_limit"], pages_live=c["pages_live"],
        pages_peak=c["pages_peak"], memory_limit=c["memory_limit"],
        storage_units=c["storage_units"], storage_limit=c["storage_limit"], reads=c["reads"],
        writes=c["writes"], new_slots=c["new_slots"], random_counter=c["random_counter"],
        return_data=return_data, env=fresh_env(w, p), **transient)


def well_formed(s: State, window: int = WINDOW) -> z3.BoolRef:
    """The invariants every reachable pre-state satisfies (chapters 2 and 5)."""
    w = s.w
    ule, cv, n = z3.ULE, w.cval, w.num
    maximum = n.maximum
    small = cv((1 << SMALL_BITS) - 1)
    extra = []
    if s.transient is not None and s.transient_alive is not None:
        # Transient slots alive never pass machine.transient_slots (2.3.3), nor after a callee.
        slots = cv(n.transient()[0])
        # It counts at least the non-zero slots of the executing contract, here those at
        # the two keys on top of the stack (TLOAD's and TSTORE's).
        k0, k1, one, zero = s.stack[0], s.stack[1], cv(1), cv(0)
        own = (z3.If(s.transient[k0] != 0, one, zero)
               + z3.If(z3.And(k1 != k0, s.transient[k1] != 0), one, zero))
        extra += [ule(s.transient_alive, slots), z3.UGE(s.transient_alive, own)]
        if s.env.oracle.transient_alive_after is not None:
            extra += [ule(s.env.oracle.transient_alive_after, slots)]
    if s.env.read_only is not None:
        # The entry frame (depth 1) is never read-only (6.11).
        extra.append(z3.Implies(s.env.read_only, z3.UGT(s.env.depth, cv(1))))
    return z3.And(*extra,
        ule(s.height, cv(n.stack_depth)),
        ule(s.rheight, cv(n.return_stack_depth)),
        ule(s.compute, s.compute_limit), ule(s.compute_limit, cv(maximum["compute"])),
        ule(s.memory.pages, s.pages_live), ule(s.pages_live, s.pages_peak),
        ule(s.pages_live, s.memory_limit), ule(s.memory_limit, cv(maximum["memory_pages"])),
        ule(s.storage_units, s.storage_limit),
        ule(s.storage_limit, cv(maximum["storage_units"])),
        ule(s.reads, small), ule(s.writes, small), ule(s.new_slots, small),
        ule(s.random_counter, small), ule(s.pc, cv(n.code_size)),
        ule(s.env.call_data.length, small), ule(s.env.data.length, cv(n.data_size)),
        ule(s.return_data.length, small), ule(s.env.oracle.output.length, small),
        ule(cv(1), s.env.depth), ule(s.env.depth, cv(n.call_depth)),
    )


def same_bytes(a: Bytes | None, b: Bytes | None, j) -> z3.BoolRef:
    if a is None or b is None:
        return z3.BoolVal(a is None and b is None)
    return z3.And(a.length == b.length, z3.Implies(z3.ULT(j, a.length), a.read(j) == b.read(j)))


def same_state(a: State, b: State, i, j, skip=()) -> z3.BoolRef:
    """Equal post-states: every component, memory and byte strings compared at the free
    indices i and j (so a validity proof covers every index). ``skip`` names components
    (storage, return_data, random_counter) not to compare."""
    if len(a.stack) != len(b.stack) or len(a.events) != len(b.events):
        return z3.BoolVal(False)
    parts = [getattr(a, n) == getattr(b, n) for n in NAMES if n not in skip]
    parts += [x == y for x, y in zip(a.stack, b.stack)]
    parts += [x == y for x, y in zip(a.rstack, b.rstack)]
    parts += [a.memory.pages == b.memory.pages, a.memory.read(i) == b.memory.read(i),
              same_bytes(a.output, b.output, j)]
    if "storage" not in skip:
        parts.append(a.storage == b.storage)
    if "return_data" not in skip:
        parts.append(same_bytes(a.return_data, b.return_data, j))
    if a.transient is not None and b.transient is not None and "transient" not in skip:
        parts += [a.transient == b.transient, a.transient_alive == b.transient_alive]
    for e, f in zip(a.events, b.events):
        parts += [e.address == f.address, same_bytes(e.data, f.data, j)]
        parts += [x == y for x, y in zip(e.topics, f.topics)] + [
            z3.BoolVal(len(e.topics) == len(f.topics))]
    return z3.And(parts)
