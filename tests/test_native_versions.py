"""The native tier under spec version 1.1 (spec/versions/1.1/diff.toml): MULHU, MULHS, CLZ, CTZ
and POPCNT computed by the machine code itself at every word width, with values computed by
hand from the spec's definitions (section 6.3 and 6.5 of 1.1); TLOAD, TSTORE and STATICCALL
leaving the machine code for the reference's handlers inside native loops, with the
reference's results; and the same code under 1.0 and 1.1 never sharing machine code.

And, as tests/test_compiled_versions.py does for the compiled engine (issue 34, item 3): each
version's corpus through the native tier gives every vector's expected result in every field;
nothing of 1.1 runs in a 1.0 container; SHA256 costs each version's price on a warm tier; and
two planted bugs (MULHS lowered unsigned, machine code shared across versions) are caught."""

from __future__ import annotations

import pytest

pytest.importorskip("llvmlite", reason="the native tier needs the native extra (llvmlite)")

import native_vm  # noqa: E402
import spec  # noqa: E402
from conftest import returning_top  # noqa: E402
from native_vm import ops  # noqa: E402
from native_vm.abi import RUN  # noqa: E402
from native_vm.cache import NativeCache  # noqa: E402
from native_vm.region import NativeRegion  # noqa: E402
from reference_vm import Contract, Limits, Message, Policy, WorldState, assemble, execute  # noqa: E402
from test_compiled_versions import TOUCHED, VERSIONS, corpus, leaks, mismatches, prices  # noqa: E402

NEW = "1.1"
OLD = "1.0"
ENTRY, OTHER = 0x10, 0x11          # words at every width
NEW_PURE = ("MULHU", "MULHS", "CLZ", "CTZ", "POPCNT")


def eager(cache: NativeCache | None = None) -> native_vm.Engine:
    return native_vm.Engine(threshold=1, cold_segments=0, native_work=0, min_block=1, per_handler=0,
                            cache=NativeCache() if cache is None else cache)


def natives(engine) -> list[NativeRegion]:
    return [fn for p in engine.cache.profiles() for fn in p.fns if isinstance(fn, NativeRegion)]


def handled(engine) -> set[str]:
    """The mnemonics of the handlers the engine's machine code leaves for."""
    return {e.handler.__name__ for r in natives(engine) for e in r.exits
            if e.kind == RUN and e.handler is not None}


def same(source: str, engine, *, version: str = NEW, word_bits: int | None = None,
         others: dict | None = None, limits: Limits | None = None, policy: Policy | None = None):
    """The reference's result, and the engine's three times over equal to it."""
    contracts = {ENTRY: Contract(assemble(source, version))}
    for address, code in (others or {}).items():
        contracts[address] = Contract(assemble(code, version))
    state = WorldState(contracts)
    message = Message(ENTRY, 0x1)
    want = execute(state, message, None, policy, limits, version=version, word_bits=word_bits)
    for _ in range(3):
        got = engine.execute(state, message, None, policy, limits, version=version, word_bits=word_bits)
        assert got.canonical_json() == want.canonical_json()
    return want


def by_hand(op: str, a: int, b: int, bits: int) -> int:
    """The spec's definitions (1.1, sections 6.3 and 6.5) in plain Python integers."""
    modulus = 1 << bits

    def signed(v: int) -> int:
        return v - modulus if v >= modulus // 2 else v

    if op == "MULHU":
        return (a * b) >> bits
    if op == "MULHS":
        return ((signed(a) * signed(b)) >> bits) % modulus   # floor: the high word of the product
    if op == "CLZ":
        return next(bits - 1 - i for i in reversed(range(bits)) if a >> i & 1) if a else bits
    if op == "CTZ":
        return next(i for i in range(bits) if a >> i & 1) if a else bits
    assert op == "POPCNT"
    return sum(a >> i & 1 for i in range(bits))


