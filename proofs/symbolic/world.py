"""The world one symbolic call runs in: its setup, its code, its symbolic inputs.

A ``Setup`` is what ``rtwo-vm run`` takes (code at addresses, policy, limits, context, and the
spec version the call runs under: its models, its validation and policy tables) with
the inputs left symbolic that the user does not fix: the caller, the call data (every length
up to ``max_calldata``), the storage of every contract (each slot a free word unless pinned;
``concrete_storage`` makes every slot not pinned zero, as ``run`` does), the block time when
the policy lets TIME run and the random seed when it lets RANDOM run. The bounds of the
exploration (``bounds.py``: loop bound, paths, instructions, work units), the solver budget
and the safety nets (wall clock, z3's memory) are part of it.

Code is admitted as the interpreter admits it (chapter 3 validation, then chapter 4 binding
in offset order): validation by ``reference_vm.validate`` — there is no z3 model of the
container format — and binding by the policy model of ``proofs/policy.py`` on this policy.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Callable

import z3

import spec
from proofs.concrete import concrete_bytes, counter, no_call, word
from proofs.symbolic.bounds import (
    DEFAULT_DEADLINE, DEFAULT_LOOP_BOUND, DEFAULT_MAX_CALLDATA, DEFAULT_MAX_PATHS,
    DEFAULT_MAX_STEPS, DEFAULT_MAX_WORK, DEFAULT_Z3_MEMORY,
)
from proofs.machine import (
    WINDOW, Bytes, Env, State, array_bytes, base_memory, has_read_only, has_transient,
)
from proofs.words import Sorts, Width, width
from reference_vm.errors import InvalidCode
from reference_vm.policy import Policy
from reference_vm.request import Limits
from reference_vm.rules import rules
from reference_vm.validate import validate

# The words of a symbolic call: 64 bits in every spec version (limits.toml machine.word_bits;
# a Setup checks its version's). Word arithmetic only: a state's machine is its Setup's ``w``.
W = Sorts(64)
MAX_DEADLINE = 1e6                 # seconds (about 11 days)
MAX_Z3_MEMORY = 1 << 22            # megabytes (4 TiB): z3 takes an unsigned count


@dataclass(frozen=True)
class Setup:
    """One call to explore. ``codes`` maps every deployed address to its container."""

    entry: int
    codes: dict
    version: str = field(kw_only=True)      # the spec version the call runs under
    policy: Policy = field(default_factory=Policy)
    limits: Limits = field(default_factory=Limits)
    max_calldata: int = DEFAULT_MAX_CALLDATA
    caller: int | None = None               # None: symbolic
    call_data: bytes | None = None          # None: symbolic, every length up to max_calldata
    time: int | None = None                 # None: symbolic when the policy allows TIME
    seed: bytes | None = None               # None: symbolic when the policy allows RANDOM
    storage: dict = field(default_factory=dict)   # address -> {key: value} pinned slots
    concrete_storage: bool = False          # every slot not pinned is zero
    loop_bound: int = DEFAULT_LOOP_BOUND
    max_paths: int = DEFAULT_MAX_PATHS
    max_steps: int = DEFAULT_MAX_STEPS      # instructions in all, every path and frame
    max_work: int = DEFAULT_MAX_WORK        # z3 work units per exploration (and verdicts)
    rlimit: int | None = None               # per query; None: budgets.toml [config.symbolic]
    deadline: float = DEFAULT_DEADLINE      # wall-clock seconds: a safety net
    z3_memory: int = DEFAULT_Z3_MEMORY      # megabytes z3 may hold: a safety net
    prefix: str = ""                        # variable names (equivalence: shared inputs)
    assume: Callable | None = None          # assume(inputs) -> constraints on the inputs
    observe: Callable | None = None         # observe(code, pc, state) before each instruction

    def __post_init__(self) -> None:
        if self.w.bits != W.bits:
            raise ValueError(f"spec version {self.version} has {self.w.bits}-bit words; the "
                             f"symbolic executor runs {W.bits}-bit ones")
        if self.entry not in self.codes:
            raise ValueError(f"no code at the entry address {self.entry:#x}")
        if not 0 <= self.max_calldata <= self.w.num.call_data_size:
            raise ValueError(f"max_calldata must be 0..{self.w.num.call_data_size}")
        for name in ("loop_bound", "max_paths", "max_steps", "max_work", "z3_memory"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.z3_memory > MAX_Z3_MEMORY:
            raise ValueError(f"z3_memory must be at most {MAX_Z3_MEMORY} MB")
        if not 0 < self.deadline <= MAX_DEADLINE:
            raise ValueError(f"deadline must be in (0, {MAX_DEADLINE:g}] seconds")

    @property
    def w(self) -> Width:
        """The machine of the setup's version (raises versions.UnmodelledVersion without
        models)."""
        return width(None, self.version)

    @property
    def calldata_bounded(self) -> bool:
        """Whether call data longer than the explored lengths exists (symbolic call data
        shorter than the spec's call data size)."""
        return self.call_data is None and self.max_calldata < self.w.num.call_data_size

    @property
    def time_symbolic(self) -> bool:
        return self.time is None and self.policy.time_access == "allowed"

    @property
    def seed_symbolic(self) -> bool:
        return self.seed is None and self.policy.randomness == "seeded"


@dataclass(frozen=True)
class Code:
    """A contract's admitted code: instruction at each offset, its data section."""

    address: int
    blob: bytes
    at: dict                       # offset -> (mnemonic, immediate)
    data: bytes
    mnemonics: frozenset


@dataclass(frozen=True)
class Refusal:
    """Why code at an address cannot run: (status, outcome code), as its call record says."""

    status: str
    error: str


def not_found(version: str) -> Refusal:
    """The refusal of a call to an address without code (its record's status and code)."""
    return Refusal(spec.load(version).errors["CONTRACT_NOT_FOUND"].kind, "CONTRACT_NOT_FOUND")


@functools.lru_cache(maxsize=4096)
def _refusal(policy: Policy, mnemonic: str, version: str) -> str:
    from proofs.policy import concrete_refusal
    table = spec.load(version)
    return concrete_refusal(policy_fields(policy), table.by_mnemonic[mnemonic], table)


def policy_fields(policy: Policy) -> dict:
    return {f.name: getattr(policy, f.name) for f in dataclasses.fields(policy)}


def admit(address: int, blob: bytes, policy: Policy, version: str) -> Code | Refusal:
    """The code's instructions, or the refusal of validation or of the policy binding, under
    spec ``version``."""
    try:
        valid = validate(blob, rules(version))
    except InvalidCode as err:
        return Refusal(err.kind, err.code)
    for d in valid.instructions:
        refused = _refusal(policy, d.instruction.mnemonic, version)
        if refused != "none":
            return Refusal(spec.load(version).errors[refused].kind, refused)
    at = {d.offset: (d.instruction.mnemonic, d.immediate) for d in valid.instructions}
    return Code(address, blob, at, valid.data,
                frozenset(m for m, _ in at.values()))


def policy_problem(policy: Policy, version: str) -> str | None:
    """What makes the policy one the request checks of spec ``version`` refuse, or None."""
    from reference_vm.errors import RequestRejected
    try:
        policy.check(spec.load(version))
    except RequestRejected as err:
        return f"{err.code}: {err}"
    return None


@dataclass(frozen=True)
class Inputs:
    """The symbolic inputs of the call, and the constraints tying them to the setup."""

    caller: z3.BitVecRef
    call_data: Bytes
    call_data_length: z3.BitVecRef
    call_data_array: z3.ArrayRef | None     # None when the call data is fixed
    storage: dict                  # address -> the array of its storage before the call
    block_time: z3.BitVecRef
    seed: z3.BitVecRef
    constraints: tuple
    length_bound: z3.BoolRef | None = None  # call data length <= max_calldata (in constraints)


def make_inputs(setup: Setup) -> Inputs:
    p = setup.prefix
    cs = []
    bound = None
    caller = W.word(f"{p}caller")
    if setup.caller is not None:
        cs.append(caller == W.wval(setup.caller))
    if setup.call_data is not None:
        data = concrete_bytes(W, setup.call_data)
        length, bytes_array = data.length, None
    else:
        length = W.counter(f"{p}call_data_len")
        bytes_array = z3.Array(f"{p}call_data", z3.BitVecSort(W.counter_bits), z3.BitVecSort(8))
        data = array_bytes(length, bytes_array)
        bound = z3.ULE(length, W.cval(setup.max_calldata))
        cs.append(bound)
    storage = {}
    for address in sorted(setup.codes):
        pinned = setup.storage.get(address, {})
        if setup.concrete_storage:
            array = z3.K(z3.BitVecSort(W.bits), W.wval(0))
            for k in sorted(pinned):
                array = z3.Store(array, W.wval(k), W.wval(pinned[k]))
        else:
            array = z3.Array(f"{p}storage_{address:#x}", z3.BitVecSort(W.bits), z3.BitVecSort(W.bits))
            cs += [array[W.wval(k)] == W.wval(v) for k, v in sorted(pinned.items())]
        storage[address] = array
    time = W.word(f"{p}block_time") if setup.time_symbolic else W.wval(setup.time or 0)
    seed_size = setup.w.num.seed_size
    if setup.seed_symbolic:
        seed = z3.BitVec(f"{p}seed", 8 * seed_size)
    else:
        seed = z3.BitVecVal(int.from_bytes(setup.seed or bytes(seed_size), "little"), 8 * seed_size)
    inputs = Inputs(caller, data, length, bytes_array, storage, time, seed, tuple(cs), bound)
    if setup.assume is not None:
        inputs = dataclasses.replace(inputs, constraints=inputs.constraints + tuple(
            setup.assume(inputs)))
    return inputs


def zero_window() -> tuple:
    return tuple(word(W, 0) for _ in range(WINDOW))


def frame_state(*, w: Width, code: Code, caller, call_data: Bytes, storage, compute, compute_limit,
                pages_live, pages_peak, memory_limit, storage_units, storage_limit, reads,
                writes, new_slots, random_counter, block_time, seed, depth, events=(),
                transient=None, transient_alive=None, read_only=None) -> State:
    """A fresh frame of ``code`` (pc 0, empty stack, memory and return data) with the
    execution's shared meters as given. From 1.1 (``w`` has them): the executing contract's
    transient slots, the execution's transient slots alive and whether the frame is
    read-only (None under 1.0)."""
    cv = functools.partial(counter, W)
    return State(
        w=w, pc=cv(0), stack=zero_window(), height=cv(0), rstack=(cv(0), cv(0)),
        rheight=cv(0), memory=base_memory(w, cv(0), z3.K(z3.BitVecSort(W.counter_bits),
                                                         z3.BitVecVal(0, 8))),
        storage=storage, compute=compute, compute_limit=compute_limit, pages_live=pages_live,
        pages_peak=pages_peak, memory_limit=memory_limit, storage_units=storage_units,
        storage_limit=storage_limit, reads=reads, writes=writes, new_slots=new_slots,
        random_counter=random_counter, return_data=concrete_bytes(W, b""),
        env=Env(caller=caller, address=word(W, code.address), call_data=call_data,
                data=concrete_bytes(W, code.data), block_time=block_time, seed=seed,
                depth=cv(depth) if isinstance(depth, int) else depth,
                oracle=no_call(W, storage, transient, transient_alive), read_only=read_only),
        events=events, transient=transient, transient_alive=transient_alive)


def empty_transient():
    """A contract's transient slots at the start of an execution: every slot zero (2.3.3)."""
    return z3.K(z3.BitVecSort(W.bits), W.wval(0))


def entry_state(setup: Setup, inputs: Inputs, code: Code) -> State:
    cv = functools.partial(counter, W)
    zero = cv(0)
    return frame_state(
        w=setup.w, code=code, caller=inputs.caller, call_data=inputs.call_data,
        storage=inputs.storage[code.address], compute=zero,
        compute_limit=cv(setup.limits.compute), pages_live=zero, pages_peak=zero,
        memory_limit=cv(setup.limits.memory_pages), storage_units=zero,
        storage_limit=cv(setup.limits.storage_units), reads=zero, writes=zero,
        new_slots=zero, random_counter=zero, block_time=inputs.block_time, seed=inputs.seed,
        depth=1, **entry_extras(setup.w))


def entry_extras(w: Width) -> dict:
    """What an entry frame of version ``w`` starts with beyond 1.0's state: from 1.1, no
    transient slot (they start empty with every execution, 2.3.3) and not read-only (6.11)."""
    out: dict = {}
    if has_transient(w):
        out.update(transient=empty_transient(), transient_alive=counter(W, 0))
    if has_read_only(w):
        out["read_only"] = z3.BoolVal(False)
    return out


def limits_problem(limits: Limits, version: str) -> str | None:
    low, high = spec.load(version).limits["minimum"], spec.load(version).limits["maximum"]
    for name in Limits.DIMENSIONS:
        value = getattr(limits, name)
        if not low[name] <= value <= high[name]:
            return f"{name} must be in [{low[name]}, {high[name]}]"
    return None
