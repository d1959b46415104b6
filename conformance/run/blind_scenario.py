"""Blinding scenario requests (spec chapters 11.8.4 and 11.9.5): consistently across the steps
of one scenario, so that no request is byte for byte a published scenario input.

The transformations of single calls (conformance.run.blind), applied to a whole scenario:

- ``addresses``: one exchange of addresses for the whole scenario (the pre-state's contracts,
  their push operands and storage values, and every step's target, caller and 8-byte call-data
  words equal to one of them), so that what one step writes at an address the next reads at the
  same one; not when a code of the scenario has a transient storage instruction (as for a
  single call: the transient slots of the exchanged addresses would not say whether an
  implementation carried them from one execution to the next);
- ``unread_slot`` and ``decoy_contract``: added to the pre-state;
- ``block_time`` and ``random_seed``: changed in each step, each with its own draw.

The reference runs the blinded scenario step by step in the run (conformance.scenario.carry);
the transformations are kept when, for every step, its result is the scenario's (identical once
the addresses are mapped back, or differing only in values that carry a moved address or a
changed context value: blind.verdict) and the post-state, mapped back, with the unread slot and
the decoy left out, is the scenario's (identical, or with the same slots holding other values).
Otherwise the addresses are left out, then everything but the unread slot and the decoy, and a
scenario none of them keeps is sent as published and counted.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from conformance.corpus.vector import bytes_hex, error_stage, parse_bytes, parse_word, word_hex
from conformance.run import blind
from conformance.run.blind import PRESERVED, UNBLINDED, VALUES, WORD_BYTES, WORD_MASK, _fresh, _is_word, _rng, _unblinded, _valid, _width
from conformance.scenario.carry import run_steps

ORDER = ("addresses", "block_time", "random_seed", "unread_slot", "decoy_contract")
ATTEMPTS = (ORDER, tuple(n for n in ORDER if n != "addresses"), ("unread_slot", "decoy_contract"))


@dataclass
class ScenarioSummary:
    """What blinding did to a run's scenarios (report.json's ``blinding.scenarios``)."""

    seed: int
    scenarios: int = 0
    applied: dict[str, int] = field(default_factory=lambda: {name: 0 for name in ORDER})
    verdicts: dict[str, int] = field(default_factory=lambda: {PRESERVED: 0, VALUES: 0, UNBLINDED: 0})
    unblinded: list[str] = field(default_factory=list)
    reference_runs: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return {"scenarios": self.scenarios, "applied": dict(self.applied), "verdicts": dict(self.verdicts),
                "unblinded": self.unblinded[:100], "reference_runs": self.reference_runs,
                "seconds": round(self.seconds, 3)}


@dataclass
class _Plan:
    """The draws of one scenario: the address exchange and what the additions put where."""

    version: str
    sigma: dict[int, int]
    transient: bool
    taken: set[int]
    added: dict[str, str | None] = field(default_factory=dict)   # "decoy": address, "slot": "owner key"


def _plan(vector: Mapping[str, Any], seed: int, version: str) -> _Plan:
    inp = vector["input"]
    contracts = inp["pre_state"]["contracts"]
    texts = [*contracts] + [t for s in inp["steps"] for t in (s["message"]["to"], s["message"]["caller"])]
    originals = sorted({parse_word(a) for a in texts if _is_word(a)})
    rng = _rng(seed, vector["id"], "addresses")
    taken, sigma = set(originals), {}
    for a in originals:
        try:
            b = _fresh(rng, _width(a), taken)
        except ValueError:
            continue
        taken.add(b)
        sigma[a], sigma[b] = b, a
    import spec
    transient = False
    for body in contracts.values():
        valid = _valid(body["code"], version)
        if valid is not None:
            for step_version in {s["spec_version"] for s in inp["steps"]}:
                table = spec.load(step_version)
                transient |= any(table.by_mnemonic[m].type == "transient"
                                 for m in valid.mnemonics if m in table.by_mnemonic)
    return _Plan(version, sigma, transient, taken)


def _copy(inp: Mapping[str, Any]) -> dict[str, Any]:
    contracts = {a: {"code": b["code"], "storage": dict(b["storage"])} for a, b in inp["pre_state"]["contracts"].items()}
    steps = [dict(s, message=dict(s["message"]), context=dict(s["context"])) for s in inp["steps"]]
    return {"pre_state": {"contracts": contracts}, "steps": steps}


def _addresses(inp: dict[str, Any], plan: _Plan, facts: Any) -> bool:
    sigma = plan.sigma
    if not sigma or plan.transient:
        return False

    def move(text: str) -> str:
        return word_hex(sigma.get(parse_word(text), parse_word(text))) if _is_word(text) else text

    contracts = {}
    for address, body in inp["pre_state"]["contracts"].items():
        valid = _valid(body["code"], plan.version)
        code = blind._rewrite_code(facts, valid, sigma) if valid is not None else body["code"]
        contracts[move(address)] = {"code": code, "storage": {k: move(v) for k, v in body["storage"].items()}}
    inp["pre_state"]["contracts"] = contracts
    for step in inp["steps"]:
        message = step["message"]
        message["to"], message["caller"] = move(message["to"]), move(message["caller"])
        message["call_data"] = bytes_hex(blind._rewrite_words(parse_bytes(message["call_data"]), sigma))
    return True


def _per_step(inp: dict[str, Any], seed: int, vid: str, name: str) -> bool:
    changed = False
    for index, step in enumerate(inp["steps"]):
        rng = _rng(seed, vid, f"{name}/{index}")
        context = step["context"]
        if name == "block_time" and _is_word(context["block_time"]):
            old = parse_word(context["block_time"])
            new = rng.getrandbits(8 * WORD_BYTES)
            context["block_time"] = word_hex(new if new != old else new ^ 1)
            changed = True
        elif name == "random_seed" and parse_bytes(context["random_seed"]):
            old_seed = parse_bytes(context["random_seed"])
            drawn = rng.randbytes(len(old_seed))
            context["random_seed"] = bytes_hex(drawn if drawn != old_seed else bytes([drawn[0] ^ 1]) + drawn[1:])
            changed = True
    return changed


def _unread_slot(inp: dict[str, Any], plan: _Plan, rng: random.Random) -> bool:
    contracts = inp["pre_state"]["contracts"]
    owners = sorted(a for a in contracts if _is_word(a))
    if not owners:
        return False
    owner = rng.choice(owners)
    storage = contracts[owner]["storage"]
    key = word_hex(_fresh(rng, WORD_BYTES, {parse_word(k) for k in storage if _is_word(k)}))
    storage[key] = word_hex(rng.randint(1, WORD_MASK))
    plan.added["slot"] = f"{owner} {key}"
    return True


def _decoy(inp: dict[str, Any], plan: _Plan, rng: random.Random) -> bool:
    contracts = inp["pre_state"]["contracts"]
    present = {parse_word(a) for a in contracts if _is_word(a)}
    address = word_hex(_fresh(rng, WORD_BYTES, plan.taken | present))
    codes = sorted(body["code"] for body in contracts.values() if _valid(body["code"], plan.version) is not None)
    if not codes:
        return False
    contracts[address] = {"code": rng.choice(codes),
                          "storage": {word_hex(rng.randint(1, WORD_MASK)): word_hex(rng.randint(1, WORD_MASK))}}
    plan.added["decoy"] = address
    return True


def transformed(vector: Mapping[str, Any], plan: _Plan, seed: int, names: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """The scenario's input with the named transformations applied, and those that changed it."""
    facts = blind._Facts(plan.version, vector["id"], "", {}, frozenset(), None, False, plan.sigma, plan.taken)
    inp = _copy(vector["input"])
    plan.added = {}
    applied = []
    for name in ORDER:
        if name not in names:
            continue
        if name == "addresses":
            done = _addresses(inp, plan, facts)
        elif name in ("block_time", "random_seed"):
            done = _per_step(inp, seed, vector["id"], name)
        elif name == "unread_slot":
            done = _unread_slot(inp, plan, _rng(seed, vector["id"], name))
        else:
            done = _decoy(inp, plan, _rng(seed, vector["id"], name))
        if done:
            applied.append(name)
    blind._sorted_contracts(inp)
    return inp, applied