@pytest.mark.parametrize("bits", [8, 16, 32, 64])
def test_the_new_pure_instructions_are_machine_code_with_the_specs_values(bits):
    """Each operation on edge operands, folded into acc = acc * 31 + result (mod 2^W) in one
    straight-line block per chunk of cases (one native region each), the fold returned: a
    wrong value of any case changes it."""
    mask = (1 << bits) - 1
    top = 1 << (bits - 1)
    words = [0, 1, 2, 3, mask, mask - 1, top, top - 1, top + 1, 0x5A5A5A5A5A5A5A5A & mask,
             1 << (bits // 2), (1 << (bits // 2)) - 1]
    engine = eager()
    for op in NEW_PURE:
        cases = [(a, b) for a in words for b in (words if op.startswith("MULH") else [0])]
        for chunk in (cases[i:i + 48] for i in range(0, len(cases), 48)):
            lines, acc = ["push 0"], 0
            for a, b in chunk:
                operands = f"push {a}\npush {b}" if op.startswith("MULH") else f"push {a}"
                lines += ["push 31", "mul", operands, op.lower(), "add"]
                acc = (acc * 31 + by_hand(op, a, b, bits)) & mask
            result = same(returning_top("\n".join(lines)), engine, word_bits=bits)
            assert result.ok, (op, result.error)
            assert int.from_bytes(result.output, "little") == acc, (op, chunk)
    assert natives(engine) and engine.native_failures == 0
    assert not handled(engine) & set(NEW_PURE)          # computed in the machine code, never left for


def test_by_hand_agrees_with_the_spec_tables_examples():
    """The hand definitions themselves, on values worked out on paper."""
    assert by_hand("MULHU", 2**64 - 1, 2**64 - 1, 64) == 2**64 - 2
    assert by_hand("MULHS", 2**64 - 1, 2**64 - 1, 64) == 0            # -1 * -1 = 1: high word 0
    assert by_hand("MULHS", 2**64 - 1, 1, 64) == 2**64 - 1             # -1 * 1 = -1: high word -1
    assert by_hand("MULHS", 2**63, 2**63, 64) == 2**62                 # MIN * MIN = 2^126
    assert (by_hand("CLZ", 1, 0, 64), by_hand("CLZ", 0, 0, 8), by_hand("CLZ", 2**63, 0, 64)) == (63, 8, 0)
    assert (by_hand("CTZ", 8, 0, 64), by_hand("CTZ", 0, 0, 16)) == (3, 16)
    assert by_hand("POPCNT", 0xFF00FF, 0, 64) == 16


def test_transient_storage_in_native_loops_is_the_references_and_undone_with_a_failed_callee():
    """A loop that writes, reads and accumulates transient slots, then calls a callee that
    writes transient slots and reverts: the caller reads its own slots back afterwards."""
    source = returning_top("""
        push 5
    top:
        dup1
        dup1
        tstore
        dup1
        tload
        pop
        push 1
        sub
        dup1
        jumpi top
        pop
        push 0x11
        push 5000
        push 0
        push 0
        call
        pop
        push 3
        tload
        push 0x11
        push 5000
        push 0
        push 0
        staticcall
        add
    """)
    callee = "push 3\npush 99\ntstore\npush 0\npush 0\nrevert"
    engine = eager()
    for compute in (60, 200, 500, 10**5):
        result = same(source, engine, others={OTHER: callee}, limits=Limits(compute=compute))
    # slot 3 holds 3 (the callee's write was undone); the static call halts at TSTORE: ok = 0.
    assert result.ok and int.from_bytes(result.output, "little") == 3
    assert [(c.status, c.error) for c in result.calls] == [("reverted", None),
                                                           ("fault", "READ_ONLY_WRITE")]
    assert {"TSTORE", "TLOAD"} <= handled(engine) and engine.native_failures == 0


def test_a_static_call_in_a_native_loop_is_the_references():
    source = """
        push 4
    top:
        push 0x11
        push 2000
        push 0
        push 0
        staticcall
        pop
        push 1
        sub
        dup1
        jumpi top
        stop
    """
    reader = "push 0\nsload\npush 1\ntload\nadd\npop\nstop"
    writer = "push 1\npush 0\nsstore\nstop"
    engine = eager()
    for callee, want in ((reader, ("success", None)), (writer, ("fault", "READ_ONLY_WRITE"))):
        result = same(source, engine, others={OTHER: callee})
        assert result.ok and [(c.status, c.error) for c in result.calls] == [want] * 4
    assert "STATICCALL" in handled(engine)


def test_the_same_code_under_1_0_and_1_1_runs_its_own_versions_machine_code():
    """SHA256 costs hash.block_cost per block, 6 under 1.0 and 3 under 1.1 (item P1): one code,
    one engine and one native cache, both versions in turn; each result is its version's, and
    the code has machine code for each version."""
    cost = {v: spec.load(v).schedule["hash"]["block_cost"] for v in (OLD, NEW)}
    assert cost[OLD] != cost[NEW]
    block = spec.load(NEW).schedule["hash"]["block_size"]
    source = f"push 3\ntop:\n push 0\n push 0\n push {block}\n sha256\n push 1\n sub\n dup1\n jumpi top\nstop"
    cache = NativeCache()
    engine = eager(cache)
    results = {}
    for version in (OLD, NEW, OLD, NEW):
        results[version] = same(source, engine, version=version)
    # Three hashes of one block: the compute differs by 3 * (old - new) block costs.
    assert results[OLD].usage.compute - results[NEW].usage.compute == 3 * (cost[OLD] - cost[NEW])
    assert {key[1] for key in cache.entries} == {OLD, NEW}


# --- every vector of every version, and nothing of 1.1 in 1.0 (issue 34, item 3) ------------

def sample(vectors: list[dict], every: int = 32) -> list[dict]:
    """The vectors of what a 1.1 item adds or changes, and every ``every``-th of the others."""
    return [v for i, v in enumerate(vectors)
            if TOUCHED & set(v["tags"].get("opcodes", [])) or i % every == 0]


@pytest.mark.parametrize("version", VERSIONS)
def test_every_vector_of_every_version_through_the_native_tier(version):
    """Every vector through an engine whose loops and long blocks go native at once (twice:
    the second pass runs the first pass's machine code); and, eagerly (every region the tier
    can take, one instruction long or full of handlers, to machine code the first time it
    runs: about 20 ms of LLVM a vector), the vectors of the 1.1 items and one in 32 of the
    others. The whole corpora go through an eager native adapter in test_native_adapter.py."""
    vectors = corpus(version)
    fast = native_vm.Engine(threshold=1, cold_segments=0, native_work=0, cache=NativeCache())
    for _ in range(2):
        assert mismatches(fast.execute, version, vectors) == []
    engine = eager()
    assert mismatches(engine.execute, version, sample(vectors)) == []
    assert natives(engine) and engine.native_failures == 0 and fast.native_failures == 0


def test_nothing_of_1_1_runs_in_a_1_0_container_on_the_native_tier():
    leaks({"native eager": eager().execute, "native": native_vm.Engine(cache=NativeCache()).execute})


def test_sha256_costs_each_versions_price_on_a_warm_native_tier():
    cache = NativeCache()
    engine = eager(cache)
    prices({"native eager": engine.execute,
            "native": native_vm.Engine(threshold=2, native_work=100, cache=cache).execute})
    assert natives(engine)


def test_a_sign_error_in_native_mulhs_fails_the_differential_check(monkeypatch):
    """PLANTED BUG: MULHS lowered as MULHU (operands zero-extended): the 1.1 vectors catch it,
    each caught one a MULHS vector."""
    monkeypatch.setitem(ops.BINARY, "MULHS", ops.BINARY["MULHU"])
    vectors = [v for v in corpus(NEW) if "MULHS" in v["tags"].get("opcodes", [])]
    caught = mismatches(eager().execute, NEW, vectors)
    assert caught, "the planted bug went unnoticed"
    monkeypatch.undo()
    assert mismatches(eager().execute, NEW, vectors) == []     # the real lowering passes them


class KeyWithoutVersion(native_vm.Engine):
    """PLANTED BUG: machine code cached by code, width and head only (not the version)."""

    @staticmethod
    def region_key(profile, head, rules):
        return (profile.digest(), rules.bits, head)


def test_machine_code_shared_across_versions_fails_the_price_check():
    """With the version left out of the native cache's key, a 1.0 run finds the machine code
    compiled under 1.1 (whose SHA256 exit runs 1.1's handler): 1.1's repricing applied to 1.0."""
    planted = KeyWithoutVersion(threshold=1, cold_segments=0, native_work=0, min_block=1,
                                per_handler=0, cache=NativeCache())
    with pytest.raises(AssertionError):
        prices({"planted": planted.execute})
