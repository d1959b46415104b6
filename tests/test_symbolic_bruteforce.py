"""Soundness and completeness of the symbolic paths against brute force on the reference.

For small programs over a small input domain — one byte of call data or none (257 call
datas) and, where the program reads storage, slot values 0..15 — every input is run on the
reference interpreter, and the symbolic paths are evaluated on the same input by substituting
constants for the symbolic inputs (SHA-256 applications get their true values, axiom 2):

- exactly one path's condition holds on each input (no missed path, no overlap),
- that path's end, evaluated on the input, is the reference's canonical result, field by
  field (status, error, error_pc, output, state changes, events, calls, usage, fee),
- every path is taken by at least one input (no infeasible path reported).

The exploration is told the same domain (``Setup.assume``), so the two sides enumerate the
same inputs. Then the same on programs from the fuzzer's generator (fixed seeds), with some
operands made symbolic. Last, the check is shown to catch an explorer that drops a branch
and one that keeps infeasible branches.
"""

from __future__ import annotations

import z3
from z3 import z3core

from proofs.symbolic import Setup, explore
from proofs.symbolic.outcome import concretise
from proofs.symbolic.solve import true_value
from proofs.symbolic.witness import Witness, run_reference
from proofs.words import width
from reference_vm import Limits, Policy, assemble
import spec
from conftest import BASE_VERSION as V

NUMBER = spec.load(V).number  # the base version's containers

CALLER = 0xCA11E7
CALL_DATAS = [b""] + [bytes([b]) for b in range(256)]
SLOT_VALUES = range(8)


class Substitution:
    """Evaluates a term with constants substituted for the inputs (a 'model' for
    outcome.concretise); through z3's C API, as z3.substitute's per-pair checks cost most."""

    def __init__(self, pairs, apps=()):
        self.pairs, self.apps = list(pairs), list(apps)
        n = len(self.pairs)
        self.n = n
        self.frm = (z3.Ast * n)(*[a.as_ast() for a, _ in self.pairs])
        self.to = (z3.Ast * n)(*[b.as_ast() for _, b in self.pairs])

    def eval(self, term, model_completion=True):
        ctx = z3.main_ctx()
        # SHA-256 applications first, the latest first (it may hold earlier ones in its
        # arguments), each as a whole: z3 substitutes bottom-up, so replacing the inputs
        # first would leave no application to match.
        for app, v in reversed(self.apps):
            term = z3.substitute(term, (app, v))
        sub = z3core.Z3_substitute(ctx.ref(), term.as_ast(), self.n, self.frm, self.to)
        return z3.ExprRef(z3core.Z3_simplify(ctx.ref(), sub), ctx)

    def with_apps(self, apps) -> "Substitution":
        """Each SHA-256 application replaced by its true value at its arguments, in path
        order (a later one may hash an earlier one's digest)."""
        done: list = []
        for app in apps:
            v, _ = true_value(Substitution(self.pairs, done), app, width(64, V))
            done.append((app, z3.BitVecVal(v, app.sort().size())))
        return Substitution(self.pairs, done)


def substitution(inputs, call_data: bytes, storage: dict) -> Substitution:
    width = inputs.call_data_length.size()
    data = z3.K(z3.BitVecSort(width), z3.BitVecVal(0, 8))
    for j, b in enumerate(call_data):
        data = z3.Store(data, z3.BitVecVal(j, width), z3.BitVecVal(b, 8))
    pairs = [(inputs.call_data_length, z3.BitVecVal(len(call_data), width)),
             (inputs.call_data_array, data), (inputs.caller, z3.BitVecVal(CALLER, 64))]
    for address, array in inputs.storage.items():
        values = z3.K(z3.BitVecSort(64), z3.BitVecVal(0, 64))
        for k, v in sorted(storage.get(address, {}).items()):
            values = z3.Store(values, z3.BitVecVal(k, 64), z3.BitVecVal(v, 64))
        if z3.is_const(array):
            pairs.append((array, values))
    return Substitution(pairs)


def brute_force(setup: Setup, domain) -> tuple:
    """(exploration, hits per path, problems) over every input of ``domain``."""
    x = explore(setup)
    assert not x.cuts, x.bounds_hit
    conds = [z3.And(*e.conds) if e.conds else z3.BoolVal(True) for e in x.ends]
    hits, problems = [0] * len(x.ends), []
    for call_data, storage in domain:
        actual = run_reference(x, Witness(CALLER, call_data, 0, bytes(32), storage)).to_json()
        plain = substitution(x.inputs, call_data, storage)
        subs = [plain.with_apps(e.apps) if e.apps else plain for e in x.ends]
        holding = [e for e, c, s in zip(x.ends, conds, subs) if z3.is_true(s.eval(c))]
        if len(holding) != 1:
            problems.append(f"{call_data.hex()} {storage}: {len(holding)} paths hold, the "
                            f"reference gives {actual['error'] or actual['status']}")
            continue
        end = holding[0]
        hits[end.index] += 1
        expected = concretise(end, subs[end.index])
        if expected != actual:
            problems.append(f"{call_data.hex()} {storage}: path {end.index} ends "
                            f"{expected}, the reference gives {actual}")
    return x, hits, problems


