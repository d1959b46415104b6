"""SMT-guided vectors: for each branch of each opcode's z3 model (proofs.branches), a whole
program that puts the machine in the state z3 found and then runs the opcode once.

z3's answers depend on the z3 version, so they are cached in conformance/smt_inputs.json
(committed) and every fill reads the cache: fills stay byte-identical across machines.
``refresh_cache`` asks proofs.branches again (``rtwo-vm vectors fill --refresh-smt``).

A branch input describes one frame in the middle of an execution (stack, memory, meters,
return stack, depth). The program rebuilds what matters for the branch and translates the
meters into limits with the same headroom: compute limit = compute used when the opcode
starts + (model limit - model used), and likewise for memory pages alive and storage units.
Depth is rebuilt (by self-calls) only for CALL branches about the call depth.

The programs are definitions of the first spec version (its models, its 1.0 containers), valid
in every later version: each version's corpus holds them with its own results.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from conformance.constants import SMT_CACHE
from conformance.corpus.definitions.common import BASE, MASK, OPEN, PAGE, TABLE, fill_stack, push_all, returning
from conformance.corpus.vector import Case, input_of, run_reference

ENTRY_DEFAULT = 0x100
HELPER = 0xDA7A  # deploys the bytes the model wants as return data before the opcode runs
LIMITS = TABLE.limits
MEMORY_RULES = {"memory_expansion", "memory_copy", "hash", "log_data", "call"}
CALLEES = {"stop": "stop\n", "revert": "push 0\npush 0\nrevert\n", "trap": "trap\n",
           "spin": "here:\njump here\n"}
# Fields of branches.branch_inputs kept in the cache (the rest are not rebuilt).
KEPT = ("branch", "outcome", "immediate", "stack", "height", "compute_used", "compute_limit",
        "memory_pages", "memory", "pages_live", "memory_limit", "storage_units", "storage_limit",
        "storage", "caller", "address", "call_data", "data", "return_data", "block_time", "seed",
        "random_counter", "depth", "callee")


def branches_available() -> bool:
    try:
        from proofs.branches import branch_inputs  # noqa: F401
    except ImportError:
        return False
    return True


def _slim(x: dict[str, Any]) -> dict[str, Any]:
    out = {k: x[k] for k in KEPT if k in x}
    out["return_stack_height"] = len(x.get("return_stack", []))
    out["storage"] = {str(k): v for k, v in x.get("storage", {}).items()}
    return out


def refresh_cache(path=SMT_CACHE) -> dict[str, list[dict]]:
    """Ask proofs.branches for every opcode and write the cache. Raises ImportError without it."""
    from proofs.branches import branch_inputs
    inputs = {ins.mnemonic: [_slim(x) for x in branch_inputs(ins.mnemonic, 64, BASE)]
              for ins in TABLE.instructions}
    doc = {"source": "proofs.branches.branch_inputs", "width": 64, "inputs": inputs}
    path.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n", encoding="utf-8")
    return inputs


def load_cache(path=SMT_CACHE) -> dict[str, list[dict]] | None:
    if not path.exists():
        return None
    return json.loads(path.read_text(encoding="utf-8"))["inputs"]


def _slug(label: str) -> str:
    """'MIN / -1' -> 'min_by_minus_1': ids stay readable and keep the sign."""
    text = re.sub(r"(?<![a-z0-9])-(?=[0-9])", "minus ", label.lower()).replace(" / ", " by ")
    return re.sub(r"_+", "_", re.sub(r"[^a-z0-9]+", "_", text)).strip("_")


def _exact(label: str) -> bool:
    return "exactly]" in label


class _AtOpcode:
    """Tracer recording the meters when the opcode under test is about to run."""

    def __init__(self, offset: int, depth: int):
        self.offset, self.depth = offset, depth
        self.seen: tuple[int, int, int] | None = None     # compute used, pages live, storage units

    def step(self, frame, decoded) -> None:
        if self.seen is None and decoded.offset == self.offset and frame.depth == self.depth:
            m = frame.meter
            self.seen = (m.compute_used, m.pages_live, m.storage_units)


def _code_size(text: str) -> int:
    from reference_vm import assemble
    return int.from_bytes(assemble(text, BASE)[8:12], "little")


def _opcode_text(ins, x: dict[str, Any]) -> str:
    if ins.immediate_kind == "jump_target":
        return f"{ins.mnemonic.lower()} taken\n"
    if ins.immediate_size:
        return f"{ins.mnemonic.lower()} {x.get('immediate', 0)}\n"
    return f"{ins.mnemonic.lower()}\n"


def _after(ins, label: str) -> tuple[str, bool]:
    """Code after the opcode and whether it needs memory (to return the opcode's outputs)."""
    quiet = _exact(label)
    if ins.flow == "halt" or ins.flow == "return_sub":
        return "", False
    if ins.immediate_kind == "jump_target":
        if quiet:
            return "taken:\nstop\n", False
        fall = "stop\n" if ins.flow != "branch" else "push 0\n" + returning(1)
        end = "stop\n" if ins.flow != "branch" else "push 1\n" + returning(1)
        return fall + "taken:\n" + end, ins.flow == "branch"
    if quiet or not ins.outputs:
        return "stop\n", False
    return returning(min(ins.outputs, 4)), True


def build_case(mnemonic: str, x: dict[str, Any], index: int) -> Case | None:
    """The vector definition for one branch input, or None when it cannot be rebuilt."""
    ins = TABLE.by_mnemonic[mnemonic]
    label = x["branch"]
    address = x.get("address", ENTRY_DEFAULT)
    depth = x.get("depth", 1) if mnemonic == "CALL" and "call depth" in label else 1
    stack = list(x.get("stack", []))
    height = x.get("height", len(stack))
    body = fill_stack(height - len(stack), "pad") + push_all(stack)
    op_offset = 5 + (_code_size(body + "stop\n") - 1 if body else 0)
    after, needs_memory = _after(ins, label)
    main = []
    contracts: dict[int, Any] = {}
    if depth > 1:  # self-calls down to the depth, each frame forwarding its callee's output
        main.append("push 0\ncalldataload\ndup1\njumpi deeper\npop\n")
    if x.get("return_data"):
        data = x["return_data"]
        n = len(data) // 2
        contracts[HELPER] = f"push 0\npush 0\npush {n}\ndatacopy\npush 0\npush {n}\nreturn\n.data\n.hex {data}\n"
        main.append(push_all([HELPER, MASK, 0, 0]) + "call\npop\n")
    memory = bytes.fromhex(x.get("memory", ""))
    main.extend(f"push {i}\npush {b}\nmstore8\n" for i, b in enumerate(memory) if b)
    pages = x.get("memory_pages", 0)
    if pages:
        main.append(f"push {pages * PAGE - 1}\nmload8\npop\n")
    main.append("random\npop\n" * x.get("random_counter", 0))
    nest = x.get("return_stack_height", 0)
    if nest:
        main.append(f"push {nest}\ncallsub nest\nstop\n"
                    "nest:\npush1 1\nsub\ndup1\njumpi nest_more\npop\njump body\n"
                    "nest_more:\ncallsub nest\nretsub\n")
    else:
        main.append("jump body\n")
    if depth > 1:
        main.append("deeper:\npush 1\nsub\npush 0\nswap1\nmstore\nself\n" + push_all([MASK, 0, 8]) +
                    "call\npop\npush 0\npush 0\nreturndatasize\nreturndatacopy\npush 0\nreturndatasize\nreturn\n")
    code = "jump main\nbody:\n" + body + _opcode_text(ins, x) + after + "main:\n" + "".join(main)
    if mnemonic == "CALL" and len(stack) >= 4:
        callee_address, kind = stack[-4], x.get("callee", "absent")
        if callee_address in (address, HELPER) or callee_address in contracts:
            return None
        if kind != "absent":
            contracts[callee_address] = CALLEES[kind]
    base = dict(id=f"smt/{mnemonic}/{index:02d}_{_slug(label)}",
                description=f"{mnemonic} in the state z3 found for the model branch '{label}' "
                            f"(model outcome {x.get('outcome')}).",
                code=code, opcodes=(mnemonic,), categories=("smt",), source="smt", to=address,
                caller=x.get("caller", 0xCA11E7), block_time=x.get("block_time", 0),
                random_seed=bytes.fromhex(x.get("seed", "00" * 32)), policy=OPEN,
                storage={int(k): v for k, v in x.get("storage", {}).items()}, contracts=contracts,
                call_data=(depth - 1).to_bytes(8, "little") if depth > 1 else bytes.fromhex(x.get("call_data", "")))
    probe = Case(**base, limits={"compute": LIMITS["maximum"]["compute"] // 1000,
                                 "memory_pages": LIMITS["maximum"]["memory_pages"]})
    at = _AtOpcode(op_offset, depth)
    run_reference(input_of(probe), BASE, tracer=at)
    if at.seen is None:
        return None
    compute_at, pages_at, units_at = at.seen
    headroom = x.get("memory_limit", 256) - x.get("pages_live", pages)
    memory_limit = pages_at + max(0, headroom)
    if needs_memory and pages == 0 and ins.cost_rule not in MEMORY_RULES:
        memory_limit += 1  # room for returning the outputs; the opcode itself uses no memory
    limits = {
        "compute": min(LIMITS["maximum"]["compute"],
                       compute_at + x.get("compute_limit", 10 ** 7) - x.get("compute_used", 0)),
        "memory_pages": min(LIMITS["maximum"]["memory_pages"], memory_limit),
        "storage_units": min(LIMITS["maximum"]["storage_units"],
                             units_at + x.get("storage_limit", 10 ** 5) - x.get("storage_units", 0)),
    }
    return Case(**base, limits=limits)


def cases(inputs: dict[str, list[dict]] | None = None) -> Iterator[Case]:
    """One case per cached branch input that can be rebuilt as a program."""
    inputs = load_cache() if inputs is None else inputs
    for ins in TABLE.instructions:
        for index, x in enumerate((inputs or {}).get(ins.mnemonic, [])):
            built = build_case(ins.mnemonic, x, index)
            if built is not None:
                yield built
