"""Witnesses: a concrete input for a path, run on the reference interpreter and compared.

A model of a path's condition (made consistent with SHA-256 and the random stream, solve.py)
fixes the caller, the call data (its length and bytes), the block time, the seed and the
storage slots the path reads or writes (and the slots a property names). The witness is
that request; ``replay`` runs it on ``reference_vm.execute`` and compares the canonical
result with the path's end evaluated in the same model, field by field. A difference is a
disagreement between the opcode models and the interpreter on a whole program: reported
loudly by every caller, never hidden.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import z3

from proofs.symbolic import outcome
from proofs.symbolic.solve import SAT, UNSAT, Solver, value
from reference_vm import Context, Contract, Message, WorldState, execute

COMPARED = ("status", "error", "error_pc", "output", "state_changes", "events", "calls",
            "usage", "fee")


@dataclass(frozen=True)
class Witness:
    caller: int
    call_data: bytes
    block_time: int
    seed: bytes
    storage: dict                  # address -> {key: value} (non-zero slots)
    # address -> the slots the path reads or writes (or a property names) that the model
    # leaves zero before the call: assumed zero, as `rtwo-vm run` leaves every slot not set
    zero_slots: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"caller": hex(self.caller), "call_data": "0x" + self.call_data.hex(),
                "block_time": hex(self.block_time), "seed": "0x" + self.seed.hex(),
                "storage": {hex(a): {hex(k): hex(v) for k, v in sorted(s.items())}
                            for a, s in sorted(self.storage.items())},
                "zero_slots": {hex(a): [hex(k) for k in sorted(keys)]
                               for a, keys in sorted(self.zero_slots.items()) if keys}}


@dataclass
class Replay:
    """A witness and what happened on the reference."""

    status: str                    # agrees | disagrees | no witness (why)
    witness: Witness | None = None
    expected: dict | None = None   # the path's end in the witness's model
    actual: dict | None = None     # the reference's result
    differences: list = field(default_factory=list)
    model: object = None


def witness_of(exploration, model: z3.ModelRef, extra_keys=()) -> Witness:
    """The request a model stands for."""
    inputs, setup = exploration.inputs, exploration.setup
    n = value(model, inputs.call_data_length)
    data = bytes(value(model, inputs.call_data.read(z3.BitVecVal(j, inputs.call_data_length.size())))
                 for j in range(n))
    seed = value(model, inputs.seed).to_bytes(setup.w.num.seed_size, "little")
    keys: dict = {}
    for address, key in extra_keys:
        keys.setdefault(address, set()).add(value(model, key))
    storage, zero = {}, {}
    for address, array in sorted(inputs.storage.items()):
        wanted = keys.get(address, set()) | set(setup.storage.get(address, {}))
        slots = {k: value(model, array[z3.BitVecVal(k, 64)]) for k in sorted(wanted)}
        storage[address] = {k: v for k, v in slots.items() if v}
        zero[address] = tuple(k for k, v in slots.items() if not v)
    return Witness(value(model, inputs.caller), data, value(model, inputs.block_time), seed,
                   storage, zero)


def run_reference(exploration, witness: Witness):
    setup = exploration.setup
    contracts = {a: Contract(blob, witness.storage.get(a, {}))
                 for a, blob in sorted(setup.codes.items())}
    return execute(WorldState(contracts), Message(setup.entry, witness.caller, witness.call_data),
                   Context(witness.block_time, witness.seed), setup.policy, setup.limits,
                   version=setup.version)


def differences(expected: dict, actual: dict) -> list[str]:
    return [f"{name}: the model's path ends with {expected[name]!r}, the reference gives "
            f"{actual[name]!r}" for name in COMPARED if expected[name] != actual[name]]


def replay_model(exploration, end: outcome.End, model: z3.ModelRef, extra_keys=()) -> Replay:
    witness = witness_of(exploration, model, tuple(end.keys) + tuple(extra_keys))
    expected = outcome.concretise(end, model)
    actual = run_reference(exploration, witness).to_json()
    found = differences(expected, actual)
    return Replay("disagrees" if found else "agrees", witness, expected, actual, found, model)


def preferred(exploration) -> tuple:
    """What a witness keeps small: the call data's length (short vectors)."""
    length = exploration.inputs.call_data_length
    return () if z3.is_bv_value(length) else (length,)


def replay(exploration, end: outcome.End, solver: Solver, extra_conds=(), extra_keys=(),
           name: str = "") -> Replay:
    """Find a witness of ``end`` (under ``extra_conds`` too) and replay it."""
    status, model = solver.consistent_model(tuple(end.conds) + tuple(extra_conds), end.apps,
                                            name or f"witness of path {end.index}",
                                            prefer=preferred(exploration))
    if status == UNSAT:
        return Replay("no witness: infeasible once SHA-256 and the random stream take their "
                      "true values")
    if status != SAT:
        return Replay(f"no witness: {status}")
    return replay_model(exploration, end, model, extra_keys)


def replay_all(exploration, solver: Solver) -> list:
    """Every path's witness replayed on the reference, in the order of the paths (the first
    query of each solved ahead when the solver spreads its queries: ``Solver.prefetch``)."""
    prefer = preferred(exploration)
    solver.prefetch([(tuple(end.conds), False, prefer) for end in exploration.ends])
    return [replay(exploration, end, solver) for end in exploration.ends]
