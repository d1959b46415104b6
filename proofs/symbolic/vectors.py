"""Witness inputs as conformance vectors (spec/schemas/vector.schema.json, chapter 11.2).

A vector holds the witness's request (the contracts with the witness's storage, the message,
the context, the policy and the sandbox) and the reference interpreter's result on it, with
tags ``source: symbolic``. ``rtwo-vm conformance run --dir`` replays such a folder (written
with its manifest by ``rtwo_vm.commands.symbolic.run``), and ``rtwo-vm run FILE.jsonl`` one vector.
The isolation level is the narrowest of sandbox.toml that keeps the policy's storage access
and external calls (chapter 10.2), so that the request the vector states is the one run.
"""

from __future__ import annotations

import hashlib
import json
import re

import spec
from reference_vm import Context, Contract, Limits, Message, Policy, WorldState

GENERATOR = "rtwo-vm symbolic"
GENERATOR_VERSION = "1.0.0"
SOURCE = "symbolic"
CATEGORY = "symbolic"


def canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def slug(text: str) -> str:
    """A vector id part: letters, digits and _.+=- only."""
    return re.sub(r"[^A-Za-z0-9_.+=-]+", "_", text).strip("_") or "contract"


def isolation_level(storage_access: str, external_call: str, version: str) -> str:
    sandbox = spec.raw("sandbox", version)
    order = sandbox["sandbox"]["storage_access_order"]
    rank = lambda v: order.index(v) if v in order else len(order)  # noqa: E731
    for name, level in sorted(sandbox["isolation"].items(), key=lambda kv: kv[1]["order"]):
        if (rank(level["max_storage_access"]) >= rank(storage_access)
                and (level["external_call"] != "forbidden" or external_call == "forbidden")):
            return name
    return sandbox["sandbox"]["default_isolation"]


def vector_input(setup, witness) -> dict:
    p = setup.policy
    contracts = {}
    for address, blob in sorted(setup.codes.items()):
        storage = witness.storage.get(address, {})
        contracts[hex(address)] = {"code": "0x" + blob.hex(),
                                   "storage": {hex(k): hex(v) for k, v in sorted(storage.items()) if v}}
    return {
        "pre_state": {"contracts": contracts},
        "message": {"to": hex(setup.entry), "caller": hex(witness.caller),
                    "call_data": "0x" + witness.call_data.hex()},
        "context": {"block_time": hex(witness.block_time),
                    "random_seed": "0x" + witness.seed.hex()},
        "policy": {"time_access": p.time_access, "randomness": p.randomness,
                   "external_call": p.external_call,
                   "allowed_operations": None if p.allowed_operations is None
                   else list(p.allowed_operations),
                   "forbidden_operations": list(p.forbidden_operations)},
        "sandbox": {"isolation_level": isolation_level(p.storage_access, p.external_call,
                                                       setup.version),
                    "storage_access": p.storage_access,
                    "limits": {n: getattr(setup.limits, n) for n in Limits.DIMENSIONS}},
    }


def _outcome(result: dict) -> str:
    return result["error"] or result["status"]


def tags(setup, result: dict, mnemonics) -> dict:
    table = spec.load(setup.version)
    ops = sorted(set(mnemonics), key=lambda m: table.by_mnemonic[m].opcode)
    codes = {result["error"]} | {c["error"] for c in result["calls"]}
    sections = {table.by_mnemonic[m].section for m in ops}
    sections |= {table.errors[c].section for c in codes if c is not None}
    return {"opcodes": ops, "outcome": _outcome(result),
            "call_outcomes": sorted({_outcome(c) for c in result["calls"]}),
            "sections": sorted(sections, key=lambda s: tuple(int(x) for x in s.split("."))),
            "categories": [CATEGORY], "source": SOURCE, "boundary": None}


def vector(vector_id: str, description: str, setup, witness, result: dict, mnemonics) -> dict:
    """A complete vector; ``result`` is the reference's canonical result on the witness."""
    doc = {"id": vector_id, "description": description,
           "tags": tags(setup, result, mnemonics), "input": vector_input(setup, witness),
           "expected": {"result": result,
                        "error_stage": None if result["error"] is None
                        else spec.load(setup.version).errors[result["error"]].stage}}
    body = canonical(doc)
    doc["_meta"] = {"spec_version": setup.version,
                    "generator": f"{GENERATOR} {GENERATOR_VERSION}",
                    "content_hash": hashlib.sha256(body.encode()).hexdigest()}
    return doc


def request_of(vector_input_doc: dict, version: str):
    """(WorldState, Message, Context, Policy, Limits) of a vector's input of spec ``version``,
    the sandbox's storage access and isolation bound into the policy (chapter 10.2)."""
    i = vector_input_doc
    contracts = {int(a, 16): Contract(bytes.fromhex(c["code"][2:]),
                                      {int(k, 16): int(v, 16) for k, v in c["storage"].items()})
                 for a, c in i["pre_state"]["contracts"].items()}
    from proofs.oracle.request import bound_policy
    m, ctx, p, sb = i["message"], i["context"], i["policy"], i["sandbox"]
    allowed = p["allowed_operations"]
    policy = Policy(**bound_policy(p, sb, version),
                    allowed_operations=None if allowed is None else tuple(allowed),
                    forbidden_operations=tuple(p["forbidden_operations"]))
    return (WorldState(contracts),
            Message(int(m["to"], 16), int(m["caller"], 16), bytes.fromhex(m["call_data"][2:])),
            Context(int(ctx["block_time"], 16), bytes.fromhex(ctx["random_seed"][2:])),
            policy, Limits(**sb["limits"]))


def path_mnemonics(exploration, end) -> list[str]:
    """The entry contract's instructions a path ran, in order (a vector's opcodes)."""
    code = exploration.codes[exploration.setup.entry]
    at = getattr(code, "at", {})
    return [at[pc][0] for pc in end.pcs if pc in at]
