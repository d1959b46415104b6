"""Symbolic vectors: one vector for every feasible path of every bundled example
(examples/*.rasm), explored by proofs.symbolic (``rtwo-vm symbolic``) within fixed bounds.

For each example the explorer runs one call with symbolic caller, call data (every length up
to ``max_calldata``) and storage, under the default policy and limits; a witness of every
path is replayed on the reference interpreter and must give exactly the path's end. A
vector is that witness input with the reference's result as its expected result, built by
``proofs.symbolic.vectors.vector`` (the vectors ``rtwo-vm symbolic --emit-vectors`` writes),
tagged ``source: symbolic``.

The vectors are definitions of the first spec version (the examples are 1.0 containers), valid
in every later version. A fill reads the cache only (no z3, no proofs package): the witness
becomes a Case filled like every other, whose vector is exactly the one
``rtwo-vm symbolic --emit-vectors`` writes (its generator named in ``_meta``).

A witness is a z3 model, and z3's models depend on its version (and, within one process, on
the terms made before: the same example explored after another can get another witness),
so the witnesses are cached in conformance/symbolic_inputs.json (committed) and every fill
reads the cache, as the SMT source does: fills stay byte-identical across machines. The
paths themselves (their number, outcomes and forks, hence the ids) do not depend on z3's
choices. The expected results are not cached:
each fill runs the reference on the cached inputs. The cache entry of an example records the
containers (so that a fill needs the cache alone) and the bounds; an entry that does not match the example any more
(or is missing) is explored again and written back (``rtwo-vm vectors fill --refresh-symbolic``
explores every example again).

A vector's id is ``symbolic/<example>/<outcome>_<signature>``: the signature is the first 10
hex digits of the SHA-256 of the path's outcome and its forks (address, pc and model branch
label of every branch point, callees' included), which identify the path whatever order the
explorer finds it in and whatever witness z3 picks for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from conformance.constants import EXAMPLES_DIR, SYMBOLIC_CACHE

ENTRY = 0x100
SIGNATURE_DIGITS = 10


@dataclass(frozen=True)
class Example:
    """One example's call: its contract at ``entry`` and the contracts it calls, as in
    examples/scenarios.toml; the bounds of its exploration."""

    name: str
    entry: int = ENTRY
    contracts: dict = field(default_factory=dict)     # address -> file name in examples/
    max_calldata: int = 64

    def files(self) -> dict[int, str]:
        return {self.entry: f"{self.name}.rasm", **self.contracts}


# Where an example differs from "alone at 0x100, call data up to 64 bytes": the addresses and
# callees of examples/scenarios.toml (the proxy calls the counter at 0x101 and the reverter at
# 0x102), and hashing's call data bounded by 8 bytes (SHA-256 of every length up to 64 is
# costly to explore; 8 bytes already give both of its paths).
OVERRIDES = {
    "token": Example("token", entry=0x200),
    "proxy": Example("proxy", contracts={0x101: "counter.rasm", 0x102: "reverter.rasm"}),
    "hashing": Example("hashing", max_calldata=8),
}


def examples() -> list[Example]:
    """Every bundled example, in name order."""
    names = sorted(p.stem for p in EXAMPLES_DIR.glob("*.rasm"))
    return [OVERRIDES.get(n, Example(n)) for n in names]


def _containers(example: Example) -> dict[int, bytes]:
    from conformance.corpus.vector import BASE
    from reference_vm import assemble
    return {a: assemble((EXAMPLES_DIR / f).read_text(encoding="utf-8"), BASE)
            for a, f in sorted(example.files().items())}


def setup_of(example: Example, codes: dict[int, bytes] | None = None):
    """The example's setup: the first spec version's (its containers are that version's)."""
    from conformance.corpus.vector import BASE
    from proofs.symbolic.world import Setup
    return Setup(entry=example.entry, codes=codes or _containers(example), version=BASE,
                 max_calldata=example.max_calldata)


def settings(example: Example, codes: dict[int, bytes]) -> dict[str, Any]:
    """What a cache entry was explored from (the containers themselves, so that a fill needs
    only the cache): a different one makes the entry stale."""
    s = setup_of(example, codes)
    return {"entry": hex(example.entry),
            "contracts": {hex(a): {"file": example.files()[a], "code": "0x" + blob.hex()}
                          for a, blob in sorted(codes.items())},
            "max_calldata": s.max_calldata, "loop_bound": s.loop_bound,
            "max_paths": s.max_paths, "max_steps": s.max_steps}


def signature(outcome: str, choices: Iterable) -> str:
    text = json.dumps([outcome, [[hex(a), pc, label] for a, pc, label in choices]],
                      separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:SIGNATURE_DIGITS]


class SymbolicSourceError(ValueError):
    """An example cannot give its paths (a bound cut one, or a witness did not replay)."""


def explore_example(example: Example) -> dict[str, Any]:
    """Explore one example; its cache entry. Every path must be explored (no bound hit, no
    branch kept on an unknown answer) and replay on the reference with the path's end."""
    from proofs.symbolic.executor import explore
    from proofs.symbolic.solve import Solver
    from proofs.symbolic.vectors import path_mnemonics
    from proofs.symbolic.witness import replay_all

    codes = _containers(example)
    setup = setup_of(example, codes)
    solver = Solver(setup.rlimit)
    exploration = explore(setup, solver)
    if exploration.cuts:
        raise SymbolicSourceError(f"symbolic/{example.name}: bounds cut paths: "
                                  f"{', '.join(exploration.bounds_hit)}")
    paths = []
    for end, replay in zip(exploration.ends, replay_all(exploration, solver)):
        if end.flags or replay.status != "agrees":
            raise SymbolicSourceError(f"symbolic/{example.name}: path {end.index} "
                                      f"({end.outcome}): {replay.status}; "
                                      + "; ".join(replay.differences[:1] + list(end.flags)))
        paths.append({"signature": signature(end.outcome, end.choices),
                      "outcome": end.outcome,
                      "forks": [[hex(a), pc, label] for a, pc, label in end.choices],
                      "opcodes": sorted(set(path_mnemonics(exploration, end))),
                      "witness": replay.witness.to_json()})
    paths.sort(key=lambda p: (p["outcome"], p["signature"]))
    signatures = [p["signature"] for p in paths]
    if len(set(signatures)) != len(signatures):
        raise SymbolicSourceError(f"symbolic/{example.name}: two paths with one signature")
    return {"settings": settings(example, codes), "paths": paths}


def load_cache(path: Path = SYMBOLIC_CACHE) -> dict[str, Any]:
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["examples"]


def write_cache(entries: dict[str, Any], path: Path = SYMBOLIC_CACHE) -> None:
    from spec.files import atomic_write
    doc = {"source": "proofs.symbolic.explore (rtwo-vm symbolic)", "examples": entries}
    atomic_write(path, json.dumps(doc, sort_keys=True, indent=1) + "\n")


def inputs(refresh: bool = False, path: Path = SYMBOLIC_CACHE) -> tuple[dict[str, Any], list[str]]:
    """The cache entry of every example (exploring those missing, stale or, with
    ``refresh``, all, and writing the cache back when any was explored), with notes."""
    cached = load_cache(path)
    if not examples():   # an installed copy, or a checkout of the packages alone: the cache as it is
        return cached, [] if cached else [f"no examples in {EXAMPLES_DIR} and no cache "
                                          f"{path.name}: symbolic source skipped"]
    try:
        from proofs.symbolic import world  # noqa: F401 - what exploring (and the bounds) need
    except Exception as err:  # noqa: BLE001 - the proofs package is optional for a fill
        if refresh:
            raise
        return cached, [f"proofs.symbolic is not usable ({type(err).__name__}: {str(err)[:80]}): the "
                        f"symbolic cache {path.name} is used as it is, not checked against the examples"]
    entries, explored = {}, []
    for example in examples():
        entry = cached.get(example.name)
        if refresh or entry is None or entry["settings"] != settings(example, _containers(example)):
            entry = explore_example(example)
            explored.append(example.name)
        entries[example.name] = entry
    notes = []
    if explored or set(cached) != set(entries):
        write_cache(entries, path)
        if explored:
            notes.append(f"symbolic paths explored again for {', '.join(explored)} "
                         f"(cache {path.name} written)")
    return entries, notes


def _slug(text: str) -> str:
    """A vector id part: letters, digits and _.+=- only (as proofs.symbolic.vectors.slug)."""
    import re
    return re.sub(r"[^A-Za-z0-9_.+=-]+", "_", text).strip("_") or "contract"


def vector_id(example: str, path: dict[str, Any]) -> str:
    return f"symbolic/{_slug(example)}/{path['outcome'].lower()}_{path['signature']}"


def _description(name: str, path: dict[str, Any]) -> str:
    forks = "; ".join(f"{label!r} at pc {pc} of {address}" for address, pc, label in path["forks"])
    return (f"{name}.rasm: the witness input of one path of rtwo-vm symbolic "
            f"({path['outcome']}), " + (f"through the branches {forks}" if forks
                                        else "the only path"))


# The tool whose vectors these are (proofs.symbolic.vectors writes the same ones).
GENERATOR = "rtwo-vm symbolic 1.0.0"


def cases(entries: dict[str, Any]):
    """One Case per cached path: the witness's request under the default policy and limits
    (the exploration's), each contract with the witness's storage; read from the cache alone."""
    from conformance.corpus.vector import Case
    for name, entry in sorted(entries.items()):
        settings_doc = entry["settings"]
        entry_address = int(settings_doc["entry"], 16)
        codes = {int(a, 16): bytes.fromhex(c["code"][2:]) for a, c in settings_doc["contracts"].items()}
        for path in entry["paths"]:
            witness = path["witness"]
            storage = {int(a, 16): {int(k, 16): int(v, 16) for k, v in s.items()}
                       for a, s in witness["storage"].items()}
            yield Case(id=vector_id(name, path), description=_description(name, path),
                       code=codes[entry_address], to=entry_address, storage=storage.get(entry_address, {}),
                       contracts={a: (blob, storage.get(a, {})) for a, blob in codes.items() if a != entry_address},
                       caller=int(witness["caller"], 16), call_data=bytes.fromhex(witness["call_data"][2:]),
                       block_time=int(witness["block_time"], 16), random_seed=bytes.fromhex(witness["seed"][2:]),
                       opcodes=tuple(path["opcodes"]), categories=("symbolic",), source="symbolic",
                       generator=GENERATOR)
