"""Every engine runs every version exactly (issue 34, item 3), checked on the compiled engine
here and on the native tier in tests/test_native_versions.py:

- differential: each version's corpus (conformance/vectors/<version>/) run in process through
  the engine gives each vector's expected result in every field (status, error, output, state
  changes, events, call records, usage and fee) and its expected error stage;
- nothing of 1.1 leaks into 1.0: an instruction 1.1 adds is an undefined opcode in a 1.0
  container under both versions, a 1.1 container is refused by 1.0, and SHA256 costs each
  version's price per block on a warm engine that alternates between the versions;
- the differential check has teeth: an execution whose journal keeps a failed callee's
  transient writes (a planted bug, in a subclass in this file) fails it on the 1.1 corpus.

The expectations are the vectors' (filled by the reference and checked by hand against the
spec text in tests/test_corpus_expectations*.py) and the spec data's numbers.
"""

from __future__ import annotations

from typing import Callable, Iterable

import pytest

import spec
from compiled_vm import Engine
from compiled_vm.engine import CompiledExecution
from conformance.constants import corpus_dir
from conformance.corpus import store
from conformance.corpus.vector import error_stage, request_of
from reference_vm import Contract, Message, WorldState, assemble, execute
from reference_vm.container import build
from reference_vm.state import Journal

VERSIONS = [v.version for v in spec.versions()]
OLD, NEW = "1.0", "1.1"
# What 1.1 adds to the instruction set (spec/versions/1.1/diff.toml N1, N2, F1, T1).
ADDED = sorted(set(spec.load(NEW).by_mnemonic) - set(spec.load(OLD).by_mnemonic))
# The mnemonics a 1.1 item adds or changes (P1 reprices SHA256).
TOUCHED = frozenset(ADDED) | {"SHA256"}
ENTRY = 0x100


def corpus(version: str) -> list[dict]:
    return store.load(corpus_dir(version))


def mismatches(run: Callable, version: str, vectors: Iterable[dict]) -> list[str]:
    """The ids of the vectors whose expected result (every field) or error stage ``run``
    (an engine's execute) does not give under ``version``."""
    out = []
    for vector in vectors:
        r = request_of(vector["input"], version)
        result = run(r.state, r.message, r.context, r.policy, r.limits, version=version)
        got = {"result": result.to_json(), "error_stage": error_stage(result.error, version)}
        if got != vector["expected"]:
            out.append(vector["id"])
    return out


def opcodes(vectors: Iterable[dict], ids: Iterable[str]) -> set[str]:
    wanted = set(ids)
    return {o for v in vectors if v["id"] in wanted for o in v["tags"].get("opcodes", [])}


def test_the_corpora_cover_what_1_1_adds():
    assert ADDED == ["CLZ", "CTZ", "MULHS", "MULHU", "POPCNT", "STATICCALL", "TLOAD", "TSTORE"]
    covered = {o for v in corpus(NEW) for o in v["tags"].get("opcodes", [])}
    assert TOUCHED <= covered
    assert not set(ADDED) & {o for v in corpus(OLD) for o in v["tags"].get("opcodes", [])}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_vector_of_every_version_through_the_compiled_engine(version):
    """Eager (every region compiled the first time it runs) and then warm (the second pass
    finds the first pass's profiles and compiled regions), and tiered (the defaults)."""
    vectors = corpus(version)
    eager = Engine(threshold=1, cold_segments=0)
    assert mismatches(eager.execute, version, vectors) == []
    assert eager.cache.profiles() and eager.compile_failures == 0
    assert mismatches(eager.execute, version, vectors) == []
    assert mismatches(Engine().execute, version, vectors) == []


def container(mnemonic: str, version: tuple[int, int]) -> bytes:
    """PUSH1 1, PUSH1 1, PUSH1 1, PUSH1 1, the instruction, STOP, as a container of ``version``:
    enough operands for any of 1.1's instructions."""
    table = spec.load(NEW)
    push = bytes([table.by_mnemonic["PUSH1"].opcode, 1])
    code = push * 4 + bytes([table.by_mnemonic[mnemonic].opcode, table.by_mnemonic["STOP"].opcode])
    return build(code, b"", version)


def engines() -> dict[str, Callable]:
    return {"reference": execute, "compiled eager": Engine(threshold=1, cold_segments=0).execute,
            "compiled": Engine().execute}


