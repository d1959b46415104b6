"""The concrete evaluation behind the agreement checks (proofs/concrete.py): its fast paths
give exactly what z3's simplifier gives, term by term and byte by byte, and anything they
cannot evaluate still goes to z3 (and a term that is not constant is still an error)."""

from __future__ import annotations

import pytest
import z3

from proofs import branches, concrete
from proofs.agreement import model_outcome
from proofs.exhaustive import compile_term
from proofs.instructions.memory import copy_into, write_bytes
from proofs.machine import base_memory
from proofs.replay import complete
from proofs.words import byte_of, width
from conftest import BASE_VERSION as V

W = width(64, V)
# Opcodes whose post-states read memory through writes, copies, digests and byte strings.
OPCODES = ("MSTORE", "MCOPY", "SHA256", "LOG1", "RETURN", "CALLDATACOPY")


def slow(w, read, indices):
    """The reference: z3's simplifier on the read term at each index. The term is built once
    at a symbolic index and each index substituted into it, in z3 (building it in Python at
    each index took minutes for SHA256): z3's terms are hash-consed, so the substituted term is
    the very term ``read(i)`` builds, which is checked at the first and the last index."""
    j = z3.BitVec("reference_index", w.counter_bits)
    term = read(j)
    at = [z3.substitute(term, (j, w.cval(i))) for i in indices]
    for k in {0, len(indices) - 1} if indices else ():
        assert at[k].eq(read(w.cval(indices[k]))), indices[k]
    return [concrete.value(t) for t in at]


def strings(x: dict, state):
    """(name, read, indices) of every byte string the agreement check observes."""
    size = concrete.value(state.memory.pages) * state.w.num.page_size
    out = [("memory", state.memory.read, concrete.memory_probes(x, size))]
    for name, data in [("output", state.output), ("return data", state.return_data),
                       *[(f"event {k}", e.data) for k, e in enumerate(state.events)]]:
        if data is not None:
            out.append((name, data.read, concrete.sample_indices(concrete.value(data.length))))
    return out


@pytest.mark.parametrize("mnemonic", OPCODES)
def test_compiled_reads_equal_z3_on_every_branch_post_state(mnemonic):
    compiled = 0
    for inputs in branches.branch_inputs(mnemonic, 64, V):
        x = complete(inputs)
        state = model_outcome(x).state
        for name, read, indices in strings(x, state):
            if len(indices) >= 4:
                j = z3.BitVec("j", W.counter_bits)
                compile_term(z3.simplify(read(j)), [j])   # the fast path is taken
                compiled += 1
            assert concrete.read_at(W, read, indices) == slow(W, read, indices), (
                inputs["branch"], name)
    assert compiled >= 3


def test_reads_through_writes_and_copies_are_the_hand_computed_bytes():
    memory = base_memory(W, W.cval(1), concrete.byte_array(W, bytes([1, 2, 3, 4, 5, 6])))
    memory = write_bytes(memory, W.cval(4), 2, lambda k: byte_of(z3.BitVecVal(0xAABB, 16), k))
    # bytes 0..2 copied to 8..10
    written = memory
    memory = copy_into(written, W.cval(8), W.cval(3), lambda j: written.read(j))
    got = concrete.read_at(W, memory.read, range(16))
    assert got == [1, 2, 3, 4, 0xBB, 0xAA, 0, 0, 1, 2, 3, 0, 0, 0, 0, 0]
    assert concrete.read_at(W, memory.read, [4095, 4096, 5000, 4]) == [0, 0, 0, 0xBB]
    # the outermost store of an index is its value (a term z3 has not simplified)
    j, c = z3.BitVec("j", 16), lambda v: z3.BitVecVal(v, 16)
    array = z3.Store(z3.Store(z3.K(z3.BitVecSort(16), c(9)), c(1), c(5)), c(1), c(7))
    assert [compile_term(array[j], [j])(i) for i in (0, 1, 2)] == [9, 7, 9]


