"""Reading branch inputs out of a z3 model (proofs/branches.py): the compiled read of many
bytes gives exactly what evaluating the model byte by byte gives, whether the model gives
the array, leaves it to completion, or gives it as a function."""

from __future__ import annotations

import pytest
import z3

from proofs import branches
from proofs.evaluate import compile_term
from proofs.execute import immediate, step
from proofs.machine import array_bytes, base_memory, fresh_state
from proofs.words import width
import spec
from conftest import BASE_VERSION as V

SPEC = spec.load(V)

W = width(64, V)
C = W.counter_bits


def model_of(*facts):
    solver = z3.Solver()
    solver.add(*facts)
    assert solver.check() == z3.sat
    return solver.model()


def per_byte(model, read, indices):
    return [branches._read(model, read(z3.BitVecVal(i, C))) for i in indices]


def test_compiled_read_equals_the_model_byte_by_byte():
    array = z3.Array("mem", z3.BitVecSort(C), z3.BitVecSort(8))
    pages = z3.BitVec("pages", C)
    memory = base_memory(W, pages, array)
    c = lambda v: z3.BitVecVal(v, C)  # noqa: E731
    given = z3.Store(z3.Store(z3.Store(z3.K(z3.BitVecSort(C), z3.BitVecVal(0, 8)), c(3), 7),
                              c(4095), 9), c(4096), 5)
    model = model_of(pages == 1, array == given)
    indices = [0, 1, 2, 3, 4, 4094, 4095, 4096, 4097]
    got = branches._read_at(model, memory.read, C, indices)
    assert got == [0, 0, 0, 7, 0, 0, 9, 0, 0]          # 4096 is past the one page
    assert got == per_byte(model, memory.read, indices)


def test_constants_the_model_leaves_open_read_as_completion_chooses():
    length = z3.BitVec("len", C)
    data = array_bytes(length, z3.Array("open", z3.BitVecSort(C), z3.BitVecSort(8)))
    model = model_of(length == 6)                        # the array is not in the model
    first = branches._read_at(model, data.read, C, range(8))
    again = z3.Array("open2", z3.BitVecSort(C), z3.BitVecSort(8))
    fresh = model_of(length == 6)
    assert first == per_byte(fresh, array_bytes(length, again).read, range(8)) == [0] * 8
    assert branches._bytes(model, data) == "00" * 6


def test_an_array_given_as_a_lambda_or_a_function_symbol_reads_as_the_model_says():
    array = z3.Array("f", z3.BitVecSort(C), z3.BitVecSort(8))
    i = z3.BitVec("i", C)
    # A quantified fact makes z3 give the array as a lambda (not a Store chain).
    model = model_of(z3.ForAll([i], z3.Implies(z3.ULT(i, 10), array[i] == z3.Extract(7, 0, i))))
    read = lambda j: array[j]  # noqa: E731
    assert branches._read_at(model, read, C, range(6)) == per_byte(model, read, range(6))
    assert branches._read_at(model, read, C, range(6)) == [0, 1, 2, 3, 4, 5]
    g = z3.Function("g", z3.BitVecSort(C), z3.BitVecSort(8))
    model = model_of(*[g(z3.BitVecVal(k, C)) == 2 * k + 1 for k in range(6)])
    assert branches._read_at(model, g, C, range(6)) == [1, 3, 5, 7, 9, 11]
    # An operator beyond the compiler (bvsmod): read byte by byte, by the model.
    read = lambda j: (z3.Extract(7, 0, j) + g(j)) % z3.BitVecVal(5, 8)  # noqa: E731
    with pytest.raises(NotImplementedError):
        compile_term(z3.simplify(model.eval(read(z3.Var(0, z3.BitVecSort(C))), True)),
                     [z3.Var(0, z3.BitVecSort(C))])
    assert branches._read_at(model, read, C, range(6)) == [1, 4, 2, 0, 3, 1]


def test_the_model_has_exactly_the_stack_halts_a_well_formed_state_can_reach():
    present = set()
    for mnemonic in ("NOP", "SWAP2", "ADD", "PUSH1", "DUP3"):
        ins = SPEC.by_mnemonic[mnemonic]
        pre = fresh_state(W)
        for b in step(pre, mnemonic, immediate(W, ins)):
            if b.status in branches.STACK_HALTS:
                present.add((mnemonic, b.status))
                assert not branches.unsatisfiable(b.cond, pre, ins)
                assert branches.solve(b.cond, pre, ins) is not None
    # Pops nothing: no underflow; pushes no more than it pops: no overflow (no branch, so
    # no theorem claims anything of a case that cannot happen).
    assert present == {("SWAP2", "STACK_UNDERFLOW"), ("ADD", "STACK_UNDERFLOW"),
                       ("PUSH1", "STACK_OVERFLOW"), ("DUP3", "STACK_UNDERFLOW"),
                       ("DUP3", "STACK_OVERFLOW")}
    labels = {x["branch"] for x in branches.branch_inputs("PUSH1", 64, V)}
    assert "stack overflow" in labels and "stack underflow" not in labels