def assert_exact(setup: Setup, domain) -> list[int]:
    x, hits, problems = brute_force(setup, domain)
    assert not problems, problems[:3]
    assert all(hits), f"paths no input takes: {[i for i, h in enumerate(hits) if not h]}"
    assert sum(hits) == len(domain)
    return hits


def slot0_domain(address: int = 0x100) -> list:
    return [(cd, {address: {0: v}}) for cd in CALL_DATAS for v in SLOT_VALUES]


def slot0_in_domain(address: int = 0x100):
    return lambda i: [z3.ULE(i.storage[address][z3.BitVecVal(0, 64)], max(SLOT_VALUES))]


def setup(source: str, *, others=None, assume=None, **kw) -> Setup:
    codes = {0x100: assemble(source, V)}
    codes.update({a: assemble(s, V) for a, s in (others or {}).items()})
    return Setup(0x100, codes, max_calldata=1, caller=CALLER, assume=assume, **kw, version=V)


BRANCHES = """
    push 0
    calldataload
    dup1
    push 0x80
    ltu                 ; x (x < 0x80)
    jumpi low
    push 0x90
    ltu
    jumpi middle        ; 0x80 <= x < 0x90: revert
    trap                ; x >= 0x90
middle:
    push 0
    push 0
    revert
low:
    push 0
    sload
    add                 ; x + slot 0
    push 0
    swap1
    sstore              ; slot 0 = x + slot 0 (a new slot, a write, or a write of zero)
    stop
"""


def test_branches_on_call_data_and_storage_match_brute_force():
    hits = assert_exact(setup(BRANCHES, assume=slot0_in_domain()), slot0_domain())
    assert len(hits) >= 4


MEMORY = """
    push 0
    calldataload        ; x
    push 17
    mul                 ; 17x: a memory offset from 0 to 4335
    push 0xab
    mstore8             ; memory[17x] = 0xab: grows to one or two pages
    push 0
    calldataload
    push 7
    and                 ; x & 7
    push 4090
    swap1
    return              ; memory[4090, 4090 + (x & 7)): past the first page for some x
"""


def test_memory_growth_and_its_limit_match_brute_force():
    domain = [(cd, {}) for cd in CALL_DATAS]
    assert_exact(setup(MEMORY, limits=Limits(memory_pages=1)), domain)
    assert_exact(setup(MEMORY, limits=Limits(compute=60)), domain)


LOOP = """
    push 0
    calldataload
    push 3
    and                 ; n = x & 3
again:
    dup1
    iszero
    jumpi done
    push 0
    sload
    push 1
    add
    push 0
    swap1
    sstore              ; slot 0 += 1
    push 1
    swap1
    sub                 ; n - 1
    jump again
done:
    stop
"""


def test_a_loop_with_a_data_dependent_trip_count_matches_brute_force():
    s = setup(LOOP, assume=slot0_in_domain(), loop_bound=5, limits=Limits(compute=900))
    assert_exact(s, slot0_domain())


CALLER_PROGRAM = """
    push 0
    calldataload        ; x
    push 0
    mstore              ; memory[0..8) = x
    push 0x101          ; address
    push 0
    calldataload
    push 100
    add                 ; compute for the callee: 100 + x units (its SSTORE may run out)
    push 0
    push 1              ; call data: memory[0, 1) = x
    call
    push 0
    mstore              ; memory[0..8) = ok
    push 0
    push 8
    returndatasize
    push 8
    swap2
    swap1
    returndatacopy      ; memory[8..) = the callee's output
    push 0
    push 16
    return
"""
CALLEE = """
    push 0
    calldataload
    push 1
    and
    jumpi odd
    push 0
    push 0
    calldataload
    sstore              ; slot 0 = x (the callee's own storage)
    push 0
    push 8
    return
odd:
    push 0
    push 1
    revert
"""


def test_a_call_into_known_code_with_symbolic_compute_matches_brute_force():
    domain = [(cd, {0x101: {0: v}}) for cd in CALL_DATAS for v in range(4)]
    s = setup(CALLER_PROGRAM, others={0x101: CALLEE},
              assume=lambda i: [z3.ULE(i.storage[0x101][z3.BitVecVal(0, 64)], 3)])
    hits = assert_exact(s, domain)
    assert len(hits) >= 4     # the callee succeeds, reverts, runs out of compute, ...