def _state_back(state: Mapping[str, Any], plan: _Plan, moved: bool) -> dict[str, Any]:
    """A blinded post-state with its addresses mapped back and the additions left out."""
    sigma = plan.sigma if moved else {}
    out = {}
    for address, body in state["contracts"].items():
        if address == plan.added.get("decoy"):
            continue
        storage = dict(body["storage"])
        owner, _, key = (plan.added.get("slot") or " ").partition(" ")
        if owner == address:
            storage.pop(key, None)
        value = parse_word(address)
        out[word_hex(sigma.get(value, value))] = storage
    return out


def _verdict(vector: Mapping[str, Any], run: Any, plan: _Plan, moved: bool) -> str | None:
    sigma = plan.sigma if moved else {}
    verdicts = []
    for want, got in zip(vector["expected"]["steps"], run.results):
        verdicts.append(blind.verdict(want["result"], got, sigma))
    if None in verdicts:
        return None
    stored = {a: b["storage"] for a, b in vector["expected"]["post_state"]["contracts"].items()}
    back = _state_back(run.post_state, plan, moved)
    if back != stored:
        if {a: sorted(s) for a, s in back.items()} != {a: sorted(s) for a, s in stored.items()}:
            return None
        verdicts.append(VALUES)
    return VALUES if VALUES in verdicts else PRESERVED


def blind_scenario(vector: Mapping[str, Any], seed: int, version: str,
                   summary: ScenarioSummary | None = None) -> dict[str, Any]:
    """The blinded scenario sent in place of ``vector``: same id, description and tags, the blinded
    input, the reference's expected results for it, and ``blinding`` (seed, transformations,
    verdict)."""
    summary = summary if summary is not None else ScenarioSummary(seed)
    summary.scenarios += 1
    plan = _plan(vector, seed, version)
    for names in ATTEMPTS:
        inp, applied = transformed(vector, plan, seed, names)
        if not applied:
            continue
        run = run_steps(inp)
        summary.reference_runs += 1
        kept = _verdict(vector, run, plan, "addresses" in applied)
        if kept is None:
            continue
        summary.verdicts[kept] += 1
        for name in applied:
            summary.applied[name] += 1
        steps = [{"result": r, "error_stage": error_stage(r["error"], s["spec_version"])}
                 for r, s in zip(run.results, inp["steps"])]
        return {"id": vector["id"], "description": vector["description"], "tags": vector["tags"], "input": inp,
                "expected": {"steps": steps, "post_state": run.post_state},
                "blinding": {"seed": seed, "transformations": applied, "verdict": kept}}
    return _unblinded(vector, seed, summary)


def blind_all(vectors: Sequence[Mapping[str, Any]], seed: int, version: str) -> tuple[list[dict[str, Any]], ScenarioSummary]:
    """Every scenario blinded for ``seed`` in a run of ``version``, and what the blinding did."""
    started = time.perf_counter()
    summary = ScenarioSummary(seed)
    out = []
    for v in vectors:
        try:
            out.append(blind_scenario(v, seed, version, summary))
        except Exception:  # noqa: BLE001 - a scenario the transformations cannot read is sent as it is, and counted
            out.append(_unblinded(v, seed, summary))
    summary.seconds = time.perf_counter() - started
    return out, summary
