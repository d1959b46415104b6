"""Run one instruction on the reference interpreter from a chosen machine state.

This is the only module of proofs/ that imports reference_vm (besides the policy and
validation agreement checks): it builds an Execution and a Frame holding the state an
``inputs`` dict describes and runs ``Execution.step`` — the interpreter's defining
per-instruction path — on a one-instruction segment.

``inputs`` (also the format of branches.branch_inputs and of printed counterexamples):
mnemonic, width, version (the spec version both sides run), immediate, stack (bottom to top), and optionally height (the stack is padded
with zeros below to that height), return_stack, pc, compute_used, compute_limit,
memory_pages, memory (hex of the initial bytes from offset 0), pages_live, pages_peak,
memory_limit, storage_units, storage_limit, storage_reads, storage_writes,
storage_new_slots, storage ({key: value}), caller, address, call_data, data, return_data
(hex), block_time, seed (hex), random_counter, depth, callee (a CALLEES kind: the program
deployed at CALL's address operand, which must differ from the frame's address) and policy
(a POLICIES name: the policy every callee is bound under). From 1.1: transient
({key: value}, the executing contract's transient slots), transient_alive (the execution's
transient slots alive, at least the non-zero ones of transient; others belong to other
contracts) and read_only (the frame is read-only, spec 2.4).

Callee programs cross frames the way contracts do: they write their own storage, grow and
release memory, emit events, return or revert memory bytes, re-enter the caller (whose
address then holds REENTRY, one storage write and an event) and hold gated instructions.
The model runs the same programs through its own opcode models (concrete.py), so CALL is
compared on what a callee really does, not on an oracle picked to match.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import spec
from reference_vm.container import build
from reference_vm.decode import Decoded
from reference_vm.errors import Halt, VMError
from reference_vm.execute import Execution
from reference_vm.instructions import table
from reference_vm.machine import Frame
from reference_vm.policy import Policy
from reference_vm.program import Program, Segment
from reference_vm.request import Context, Limits
from reference_vm.rules import rules
from reference_vm.state import Contract, WorldState
from reference_vm.validate import ValidCode

DEFAULTS: dict[str, Any] = {   # a replay input: JSON values by name
    "immediate": 0, "pc": 0, "compute_used": 0, "compute_limit": 10_000_000,
    "memory_pages": 0, "memory": "", "memory_limit": 256, "storage_units": 0,
    "storage_limit": 100_000, "storage_reads": 0, "storage_writes": 0,
    "storage_new_slots": 0, "caller": 0xCA11E2, "address": 0x100, "call_data": "",
    "data": "", "return_data": "", "block_time": 1_700_000_000, "seed": "00" * 32,
    "random_counter": 0, "depth": 1, "callee": "absent", "return_stack": [], "policy": "open",
}
# Callee programs for CALL replays, as instruction lists; concrete.py runs each through the
# model to get CALL's oracle (it never asks the interpreter).
CALLEE_KEY, CALLEE_VALUE = 0x3, 0x1122334455667788       # a slot of the callee's own storage
REENTRY_KEY, REENTRY_VALUE = 0x7E57, 0x5EED0000000000A1  # the caller's slot a re-entry writes
MEMORY_AT = 4100                                          # the callee's memory: 2 pages
_STORE = [("PUSH1", CALLEE_KEY), ("PUSH8", CALLEE_VALUE), ("SSTORE", 0)]
_MEMORY = [("PUSH2", MEMORY_AT), ("PUSH8", 0x8877665544332211), ("MSTORE", 0),
           ("PUSH2", MEMORY_AT), ("PUSH1", 8), ("PUSH8", 0xE7E7), ("LOG1", 0)]
_OUT = [("PUSH2", MEMORY_AT - 2), ("PUSH1", 12)]         # 2 zero bytes, the word, 2 zero bytes
# The callee calls its caller back with all the compute it may give and empty call data.
_REENTER = [("CALLER", 0), ("PUSH4", 0xFFFFFFFF), ("PUSH1", 0), ("PUSH1", 0), ("CALL", 0),
            ("POP", 0)]
_EMPTY = [("PUSH1", 0), ("PUSH1", 0)]
CALLEES = {
    "absent": None,
    "stop": [("STOP", 0)],
    "revert": _EMPTY + [("REVERT", 0)],
    "trap": [("TRAP", 0)],
    "spin": [("JUMP", 0)],
    "store": _STORE + [("STOP", 0)],
    "store_revert": _STORE + _EMPTY + [("REVERT", 0)],
    "store_trap": _STORE + [("TRAP", 0)],
    "memory": _STORE + _MEMORY + _OUT + [("RETURN", 0)],
    "memory_revert": _MEMORY + _OUT + [("REVERT", 0)],
    "memory_trap": _MEMORY + [("TRAP", 0)],
    "reenter": _REENTER + _MEMORY + _OUT + [("RETURN", 0)],
    "reenter_revert": _REENTER + _EMPTY + [("REVERT", 0)],
    "reenter_trap": _REENTER + [("TRAP", 0)],
    "time": [("TIME", 0), ("POP", 0), ("STOP", 0)],
    "random": [("RANDOM", 0), ("POP", 0), ("STOP", 0)],
    "read": [("PUSH1", CALLEE_KEY), ("SLOAD", 0), ("POP", 0), ("STOP", 0)],
}
# From 1.1 (spec 6.13): callees that write their own transient slot CALLEE_KEY, then stop
# (the write stays for the rest of the execution) or revert (it is undone with the frame).
_TSTORE = [("PUSH1", CALLEE_KEY), ("PUSH8", CALLEE_VALUE), ("TSTORE", 0)]
TRANSIENT_CALLEES = {
    "transient": _TSTORE + [("STOP", 0)],
    "transient_revert": _TSTORE + _EMPTY + [("REVERT", 0)],
    "transient_trap": _TSTORE + [("TRAP", 0)],
}


def callees(version: str) -> dict:
    """The callee kinds of spec ``version``: CALLEES, and from 1.1 TRANSIENT_CALLEES."""
    if "TSTORE" in spec.load(version).by_mnemonic:
        return {**CALLEES, **TRANSIENT_CALLEES}
    return CALLEES


# What the caller's address holds when a callee re-enters it (else no code: a call to the
# frame's own address cannot run).
REENTRY = [("PUSH2", REENTRY_KEY), ("PUSH8", REENTRY_VALUE), ("SSTORE", 0),
           ("PUSH1", 0), ("PUSH1", 0), ("PUSH1", 0x5E), ("LOG1", 0), ("STOP", 0)]
CALLS = ("CALL", "STATICCALL")   # the instructions that run a callee (STATICCALL from 1.1)
REENTRANT = frozenset(k for k, p in CALLEES.items() if p and ("CALL", 0) in p)
# Policies a replay binds callees under (reference_vm.policy.Policy fields). The frame's own
# instruction is never bound (it is given as running), so each keeps CALL's gate open.
POLICIES: dict[str, dict[str, Any]] = {   # Policy keyword arguments
    "open": {"time_access": "allowed", "randomness": "seeded"},
    "defaults": {},
    "read_only": {"time_access": "allowed", "randomness": "seeded",
                  "storage_access": "read_only"},
    "no_storage": {"time_access": "allowed", "randomness": "seeded",
                   "storage_access": "none"},
    "forbid_storage": {"time_access": "allowed", "randomness": "seeded",
                       "forbidden_operations": ("storage",)},
    "forbid_time": {"time_access": "allowed", "randomness": "seeded",
                    "forbidden_operations": ("TIME",)},
    "allow_list": {"time_access": "allowed", "randomness": "seeded",
                   "allowed_operations": ("stack", "control", "memory", "event", "call",
                                          "environment")},
}


def complete(inputs: dict) -> dict:
    """inputs with every default filled in (the version has none: an input names it)."""
    if "version" not in inputs:
        raise ValueError("a replay input names its spec version ('version')")
    full = dict(DEFAULTS)
    full.update(inputs)
    full.setdefault("height", len(full["stack"]))
    full.setdefault("pages_live", full["memory_pages"])
    full.setdefault("pages_peak", full["pages_live"])
    full.setdefault("storage", {})
    table = spec.load(full["version"]).by_mnemonic
    if "TSTORE" in table:
        full.setdefault("transient", {})
        full.setdefault("transient_alive", sum(1 for v in full["transient"].values() if v))
    if "STATICCALL" in table:
        full.setdefault("read_only", False)
    if full["mnemonic"] in CALLS and len(full["stack"]) >= 4:
        full["callee_address"] = full["stack"][-4]
        if full["callee_address"] == full["address"] and full["callee"] != "absent":
            raise ValueError("a CALL replay's callee must be another contract")
    return full


def assemble_instructions(items: list[tuple[str, int]], version: str) -> bytes:
    """The instructions in a container of spec ``version`` (its own container version)."""
    table = spec.load(version)
    code = bytearray()
    for mnemonic, imm in items:
        ins = table.by_mnemonic[mnemonic]
        code.append(ins.opcode)
        code += imm.to_bytes(ins.immediate_size, "little")
    return build(bytes(code), b"", table.number)


# A byte string as the model observes it: its length and its bytes at concrete.sample_indices
# (agreement compares it with the interpreter's bytes sampled the same way).
Sampled = tuple[int, tuple[int, ...]]
B = TypeVar("B", bytes, Sampled)


@dataclass
class Observed(Generic[B]):
    """What a run shows: ``Observed[bytes]`` from the interpreter, ``Observed[Sampled]`` from
    the model (concrete.observe), whose output, return data and event data are sampled."""

    status: str                 # running, success, reverted, an error code, or internal:...
    pc: int | None
    stack: list[int]            # bottom to top
    return_stack: list[int]
    memory: bytes
    storage: dict[int, int]     # the executing contract's slots at the probed keys
    meters: dict[str, int]
    events: list[tuple[int, tuple[int, ...], B]]
    output: B | None
    return_data: B
    random_counter: int
    height: int = -1            # the model observes only the top of the stack, and its height
    callee_storage: int | None = None   # CALL: the callee's slot CALLEE_KEY afterwards
    calls: list | None = None           # CALL: the call records (concrete.World.records)
    transient: dict[int, int] | None = None   # from 1.1: the probed transient slots
    transient_alive: int | None = None
    callee_transient: int | None = None       # from 1.1, CALL: the callee's transient CALLEE_KEY


def run_interpreter(inputs: dict, handler=None, probe_keys=(), run=None) -> Observed[bytes]:
    """Run inputs["mnemonic"] once; ``handler`` replaces the table's (mutation tests).
    ``run(execution, frame)``, when given, runs in place of ``step`` on the one-instruction
    segment and returns the next offset (paths.py: other segments, other execution paths)."""
    x = complete(inputs)
    version = x["version"]
    rule = rules(version, x["width"])
    ins = rule.spec.by_mnemonic[x["mnemonic"]]
    handler = handler or table(rule)[ins.opcode]
    decoded = Decoded(x["pc"], ins, x["immediate"])
    segment = Segment(start=x["pc"], end=decoded.end, last_pc=x["pc"], cost=ins.cost,
                      need=ins.inputs, peak=max(0, ins.outputs - ins.inputs), body=(),
                      last=(handler, x["immediate"]), steps=((decoded, handler),))
    data = bytes.fromhex(x["data"])
    program = Program(code=ValidCode(b"", data, (), rule.spec.number), data=data, segments=())
    own = assemble_instructions(REENTRY, version) if x["callee"] in REENTRANT else b""
    contracts = {x["address"]: Contract(own, {k: v for k, v in x["storage"].items()})}
    callee = callees(version)[x["callee"]]
    if callee is not None and "callee_address" in x:
        contracts.setdefault(x["callee_address"], Contract(assemble_instructions(callee, version)))
    execution = Execution(WorldState(contracts), Context(x["block_time"], bytes.fromhex(x["seed"])),
                          Policy(**POLICIES[x["policy"]]),
                          Limits(x["compute_limit"], x["memory_limit"], x["storage_limit"]),
                          rule, None)
    meter = execution.meter
    meter.compute_used = x["compute_used"]
    meter.pages_live, meter.pages_peak = x["pages_live"], x["pages_peak"]
    meter.storage_units = x["storage_units"]
    meter.storage_reads, meter.storage_writes = x["storage_reads"], x["storage_writes"]
    meter.storage_new_slots = x["storage_new_slots"]
    execution.random_counter = x["random_counter"]
    frame = Frame(program=program, address=x["address"], caller=x["caller"],
                  call_data=bytes.fromhex(x["call_data"]), compute_limit=x["compute_limit"],
                  depth=x["depth"], meter=meter, execution=execution,
                  read_only=x.get("read_only", False))
    journal = execution.journal
    for k, v in sorted(x.get("transient", {}).items()):
        journal.transient_store(x["address"], k, v)
    if "transient_alive" in x:
        journal.transient_alive = x["transient_alive"]   # other contracts' slots too
    frame.stack = [0] * (x["height"] - len(x["stack"])) + list(x["stack"])
    memory = bytearray(x["memory_pages"] * rule.page_size)
    initial = bytes.fromhex(x["memory"])
    memory[:len(initial)] = initial
    frame.memory = memory
    frame.return_stack = list(x["return_stack"])
    frame.return_data = bytes.fromhex(x["return_data"])
    status, output, pc = "running", None, None
    try:
        if run is None:
            target = execution.step(frame, segment)
            pc = decoded.end if target is None else target
        else:
            pc = run(execution, frame)
    except Halt as h:
        status, output = ("reverted" if h.reverted else "success"), h.output
    except VMError as err:
        status = err.code
    except Exception as err:  # noqa: BLE001 - an interpreter crash is a finding, not a stop
        status = f"internal:{type(err).__name__}:{err}"
    keys = set(x["storage"]) | set(probe_keys) | {REENTRY_KEY}
    transient_keys = set(x.get("transient", {})) | set(probe_keys)
    return Observed(
        status=status, pc=pc, stack=list(frame.stack), return_stack=list(frame.return_stack),
        memory=bytes(frame.memory),
        storage={k: journal.load(x["address"], k) for k in sorted(keys)},
        meters={"compute": meter.compute_used, "pages_live": meter.pages_live,
                "pages_peak": meter.pages_peak, "storage_units": meter.storage_units,
                "reads": meter.storage_reads, "writes": meter.storage_writes,
                "new_slots": meter.storage_new_slots},
        events=[(a, tuple(t), bytes(d)) for a, t, d in frame.events], output=output,
        return_data=bytes(frame.return_data), random_counter=execution.random_counter,
        height=len(frame.stack),
        callee_storage=(journal.load(x["callee_address"], CALLEE_KEY)
                        if "callee_address" in x else None),
        calls=[None if c is None else (
            c.depth, c.caller, c.callee, c.status, c.error, c.error_pc, c.compute,
            c.memory_pages, c.storage_reads, c.storage_writes, c.storage_new_slots,
            c.storage_units) for c in execution.calls],
        transient=({k: journal.transient_load(x["address"], k) for k in sorted(transient_keys)}
                   if "transient" in x else None),
        transient_alive=journal.transient_alive if "transient" in x else None,
        callee_transient=(journal.transient_load(x["callee_address"], CALLEE_KEY)
                          if "transient" in x and "callee_address" in x else None))