HASHING = """
    push 0
    push 0
    calldatasize
    calldatacopy        ; memory[0, n) = call data
    push 64
    push 0
    calldatasize
    sha256              ; memory[64, 96) = SHA-256(call data)
    push 64
    mload8
    push 1
    and
    jumpi odd_digest    ; forks on the digest's first bit
    push 64
    push 32
    return
odd_digest:
    push 64
    push 1
    revert
"""


def test_branching_on_a_digest_matches_brute_force():
    assert_exact(setup(HASHING), [(cd, {}) for cd in CALL_DATAS])


# -- programs from the fuzzer's generator -----------------------------------------------------

def generated(index: int) -> bytes:
    """Program ``index`` of the fuzzer's generator (seed 2026), with about a third of its
    PUSH operands made v + (the call data byte): PUSH v; PUSH1 0; CALLDATALOAD; ADD (jump
    targets, row indices, follow their rows)."""
    from conformance.fuzz.build import JUMPS, fresh_rows
    from conformance.fuzz.generate import rng_for
    from conformance.fuzz.program import encode_rows
    from reference_vm.container import build
    rng = rng_for(2026, index, "symbolic")
    groups = []
    for m, imm in fresh_rows(rng, [0x100], 1, 0):
        group = [(m, imm)]
        if m.startswith("PUSH") and rng.random() < 0.3:
            group += [("PUSH1", 0), ("CALLDATALOAD", 0), ("ADD", 0)]
        groups.append(group)
    start, n = [], 0
    for group in groups:
        start.append(n)
        n += len(group)
    rows = [(m, start[imm] if m in JUMPS else imm) for group in groups for m, imm in group]
    return build(encode_rows(rows), b"", NUMBER)


def test_generated_programs_match_brute_force():
    """Four generated programs with more than one path (picked for that and for speed;
    the seed and the generator are fixed): TIME and RANDOM allowed with a fixed time and
    seed, small limits so that every loop ends."""
    policy = Policy(time_access="allowed", randomness="seeded")
    limits = Limits(compute=2000, memory_pages=16, storage_units=200)
    for index in (28, 43, 74, 96):
        s = Setup(0x100, {0x100: generated(index)}, policy=policy, limits=limits, time=7,
                  seed=bytes(32), max_calldata=1, caller=CALLER, concrete_storage=True,
                  max_paths=64, version=V)
        hits = assert_exact(s, [(cd, {}) for cd in CALL_DATAS])
        assert len(hits) >= 2, index


# -- the check catches planted bugs -----------------------------------------------------------

SMALL = [(cd, {0x100: {0: v}}) for cd in CALL_DATAS for v in range(4)]


def small_branches() -> Setup:
    return setup(BRANCHES, assume=lambda i: [z3.ULE(i.storage[0x100][z3.BitVecVal(0, 64)], 3)])


def test_the_check_catches_an_explorer_that_drops_a_branch(monkeypatch):
    from proofs.symbolic.executor import Explorer
    real = Explorer.feasible

    def dropping(self, candidates, one_step):
        kept = real(self, candidates, one_step)
        return kept[:-1] if len(kept) > 1 else kept
    monkeypatch.setattr(Explorer, "feasible", dropping)
    _, _, problems = brute_force(small_branches(), SMALL)
    assert problems and all("0 paths hold" in p for p in problems)


def test_the_check_catches_an_explorer_that_keeps_infeasible_branches(monkeypatch):
    from proofs.symbolic.executor import Explorer, new_conjuncts

    def keeping(self, candidates, one_step):
        out = []
        for b, p in candidates:
            new = new_conjuncts(p, b.cond)
            if new is not None:
                out.append((b, p.with_conds(new)))
        return out
    monkeypatch.setattr(Explorer, "feasible", keeping)
    _, hits, problems = brute_force(small_branches(), SMALL)
    assert not problems and 0 in hits     # the paths are right, but some have no input


def test_the_check_catches_a_wrong_opcode_model(monkeypatch):
    from proofs.instructions import models
    from proofs.machine import Branch
    real = models(64, V)["ADD"]

    def add_plus_one(s, imm):               # ADD pushes a + b + 1
        return [Branch(b.label, b.status, b.cond,
                       b.state.replace(stack=(b.state.stack[0] + 1,) + b.state.stack[1:]))
                for b in real(s, imm)]
    monkeypatch.setitem(models(64, V), "ADD", add_plus_one)
    _, _, problems = brute_force(small_branches(), SMALL)
    # slot 0 = x + slot 0 + 1: the path's end is not what the reference gives
    assert problems and any(" ends {" in p for p in problems)