def leaks(runs: dict[str, Callable]) -> None:
    """Assert that no instruction 1.1 adds runs in a 1.0 container, and that 1.0 refuses 1.1
    containers, on each engine of ``runs``."""
    old, new = spec.load(OLD).number, spec.load(NEW).number
    for name, run in runs.items():
        for mnemonic in ADDED:
            for blob, version, want in [
                    (container(mnemonic, old), OLD, ("invalid", "UNDEFINED_OPCODE")),
                    (container(mnemonic, old), NEW, ("invalid", "UNDEFINED_OPCODE")),
                    (container(mnemonic, new), OLD, ("invalid", "UNSUPPORTED_VERSION"))]:
                for _ in range(2):
                    result = run(WorldState({ENTRY: Contract(blob)}), Message(ENTRY, 1), version=version)
                    assert (result.status, result.error, result.usage.compute) == (*want, 0), \
                        (name, mnemonic, version)
            # In a 1.1 container under 1.1 it is an instruction (it runs, or fails running).
            result = run(WorldState({ENTRY: Contract(container(mnemonic, new))}), Message(ENTRY, 1),
                         version=NEW)
            assert result.status != "invalid" and result.usage.compute > 0, (name, mnemonic)


def test_nothing_of_1_1_runs_in_a_1_0_container_on_any_engine():
    leaks(engines())


def hashing_loop(version: str, n: int) -> bytes:
    """n SHA-256s of one block each, in a loop."""
    block = spec.load(version).schedule["hash"]["block_size"]
    return assemble(f"push {n}\ntop:\n push 0\n push 0\n push {block}\n sha256\n push 1\n sub\n"
                    f" dup1\n jumpi top\nstop", version)


def prices(runs: dict[str, Callable]) -> None:
    """A 1.0 container hashing in a loop, run under 1.0 and 1.1 in turn on each warm engine:
    each run costs its version's block price (6 under 1.0, 3 under 1.1: item P1), the
    difference between the versions n * (6 - 3) compute units."""
    cost = {v: spec.load(v).schedule["hash"]["block_cost"] for v in (OLD, NEW)}
    assert (cost[OLD], cost[NEW]) == (6, 3)
    n = 40
    state = WorldState({ENTRY: Contract(hashing_loop(OLD, n))})
    for name, run in runs.items():
        seen: dict[str, set[int]] = {OLD: set(), NEW: set()}
        for version in (NEW, OLD, NEW, OLD, OLD, NEW):
            result = run(state, Message(ENTRY, 1), version=version)
            assert result.ok, (name, version, result.error)
            assert result.canonical_json() == execute(state, Message(ENTRY, 1), version=version).canonical_json()
            seen[version].add(result.usage.compute)
        assert len(seen[OLD]) == len(seen[NEW]) == 1, name
        assert seen[OLD].pop() - seen[NEW].pop() == n * (cost[OLD] - cost[NEW]), name


def test_sha256_costs_each_versions_price_on_every_warm_engine():
    prices(engines())


class KeepsTransient(Journal):
    """PLANTED BUG: undoing a failed callee undoes its storage writes but keeps its transient
    writes (spec 6.11 of 1.1 undoes both)."""

    __slots__ = ()

    def revert_to(self, mark: int) -> None:
        tail = self._log[mark:]
        del self._log[mark:]
        self._log.extend(entry for entry in tail if entry[0] is not None)   # storage: undone
        super().revert_to(mark)
        self._log.extend(entry for entry in tail if entry[0] is None)       # transient: kept


class PlantedExecution(CompiledExecution):
    def __init__(self, *args):
        super().__init__(*args)
        self.journal = KeepsTransient(self.pre)


class PlantedEngine(Engine):
    execution_class = PlantedExecution


def test_a_failed_callees_transient_writes_kept_fail_the_differential_check():
    engine = PlantedEngine(threshold=1, cold_segments=0)
    new = corpus(NEW)
    caught = mismatches(engine.execute, NEW, new)
    assert caught, "the planted bug went unnoticed"
    assert opcodes(new, caught) >= {"TSTORE"}            # every catch writes transient storage
    assert all("TSTORE" in v["tags"]["opcodes"] for v in new if v["id"] in caught)
    assert mismatches(engine.execute, OLD, corpus(OLD)) == []     # 1.0 has no transient storage