def test_a_read_that_is_not_constant_is_still_a_model_error():
    j = z3.BitVec("j", W.counter_bits)
    symbolic = z3.Array("m", z3.BitVecSort(W.counter_bits), z3.BitVecSort(8))
    with pytest.raises(NotImplementedError):
        compile_term(z3.simplify(symbolic[j]), [j])
    with pytest.raises(NotImplementedError):
        compile_term(z3.simplify(j + z3.BitVec("other", W.counter_bits)), [j])
    memory = base_memory(W, W.cval(1), symbolic)
    with pytest.raises(concrete.ModelError):
        concrete.read_at(W, memory.read, range(8))
    digest = z3.Function("h", z3.BitVecSort(W.counter_bits), z3.BitVecSort(8))
    with pytest.raises(concrete.ModelError):
        concrete.read_at(W, digest, range(8))


def test_value_reads_constants_and_refuses_the_rest():
    assert concrete.value(z3.BitVecVal(250, 8) + 9) == 3                # wraps at 8 bits
    assert concrete.value(z3.ULT(W.cval(1), W.cval(2))) == 1
    assert concrete.value(z3.And(z3.BoolVal(True), z3.BoolVal(False))) == 0
    assert concrete.value(z3.BitVecVal(1, 256) << 255) == 1 << 255
    with pytest.raises(concrete.ModelError, match="does not evaluate to a constant: x"):
        concrete.value(z3.BitVec("x", 8) + 0)
    with pytest.raises(concrete.ModelError):
        concrete.value(z3.Bool("p"))


def test_arrays_of_constants_are_the_store_chains_z3_builds():
    data = bytes([0, 7, 0, 0, 255, 1])
    expected = z3.K(z3.BitVecSort(W.counter_bits), z3.BitVecVal(0, 8))
    for k in (1, 4, 5):
        expected = z3.Store(expected, W.cval(k), z3.BitVecVal(data[k], 8))
    assert concrete.byte_array(W, data).eq(expected)
    storage = z3.Store(z3.Store(z3.K(z3.BitVecSort(64), W.wval(0)), W.wval(2), W.wval(-1)),
                       W.wval(9), W.wval(3))
    assert concrete.word_array(W, {9: 3, 2: (1 << 64) - 1}).eq(storage)
    with pytest.raises(ValueError):
        concrete.counter(W, -1)


def test_nonzero_lists_every_written_byte_of_the_interpreters_memory():
    from proofs.agreement import nonzero
    assert nonzero(b"") == [] and nonzero(bytes(4096)) == []
    assert nonzero(b"\x00\x05\x00\x00\xff" + bytes(100) + b"\x01") == [1, 4, 105]
    assert nonzero(b"\x07" + bytes(3)) == [0]


def _real_handler(mnemonic):
    from reference_vm.instructions import table
    from reference_vm.rules import rules
    rule = rules(V, 64)
    return table(rule)[rule.spec.by_mnemonic[mnemonic].opcode]


def test_one_wrong_byte_in_memory_or_an_event_is_caught_through_the_fast_reads():
    from proofs.agreement import compare
    mcopy, log1 = _real_handler("MCOPY"), _real_handler("LOG1")

    def mcopy_last_byte_flipped(frame, imm):
        length, dst = frame.stack[-1], frame.stack[-3]
        mcopy(frame, imm)
        if length:
            frame.memory[dst + length - 1] ^= 1

    def log1_last_byte_flipped(frame, imm):
        log1(frame, imm)
        address, topics, data = frame.events[-1]
        if data:
            frame.events[-1] = (address, topics, data[:-1] + bytes([data[-1] ^ 1]))

    for mnemonic, handler, what in [("MCOPY", mcopy_last_byte_flipped, "memory["),
                                    ("LOG1", log1_last_byte_flipped, "events")]:
        caught = [d for x in branches.branch_inputs(mnemonic, 64, V) for d in compare(x, handler)]
        assert any(d.startswith(what) for d in caught), (mnemonic, caught)
        assert all(compare(x) == [] for x in branches.branch_inputs(mnemonic, 64, V))
